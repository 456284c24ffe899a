//! SHA-1 / SHA-256 / SHA-384 / SHA-512 known-answer tests: NIST CAVP SHAVS byte-oriented
//! ShortMsg and LongMsg files, through `digest_with_backend`, on every
//! available backend.
//!
//! `vectors/README.md` gives 515 SHA records in all; per file that is (from
//! the SHAVS layout it describes) ShortMsg: `Len` = 0, 8, ..., one block per
//! byte (65 records for SHA-1/SHA-256, 129 for SHA-384/SHA-512) and LongMsg:
//! 64 / 64 / 128 / 128 records (SHA-512's 257 are in section 6 of the
//! README).

mod common;

use cbc_hmac::{Backend, Error, MacAlgorithm, digest_with_backend};
use common::vectors::for_each_record;
use common::{backends, hex};

/// `n` from a section header `L = n` / `L=n`.
fn section_len(section: Option<&str>, at: &str) -> usize {
    section
        .and_then(|s| s.strip_prefix('L'))
        .and_then(|s| s.trim_start().strip_prefix('='))
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or_else(|| panic!("{at}: expected an [L = n] section, found {section:?}"))
}

const SENTINEL: u8 = 0xa5;

/// Checks one SHAVS file; returns its record count after asserting it is
/// `expected`. For ShortMsg files also checks that `Len` runs 0, 8, 16, ...
fn check_file(
    file: &str,
    algorithm: MacAlgorithm,
    expected: usize,
    sequential_lengths: bool,
    backends: &[Backend],
) -> usize {
    let n = algorithm.output_len();
    let mut bytes_hashed = 0usize;
    let mut index = 0usize;
    let records = for_each_record(file, |r| {
        let at = r.location();
        assert_eq!(section_len(r.section(), &at), n, "{at}: section L");
        let len_bits = r.take_usize("Len");
        let msg = r.take_hex("Msg");
        let md = r.take_hex("MD");
        assert!(len_bits.is_multiple_of(8), "{at}: Len is not whole bytes");
        if sequential_lengths {
            assert_eq!(
                len_bits,
                index * 8,
                "{at}: ShortMsg lengths run 0, 8, 16, ..."
            );
        }
        index += 1;
        // Len = 0 is written `Msg = 00`: always take the first Len/8 bytes.
        let len = len_bits / 8;
        assert_eq!(msg.len(), len.max(1), "{at}: Msg length vs Len");
        let msg = &msg[..len];
        assert_eq!(md.len(), n, "{at}: MD length");
        bytes_hashed += len;
        for &backend in backends {
            let mut out = [SENTINEL; 80];
            let written = digest_with_backend(algorithm, msg, &mut out, backend)
                .unwrap_or_else(|e| panic!("{at}: digest on {backend}: {e:?}"));
            assert_eq!(written, n, "{at}: digest length on {backend}");
            assert_eq!(
                hex(&out[..n]),
                hex(&md),
                "{at}: {algorithm:?} of {len} bytes on {backend}"
            );
            assert!(
                out[n..].iter().all(|&b| b == SENTINEL),
                "{at}: digest on {backend} wrote past its output length"
            );
        }
    });
    eprintln!(
        "{file}: checked {records} records ({bytes_hashed} message bytes) on {} backend(s)",
        backends.len()
    );
    assert_eq!(records, expected, "{file}: record count");
    records
}

fn check_algorithm(
    name: &str,
    algorithm: MacAlgorithm,
    expected_short: usize,
    expected_long: usize,
) -> usize {
    let backends = backends();
    let short = check_file(
        &format!("{name}ShortMsg.rsp"),
        algorithm,
        expected_short,
        true,
        &backends,
    );
    let long = check_file(
        &format!("{name}LongMsg.rsp"),
        algorithm,
        expected_long,
        false,
        &backends,
    );
    // A too-small output buffer is an error, not a partial write.
    let n = algorithm.output_len();
    for &backend in &backends {
        let mut out = [SENTINEL; 80];
        match digest_with_backend(algorithm, b"abc", &mut out[..n - 1], backend) {
            Err(Error::BufferTooSmall { needed, actual }) => {
                assert_eq!((needed, actual), (n, n - 1), "{name} on {backend}")
            }
            other => panic!("{name} on {backend}: short buffer gave {other:?}"),
        }
        assert!(out.iter().all(|&b| b == SENTINEL), "{name} on {backend}");
    }
    eprintln!(
        "{name} (ShortMsg + LongMsg): {} records checked",
        short + long
    );
    short + long
}

#[test]
fn sha1_short_and_long_msg() {
    assert_eq!(check_algorithm("SHA1", MacAlgorithm::HmacSha1, 65, 64), 129);
}

#[test]
fn sha256_short_and_long_msg() {
    assert_eq!(
        check_algorithm("SHA256", MacAlgorithm::HmacSha256, 65, 64),
        129
    );
}

#[test]
fn sha384_short_and_long_msg() {
    assert_eq!(
        check_algorithm("SHA384", MacAlgorithm::HmacSha384, 129, 128),
        257
    );
}

#[test]
fn sha512_short_and_long_msg() {
    assert_eq!(
        check_algorithm("SHA512", MacAlgorithm::HmacSha512, 129, 128),
        257
    );
}
