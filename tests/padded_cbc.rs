//! AES-CBC with PKCS#7 padding: RFC 3602 section 4 (whole blocks, both
//! directions), RFC 7518 Appendix B.1's padded ciphertext, round trips of
//! every length against an independent padding, and one error for every bad
//! padding. Every available backend.

mod common;

use cbc_hmac::{AesCbcKey, Backend, Cipher, Error};
use common::rng::Rng;
use common::vectors::for_each_record;
use common::{backends, hex};

#[test]
fn rfc3602_section4() {
    let backends = backends();
    let mut cases = Vec::new();
    let records = for_each_record("rfc3602-aes-cbc.txt", |r| {
        let at = r.location();
        let case = r.take_usize("Case");
        let key = r.take_hex("Key");
        let iv = r.take_hex("IV");
        let plaintext = r.take_hex("Plaintext");
        let ciphertext = r.take_hex("Ciphertext");
        cases.push(case);
        for &backend in &backends {
            let k = AesCbcKey::with_backend(Cipher::Aes128Cbc, &key, backend).unwrap();
            let mut data = plaintext.clone();
            k.encrypt(&iv, &mut data).unwrap();
            assert_eq!(hex(&data), hex(&ciphertext), "{at}: encrypt on {backend}");
            k.decrypt(&iv, &mut data).unwrap();
            assert_eq!(hex(&data), hex(&plaintext), "{at}: decrypt on {backend}");
            // Padded: one more block, all 0x10, which decrypts back.
            let mut buf = plaintext.clone();
            buf.resize(plaintext.len() + 16, 0);
            let n = k.encrypt_padded(&iv, &mut buf, plaintext.len()).unwrap();
            assert_eq!(n, plaintext.len() + 16, "{at}");
            assert_eq!(hex(&buf[..plaintext.len()]), hex(&ciphertext), "{at}");
            let opened = k.decrypt_padded(&iv, &mut buf[..n]).unwrap();
            assert_eq!(hex(opened), hex(&plaintext), "{at}: on {backend}");
        }
    });
    eprintln!("rfc3602-aes-cbc.txt: {records} records checked");
    assert_eq!(cases, [1, 2, 3, 4], "RFC 3602 cases");
}

/// B.1's E is the PKCS#7-padded P under ENC_KEY (the second half of K).
#[test]
fn rfc7518_b1_pkcs7() {
    let backends = backends();
    let mut checked = 0;
    for_each_record("rfc7518-aes-cbc-hmac-sha2.txt", |r| {
        let at = r.location();
        let section = r.take_str("Section");
        let key = r.take_hex("Key");
        let plaintext = r.take_hex("Plaintext");
        let iv = r.take_hex("IV");
        let ciphertext = r.take_hex("Ciphertext");
        for name in ["Alg", "AAD", "Tag"] {
            r.ignore(name);
        }
        let cipher = match section.as_str() {
            "B.1" => Cipher::Aes128Cbc,
            // B.2 needs AES-192; B.3's AES-256 part is checked here too.
            "B.2" => return,
            "B.3" => Cipher::Aes256Cbc,
            other => panic!("{at}: section {other}"),
        };
        let enc_key = &key[key.len() / 2..];
        for &backend in &backends {
            let k = AesCbcKey::with_backend(cipher, enc_key, backend).unwrap();
            let mut buf = plaintext.clone();
            buf.resize(AesCbcKey::padded_len(plaintext.len()), 0);
            let n = k.encrypt_padded(&iv, &mut buf, plaintext.len()).unwrap();
            assert_eq!(hex(&buf[..n]), hex(&ciphertext), "{at}: on {backend}");
            let opened = k.decrypt_padded(&iv, &mut buf[..n]).unwrap();
            assert_eq!(opened, &plaintext[..], "{at}: on {backend}");
        }
        checked += 1;
    });
    assert_eq!(checked, 2, "B.1 and B.3");
}

/// Every length 0..=80: the ciphertext equals CBC of an independently padded
/// buffer, and decrypts back, on every backend.
#[test]
fn pkcs7_round_trips_every_length() {
    let backends = backends();
    let mut rng = Rng::from_env("pkcs7_round_trips_every_length", 0x7c57);
    for len in 0..=80usize {
        for cipher in Cipher::ALL {
            let key = rng.bytes(cipher.key_len());
            let iv: [u8; 16] = rng.array();
            let msg = rng.bytes(len);
            let pad = 16 - len % 16;
            let mut reference = msg.clone();
            reference.extend(std::iter::repeat_n(pad as u8, pad));
            let portable = AesCbcKey::with_backend(cipher, &key, Backend::Portable).unwrap();
            portable.encrypt(&iv, &mut reference).unwrap();
            for &backend in &backends {
                let k = AesCbcKey::with_backend(cipher, &key, backend).unwrap();
                let mut buf = vec![0xeeu8; reference.len() + 5];
                buf[..len].copy_from_slice(&msg);
                let n = k.encrypt_padded(&iv, &mut buf, len).unwrap();
                assert_eq!(n, reference.len());
                assert_eq!(hex(&buf[..n]), hex(&reference), "{len} on {backend}");
                assert!(buf[n..].iter().all(|&b| b == 0xee), "wrote past the end");
                assert_eq!(k.decrypt_padded(&iv, &mut buf[..n]).unwrap(), &msg[..]);
            }
        }
    }
}

/// Every bad last byte and every corrupted padding byte is BadPadding; bad
/// lengths are their own typed errors.
#[test]
fn pkcs7_bad_padding_is_one_error() {
    let backends = backends();
    let key = [0x24u8; 16];
    let iv = [0x42u8; 16];
    for &backend in &backends {
        let k = AesCbcKey::with_backend(Cipher::Aes128Cbc, &key, backend).unwrap();
        // A plaintext block whose last byte is `last` and whose others are
        // `fill`, encrypted without padding, then opened as padded.
        let open = |block: [u8; 32]| {
            let mut data = block;
            k.encrypt(&iv, &mut data).unwrap();
            k.decrypt_padded(&iv, &mut data).map(|p| p.len())
        };
        for last in 0..=255u8 {
            let mut block = [0u8; 32];
            block[32 - (last as usize).clamp(1, 16)..].fill(last);
            let expected = if (1..=16).contains(&last) {
                Ok(32 - last as usize)
            } else {
                Err(Error::BadPadding)
            };
            assert_eq!(open(block), expected, "last byte {last} on {backend}");
        }
        for p in 2..=16usize {
            for wrong in 1..p {
                let mut block = [0u8; 32];
                block[32 - p..].fill(p as u8);
                block[31 - wrong] ^= 0x01;
                assert_eq!(open(block), Err(Error::BadPadding), "{p} {wrong} {backend}");
            }
        }
        let mut buf = [0u8; 32];
        assert_eq!(
            k.decrypt_padded(&iv, &mut buf[..0]),
            Err(Error::NotBlockAligned { len: 0 })
        );
        assert_eq!(
            k.decrypt_padded(&iv, &mut buf[..17]),
            Err(Error::NotBlockAligned { len: 17 })
        );
        assert_eq!(
            k.encrypt_padded(&iv, &mut buf[..16], 16),
            Err(Error::BufferTooSmall {
                needed: 32,
                actual: 16
            })
        );
        assert_eq!(
            k.decrypt_padded(&iv[..8], &mut buf),
            Err(Error::InvalidIvLength {
                expected: 16,
                actual: 8
            })
        );
    }
}
