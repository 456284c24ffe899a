//! Record round trips, tampering and bad inputs, on every available backend.

use cbc_hmac::{
    Backend, Combination, Error, MacOrder, Opener, ProtocolVersion, RecordConfig, RecordKeys,
    Sealer,
};
use proptest::prelude::*;

/// Every (combination, version, order) the crate defines.
fn configs() -> impl Iterator<Item = RecordConfig> {
    Combination::ALL.into_iter().flat_map(|c| {
        ProtocolVersion::ALL
            .into_iter()
            .filter(move |v| c.allows(*v))
            .flat_map(move |v| MacOrder::ALL.map(|o| RecordConfig::new(c, v, o)))
    })
}

struct Keys {
    enc: Vec<u8>,
    mac: Vec<u8>,
    iv: [u8; 16],
}

impl Keys {
    fn new(config: RecordConfig, seed: u8) -> Self {
        let c = config.combination;
        Keys {
            enc: (0..c.cipher().key_len())
                .map(|i| seed ^ (i as u8).wrapping_mul(31))
                .collect(),
            mac: (0..c.mac().output_len())
                .map(|i| seed.wrapping_add(i as u8).wrapping_mul(7))
                .collect(),
            iv: [seed.wrapping_mul(3); 16],
        }
    }

    fn record_keys(&self, config: RecordConfig) -> RecordKeys<'_> {
        RecordKeys {
            enc_key: &self.enc,
            mac_key: &self.mac,
            iv: (config.version == ProtocolVersion::Tls10).then_some(&self.iv[..]),
        }
    }
}

fn pair(config: RecordConfig, keys: &Keys, backend: Backend) -> (Sealer, Opener) {
    let k = keys.record_keys(config);
    (
        Sealer::with_backend(config, k, backend).unwrap(),
        Opener::with_backend(config, k, backend).unwrap(),
    )
}

fn plaintext(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn seal(sealer: &mut Sealer, seq: u64, ty: u8, pt: &[u8]) -> Vec<u8> {
    let mut buf = vec![0u8; sealer.sealed_len(pt.len())];
    let n = sealer.seal(seq, ty, pt, &mut buf).unwrap();
    assert_eq!(n, buf.len(), "sealed_len must be exact");
    buf
}

#[test]
fn every_length_round_trips_on_every_backend() {
    for backend in Backend::available() {
        eprintln!("backend {backend}");
        for config in configs() {
            let keys = Keys::new(config, 1);
            let (mut sealer, mut opener) = pair(config, &keys, backend);
            assert_eq!(sealer.backend(), backend);
            assert_eq!(opener.backend(), backend);
            let lengths = (0..=300)
                .chain((301..=16384).step_by(251))
                .chain([1023, 1024, 1025, 8191, 8192, 16383, 16384]);
            for (seq, len) in lengths.enumerate() {
                let pt = plaintext(len, seq as u64);
                let mut record = seal(&mut sealer, seq as u64, 23, &pt);
                let opened = opener
                    .open_in_place(seq as u64, 23, &mut record)
                    .unwrap_or_else(|e| panic!("{config:?} len {len}: {e}"));
                assert_eq!(opened, &pt[..], "{config:?} len {len}");
            }
        }
    }
}

#[test]
fn explicit_ivs_are_fresh_and_sent_in_clear() {
    for config in configs().filter(|c| c.version != ProtocolVersion::Tls10) {
        let keys = Keys::new(config, 2);
        let (mut sealer, _) = pair(config, &keys, Backend::detect());
        let a = seal(&mut sealer, 0, 23, b"same");
        let b = seal(&mut sealer, 0, 23, b"same");
        assert_ne!(a[..16], b[..16], "explicit IVs repeat");
        assert_ne!(a, b);
        // Across several of the generator's batches, no IV repeats.
        let ivs: std::collections::HashSet<Vec<u8>> = (0..100)
            .map(|i| seal(&mut sealer, i, 23, b"x")[..16].to_vec())
            .collect();
        assert_eq!(ivs.len(), 100);
        // Two sealers draw independent generator keys.
        let (mut other, _) = pair(config, &keys, Backend::detect());
        assert_ne!(seal(&mut other, 0, 23, b"same")[..16], a[..16]);
    }
}

#[test]
fn tls10_chains_the_iv_across_records() {
    for config in configs().filter(|c| c.version == ProtocolVersion::Tls10) {
        let keys = Keys::new(config, 3);
        let (mut sealer, mut opener) = pair(config, &keys, Backend::detect());
        let first = seal(&mut sealer, 0, 23, b"first record");
        let second = seal(&mut sealer, 1, 23, b"second record");
        // Opening the second record first fails: its IV is the first
        // record's last ciphertext block.
        let (_, mut fresh) = pair(config, &keys, Backend::detect());
        let mut s = second.clone();
        assert_eq!(fresh.open_in_place(1, 23, &mut s), Err(Error::BadRecordMac));
        // In order, both open, and a failure does not advance the chain.
        let mut f = first.clone();
        let mut tampered = first.clone();
        *tampered.last_mut().unwrap() ^= 1;
        assert_eq!(
            opener.open_in_place(0, 23, &mut tampered),
            Err(Error::BadRecordMac)
        );
        assert_eq!(
            opener.open_in_place(0, 23, &mut f).unwrap(),
            b"first record"
        );
        let mut s = second.clone();
        assert_eq!(
            opener.open_in_place(1, 23, &mut s).unwrap(),
            b"second record"
        );
    }
}

#[test]
fn header_fields_are_authenticated() {
    for config in configs() {
        let keys = Keys::new(config, 4);
        let (mut sealer, mut opener) = pair(config, &keys, Backend::detect());
        let record = seal(&mut sealer, 7, 23, b"payload");
        // Wrong sequence number, wrong content type.
        for (seq, ty) in [(8, 23), (7, 22), (7 | 1 << 48, 23)] {
            let mut r = record.clone();
            assert_eq!(
                opener.open_in_place(seq, ty, &mut r),
                Err(Error::BadRecordMac),
                "{config:?}"
            );
        }
        // Another version's opener with the same keys rejects it too.
        let other_version = ProtocolVersion::ALL.into_iter().find(|v| {
            *v != config.version
                && config.combination.allows(*v)
                && v.explicit_iv_len() == config.version.explicit_iv_len()
        });
        if let Some(v) = other_version {
            let other = RecordConfig {
                version: v,
                ..config
            };
            let (_, mut o) = pair(other, &keys, Backend::detect());
            let mut r = record.clone();
            assert_eq!(o.open_in_place(7, 23, &mut r), Err(Error::BadRecordMac));
        }
    }
}

/// Every single-bit flip of a record is rejected, for small payloads
/// exhaustively (IV, body, MAC and padding all get hit).
#[test]
fn every_single_bit_flip_is_rejected() {
    for backend in Backend::available() {
        for config in configs() {
            let keys = Keys::new(config, 5);
            for len in [0usize, 1, 15, 16, 33, 64] {
                let (mut sealer, mut opener) = pair(config, &keys, backend);
                let pt = plaintext(len, 9);
                let record = seal(&mut sealer, 1, 23, &pt);
                for bit in 0..record.len() * 8 {
                    let mut r = record.clone();
                    r[bit / 8] ^= 1 << (bit % 8);
                    // The opener's TLS 1.0 chain does not advance on failure,
                    // so one opener serves every attempt.
                    let got = opener.open_in_place(1, 23, &mut r).map(|p| p.to_vec());
                    assert_eq!(
                        got,
                        Err(Error::BadRecordMac),
                        "{config:?} len {len} bit {bit}"
                    );
                }
                let mut r = record.clone();
                assert_eq!(opener.open_in_place(1, 23, &mut r).unwrap(), &pt[..]);
            }
        }
    }
}

#[test]
fn truncated_and_extended_records_are_rejected() {
    for config in configs() {
        let keys = Keys::new(config, 6);
        let (mut sealer, mut opener) = pair(config, &keys, Backend::detect());
        let record = seal(&mut sealer, 0, 23, &plaintext(100, 1));
        for cut in 0..record.len() {
            let mut r = record[..cut].to_vec();
            let err = opener.open_in_place(0, 23, &mut r).unwrap_err();
            assert!(
                matches!(
                    err,
                    Error::BadRecordMac
                        | Error::RecordTooShort { .. }
                        | Error::RecordNotBlockAligned { .. }
                ),
                "{config:?} cut {cut}: {err:?}"
            );
        }
        for extra in [1usize, 16, 32] {
            let mut r = record.clone();
            r.extend(std::iter::repeat_n(0u8, extra));
            assert!(opener.open_in_place(0, 23, &mut r).is_err());
        }
    }
}

#[test]
fn forged_padding_is_one_error() {
    // MAC-then-encrypt, explicit IV: decrypt a record, rewrite its padding
    // to a longer valid-looking one or a broken one, re-encrypt with the
    // same key: both fail with the same error as a bad MAC.
    use cbc_hmac::{AesCbcKey, Cipher};
    let config = RecordConfig::new(
        Combination::Aes128CbcSha1,
        ProtocolVersion::Tls12,
        MacOrder::MacThenEncrypt,
    );
    let keys = Keys::new(config, 7);
    let (mut sealer, mut opener) = pair(config, &keys, Backend::detect());
    let aes = AesCbcKey::new(Cipher::Aes128Cbc, &keys.enc).unwrap();
    let record = seal(&mut sealer, 0, 23, &plaintext(64, 2));
    let (iv, body) = record.split_at(16);
    let mut plain = body.to_vec();
    aes.decrypt(iv, &mut plain).unwrap();
    let last = plain.len() - 1;
    let pad = plain[last];
    for forge in 0..4 {
        let mut p = plain.clone();
        match forge {
            0 => p[last] = pad + 16,                  // claims more padding
            1 => p[last - 1] ^= 0x40,                 // a wrong padding byte (pad > 0)
            2 => p[last] = 255,                       // longer than the record
            _ => p[last - usize::from(pad) - 1] ^= 1, // last MAC byte
        }
        if forge == 1 && pad == 0 {
            continue;
        }
        let mut forged = iv.to_vec();
        let mut enc = p.clone();
        aes.encrypt(iv, &mut enc).unwrap();
        forged.extend(enc);
        assert_eq!(
            opener.open_in_place(0, 23, &mut forged),
            Err(Error::BadRecordMac),
            "forgery {forge}"
        );
    }
}

#[test]
fn accepts_all_padding_lengths_on_receipt() {
    // A peer may pad with up to 255 bytes (RFC 5246 6.2.3.2); build such
    // records by hand from the primitives and open them.
    use cbc_hmac::{AesCbcKey, HmacKey};
    for config in configs().filter(|c| c.mac_order == MacOrder::MacThenEncrypt) {
        let keys = Keys::new(config, 8);
        let c = config.combination;
        let aes = AesCbcKey::new(c.cipher(), &keys.enc).unwrap();
        let mac = HmacKey::new(c.mac(), &keys.mac).unwrap();
        let version = config.version.wire();
        for data_len in [0usize, 5, 40] {
            let pt = plaintext(data_len, 3);
            let mut ctx = mac.context();
            let mut header = [0u8; 13];
            header[..8].copy_from_slice(&9u64.to_be_bytes());
            header[8] = 23;
            header[9..11].copy_from_slice(&version);
            header[11..].copy_from_slice(&(data_len as u16).to_be_bytes());
            ctx.update(&header);
            ctx.update(&pt);
            let tag = ctx.finish();
            for pad in 0..=255usize {
                let total = data_len + tag.len() + pad + 1;
                if !total.is_multiple_of(16) {
                    continue;
                }
                let mut body = pt.clone();
                body.extend_from_slice(tag.as_bytes());
                body.extend(std::iter::repeat_n(pad as u8, pad + 1));
                // TLS 1.0 chains from the keys' initial IV; the others
                // send an explicit one.
                let tls10 = config.version == ProtocolVersion::Tls10;
                let iv = if tls10 { keys.iv } else { [0x5au8; 16] };
                aes.encrypt(&iv, &mut body).unwrap();
                let mut record = if tls10 { Vec::new() } else { iv.to_vec() };
                record.extend(body);
                // A fresh opener each time: TLS 1.0's chain advances on success.
                let (_, mut opener) = pair(config, &keys, Backend::detect());
                let opened = opener.open_in_place(9, 23, &mut record);
                assert_eq!(
                    opened.map(|p| p.to_vec()),
                    Ok(pt.clone()),
                    "{config:?} pad {pad}"
                );
            }
        }
    }
}

#[test]
fn bad_configuration_and_keys_are_typed_errors() {
    let tls12 = RecordConfig::new(
        Combination::Aes128CbcSha1,
        ProtocolVersion::Tls12,
        MacOrder::MacThenEncrypt,
    );
    let k = |enc: &'static [u8], mac: &'static [u8], iv: Option<&'static [u8]>| RecordKeys {
        enc_key: enc,
        mac_key: mac,
        iv,
    };
    let err = |r: Result<Sealer, Error>| r.err().unwrap();
    assert_eq!(
        err(Sealer::new(tls12, k(&[0; 15], &[0; 20], None))),
        Error::InvalidKeyLength {
            expected: 16,
            actual: 15
        }
    );
    assert_eq!(
        err(Sealer::new(tls12, k(&[0; 16], &[0; 32], None))),
        Error::InvalidKeyLength {
            expected: 20,
            actual: 32
        }
    );
    assert_eq!(
        err(Sealer::new(tls12, k(&[0; 16], &[0; 20], Some(&[0; 16])))),
        Error::IvMismatch {
            version: ProtocolVersion::Tls12
        }
    );
    let tls10 = RecordConfig {
        version: ProtocolVersion::Tls10,
        ..tls12
    };
    assert_eq!(
        err(Sealer::new(tls10, k(&[0; 16], &[0; 20], None))),
        Error::IvMismatch {
            version: ProtocolVersion::Tls10
        }
    );
    assert_eq!(
        err(Sealer::new(tls10, k(&[0; 16], &[0; 20], Some(&[0; 8])))),
        Error::InvalidIvLength {
            expected: 16,
            actual: 8
        }
    );
    let sha256_tls11 = RecordConfig::new(
        Combination::Aes256CbcSha256,
        ProtocolVersion::Tls11,
        MacOrder::MacThenEncrypt,
    );
    assert_eq!(
        Opener::new(sha256_tls11, k(&[0; 32], &[0; 32], None))
            .err()
            .unwrap(),
        Error::UnsupportedVersion {
            combination: Combination::Aes256CbcSha256,
            version: ProtocolVersion::Tls11
        }
    );

    let mut sealer = Sealer::new(tls12, k(&[0; 16], &[0; 20], None)).unwrap();
    let mut small = [0u8; 47];
    assert_eq!(
        sealer.seal_in_place(0, 23, &mut small, 0),
        Err(Error::BufferTooSmall {
            needed: 48,
            actual: 47
        })
    );
    let mut big = vec![0u8; 20000];
    assert_eq!(
        sealer.seal_in_place(0, 23, &mut big, 16385),
        Err(Error::PlaintextTooLong {
            len: 16385,
            max: 16384
        })
    );
    assert_eq!(
        sealer.seal_in_place_with_iv(0, 23, &mut big, 10, &[0; 12]),
        Err(Error::InvalidIvLength {
            expected: 16,
            actual: 12
        })
    );
    let mut tls10_sealer = Sealer::new(tls10, k(&[0; 16], &[0; 20], Some(&[0; 16]))).unwrap();
    assert_eq!(
        tls10_sealer.seal_in_place_with_iv(0, 23, &mut big, 10, &[0; 16]),
        Err(Error::IvMismatch {
            version: ProtocolVersion::Tls10
        })
    );

    let mut opener = Opener::new(tls12, k(&[0; 16], &[0; 20], None)).unwrap();
    assert_eq!(opener.min_fragment_len(), 48);
    let mut empty = [0u8; 0];
    assert_eq!(
        opener.open_in_place(0, 23, &mut empty),
        Err(Error::RecordTooShort { len: 0, min: 48 })
    );
    let mut unaligned = [0u8; 50];
    assert_eq!(
        opener.open_in_place(0, 23, &mut unaligned),
        Err(Error::RecordNotBlockAligned { len: 50 })
    );
    let mut huge = vec![0u8; (1 << 14) + 2048 + 16];
    assert_eq!(
        opener.open_in_place(0, 23, &mut huge),
        Err(Error::RecordTooLong {
            len: (1 << 14) + 2064,
            max: (1 << 14) + 2048
        })
    );
    // The largest fragment is accepted as far as lengths go.
    let mut max = vec![0u8; (1 << 14) + 2048];
    assert_eq!(
        opener.open_in_place(0, 23, &mut max),
        Err(Error::BadRecordMac)
    );

    let etm = RecordConfig {
        mac_order: MacOrder::EncryptThenMac,
        ..tls12
    };
    let mut etm_opener = Opener::new(etm, k(&[0; 16], &[0; 20], None)).unwrap();
    assert_eq!(etm_opener.min_fragment_len(), 52);
    let mut unaligned = [0u8; 16 + 20 + 20];
    assert_eq!(
        etm_opener.open_in_place(0, 23, &mut unaligned),
        Err(Error::RecordNotBlockAligned { len: 56 })
    );

    // Every error has a message.
    for e in [
        Error::BadRecordMac,
        Error::RecordTooShort { len: 1, min: 2 },
    ] {
        assert!(!e.to_string().is_empty());
    }
}

#[test]
fn unavailable_backends_are_refused() {
    // Every backend either builds or says it is unavailable.
    let config = RecordConfig::new(
        Combination::Aes128CbcSha1,
        ProtocolVersion::Tls12,
        MacOrder::MacThenEncrypt,
    );
    let keys = Keys::new(config, 1);
    for backend in Backend::ALL {
        let r = Sealer::with_backend(config, keys.record_keys(config), backend);
        if backend.is_available() {
            assert_eq!(r.unwrap().backend(), backend);
        } else {
            eprintln!("SKIPPED: backend {backend} is not available on this CPU");
            assert_eq!(r.err(), Some(Error::BackendUnavailable { backend }));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn random_records_round_trip_and_reject_a_flipped_bit(
        config_index in 0usize..32,
        key_seed in any::<u8>(),
        seq in any::<u64>(),
        ty in any::<u8>(),
        len in 0usize..=16384,
        flip in any::<prop::sample::Index>(),
    ) {
        let all: Vec<RecordConfig> = configs().collect();
        let config = all[config_index % all.len()];
        let keys = Keys::new(config, key_seed);
        let backends: Vec<Backend> = Backend::available().collect();
        let backend = backends[config_index % backends.len()];
        let (mut sealer, mut opener) = pair(config, &keys, backend);
        let pt = plaintext(len, seq);
        let record = seal(&mut sealer, seq, ty, &pt);
        let mut r = record.clone();
        prop_assert_eq!(opener.open_in_place(seq, ty, &mut r).unwrap(), &pt[..]);

        let (_, mut fresh) = pair(config, &keys, backend);
        let bit = flip.index(record.len() * 8);
        let mut r = record.clone();
        r[bit / 8] ^= 1 << (bit % 8);
        prop_assert_eq!(fresh.open_in_place(seq, ty, &mut r).map(|p| p.len()), Err(Error::BadRecordMac));
    }

    #[test]
    fn arbitrary_bytes_never_open(
        config_index in 0usize..32,
        bytes in prop::collection::vec(any::<u8>(), 0..400),
    ) {
        let all: Vec<RecordConfig> = configs().collect();
        let config = all[config_index % all.len()];
        let keys = Keys::new(config, 1);
        let (_, mut opener) = pair(config, &keys, Backend::detect());
        let mut r = bytes;
        prop_assert!(opener.open_in_place(0, 23, &mut r).is_err());
    }
}

#[test]
fn rejected_records_leave_no_plaintext() {
    // A rejected record that was decrypted is wiped: after the open, the
    // region after the explicit IV holds zeros, not unauthenticated
    // plaintext. An encrypt-then-MAC record whose MAC fails is never
    // decrypted and stays as it came.
    use cbc_hmac::{AesCbcKey, HmacKey};
    for backend in Backend::available() {
        for config in configs() {
            let keys = Keys::new(config, 11);
            let (mut sealer, mut opener) = pair(config, &keys, backend);
            let pt = plaintext(100, 5);
            let record = seal(&mut sealer, 4, 23, &pt);
            let offset = config.version.explicit_iv_len();
            let m = config.combination.mac().output_len();
            // The wrong sequence number: a bad MAC over a body that
            // decrypts to the whole plaintext.
            let mut buf = record.clone();
            assert_eq!(
                opener.open_in_place(5, 23, &mut buf),
                Err(Error::BadRecordMac),
                "{config:?} on {backend}"
            );
            match config.mac_order {
                MacOrder::MacThenEncrypt => assert!(
                    buf[offset..].iter().all(|&b| b == 0),
                    "{config:?} on {backend}: plaintext left after a reject"
                ),
                MacOrder::EncryptThenMac => {
                    assert_eq!(buf, record, "{config:?} on {backend}: not decrypted")
                }
            }
            if config.mac_order == MacOrder::MacThenEncrypt
                || config.version == ProtocolVersion::Tls10
            {
                continue;
            }
            // Encrypt-then-MAC with a right MAC over a bad padding: it is
            // decrypted, rejected, and wiped up to the MAC.
            let c = config.combination;
            let aes = AesCbcKey::new(c.cipher(), &keys.enc).unwrap();
            let mac = HmacKey::new(c.mac(), &keys.mac).unwrap();
            let mut body = plaintext(107, 6);
            body.extend([4, 4, 4, 9, 4]);
            let iv = [0x33u8; 16];
            aes.encrypt(&iv, &mut body).unwrap();
            let mut forged = iv.to_vec();
            forged.extend(&body);
            let mut header = [0u8; 13];
            header[..8].copy_from_slice(&4u64.to_be_bytes());
            header[8] = 23;
            header[9..11].copy_from_slice(&config.version.wire());
            header[11..].copy_from_slice(&(forged.len() as u16).to_be_bytes());
            let mut ctx = mac.context();
            ctx.update(&header);
            ctx.update(&forged);
            let tag = ctx.finish();
            forged.extend_from_slice(tag.as_bytes());
            assert_eq!(
                opener.open_in_place(4, 23, &mut forged),
                Err(Error::BadRecordMac),
                "{config:?} on {backend}: bad padding"
            );
            let end = forged.len() - m;
            assert!(
                forged[offset..end].iter().all(|&b| b == 0),
                "{config:?} on {backend}: plaintext left after a padding reject"
            );
            assert_eq!(&forged[end..], tag.as_bytes());
        }
    }
}
