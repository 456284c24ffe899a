//! OpenSSL's multi-block records opened one by one with cbc-hmac's
//! `Opener`: every record of every write, for both digests, both AES key
//! lengths, 4 and 8 records per call, 64 KiB and 128 KiB writes and odd
//! lengths.

use crate::*;

fn bytes(seed: u64, n: usize) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            (x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 56) as u8
        })
        .collect()
}

fn combination(key_len: usize, digest: Digest) -> cbc_hmac::Combination {
    use cbc_hmac::Combination as C;
    match (key_len, digest) {
        (16, Digest::Sha1) => C::Aes128CbcSha1,
        (32, Digest::Sha1) => C::Aes256CbcSha1,
        (16, Digest::Sha256) => C::Aes128CbcSha256,
        (32, Digest::Sha256) => C::Aes256CbcSha256,
        _ => unreachable!("no stitched cipher"),
    }
}

/// One connection's keys.
struct Keys {
    key_len: usize,
    digest: Digest,
    enc: Vec<u8>,
    mac: Vec<u8>,
}

/// A sealer, or the reason this OpenSSL on this CPU has none (printed as
/// SKIPPED by the caller).
fn sealer(digest: Digest, enc: &[u8], mac: &[u8]) -> std::result::Result<MultiBlockSealer, String> {
    match MultiBlockSealer::new(digest, enc, mac) {
        Ok(s) => Ok(s),
        Err(e @ Error::Unavailable(_)) => Err(format!("{e} ({})", version())),
        Err(e) => panic!("MultiBlockSealer::new: {e}"),
    }
}

/// Seals `len` bytes in `interleave` records and opens each with cbc-hmac:
/// right headers, consecutive sequence numbers from `seq`, each record's
/// plaintext the right slice of the write, the cut as `record_lens` says.
fn check_write(
    s: &mut MultiBlockSealer,
    keys: &Keys,
    version: [u8; 2],
    seq: u64,
    len: usize,
    interleave: usize,
) {
    let Keys {
        key_len,
        digest,
        ref enc,
        ref mac,
    } = *keys;
    let plaintext = bytes(len as u64 ^ seq, len);
    let total = s.sealed_len(len, interleave).unwrap();
    let mut out = vec![0u8; total + 100];
    let n = s
        .seal(seq, version, &plaintext, interleave, &mut out)
        .unwrap();
    assert_eq!(n, total, "{} {len} x{interleave}: length", s.name());
    assert!(out[n..].iter().all(|&b| b == 0), "wrote past its length");
    let records = split_records(&out[..n]).expect("whole records");
    assert_eq!(
        records.len(),
        interleave,
        "{} {len}: record count",
        s.name()
    );
    let (frag, last) = MultiBlockSealer::record_lens(len, interleave).unwrap();
    assert!(total <= interleave * s.max_record_buf());

    let pv = match version {
        TLS1_1 => cbc_hmac::ProtocolVersion::Tls11,
        _ => cbc_hmac::ProtocolVersion::Tls12,
    };
    let config = cbc_hmac::RecordConfig::new(
        combination(key_len, digest),
        pv,
        cbc_hmac::MacOrder::MacThenEncrypt,
    );
    let keys = cbc_hmac::RecordKeys {
        enc_key: enc,
        mac_key: mac,
        iv: None,
    };
    let mut opener = cbc_hmac::Opener::new(config, keys).unwrap();
    let mut offset = 0;
    let mut ivs = Vec::new();
    for (i, (header, fragment)) in records.into_iter().enumerate() {
        assert_eq!(header[0], MULTIBLOCK_CONTENT_TYPE);
        assert_eq!(header[1..3], version);
        ivs.push(fragment[..16].to_vec());
        let want = if i + 1 == interleave { last } else { frag };
        let mut fragment = fragment.to_vec();
        let opened = opener
            .open_in_place(seq + i as u64, MULTIBLOCK_CONTENT_TYPE, &mut fragment)
            .unwrap_or_else(|e| panic!("{} {len} x{interleave}: record {i}: {e}", s.name()));
        assert_eq!(opened.len(), want, "record {i}: plaintext length");
        assert_eq!(
            opened,
            &plaintext[offset..offset + want],
            "record {i}: plaintext"
        );
        offset += want;
    }
    // Under another sequence number the first record does not open.
    let (_, first) = split_records(&out[..n]).unwrap()[0];
    let mut first = first.to_vec();
    assert!(
        opener
            .open_in_place(seq + interleave as u64, MULTIBLOCK_CONTENT_TYPE, &mut first)
            .is_err()
    );
    assert_eq!(offset, len);
    ivs.sort();
    ivs.dedup();
    assert_eq!(ivs.len(), interleave, "explicit IVs repeat");
}

#[test]
fn multiblock_records_open_with_cbc_hmac() {
    // 64 KiB and 128 KiB writes (libssl's 4- and 8-record cases at the
    // full fragment size), the smallest write, and odd lengths, including
    // ones where OpenSSL moves bytes from the last record to the others.
    let cases: &[(usize, usize)] = &[
        (4 * 16384, 4),
        (8 * 16384, 8),
        (4 * 16384, 8),
        (4096, 4),
        (4096, 8),
        (4 * 16384 - 3, 4),
        (8 * 16384 - 7, 8),
        (5000, 4),
        (33333, 4),
        (100_001, 8),
        (12345, 8),
    ];
    // Lengths where the last record gives bytes to the others.
    let shifted: Vec<(usize, usize)> = [4usize, 8]
        .iter()
        .flat_map(|&x| {
            (4096..4096 + 64 * x)
                .filter(move |&len| {
                    let frag = len / x;
                    let last = len - (x - 1) * frag;
                    last > frag && (last + 22) % 64 < x - 1
                })
                .take(2)
                .map(move |len| (len, x))
        })
        .collect();
    assert_eq!(shifted.len(), 4);
    for (key_len, digest) in [
        (16, Digest::Sha1),
        (32, Digest::Sha1),
        (16, Digest::Sha256),
        (32, Digest::Sha256),
    ] {
        let keys = Keys {
            key_len,
            digest,
            enc: bytes(key_len as u64, key_len),
            mac: bytes(digest.output_len() as u64, digest.output_len()),
        };
        let mut s = match sealer(digest, &keys.enc, &keys.mac) {
            Ok(s) => s,
            Err(why) => {
                println!("SKIPPED: OpenSSL multi-block {key_len}-byte key {digest:?}: {why}");
                continue;
            }
        };
        println!("TESTING: OpenSSL multi-block {}", s.name());
        for &(len, x) in cases.iter().chain(&shifted) {
            // TLS 1.1 for SHA-1 only (the SHA-256 suites are TLS 1.2's);
            // the second sequence number carries across bytes.
            let v2 = if digest == Digest::Sha1 {
                TLS1_1
            } else {
                TLS1_2
            };
            for (version, seq) in [(TLS1_2, 1), (v2, 0x01ff_ffff_ffff_fffe)] {
                check_write(&mut s, &keys, version, seq, len, x);
            }
        }
    }
}

#[test]
fn multiblock_refuses_what_openssl_does_not_check() {
    let enc = [7u8; 16];
    let mac = [9u8; 20];
    let mut s = match sealer(Digest::Sha1, &enc, &mac) {
        Ok(s) => s,
        Err(why) => {
            println!("SKIPPED: OpenSSL multi-block refusals: {why}");
            return;
        }
    };
    let p = vec![0u8; 8 * 16384 + 1];
    let mut out = vec![0u8; 9 * 16384];
    let invalid = |r: Result<usize>| matches!(r, Err(Error::InvalidInput(_)));
    // Too short, too long, a record over 2^14 bytes, a bad interleave.
    assert!(invalid(s.seal(0, TLS1_2, &p[..4095], 4, &mut out)));
    assert!(invalid(s.seal(0, TLS1_2, &p, 8, &mut out)));
    assert!(invalid(s.seal(0, TLS1_2, &p[..4 * 16384 + 1], 4, &mut out)));
    assert!(invalid(s.seal(0, TLS1_2, &p[..8192], 2, &mut out)));
    // TLS 1.0, DTLS.
    assert!(invalid(s.seal(0, TLS1_0, &p[..8192], 4, &mut out)));
    assert!(invalid(s.seal(0, DTLS1_2, &p[..8192], 4, &mut out)));
    // Output too small; sequence numbers that wrap.
    let need = s.sealed_len(8192, 4).unwrap();
    assert!(invalid(s.seal(
        0,
        TLS1_2,
        &p[..8192],
        4,
        &mut out[..need - 1]
    )));
    assert!(invalid(s.seal(
        u64::MAX - 2,
        TLS1_2,
        &p[..8192],
        4,
        &mut out
    )));
    // And the sealer still works afterwards.
    assert_eq!(s.seal(0, TLS1_2, &p[..8192], 4, &mut out).unwrap(), need);
    // SHA-384 has no stitched cipher; AES-192 neither.
    assert!(matches!(
        MultiBlockSealer::new(Digest::Sha384, &[0; 32], &[0; 48]),
        Err(Error::InvalidInput(_))
    ));
    assert!(matches!(
        MultiBlockSealer::new(Digest::Sha1, &[0; 24], &[0; 20]),
        Err(Error::InvalidInput(_))
    ));
}
