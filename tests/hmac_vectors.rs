//! HMAC-SHA1 / HMAC-SHA256 / HMAC-SHA384 / HMAC-SHA512 known-answer tests (NIST CAVP
//! `HMAC.rsp`, RFC 2202, RFC 4231, RFC 4868's IPsec authenticators), a
//! randomized cross-check against the RustCrypto `hmac` crate, and a check
//! that the vector parser is strict.
//! Everything runs on every available backend.

mod common;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use cbc_hmac::esp::EspIntegrity;
use cbc_hmac::{Backend, Error, HmacKey, MacAlgorithm};
use common::rng::Rng;
use common::vectors::{Record, for_each_record, for_each_record_in_path};
use common::{backends, hex};
use hmac::{Hmac, KeyInit, Mac};

/// Piece sizes for feeding `context()`: uneven, with empty updates, pieces
/// straddling the 64- and 128-byte block boundaries, and one piece that
/// swallows the rest.
const PIECES: [&[usize]; 4] = [
    &[1, 2, 3, 5, 7, 11, 13, 17, 0, 19, 23, 29, 31, 37],
    &[63, 1, 65, 127, 0, 129, 64, 128],
    &[0, 55, 1, 56, 111, 112],
    &[usize::MAX],
];

/// All the checks for one (key, message, expected MAC) on one backend.
/// `expected` may be truncated (a prefix of the full tag). `variant` picks
/// which bit to flip, so different records flip different bits.
fn check_mac(
    algorithm: MacAlgorithm,
    backend: Backend,
    key: &[u8],
    msg: &[u8],
    expected: &[u8],
    variant: usize,
    at: &str,
) {
    let full = algorithm.output_len();
    assert!(
        !expected.is_empty() && expected.len() <= full,
        "{at}: expected MAC length {}",
        expected.len()
    );
    let k = HmacKey::with_backend(algorithm, key, backend)
        .unwrap_or_else(|e| panic!("{at}: HmacKey::with_backend on {backend}: {e:?}"));
    assert_eq!(k.algorithm(), algorithm, "{at}");
    assert_eq!(k.backend(), backend, "{at}");
    assert_eq!(k.output_len(), full, "{at}");

    // One shot.
    let tag = k.sign(msg);
    assert_eq!(tag.len(), full, "{at}: tag length on {backend}");
    assert_eq!(
        hex(&tag.as_bytes()[..expected.len()]),
        hex(expected),
        "{at}: {algorithm:?} sign on {backend} (key {} bytes, message {} bytes)",
        key.len(),
        msg.len()
    );

    // Into a caller buffer, not past the tag.
    let mut out = [0x5au8; 80];
    assert_eq!(k.mac(msg, &mut out), Ok(full), "{at}: mac on {backend}");
    assert_eq!(
        hex(&out[..full]),
        hex(tag.as_bytes()),
        "{at}: mac on {backend}"
    );
    assert!(
        out[full..].iter().all(|&b| b == 0x5a),
        "{at}: mac wrote past the tag"
    );

    // Incremental, in uneven pieces.
    for pieces in PIECES {
        let mut ctx = k.context();
        let mut rest = msg;
        for &size in pieces.iter().cycle() {
            let (piece, tail) = rest.split_at(size.min(rest.len()));
            ctx.update(piece);
            rest = tail;
            if rest.is_empty() {
                break;
            }
        }
        assert_eq!(
            ctx.finish(),
            tag,
            "{at}: context() in pieces {pieces:?} on {backend}"
        );
    }

    // verify: the full tag passes; the file's MAC passes when it is full.
    assert_eq!(
        k.verify(msg, tag.as_bytes()),
        Ok(()),
        "{at}: verify on {backend}"
    );
    if expected.len() == full {
        assert_eq!(k.verify(msg, expected), Ok(()), "{at}: verify on {backend}");
    }

    // One flipped bit anywhere is BadMac: a rotating position, plus the first
    // and the last bit of the tag.
    for (byte, bit) in [((variant / 8) % full, variant % 8), (0, 0), (full - 1, 7)] {
        let mut bad = tag.as_bytes().to_vec();
        bad[byte] ^= 1 << bit;
        assert_eq!(
            k.verify(msg, &bad),
            Err(Error::BadMac),
            "{at}: verify on {backend} with byte {byte} bit {bit} flipped"
        );
    }

    check_truncated(&k, msg, tag.as_bytes(), expected, variant, at);

    // Wrong lengths are InvalidTagLength, even when the prefix is right.
    let mut longer = tag.as_bytes().to_vec();
    longer.push(0);
    let wrong: [&[u8]; 5] = [
        &[],
        &tag.as_bytes()[..full - 1],
        &tag.as_bytes()[..full / 2],
        &longer,
        &expected[..expected.len().min(full - 1)],
    ];
    for bad in wrong {
        assert_eq!(
            k.verify(msg, bad),
            Err(Error::InvalidTagLength {
                expected: full,
                actual: bad.len()
            }),
            "{at}: verify on {backend} with a {}-byte tag",
            bad.len()
        );
    }
}

/// The truncated-tag checks for one record: the file's MAC (possibly
/// truncated) verifies with `verify_truncated` when it meets the minimum,
/// every length from the minimum to the full output verifies, a flipped bit
/// in a truncated tag is BadMac, and shorter tags are TagTooShort.
fn check_truncated(k: &HmacKey, msg: &[u8], tag: &[u8], expected: &[u8], variant: usize, at: &str) {
    let backend = k.backend();
    let full = k.output_len();
    let min = k.min_truncated_len();
    assert_eq!(min, (full / 2).max(10), "{at}: minimum");
    if expected.len() >= min {
        assert_eq!(
            k.verify_truncated(msg, expected),
            Ok(()),
            "{at}: verify_truncated of the file's {}-byte MAC on {backend}",
            expected.len()
        );
    } else {
        assert_eq!(
            k.verify_truncated(msg, expected),
            Err(Error::TagTooShort {
                min,
                actual: expected.len()
            }),
            "{at}: short MAC on {backend}"
        );
    }
    for n in min..=full {
        assert_eq!(
            k.verify_truncated(msg, &tag[..n]),
            Ok(()),
            "{at}: {n} bytes on {backend}"
        );
        let mut bad = tag[..n].to_vec();
        bad[variant % n] ^= 1 << (variant % 8);
        assert_eq!(
            k.verify_truncated(msg, &bad),
            Err(Error::BadMac),
            "{at}: {n} bytes with a flipped bit on {backend}"
        );
    }
    for n in [0, 1, min - 1] {
        assert_eq!(
            k.verify_truncated(msg, &tag[..n]),
            Err(Error::TagTooShort { min, actual: n }),
            "{at}: {n} bytes on {backend}"
        );
    }
    let mut longer = tag.to_vec();
    longer.push(0);
    assert_eq!(
        k.verify_truncated(msg, &longer),
        Err(Error::InvalidTagLength {
            expected: full,
            actual: full + 1
        }),
        "{at}: a tag longer than the output on {backend}"
    );
}

/// NIST CAVP `HMAC.rsp`: [L=20] is HMAC-SHA-1, [L=32] HMAC-SHA-256, [L=48]
/// HMAC-SHA-384, [L=64] HMAC-SHA-512; the SHA-224 section is consumed
/// unchecked.
#[test]
fn nist_hmac_rsp() {
    let backends = backends();
    eprintln!("SKIPPED: HMAC.rsp section [L=28] (HMAC-SHA-224): out of this crate's scope");
    let (mut sha1, mut sha256, mut sha384, mut sha512, mut skipped_28) = (0, 0, 0, 0, 0);
    let mut truncated = 0;
    let records = for_each_record("HMAC.rsp", |r| {
        let at = r.location();
        let algorithm = match r.section() {
            Some("L=20") => MacAlgorithm::HmacSha1,
            Some("L=32") => MacAlgorithm::HmacSha256,
            Some("L=48") => MacAlgorithm::HmacSha384,
            Some("L=64") => MacAlgorithm::HmacSha512,
            Some("L=28") => {
                skipped_28 += 1;
                for name in ["Count", "Klen", "Tlen", "Key", "Msg", "Mac"] {
                    r.ignore(name);
                }
                return;
            }
            other => panic!("{at}: unexpected section {other:?}"),
        };
        let count = r.take_usize("Count");
        let klen = r.take_usize("Klen");
        let tlen = r.take_usize("Tlen");
        let key = r.take_hex("Key");
        let msg = r.take_hex("Msg");
        let mac = r.take_hex("Mac");
        assert_eq!(key.len(), klen, "{at}: Klen");
        assert_eq!(mac.len(), tlen, "{at}: Tlen");
        assert!(tlen <= algorithm.output_len(), "{at}: Tlen > L");
        match algorithm {
            MacAlgorithm::HmacSha1 => sha1 += 1,
            MacAlgorithm::HmacSha256 => sha256 += 1,
            MacAlgorithm::HmacSha384 => sha384 += 1,
            MacAlgorithm::HmacSha512 => sha512 += 1,
        }
        if tlen < algorithm.output_len() {
            truncated += 1;
        }
        for &backend in &backends {
            check_mac(algorithm, backend, &key, &msg, &mac, count, &at);
        }
    });
    eprintln!(
        "HMAC.rsp: {records} records: checked L=20 (SHA-1) {sha1}, L=32 (SHA-256) {sha256}, L=48 (SHA-384) {sha384}, \
         L=64 (SHA-512) {sha512} ({truncated} with truncated MACs); skipped L=28 {skipped_28}"
    );
    assert_eq!(
        (sha1, sha256, sha384, sha512),
        (300, 225, 300, 375),
        "checked record counts"
    );
    assert_eq!(skipped_28, 375, "skipped record count");
    assert_eq!(records, 1575, "HMAC.rsp record count");
    assert!(truncated > 0 && truncated < sha1 + sha256 + sha384 + sha512);
}

/// An RFC file: `TestCase` 1..=7 in order, `Key`, `Data`, `Mac`, `MacLen`.
fn check_rfc_file(file: &str, algorithm: MacAlgorithm) {
    let backends = backends();
    let mut truncated = Vec::new();
    let records = for_each_record(file, |r| {
        let at = r.location();
        assert_eq!(r.section(), None, "{at}: the RFC files have no sections");
        let case = r.take_usize("TestCase");
        let key = r.take_hex("Key");
        let data = r.take_hex("Data");
        let mac = r.take_hex("Mac");
        let mac_len = r.take_usize("MacLen");
        assert_eq!(mac.len(), mac_len, "{at}: MacLen");
        if mac_len < algorithm.output_len() {
            truncated.push(case);
        }
        for &backend in &backends {
            check_mac(algorithm, backend, &key, &data, &mac, case, &at);
        }
    });
    eprintln!(
        "{file}: checked {records} test cases ({algorithm:?}; truncated MACs in cases {truncated:?}) on {} backend(s)",
        backends.len()
    );
    assert_eq!(records, 7, "{file}: test case count (vectors/README.md)");
    let expected_truncated: &[usize] = match algorithm {
        MacAlgorithm::HmacSha1 => &[],
        _ => &[5],
    };
    assert_eq!(
        truncated, expected_truncated,
        "{file}: truncated test cases"
    );
}

#[test]
fn rfc2202_hmac_sha1() {
    check_rfc_file("rfc2202-hmac-sha1.txt", MacAlgorithm::HmacSha1);
}

#[test]
fn rfc4231_hmac_sha256() {
    check_rfc_file("rfc4231-hmac-sha256.txt", MacAlgorithm::HmacSha256);
}

#[test]
fn rfc4231_hmac_sha384() {
    check_rfc_file("rfc4231-hmac-sha384.txt", MacAlgorithm::HmacSha384);
}

#[test]
fn rfc4231_hmac_sha512() {
    check_rfc_file("rfc4231-hmac-sha512.txt", MacAlgorithm::HmacSha512);
}

/// RFC 4868 section 2.7.2: the IPsec authenticators. Each case gives the full
/// PRF output, checked like every other record, and the truncated ICV that
/// ESP sends, which must verify as a truncated tag of exactly the length
/// `EspIntegrity` uses, and fail with any bit flipped.
#[test]
fn rfc4868_ipsec_authenticators() {
    let backends = backends();
    let mut names = Vec::new();
    let records = for_each_record("rfc4868-hmac-sha2-auth.txt", |r| {
        let at = r.location();
        let name = r.take_str("TestCase");
        let (algorithm, integrity) = match r.take_str("Hash").as_str() {
            "SHA256" => (MacAlgorithm::HmacSha256, EspIntegrity::HmacSha256_128),
            "SHA384" => (MacAlgorithm::HmacSha384, EspIntegrity::HmacSha384_192),
            "SHA512" => (MacAlgorithm::HmacSha512, EspIntegrity::HmacSha512_256),
            other => panic!("{at}: unknown Hash {other}"),
        };
        let key = r.take_hex("Key");
        let data = r.take_hex("Data");
        let prf = r.take_hex("Prf");
        let icv = r.take_hex("Icv");
        assert_eq!(key.len(), algorithm.output_len(), "{at}: key length");
        assert_eq!(prf.len(), algorithm.output_len(), "{at}: Prf length");
        assert_eq!(icv.len(), integrity.icv_len(), "{at}: {name} ICV length");
        assert_eq!(
            icv[..],
            prf[..icv.len()],
            "{at}: the ICV is the PRF's prefix"
        );
        let variant = names.len();
        for &backend in &backends {
            check_mac(algorithm, backend, &key, &data, &prf, variant, &at);
            let k = HmacKey::with_backend(algorithm, &key, backend).unwrap();
            assert_eq!(
                k.verify_truncated(&data, &icv),
                Ok(()),
                "{at}: {name} on {backend}"
            );
            for bit in [0, variant * 5 + 1, icv.len() * 8 - 1] {
                let mut bad = icv.clone();
                bad[bit / 8] ^= 1 << (bit % 8);
                assert_eq!(
                    k.verify_truncated(&data, &bad),
                    Err(Error::BadMac),
                    "{at}: {name} on {backend}, bit {bit} flipped"
                );
            }
        }
        names.push(name);
    });
    eprintln!(
        "rfc4868-hmac-sha2-auth.txt: checked {records} authenticators {names:?} on {} backend(s)",
        backends.len()
    );
    assert_eq!(records, 12, "test case count (vectors/README.md)");
}

fn reference(algorithm: MacAlgorithm, key: &[u8], msg: &[u8]) -> Vec<u8> {
    fn run<M: Mac + KeyInit>(key: &[u8], msg: &[u8]) -> Vec<u8> {
        let mut m = <M as KeyInit>::new_from_slice(key).expect("HMAC takes any key length");
        m.update(msg);
        m.finalize().into_bytes().to_vec()
    }
    match algorithm {
        MacAlgorithm::HmacSha1 => run::<Hmac<sha1::Sha1>>(key, msg),
        MacAlgorithm::HmacSha256 => run::<Hmac<sha2::Sha256>>(key, msg),
        MacAlgorithm::HmacSha384 => run::<Hmac<sha2::Sha384>>(key, msg),
        MacAlgorithm::HmacSha512 => run::<Hmac<sha2::Sha512>>(key, msg),
    }
}

const MAX_KEY: usize = 300;
const MAX_MSG: usize = 2100;
const CASES: usize = 2000;

/// 2000 random cases (key 0..=300 bytes, message 0..=2100 bytes), every
/// algorithm and backend, against the `hmac` crate. The first cases walk
/// every message length around the SHA padding and block boundaries
/// (55/56/64 for SHA-1/SHA-256, 111/112/128 for SHA-384, and their repeats
/// one block further) and key lengths around the tag sizes and block sizes.
/// Set `CBC_HMAC_TEST_SEED` to run with another seed.
#[test]
fn random_cross_check_against_hmac_crate() {
    let backends = backends();
    let mut rng = Rng::from_env("random cross-check", 0x0cbc_4a4c_5eed_2024);

    let mut msg_lengths: Vec<usize> = (0..=4).collect();
    for boundary in [
        55, 56, 64, 111, 112, 128, 119, 120, 183, 184, 192, 239, 240, 256,
    ] {
        msg_lengths.extend(boundary - 3..=boundary + 3);
    }
    msg_lengths.extend(MAX_MSG - 3..=MAX_MSG);
    msg_lengths.sort_unstable();
    msg_lengths.dedup();
    let key_lengths = [
        0, 1, 2, 19, 20, 21, 31, 32, 33, 47, 48, 49, 55, 56, 63, 64, 65, 111, 112, 127, 128, 129,
        255, 256, 299, 300,
    ];
    // Every boundary message length three times, each time with another
    // key length (which also visits every boundary key length).
    let boundary_cases = 3 * msg_lengths.len();
    assert!(boundary_cases >= key_lengths.len() && boundary_cases < CASES);

    let mut seen_msg = vec![false; MAX_MSG + 1];
    let mut seen_key = vec![false; MAX_KEY + 1];
    let mut checks = 0usize;
    for case in 0..CASES {
        let (key_len, msg_len) = if case < boundary_cases {
            (
                key_lengths[case % key_lengths.len()],
                msg_lengths[case % msg_lengths.len()],
            )
        } else {
            let msg_len = if rng.next() & 1 == 0 {
                rng.upto(MAX_MSG)
            } else {
                // Near a multiple of 64 (SHA-1/SHA-256 blocks, half a
                // SHA-384 block), on either side of the padding boundary.
                let base = 64 * rng.upto(MAX_MSG / 64);
                (base + rng.upto(18)).saturating_sub(9).min(MAX_MSG)
            };
            (rng.upto(MAX_KEY), msg_len)
        };
        seen_msg[msg_len] = true;
        seen_key[key_len] = true;
        let key = rng.bytes(key_len);
        let msg = rng.bytes(msg_len);
        let split = rng.upto(msg_len);
        let flip = rng.upto(8 * 64 - 1);
        for algorithm in MacAlgorithm::ALL {
            let expected = reference(algorithm, &key, &msg);
            let at = format!(
                "case {case} ({algorithm:?}, key {key_len} bytes, message {msg_len} bytes)"
            );
            for &backend in &backends {
                let k = HmacKey::with_backend(algorithm, &key, backend).unwrap();
                let tag = k.sign(&msg);
                assert_eq!(hex(tag.as_bytes()), hex(&expected), "{at} on {backend}");
                let mut ctx = k.context();
                ctx.update(&msg[..split]);
                ctx.update(&msg[split..]);
                assert_eq!(
                    ctx.finish(),
                    tag,
                    "{at} on {backend}: context() split at {split}"
                );
                assert_eq!(k.verify(&msg, &expected), Ok(()), "{at} on {backend}");
                let mut bad = expected.clone();
                let bit = flip % (8 * bad.len());
                bad[bit / 8] ^= 1 << (bit % 8);
                assert_eq!(
                    k.verify(&msg, &bad),
                    Err(Error::BadMac),
                    "{at} on {backend}: bit {bit} flipped"
                );
                checks += 1;
            }
        }
    }
    let msg_distinct = seen_msg.iter().filter(|&&s| s).count();
    let key_distinct = seen_key.iter().filter(|&&s| s).count();
    eprintln!(
        "random cross-check: {CASES} cases x 4 algorithms x {} backend(s) = {checks} checks; \
         {msg_distinct} distinct message lengths, {key_distinct} distinct key lengths",
        backends.len()
    );
    assert_eq!(checks, CASES * 4 * backends.len());
    assert!(msg_lengths.iter().all(|&l| seen_msg[l]));
    assert!(key_lengths.iter().all(|&l| seen_key[l]));
}

// ---------------------------------------------------------------------------
// The parser is strict: a typo cannot silently skip a check.

/// Writes `contents` to a fresh file under the temp directory.
fn temp_file(tag: &str, contents: &str) -> PathBuf {
    let path =
        std::env::temp_dir().join(format!("cbc-hmac-vectors-{}-{tag}.txt", std::process::id()));
    std::fs::write(&path, contents).unwrap();
    path
}

/// Runs the visitor and returns its panic message, failing if it did not
/// panic.
fn expect_panic(path: &Path, f: impl FnMut(&mut Record)) -> String {
    let result = catch_unwind(AssertUnwindSafe(|| for_each_record_in_path(path, f)));
    match result {
        Ok(n) => panic!("{}: expected a panic, visited {n} records", path.display()),
        Err(payload) => payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default(),
    }
}

/// RFC 2202 test case 1, with the `Mac` line as given, and misspelled.
const GOOD: &str = "# header comment\r\n[L=20]\r\n\r\nTestCase = 1\r\nKey = 0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b\r\nData = 4869205468657265\r\n# comment inside a record\r\nMac=b617318655057264e28bc0b6fb378c8ef146be00\r\n\r\n";

/// A lax consumer: it only compares when `Mac` is present (and counts the
/// comparisons). With the correct file the comparison runs once.
fn lax_check(checked: &mut usize) -> impl FnMut(&mut Record) + '_ {
    move |r: &mut Record| {
        assert_eq!(r.section(), Some("L=20"));
        r.ignore("TestCase");
        let key = r.take_hex("Key");
        let data = r.take_hex("Data");
        if r.has("Mac") {
            let tag = HmacKey::new(MacAlgorithm::HmacSha1, &key)
                .unwrap()
                .sign(&data);
            assert_eq!(hex(tag.as_bytes()), hex(&r.take_hex("Mac")));
            *checked += 1;
        }
    }
}

#[test]
fn parser_unconsumed_attribute_panics() {
    let good = temp_file("good", GOOD);
    let mut checked = 0;
    assert_eq!(for_each_record_in_path(&good, lax_check(&mut checked)), 1);
    assert_eq!(checked, 1, "the lax consumer must check the good record");

    // Misspelled `Mac`: the lax consumer skips its check, and the record
    // panics on drop, naming the attribute and the location.
    let typo = temp_file("typo", &GOOD.replace("Mac=", "Mca="));
    let mut checked = 0;
    let message = expect_panic(&typo, lax_check(&mut checked));
    assert_eq!(checked, 0);
    eprintln!("typo'd attribute panic: {message}");
    assert!(message.contains("`Mca`"), "{message}");
    assert!(
        message.contains(&format!("{}:4", typo.display())),
        "{message}"
    );

    let _ = std::fs::remove_file(good);
    let _ = std::fs::remove_file(typo);
}

#[test]
fn parser_rejects_malformed_files() {
    let take_all = |r: &mut Record| {
        r.take_usize("TestCase");
        for name in ["Key", "Data", "Mac"] {
            r.take_hex(name);
        }
    };
    let cases: [(&str, String, &str); 5] = [
        (
            "duplicate",
            GOOD.replace("TestCase = 1", "Key = 00"),
            "duplicate attribute `Key`",
        ),
        (
            "missing",
            GOOD.replace("Data = 4869205468657265\r\n", ""),
            "no attribute `Data`",
        ),
        ("badhex", GOOD.replace("Key = 0b", "Key = 0g"), "`Key`"),
        (
            "garbage",
            GOOD.replace("# comment inside", "comment inside"),
            ":7: expected `Name = value`",
        ),
        (
            "empty",
            "# only a comment\r\n[L=20]\r\n\r\n".to_owned(),
            "no records",
        ),
    ];
    for (tag, contents, expected) in cases {
        let path = temp_file(tag, &contents);
        let message = expect_panic(&path, take_all);
        assert!(
            message.contains(expected),
            "{tag}: expected a panic containing {expected:?}, got {message:?}"
        );
        let _ = std::fs::remove_file(path);
    }
}
