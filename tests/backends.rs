//! Every available accelerated backend against `Backend::Portable`, on
//! random inputs from a deterministic generator (seed printed; set
//! `CBC_HMAC_TEST_SEED` to replay): AES-CBC, HMAC and digests of the three
//! hashes, and sealed/opened records of every combination, version and MAC
//! order, byte for byte.

mod common;

use cbc_hmac::{
    AesCbcKey, Backend, Cipher, Combination, Error, HmacKey, MacAlgorithm, MacOrder, Opener,
    ProtocolVersion, RecordConfig, RecordKeys, Sealer, digest_with_backend,
};
use common::rng::Rng;

/// The accelerated backends to test, printing each tested or skipped.
fn accelerated() -> Vec<Backend> {
    let masked = !matches!(cbc_hmac::cpu_override(), Ok(None));
    if let Ok(Some(cpu)) = cbc_hmac::tuning_cpu_override() {
        eprintln!("TESTING: kernels chosen as on {cpu} (CBC_HMAC_TUNING_CPU)");
    }
    let mut list = Vec::new();
    for b in Backend::ALL {
        if b == Backend::Portable {
            continue;
        }
        if b.is_available() {
            eprintln!("TESTING: {b} against portable");
            list.push(b);
        } else if masked {
            eprintln!("SKIPPED: {b} (masked by CBC_HMAC_CPUID_OVERRIDE)");
        } else {
            eprintln!("SKIPPED: {b} (CPU lacks {})", b.feature_names());
        }
    }
    list
}

/// Block counts around every unrolling boundary of the kernels (1, 4, 8
/// and 16 blocks) and a few long runs.
fn block_counts() -> Vec<usize> {
    let mut v: Vec<usize> = (0..=70).collect();
    v.extend([127, 128, 129, 255, 256, 257, 1023, 1024, 1025]);
    v
}

#[test]
fn aes_cbc_matches_portable() {
    let mut rng = Rng::from_env("aes_cbc_matches_portable", 0x5eed_cbc0_4d4c_0001);
    for backend in accelerated() {
        for cipher in Cipher::ALL {
            for &n in &block_counts() {
                let key = rng.bytes(cipher.key_len());
                let iv: [u8; 16] = rng.array();
                let plain = rng.bytes(16 * n);
                let fast = AesCbcKey::with_backend(cipher, &key, backend).unwrap();
                let slow = AesCbcKey::with_backend(cipher, &key, Backend::Portable).unwrap();
                assert_eq!(fast.backend(), backend);

                let mut a = plain.clone();
                let mut b = plain.clone();
                let ca = fast.encrypt(&iv, &mut a).unwrap();
                let cb = slow.encrypt(&iv, &mut b).unwrap();
                assert_eq!(a, b, "{backend} {cipher} encrypt {n} blocks");
                assert_eq!(ca, cb, "{backend} {cipher} encrypt chain {n} blocks");

                // Decrypt random ciphertext too, not only our own.
                let cipher_text = rng.bytes(16 * n);
                let mut a = cipher_text.clone();
                let mut b = cipher_text.clone();
                let da = fast.decrypt(&iv, &mut a).unwrap();
                let db = slow.decrypt(&iv, &mut b).unwrap();
                assert_eq!(a, b, "{backend} {cipher} decrypt {n} blocks");
                assert_eq!(da, db, "{backend} {cipher} decrypt chain {n} blocks");

                // And each decrypts the other's encryption.
                let mut c = plain.clone();
                slow.encrypt(&iv, &mut c).unwrap();
                fast.decrypt(&iv, &mut c).unwrap();
                assert_eq!(c, plain, "{backend} {cipher} round trip {n} blocks");
            }
        }
    }
}

fn message_lengths() -> Vec<usize> {
    let mut v: Vec<usize> = (0..=300).collect();
    for b in (320..=4096).step_by(64) {
        v.extend([b - 1, b, b + 1]);
    }
    v.push(16384);
    v
}

#[test]
fn hmac_and_digest_match_portable() {
    let mut rng = Rng::from_env("hmac_and_digest_match_portable", 0x5eed_cbc0_4d4c_0001);
    for backend in accelerated() {
        for alg in MacAlgorithm::ALL {
            for len in message_lengths() {
                let msg = rng.bytes(len);
                // Keys of every kind: short, block-sized, longer than a
                // block (hashed first, RFC 2104).
                let key_len = match len % 4 {
                    0 => alg.output_len(),
                    1 => rng.below(2 * alg.block_len() + 2),
                    2 => alg.block_len(),
                    _ => alg.block_len() + 1,
                };
                let key = rng.bytes(key_len);
                let fast = HmacKey::with_backend(alg, &key, backend).unwrap();
                let slow = HmacKey::with_backend(alg, &key, Backend::Portable).unwrap();
                let tag = slow.sign(&msg);
                assert_eq!(fast.sign(&msg), tag, "{backend} {alg} len {len}");
                assert_eq!(fast.verify(&msg, tag.as_bytes()), Ok(()));

                // Incremental, split at a random point.
                let cut = rng.below(len + 1);
                let mut ctx = fast.context();
                ctx.update(&msg[..cut]);
                ctx.update(&msg[cut..]);
                assert_eq!(ctx.finish(), tag, "{backend} {alg} len {len} cut {cut}");

                let mut a = [0u8; 64];
                let mut b = [0u8; 64];
                let n = digest_with_backend(alg, &msg, &mut a, backend).unwrap();
                digest_with_backend(alg, &msg, &mut b, Backend::Portable).unwrap();
                assert_eq!(a[..n], b[..n], "{backend} digest {alg} len {len}");
            }
        }
    }
}

fn configs() -> Vec<RecordConfig> {
    let mut v = Vec::new();
    for c in Combination::ALL {
        for ver in ProtocolVersion::ALL {
            if c.allows(ver) {
                for o in MacOrder::ALL {
                    v.push(RecordConfig::new(c, ver, o));
                }
            }
        }
    }
    v
}

/// Plaintext lengths: 0..=300 exhaustively, then the 16- and 64-byte
/// boundaries (and their neighbours) up to 16384; a sample of them in
/// debug builds, where the portable reference is slow.
fn record_lengths(rng: &mut Rng) -> Vec<usize> {
    let mut v: Vec<usize> = (0..=300).collect();
    let stride = if cfg!(debug_assertions) { 16 * 23 } else { 16 };
    let mut b = 304;
    while b <= 16384 {
        v.extend([b - 1, b, b + 1]);
        b += stride;
    }
    if cfg!(debug_assertions) {
        // A random 64-byte boundary too, so the sample moves with the seed.
        let r = 64 * (5 + rng.below(250));
        v.extend([r - 1, r, r + 1]);
    }
    v.extend([16383, 16384]);
    v.retain(|&l| l <= 16384);
    v
}

#[test]
fn records_match_portable() {
    let mut rng = Rng::from_env("records_match_portable", 0x5eed_cbc0_4d4c_0001);
    let backends = accelerated();
    if backends.is_empty() {
        return;
    }
    let lengths = record_lengths(&mut rng);
    for config in configs() {
        let c = config.combination;
        let enc = rng.bytes(c.cipher().key_len());
        let mac = rng.bytes(c.mac().output_len());
        let initial_iv: [u8; 16] = rng.array();
        let keys = RecordKeys {
            enc_key: &enc,
            mac_key: &mac,
            iv: (config.version == ProtocolVersion::Tls10).then_some(&initial_iv[..]),
        };
        let mut reference = Sealer::with_backend(config, keys, Backend::Portable).unwrap();
        let mut reference_opener = Opener::with_backend(config, keys, Backend::Portable).unwrap();
        let mut sealers: Vec<Sealer> = backends
            .iter()
            .map(|&b| Sealer::with_backend(config, keys, b).unwrap())
            .collect();
        let mut openers: Vec<Opener> = backends
            .iter()
            .map(|&b| Opener::with_backend(config, keys, b).unwrap())
            .collect();
        for (i, &len) in lengths.iter().enumerate() {
            let seq = rng.next();
            let ty = 20 + (i % 4) as u8;
            let pt = rng.bytes(len);
            let iv: [u8; 16] = rng.array();
            let offset = reference.payload_offset();
            let seal = |s: &mut Sealer| -> Vec<u8> {
                let mut buf = vec![0u8; s.sealed_len(len) + 7];
                buf[offset..offset + len].copy_from_slice(&pt);
                let n = if config.version == ProtocolVersion::Tls10 {
                    s.seal_in_place(seq, ty, &mut buf, len).unwrap()
                } else {
                    s.seal_in_place_with_iv(seq, ty, &mut buf, len, &iv)
                        .unwrap()
                };
                assert_eq!(n, s.sealed_len(len));
                buf.truncate(n);
                buf
            };
            let expected = seal(&mut reference);
            let what = |b: Backend| format!("{b} {config:?} len {len}");
            // A tampered copy: a bit flipped anywhere (IV, body, MAC or
            // padding) must fail alike on every backend.
            let bit = rng.below(8 * expected.len());
            let mut tampered = expected.clone();
            tampered[bit / 8] ^= 1 << (bit % 8);

            let mut copy = tampered.clone();
            let reference_bad = reference_opener.open_in_place(seq, ty, &mut copy).err();
            let mut copy = expected.clone();
            assert_eq!(
                reference_opener.open_in_place(seq, ty, &mut copy).unwrap(),
                &pt[..]
            );
            for ((&b, s), o) in backends.iter().zip(&mut sealers).zip(&mut openers) {
                let record = seal(s);
                assert!(record == expected, "seal differs: {}", what(b));
                // The backend opens the portable record (the same bytes, so
                // portable opened the backend's record above) and rejects
                // the tampered one with the same verdict.
                let mut copy = tampered.clone();
                let bad = o.open_in_place(seq, ty, &mut copy).err();
                assert_eq!(bad, reference_bad, "tampered: {}", what(b));
                assert_eq!(bad, Some(Error::BadRecordMac), "tampered: {}", what(b));
                let mut copy = expected.clone();
                let opened = o.open_in_place(seq, ty, &mut copy);
                assert_eq!(opened.as_deref(), Ok(&pt[..]), "open: {}", what(b));
            }
        }
    }
}

/// MAC-then-encrypt records with every amount of padding (0..=255 bytes),
/// built by hand with the portable primitives, open alike everywhere;
/// wrong padding bytes are rejected alike.
#[test]
fn long_padding_opens_alike() {
    let mut rng = Rng::from_env("long_padding_opens_alike", 0x5eed_cbc0_4d4c_0001);
    let backends = accelerated();
    for c in Combination::ALL {
        let m = c.mac().output_len();
        let version = ProtocolVersion::Tls12;
        let config = RecordConfig::new(c, version, MacOrder::MacThenEncrypt);
        let enc = rng.bytes(c.cipher().key_len());
        let mac_key = rng.bytes(m);
        let keys = RecordKeys {
            enc_key: &enc,
            mac_key: &mac_key,
            iv: None,
        };
        let aes = AesCbcKey::with_backend(c.cipher(), &enc, Backend::Portable).unwrap();
        let hmac = HmacKey::with_backend(c.mac(), &mac_key, Backend::Portable).unwrap();
        let step = if cfg!(debug_assertions) { 7 } else { 1 };
        for pad in (0..=255usize).step_by(step) {
            let base = rng.below(400);
            // Round the plaintext so that the body is whole blocks.
            let len = base + (16 - (base + m + pad + 1) % 16) % 16;
            let pt = rng.bytes(len);
            let seq = rng.next();
            let mut header = [0u8; 13];
            header[..8].copy_from_slice(&seq.to_be_bytes());
            header[8] = 23;
            header[9..11].copy_from_slice(&[3, 3]);
            header[11..].copy_from_slice(&(len as u16).to_be_bytes());
            let mut mac_input = header.to_vec();
            mac_input.extend_from_slice(&pt);
            let mut body = pt.clone();
            body.extend_from_slice(hmac.sign(&mac_input).as_bytes());
            body.extend(std::iter::repeat_n(pad as u8, pad + 1));
            assert_eq!(body.len() % 16, 0);
            let iv: [u8; 16] = rng.array();
            let wrong = rng.below(pad + 1);
            let mut bad_body = body.clone();
            bad_body[len + m + wrong] ^= 0x40;
            let mut record = iv.to_vec();
            let mut bad_record = iv.to_vec();
            aes.encrypt(&iv, &mut body).unwrap();
            aes.encrypt(&iv, &mut bad_body).unwrap();
            record.extend_from_slice(&body);
            bad_record.extend_from_slice(&bad_body);

            for &b in backends.iter().chain([&Backend::Portable]) {
                let mut opener = Opener::with_backend(config, keys, b).unwrap();
                let mut copy = record.clone();
                let opened = opener.open_in_place(seq, 23, &mut copy);
                assert_eq!(opened.as_deref(), Ok(&pt[..]), "{b} {c} pad {pad}");
                let mut copy = bad_record.clone();
                assert_eq!(
                    opener.open_in_place(seq, 23, &mut copy),
                    Err(Error::BadRecordMac),
                    "{b} {c} pad {pad} wrong byte {wrong}"
                );
            }
        }
    }
}

#[test]
fn backend_names_round_trip() {
    for b in Backend::ALL {
        assert_eq!(Backend::from_name(b.name()), Some(b));
        assert_eq!(b.is_available(), Backend::available().any(|x| x == b));
    }
    assert!(Backend::Portable.is_available());
    assert_eq!(Backend::detect(), Backend::available().next().unwrap());
}
