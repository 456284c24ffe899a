//! JWE's AES_CBC_HMAC_SHA2 (RFC 7518 section 5.2): Appendix B on every
//! backend, both ways; tampering and bad padding under a valid tag; typed
//! errors for lengths and for the algorithms the crate lacks; random round
//! trips across backends.

mod common;

use cbc_hmac::jose::{CbcHmacAead, ContentEncryption};
use cbc_hmac::{AesCbcKey, Backend, Cipher, Error, HmacKey, MacAlgorithm};
use common::rng::Rng;
use common::vectors::for_each_record;
use common::{backends, hex};

#[test]
fn rfc7518_appendix_b() {
    let backends = backends();
    let mut seen = Vec::new();
    let mut checked = 0;
    let records = for_each_record("rfc7518-aes-cbc-hmac-sha2.txt", |r| {
        let at = r.location();
        let section = r.take_str("Section");
        let alg = r.take_str("Alg");
        let key = r.take_hex("Key");
        let plaintext = r.take_hex("Plaintext");
        let iv = r.take_hex("IV");
        let aad = r.take_hex("AAD");
        let ciphertext = r.take_hex("Ciphertext");
        let tag = r.take_hex("Tag");
        let enc = ContentEncryption::from_name(&alg).unwrap_or_else(|| panic!("{at}: {alg}"));
        assert_eq!(enc.key_len(), key.len(), "{at}");
        assert_eq!(enc.tag_len(), tag.len(), "{at}");
        seen.push(section.clone());
        for &backend in &backends {
            let aead = match CbcHmacAead::with_backend(enc, &key, backend) {
                Ok(a) => a,
                Err(Error::UnsupportedAlgorithm { name }) => {
                    assert_eq!(name, alg, "{at}");
                    assert_eq!(enc, ContentEncryption::A192CbcHs384, "{at}");
                    continue;
                }
                Err(e) => panic!("{at}: {e:?}"),
            };
            assert_eq!(aead.backend(), backend);
            checked += 1;
            let mut buf = plaintext.clone();
            buf.resize(CbcHmacAead::ciphertext_len(plaintext.len()), 0);
            let mut t = [0u8; 32];
            let n = aead
                .seal_in_place_with_iv(&iv, &aad, &mut buf, plaintext.len(), &mut t)
                .unwrap();
            assert_eq!(hex(&buf[..n]), hex(&ciphertext), "{at}: E on {backend}");
            assert_eq!(hex(&t[..tag.len()]), hex(&tag), "{at}: T on {backend}");
            let mut e = ciphertext.clone();
            let opened = aead.open_in_place(&iv, &aad, &mut e, &tag).unwrap();
            assert_eq!(opened, &plaintext[..], "{at}: open on {backend}");
            // One flipped bit in A, IV, E or T: the tag fails.
            for (what, k) in [("A", 0usize), ("IV", 1), ("E", 2), ("T", 3)] {
                let (mut a, mut i, mut e, mut t) =
                    (aad.clone(), iv.clone(), ciphertext.clone(), tag.clone());
                let v = [&mut a, &mut i, &mut e, &mut t][k].as_mut_slice();
                let at_byte = v.len() / 3;
                v[at_byte] ^= 0x10;
                assert_eq!(
                    aead.open_in_place(&i, &a, &mut e, &t).map(|_| ()),
                    Err(Error::AuthenticationFailed),
                    "{at}: {what} flipped on {backend}"
                );
            }
            // Another A of the same bit length is caught too (AL alone does
            // not authenticate it).
            let mut e = ciphertext.clone();
            assert_eq!(
                aead.open_in_place(&iv, &aad[..aad.len() - 1], &mut e, &tag)
                    .map(|_| ()),
                Err(Error::AuthenticationFailed)
            );
        }
    });
    eprintln!(
        "rfc7518-aes-cbc-hmac-sha2.txt: {records} records; B.1 and B.3 checked, B.2 (AES-192) a typed error; {checked} backend checks"
    );
    assert_eq!(seen, ["B.1", "B.2", "B.3"]);
    assert_eq!(checked, 2 * backends.len(), "B.1 and B.3 on every backend");
}

/// A ciphertext with a valid tag whose padding is wrong (built with the
/// primitives): AuthenticationFailed, like a bad tag.
#[test]
fn bad_padding_under_a_valid_tag() {
    let key: Vec<u8> = (0..32).collect();
    let (mac_key, enc_key) = key.split_at(16);
    let iv = [3u8; 16];
    let aad = b"header";
    let tag_of = |e: &[u8]| {
        let mac = HmacKey::new(MacAlgorithm::HmacSha256, mac_key).unwrap();
        let mut ctx = mac.context();
        ctx.update(aad);
        ctx.update(&iv);
        ctx.update(e);
        ctx.update(&(aad.len() as u64 * 8).to_be_bytes());
        ctx.finish().as_bytes()[..16].to_vec()
    };
    for backend in backends() {
        let aead =
            CbcHmacAead::with_backend(ContentEncryption::A128CbcHs256, &key, backend).unwrap();
        let aes = AesCbcKey::with_backend(Cipher::Aes128Cbc, enc_key, backend).unwrap();
        for last in [0u8, 17, 200] {
            let mut e = [last; 32];
            aes.encrypt(&iv, &mut e).unwrap();
            let tag = tag_of(&e);
            assert_eq!(
                aead.open_in_place(&iv, aad, &mut e, &tag).map(|_| ()),
                Err(Error::AuthenticationFailed),
                "last byte {last} on {backend}"
            );
        }
        for p in 2..=16usize {
            let mut e = [0x61u8; 32];
            e[32 - p..].fill(p as u8);
            e[32 - p] ^= 1;
            aes.encrypt(&iv, &mut e).unwrap();
            let tag = tag_of(&e);
            assert_eq!(
                aead.open_in_place(&iv, aad, &mut e, &tag).map(|_| ()),
                Err(Error::AuthenticationFailed),
                "padding {p} on {backend}"
            );
        }
        // And the same construction with good padding opens.
        let mut e = [0x61u8; 32];
        e[28..].fill(4);
        aes.encrypt(&iv, &mut e).unwrap();
        let tag = tag_of(&e);
        assert_eq!(
            aead.open_in_place(&iv, aad, &mut e, &tag).unwrap().len(),
            28
        );
    }
}

#[test]
fn lengths_and_algorithms_are_typed_errors() {
    let key = [7u8; 32];
    let mut aead = CbcHmacAead::new(ContentEncryption::A128CbcHs256, &key).unwrap();
    let mut buf = [0u8; 48];
    let (mut iv, mut tag) = ([0u8; 16], [0u8; 16]);
    let n = aead
        .seal_in_place(b"a", &mut buf, 20, &mut iv, &mut tag)
        .unwrap();
    assert_eq!(n, 32);
    assert_eq!(
        aead.seal_in_place(b"a", &mut buf, 47, &mut iv, &mut tag),
        Ok(48)
    );
    assert_eq!(
        aead.seal_in_place(b"a", &mut buf, 48, &mut iv, &mut tag),
        Err(Error::BufferTooSmall {
            needed: 64,
            actual: 48
        })
    );
    assert_eq!(
        aead.seal_in_place(b"a", &mut buf, 1, &mut iv, &mut tag[..15]),
        Err(Error::BufferTooSmall {
            needed: 16,
            actual: 15
        })
    );
    let mut ct = [0u8; 32];
    assert_eq!(
        aead.open_in_place(&iv[..12], b"a", &mut ct, &tag)
            .map(|_| ()),
        Err(Error::InvalidIvLength {
            expected: 16,
            actual: 12
        })
    );
    assert_eq!(
        aead.open_in_place(&iv, b"a", &mut ct, &tag[..15])
            .map(|_| ()),
        Err(Error::InvalidTagLength {
            expected: 16,
            actual: 15
        })
    );
    assert_eq!(
        aead.open_in_place(&iv, b"a", &mut ct[..31], &tag)
            .map(|_| ()),
        Err(Error::PacketNotBlockAligned { len: 31 })
    );
    assert_eq!(
        aead.open_in_place(&iv, b"a", &mut ct[..0], &tag)
            .map(|_| ()),
        Err(Error::PacketNotBlockAligned { len: 0 })
    );
    assert_eq!(
        CbcHmacAead::new(ContentEncryption::A128CbcHs256, &[0; 31]).map(|_| ()),
        Err(Error::InvalidKeyLength {
            expected: 32,
            actual: 31
        })
    );
    let enc = ContentEncryption::A192CbcHs384;
    assert_eq!(
        CbcHmacAead::new(enc, &[0; 48]).map(|_| ()),
        Err(Error::UnsupportedAlgorithm {
            name: "A192CBC-HS384"
        })
    );
    assert_eq!(
        CbcHmacAead::new(ContentEncryption::A256CbcHs512, &[0; 63]).map(|_| ()),
        Err(Error::InvalidKeyLength {
            expected: 64,
            actual: 63
        })
    );
    for (enc, name) in [
        (ContentEncryption::A128CbcHs256, "A128CBC-HS256"),
        (ContentEncryption::A192CbcHs384, "A192CBC-HS384"),
        (ContentEncryption::A256CbcHs512, "A256CBC-HS512"),
    ] {
        assert_eq!(enc.name(), name);
        assert_eq!(ContentEncryption::from_name(name), Some(enc));
    }
    assert_eq!(ContentEncryption::from_name("a128cbc-hs256"), None);
}

/// Random messages and AADs, both supported algorithms: sealed on one
/// backend, opened on every other, with fresh IVs that differ.
#[test]
fn round_trips_across_backends() {
    let backends = backends();
    let mut rng = Rng::from_env("round_trips_across_backends", 0x10e);
    for enc in [
        ContentEncryption::A128CbcHs256,
        ContentEncryption::A256CbcHs512,
    ] {
        for len in (0..=70).chain([1024, 4095]) {
            let key = rng.bytes(enc.key_len());
            let aad_len = rng.upto(100);
            let aad = rng.bytes(aad_len);
            let msg = rng.bytes(len);
            let mut ivs = Vec::new();
            for &sealer_backend in &backends {
                let mut sealer = CbcHmacAead::with_backend(enc, &key, sealer_backend).unwrap();
                let mut buf = msg.clone();
                buf.resize(CbcHmacAead::ciphertext_len(len), 0);
                let mut iv = [0u8; 16];
                let mut tag = vec![0u8; enc.tag_len()];
                let n = sealer
                    .seal_in_place(&aad, &mut buf, len, &mut iv, &mut tag)
                    .unwrap();
                assert!(!ivs.contains(&iv), "IV repeated");
                ivs.push(iv);
                for &backend in backends.iter().chain([&Backend::Portable]) {
                    let opener = CbcHmacAead::with_backend(enc, &key, backend).unwrap();
                    let mut e = buf[..n].to_vec();
                    let opened = opener.open_in_place(&iv, &aad, &mut e, &tag).unwrap();
                    assert_eq!(
                        opened,
                        &msg[..],
                        "{enc:?} {len}: {sealer_backend} -> {backend}"
                    );
                    let mut bad = tag.clone();
                    let at_byte = len % bad.len();
                    bad[at_byte] ^= 0x40;
                    let mut e = buf[..n].to_vec();
                    assert_eq!(
                        opener.open_in_place(&iv, &aad, &mut e, &bad).map(|_| ()),
                        Err(Error::AuthenticationFailed),
                        "{enc:?} {len}: {sealer_backend} -> {backend}, bad tag"
                    );
                }
            }
        }
    }
}

/// The seal runs on each backend's stitched encrypt-then-MAC kernel, with
/// the AAD's whole hash blocks hashed first and its tail and the IV ahead
/// of the ciphertext: byte for byte what the portable path gives, for AAD
/// lengths on both sides of the 64- and 128-byte hash blocks (the IV then
/// straddles a block or not) and messages from empty to several KiB.
#[test]
fn stitched_seal_matches_portable() {
    let backends = backends();
    let mut rng = Rng::from_env("stitched_seal_matches_portable", 0x5717);
    let aad_lens = [
        0, 1, 15, 47, 48, 49, 63, 64, 65, 111, 112, 113, 127, 128, 129, 200, 256, 1000,
    ];
    for enc in [
        ContentEncryption::A128CbcHs256,
        ContentEncryption::A256CbcHs512,
    ] {
        let mut cases = 0;
        for &aad_len in &aad_lens {
            for len in [
                0, 1, 15, 16, 31, 47, 48, 63, 64, 100, 127, 128, 255, 1024, 4097, 16384,
            ] {
                let len = len + rng.upto(2);
                let key = rng.bytes(enc.key_len());
                let aad = rng.bytes(aad_len);
                let msg = rng.bytes(len);
                let iv = rng.bytes(16);
                let seal = |backend| {
                    let sealer = CbcHmacAead::with_backend(enc, &key, backend).unwrap();
                    let mut buf = msg.clone();
                    buf.resize(CbcHmacAead::ciphertext_len(len), 0);
                    let mut tag = vec![0u8; enc.tag_len()];
                    let n = sealer
                        .seal_in_place_with_iv(&iv, &aad, &mut buf, len, &mut tag)
                        .unwrap();
                    assert_eq!(n, buf.len());
                    (buf, tag)
                };
                let want = seal(Backend::Portable);
                for &backend in &backends {
                    assert_eq!(
                        seal(backend),
                        want,
                        "{enc:?}: AAD {aad_len} bytes, message {len} bytes on {backend}"
                    );
                }
                cases += 1;
            }
        }
        eprintln!("{enc:?}: {cases} seals checked against portable on {backends:?}");
    }
}
