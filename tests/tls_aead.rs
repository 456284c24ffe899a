//! The legacy-TLS-AEAD form (`TlsAead`): round trips, byte-identical output
//! against `Sealer`/`Opener`, records built by hand with every padding
//! length, tampering and bad inputs, on every available backend.

use cbc_hmac::record::{MAX_FRAGMENT_LEN, MAX_PLAINTEXT_LEN};
use cbc_hmac::{
    AesCbcKey, Backend, Combination, Error, HmacKey, MacOrder, Opener, ProtocolVersion,
    RecordConfig, RecordKeys, Sealer, TlsAead, TlsAeadAlgorithm, TlsAeadIv,
};

/// xorshift64: reproducible test data.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }

    fn block(&mut self) -> [u8; 16] {
        self.bytes(16).try_into().unwrap()
    }

    fn ad(&mut self) -> [u8; 11] {
        self.bytes(11).try_into().unwrap()
    }
}

/// A key laid out as BoringSSL does: `mac_key || enc_key (|| iv)`.
struct Key {
    mac: Vec<u8>,
    enc: Vec<u8>,
    iv: [u8; 16],
}

impl Key {
    fn new(rng: &mut Rng, combination: Combination) -> Self {
        Key {
            mac: rng.bytes(combination.mac().output_len()),
            enc: rng.bytes(combination.cipher().key_len()),
            iv: rng.block(),
        }
    }

    fn bytes(&self, algorithm: TlsAeadAlgorithm) -> Vec<u8> {
        let mut k = [self.mac.clone(), self.enc.clone()].concat();
        if algorithm.iv() == TlsAeadIv::Implicit {
            k.extend_from_slice(&self.iv);
        }
        assert_eq!(k.len(), algorithm.key_len());
        k
    }
}

/// Sealed outputs built by hand from `AesCbcKey` and `HmacKey` on the
/// portable backend.
struct Builder {
    mac: HmacKey,
    aes: AesCbcKey,
}

impl Builder {
    fn new(combination: Combination, key: &Key) -> Self {
        Builder {
            mac: HmacKey::with_backend(combination.mac(), &key.mac, Backend::Portable).unwrap(),
            aes: AesCbcKey::with_backend(combination.cipher(), &key.enc, Backend::Portable)
                .unwrap(),
        }
    }

    /// `CBC(pt || HMAC(ad || len || pt) || padding)` from `iv`, with `pad`
    /// padding bytes (plus the length byte; the total must make whole
    /// blocks), damaged by `damage` before encryption. Returns the
    /// ciphertext and its last block.
    fn seal(
        &self,
        iv: &[u8; 16],
        ad: &[u8; 11],
        plaintext: &[u8],
        pad: u8,
        damage: impl FnOnce(&mut [u8]),
    ) -> (Vec<u8>, [u8; 16]) {
        let mut ctx = self.mac.context();
        ctx.update(ad);
        ctx.update(&(plaintext.len() as u16).to_be_bytes());
        ctx.update(plaintext);
        let mut body = plaintext.to_vec();
        body.extend_from_slice(ctx.finish().as_bytes());
        body.extend(std::iter::repeat_n(pad, pad as usize + 1));
        assert!(body.len().is_multiple_of(16), "padding must make blocks");
        damage(&mut body);
        let next = self.aes.encrypt(iv, &mut body).unwrap();
        (body, next)
    }
}

/// A sealed output built by hand with `pad` padding bytes.
fn reference(
    combination: Combination,
    key: &Key,
    iv: &[u8; 16],
    ad: &[u8; 11],
    plaintext: &[u8],
    pad: u8,
) -> (Vec<u8>, [u8; 16]) {
    Builder::new(combination, key).seal(iv, ad, plaintext, pad, |_| {})
}

/// A change to a decrypted body.
type Damage<'a> = &'a dyn Fn(&mut [u8]);

/// The least padding for a plaintext of `len` bytes.
fn least_padding(combination: Combination, len: usize) -> u8 {
    (15 - (len + combination.mac().output_len()) % 16) as u8
}

fn ad_for(seq: u64, content_type: u8, version: [u8; 2]) -> [u8; 11] {
    let mut ad = [0u8; 11];
    ad[..8].copy_from_slice(&seq.to_be_bytes());
    ad[8] = content_type;
    ad[9..].copy_from_slice(&version);
    ad
}

fn nonce_for(algorithm: TlsAeadAlgorithm, iv: &[u8; 16]) -> &[u8] {
    &iv[..algorithm.nonce_len()]
}

fn lengths() -> impl Iterator<Item = usize> {
    (0..=80)
        .chain((81..=1100).step_by(37))
        .chain([4095, 4096, 4097, 16383, 16384])
}

#[test]
fn the_algorithms_are_laid_out_as_in_boringssl() {
    use TlsAeadAlgorithm as A;
    // Key, nonce and overhead as BoringSSL's and aws-lc's EVP_AEAD tables.
    let table = [
        (A::AES_128_CBC_SHA1_TLS, 20 + 16, 16, 16 + 20),
        (
            A::AES_128_CBC_SHA1_TLS_IMPLICIT_IV,
            20 + 16 + 16,
            0,
            16 + 20,
        ),
        (A::AES_256_CBC_SHA1_TLS, 20 + 32, 16, 16 + 20),
        (
            A::AES_256_CBC_SHA1_TLS_IMPLICIT_IV,
            20 + 32 + 16,
            0,
            16 + 20,
        ),
        (A::AES_128_CBC_SHA256_TLS, 32 + 16, 16, 16 + 32),
        (
            A::AES_128_CBC_SHA256_TLS_IMPLICIT_IV,
            32 + 16 + 16,
            0,
            16 + 32,
        ),
        (A::AES_256_CBC_SHA256_TLS, 32 + 32, 16, 16 + 32),
        (
            A::AES_256_CBC_SHA256_TLS_IMPLICIT_IV,
            32 + 32 + 16,
            0,
            16 + 32,
        ),
        (A::AES_256_CBC_SHA384_TLS, 48 + 32, 16, 16 + 48),
        (
            A::AES_256_CBC_SHA384_TLS_IMPLICIT_IV,
            48 + 32 + 16,
            0,
            16 + 48,
        ),
    ];
    assert_eq!(table.map(|t| t.0), A::ALL);
    for (a, key_len, nonce_len, overhead) in table {
        assert_eq!(a.key_len(), key_len, "{a}");
        assert_eq!(a.nonce_len(), nonce_len, "{a}");
        assert_eq!(a.max_overhead(), overhead, "{a}");
        assert!(a.max_overhead() <= A::MAX_OVERHEAD);
        assert_eq!(a.mac_len(), a.combination().mac().output_len());
        for len in 0..=600 {
            let n = a.sealed_len(len);
            assert!(n.is_multiple_of(16) && n > len + a.mac_len(), "{a} {len}");
            assert!(n - len <= a.max_overhead(), "{a} {len}");
        }
        // Names: BoringSSL's test names and function names.
        assert_eq!(a.to_string(), a.name());
        assert_eq!(a.name().parse::<A>(), Ok(a));
        let function = format!("EVP_aead_{}", a.name().replace('-', "_"));
        assert_eq!(function.parse::<A>(), Ok(a), "{function}");
        assert_eq!(function.to_uppercase().parse::<A>(), Ok(a), "{function}");
        assert_eq!(A::new(a.combination(), a.iv()), a);
    }
    assert_eq!(
        A::AES_128_CBC_SHA1_TLS_IMPLICIT_IV.name(),
        "aes-128-cbc-sha1-tls-implicit-iv"
    );
    for bad in [
        "",
        "aes-128-cbc-sha1",
        "EVP_aead_",
        "aes-128-gcm",
        "aes-128-cbc-sha1-tlsx",
    ] {
        assert_eq!(bad.parse::<A>().unwrap_err().input(), bad);
    }
}

#[test]
fn round_trips_against_records_built_by_hand_on_every_backend() {
    let mut rng = Rng(0x1234_5678_9abc_def1);
    for backend in Backend::available() {
        eprintln!("backend {backend}");
        for algorithm in TlsAeadAlgorithm::ALL {
            let c = algorithm.combination();
            let key = Key::new(&mut rng, c);
            let k = key.bytes(algorithm);
            let mut sealer = TlsAead::with_backend(algorithm, &k, backend).unwrap();
            let mut opener = TlsAead::with_backend(algorithm, &k, backend).unwrap();
            assert_eq!(sealer.backend(), backend);
            assert_eq!(sealer.algorithm(), algorithm);
            let mut chain = key.iv;
            for len in lengths() {
                let plaintext = rng.bytes(len);
                let ad = rng.ad();
                let iv = match algorithm.iv() {
                    TlsAeadIv::Explicit => rng.block(),
                    TlsAeadIv::Implicit => chain,
                };
                let nonce = nonce_for(algorithm, &iv);
                let (expected, next) =
                    reference(c, &key, &iv, &ad, &plaintext, least_padding(c, len));
                chain = next;
                let mut out = vec![0u8; sealer.sealed_len(len)];
                let n = sealer.seal(nonce, &ad, &plaintext, &mut out).unwrap();
                assert_eq!(n, out.len(), "{algorithm} {len}: sealed_len is exact");
                assert!(out == expected, "{algorithm} on {backend}, {len} bytes");
                let opened = opener.open_in_place(nonce, &ad, &mut out).unwrap();
                assert!(opened == plaintext, "{algorithm} on {backend}, {len} bytes");
            }
        }
    }
}

#[test]
fn in_place_and_copying_forms_agree() {
    let mut rng = Rng(77);
    for algorithm in TlsAeadAlgorithm::ALL {
        let key = Key::new(&mut rng, algorithm.combination()).bytes(algorithm);
        let mut a = TlsAead::new(algorithm, &key).unwrap();
        let mut b = TlsAead::new(algorithm, &key).unwrap();
        for len in [0, 1, 31, 64, 1000] {
            let plaintext = rng.bytes(len);
            let ad = rng.ad();
            let iv = rng.block();
            let nonce = nonce_for(algorithm, &iv);
            let mut copied = vec![0xa5u8; a.sealed_len(len) + 7];
            let n = a.seal(nonce, &ad, &plaintext, &mut copied).unwrap();
            let mut in_place = plaintext.clone();
            in_place.resize(b.sealed_len(len), 0);
            assert_eq!(b.seal_in_place(nonce, &ad, &mut in_place, len), Ok(n));
            assert_eq!(copied[..n], in_place[..]);
            assert!(copied[n..].iter().all(|&x| x == 0xa5), "wrote past the end");

            let ciphertext = in_place.clone();
            let mut out = vec![0u8; n + 3];
            assert_eq!(a.open(nonce, &ad, &ciphertext, &mut out), Ok(len));
            assert_eq!(out[..len], plaintext[..]);
            let opened = b.open_in_place(nonce, &ad, &mut in_place).unwrap();
            assert_eq!(opened, &plaintext[..]);
        }
    }
}

/// Every (combination, explicit-IV version) a `Sealer` allows.
fn explicit_iv_configs() -> impl Iterator<Item = RecordConfig> {
    Combination::ALL.into_iter().flat_map(|c| {
        ProtocolVersion::ALL
            .into_iter()
            .filter(move |v| *v != ProtocolVersion::Tls10 && c.allows(*v))
            .map(move |v| RecordConfig::new(c, v, MacOrder::MacThenEncrypt))
    })
}

#[test]
fn explicit_iv_form_is_byte_identical_to_sealer_and_opener() {
    let mut rng = Rng(0xfeed_f00d);
    for backend in Backend::available() {
        for config in explicit_iv_configs() {
            let c = config.combination;
            let algorithm = TlsAeadAlgorithm::new(c, TlsAeadIv::Explicit);
            let key = Key::new(&mut rng, c);
            let keys = RecordKeys {
                enc_key: &key.enc,
                mac_key: &key.mac,
                iv: None,
            };
            let mut sealer = Sealer::with_backend(config, keys, backend).unwrap();
            let mut opener = Opener::with_backend(config, keys, backend).unwrap();
            let mut aead =
                TlsAead::with_backend(algorithm, &key.bytes(algorithm), backend).unwrap();
            for (i, len) in lengths().enumerate() {
                let seq = rng.next() >> 1;
                let content_type = 20 + (i % 4) as u8;
                let ad = ad_for(seq, content_type, config.version.wire());
                let plaintext = rng.bytes(len);
                let iv = rng.block();

                let mut record = vec![0u8; sealer.sealed_len(len)];
                record[16..16 + len].copy_from_slice(&plaintext);
                let n = sealer
                    .seal_in_place_with_iv(seq, content_type, &mut record, len, &iv)
                    .unwrap();
                assert_eq!(n, 16 + aead.sealed_len(len));
                let mut sealed = vec![0u8; aead.sealed_len(len)];
                aead.seal(&iv, &ad, &plaintext, &mut sealed).unwrap();
                assert!(
                    record[..16] == iv && record[16..] == sealed[..],
                    "{config:?} on {backend}, {len} bytes"
                );

                // Each opens the other's.
                let opened = opener
                    .open_in_place(seq, content_type, &mut [&iv[..], &sealed].concat())
                    .map(|p| p.to_vec());
                assert_eq!(opened.as_deref(), Ok(&plaintext[..]), "{config:?}");
                let (nonce, body) = record.split_at_mut(16);
                let opened = aead.open_in_place(nonce, &ad, body).unwrap();
                assert!(opened == plaintext, "{config:?} on {backend}, {len} bytes");
            }
        }
    }
}

#[test]
fn implicit_iv_form_is_byte_identical_to_a_tls10_chain() {
    let mut rng = Rng(0xc4a1_4ed0);
    for backend in Backend::available() {
        for c in [Combination::Aes128CbcSha1, Combination::Aes256CbcSha1] {
            let config = RecordConfig::new(c, ProtocolVersion::Tls10, MacOrder::MacThenEncrypt);
            let algorithm = TlsAeadAlgorithm::new(c, TlsAeadIv::Implicit);
            let key = Key::new(&mut rng, c);
            let keys = RecordKeys {
                enc_key: &key.enc,
                mac_key: &key.mac,
                iv: Some(&key.iv),
            };
            let k = key.bytes(algorithm);
            // Two directions: records sealed by the Sealer and opened by the
            // AEAD, and the other way round, each chain in order.
            let mut sealer = Sealer::with_backend(config, keys, backend).unwrap();
            let mut opener = Opener::with_backend(config, keys, backend).unwrap();
            let mut aead_sealer = TlsAead::with_backend(algorithm, &k, backend).unwrap();
            let mut aead_opener = TlsAead::with_backend(algorithm, &k, backend).unwrap();
            for (seq, len) in lengths().enumerate() {
                let seq = seq as u64;
                let ad = ad_for(seq, 23, [3, 1]);
                let plaintext = rng.bytes(len);
                let mut record = vec![0u8; sealer.sealed_len(len)];
                let n = sealer.seal(seq, 23, &plaintext, &mut record).unwrap();
                let mut sealed = vec![0u8; aead_sealer.sealed_len(len)];
                assert_eq!(aead_sealer.seal(&[], &ad, &plaintext, &mut sealed), Ok(n));
                assert!(record == sealed, "{c} on {backend}: record {seq} differs");

                let opened = opener.open_in_place(seq, 23, &mut sealed).unwrap();
                assert!(opened == plaintext, "{c} on {backend}: record {seq}");
                let opened = aead_opener.open_in_place(&[], &ad, &mut record).unwrap();
                assert!(opened == plaintext, "{c} on {backend}: record {seq}");
            }
        }
    }
}

#[test]
fn any_additional_data_is_taken_as_bytes() {
    let mut rng = Rng(0x0dd_ba11);
    // A Sealer refuses SHA-256 and SHA-384 before TLS 1.2; the AEAD form
    // has no version, only bytes.
    for c in [Combination::Aes128CbcSha256, Combination::Aes256CbcSha384] {
        let config = RecordConfig::new(c, ProtocolVersion::Tls10, MacOrder::MacThenEncrypt);
        let keys = RecordKeys {
            enc_key: &[0; 32][..c.cipher().key_len()],
            mac_key: &[0; 48][..c.mac().output_len()],
            iv: Some(&[0; 16]),
        };
        assert!(matches!(
            Sealer::new(config, keys),
            Err(Error::UnsupportedVersion { .. })
        ));
    }
    for algorithm in TlsAeadAlgorithm::ALL {
        let c = algorithm.combination();
        let key = Key::new(&mut rng, c);
        let k = key.bytes(algorithm);
        let mut sealer = TlsAead::new(algorithm, &k).unwrap();
        let mut opener = TlsAead::new(algorithm, &k).unwrap();
        let mut chain = key.iv;
        let versions = [[3, 1], [3, 2], [3, 0], [0xfe, 0xff], [0, 0], [0xff, 0xff]];
        for i in 0..200 {
            let mut ad = rng.ad();
            if i < versions.len() {
                ad[9..].copy_from_slice(&versions[i]);
            }
            let len = (rng.next() % 300) as usize;
            let plaintext = rng.bytes(len);
            let iv = match algorithm.iv() {
                TlsAeadIv::Explicit => rng.block(),
                TlsAeadIv::Implicit => chain,
            };
            let nonce = nonce_for(algorithm, &iv);
            let (expected, next) = reference(c, &key, &iv, &ad, &plaintext, least_padding(c, len));
            let mut out = vec![0u8; expected.len()];
            sealer.seal(nonce, &ad, &plaintext, &mut out).unwrap();
            assert!(out == expected, "{algorithm} ad {ad:02x?}");

            // Another additional data does not open it (a fresh opener each
            // time, so that the implicit chain is where the record needs it).
            let mut other = ad;
            other[(rng.next() % 11) as usize] ^= 1 << (rng.next() % 8);
            let mut copy = out.clone();
            let mut fresh = TlsAead::new(algorithm, &k).unwrap();
            if algorithm.iv() == TlsAeadIv::Implicit {
                // Bring the fresh opener's chain to this record.
                fresh = opener_at(algorithm, &key, &iv);
            }
            assert_eq!(
                fresh.open_in_place(nonce, &other, &mut copy),
                Err(Error::BadRecordMac),
                "{algorithm} ad {ad:02x?} opened with {other:02x?}"
            );
            let opened = opener.open_in_place(nonce, &ad, &mut out).unwrap();
            assert!(opened == plaintext, "{algorithm} ad {ad:02x?}");
            chain = next;
        }
    }
}

/// An AEAD whose implicit chains are at `iv`: keyed with `iv` as the first
/// IV.
fn opener_at(algorithm: TlsAeadAlgorithm, key: &Key, iv: &[u8; 16]) -> TlsAead {
    opener_on(algorithm, key, iv, Backend::detect())
}

fn opener_on(algorithm: TlsAeadAlgorithm, key: &Key, iv: &[u8; 16], backend: Backend) -> TlsAead {
    let k = Key {
        mac: key.mac.clone(),
        enc: key.enc.clone(),
        iv: *iv,
    };
    TlsAead::with_backend(algorithm, &k.bytes(algorithm), backend).unwrap()
}

#[test]
fn every_padding_length_opens_and_bad_padding_does_not() {
    let mut rng = Rng(0x9add_1e55);
    for backend in Backend::available() {
        for algorithm in TlsAeadAlgorithm::ALL {
            let c = algorithm.combination();
            let m = c.mac().output_len();
            let key = Key::new(&mut rng, c);
            let builder = Builder::new(c, &key);
            let mut aead = opener_on(algorithm, &key, &key.iv, backend);
            let mut chain = key.iv;
            let mut opened = [false; 256];
            let mut rejected = 0;
            // Sixteen plaintext lengths: together every padding length that
            // makes whole blocks, 0..=255; on the best and the portable
            // backend also with a plaintext longer than the padding span
            // (a public prefix before the masked part).
            let long = backend == Backend::detect() || backend == Backend::Portable;
            let long = if long { 300..316 } else { 0..0 };
            for len in (0..16).chain(long) {
                for pad in (0..=255u8).filter(|p| (len + m + *p as usize + 1).is_multiple_of(16)) {
                    let plaintext: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
                    let ad = rng.ad();
                    let iv = match algorithm.iv() {
                        TlsAeadIv::Explicit => rng.block(),
                        TlsAeadIv::Implicit => chain,
                    };
                    let nonce = nonce_for(algorithm, &iv);
                    let r = rng.next() as usize;
                    let last = len + m + pad as usize;
                    // The same plaintext and MAC with one padding byte
                    // wrong, a length byte claiming more (or other) padding
                    // than there is, or a MAC bit flipped. Opened first:
                    // rejects leave an implicit chain where it was.
                    let damages: [Damage<'_>; 3] = [
                        &|b| b[last - 1 - r % (pad as usize).max(1)] ^= 1,
                        &|b| b[last] = pad.wrapping_add(1 + (r % 16) as u8),
                        &|b| b[len + r % m] ^= 1 << (r % 8),
                    ];
                    for (k, damage) in damages.iter().enumerate() {
                        if k == 0 && pad == 0 {
                            continue;
                        }
                        let (mut bad, _) = builder.seal(&iv, &ad, &plaintext, pad, damage);
                        assert_eq!(
                            aead.open_in_place(nonce, &ad, &mut bad).map(|p| p.len()),
                            Err(Error::BadRecordMac),
                            "{algorithm} on {backend}: pad {pad}, damage {k}"
                        );
                        assert!(bad.iter().all(|&b| b == 0), "not wiped");
                        rejected += 1;
                    }
                    let (mut good, next) = builder.seal(&iv, &ad, &plaintext, pad, |_| {});
                    let result = aead.open_in_place(nonce, &ad, &mut good);
                    assert_eq!(
                        result.as_deref(),
                        Ok(&plaintext[..]),
                        "{algorithm} on {backend}: pad {pad}"
                    );
                    opened[pad as usize] = true;
                    chain = next;
                }
            }
            assert!(
                opened.iter().all(|&o| o),
                "{algorithm}: a padding length was missed"
            );
            assert!(rejected >= 2 * 256);
        }
    }
}

#[test]
fn every_bit_flip_is_rejected_and_wiped() {
    let mut rng = Rng(0xb17_f11b);
    for algorithm in TlsAeadAlgorithm::ALL {
        let c = algorithm.combination();
        let key = Key::new(&mut rng, c);
        for len in [0, 17, 70] {
            let plaintext = rng.bytes(len);
            let ad = rng.ad();
            let iv = rng.block();
            let mut sealer = opener_at(algorithm, &key, &iv);
            let nonce = nonce_for(algorithm, &iv);
            let mut sealed = vec![0u8; sealer.sealed_len(len)];
            sealer.seal(nonce, &ad, &plaintext, &mut sealed).unwrap();
            // Bits of the ciphertext, and of the nonce (the IV) where there
            // is one.
            let mut whole = [nonce, &sealed].concat();
            for bit in 0..8 * whole.len() {
                whole[bit / 8] ^= 1 << (bit % 8);
                let (n, ct) = whole.split_at(nonce.len());
                let mut out = vec![0x55u8; ct.len()];
                let mut opener = opener_at(algorithm, &key, &iv);
                assert_eq!(
                    opener.open(n, &ad, ct, &mut out),
                    Err(Error::BadRecordMac),
                    "{algorithm}, {len} bytes, bit {bit}"
                );
                assert!(out.iter().all(|&b| b == 0), "{algorithm}: output not wiped");
                whole[bit / 8] ^= 1 << (bit % 8);
            }
            // Truncations: whole blocks off are too short or fail the MAC;
            // anything else is not whole blocks.
            for cut in 1..sealed.len() {
                let mut opener = opener_at(algorithm, &key, &iv);
                let result = opener.open(nonce, &ad, &sealed[..sealed.len() - cut], &mut [0; 512]);
                match result {
                    Err(Error::RecordNotBlockAligned { .. }) => assert!(cut % 16 != 0),
                    Err(Error::RecordTooShort { min, .. }) => {
                        assert_eq!(min, (c.mac().output_len() + 1).next_multiple_of(16))
                    }
                    Err(Error::BadRecordMac) => assert!(cut % 16 == 0),
                    other => panic!("{algorithm}: cut {cut}: {other:?}"),
                }
            }
            let mut opener = opener_at(algorithm, &key, &iv);
            assert_eq!(
                opener.open(nonce, &ad, &sealed, &mut vec![0; sealed.len()]),
                Ok(len)
            );
        }
    }
}

#[test]
fn the_implicit_iv_chains_seal_and_open_separately() {
    let mut rng = Rng(0xc4a1);
    for algorithm in TlsAeadAlgorithm::ALL
        .into_iter()
        .filter(|a| a.iv() == TlsAeadIv::Implicit)
    {
        let key = Key::new(&mut rng, algorithm.combination()).bytes(algorithm);
        let mut aead = TlsAead::new(algorithm, &key).unwrap();
        let ad = rng.ad();
        let records: Vec<Vec<u8>> = (0..3)
            .map(|i| {
                let mut out = vec![0u8; aead.sealed_len(10 * i)];
                aead.seal(&[], &ad, &vec![i as u8; 10 * i], &mut out)
                    .unwrap();
                out
            })
            .collect();
        // The same plaintext sealed again differs: the chain moved on.
        let mut again = vec![0u8; aead.sealed_len(0)];
        aead.seal(&[], &ad, &[], &mut again).unwrap();
        assert_ne!(again, records[0]);
        // The same object opens them in order: its open chain starts at the
        // key's IV, apart from the seal chain.
        for (i, r) in records.iter().enumerate() {
            // Out of order fails (the chain is wrong), and does not move
            // the chain.
            if let Some(next) = records.get(i + 1) {
                let mut copy = next.clone();
                assert_eq!(
                    aead.open_in_place(&[], &ad, &mut copy),
                    Err(Error::BadRecordMac),
                    "{algorithm}: record {} opened out of order",
                    i + 1
                );
            }
            let mut copy = r.clone();
            let opened = aead.open_in_place(&[], &ad, &mut copy).unwrap();
            assert_eq!(
                opened,
                &vec![i as u8; 10 * i][..],
                "{algorithm}: record {i}"
            );
        }
    }
}

#[test]
fn bad_lengths_are_typed_errors() {
    let mut rng = Rng(0xe770);
    for algorithm in TlsAeadAlgorithm::ALL {
        let c = algorithm.combination();
        let key = Key::new(&mut rng, c).bytes(algorithm);
        for wrong in [0, key.len() - 1, key.len() + 1, key.len() + 16] {
            let long = [key.clone(), vec![0; 32]].concat();
            assert!(matches!(
                TlsAead::new(algorithm, &long[..wrong]),
                Err(Error::InvalidKeyLength { expected, actual })
                    if expected == algorithm.key_len() && actual == wrong
            ));
        }
        let mut aead = TlsAead::new(algorithm, &key).unwrap();
        let nonce = [9u8; 16];
        let good_nonce = &nonce[..algorithm.nonce_len()];
        let ad = [1u8; 11];
        let mut out = vec![0u8; 20000];
        let pt = vec![3u8; MAX_PLAINTEXT_LEN + 1];

        // Nonce: 16 bytes for the explicit form, none for the implicit one.
        let bad_nonces: &[usize] = match algorithm.iv() {
            TlsAeadIv::Explicit => &[0, 12, 15, 17],
            TlsAeadIv::Implicit => &[1, 16],
        };
        for &n in bad_nonces {
            let nonce = vec![0u8; n];
            let expect = Err(Error::InvalidNonceLength {
                expected: algorithm.nonce_len(),
                actual: n,
            });
            assert_eq!(
                aead.seal(&nonce, &ad, b"x", &mut out),
                expect,
                "{algorithm}"
            );
            assert_eq!(aead.seal_in_place(&nonce, &ad, &mut out, 1), expect);
            assert_eq!(aead.open(&nonce, &ad, &[0; 64], &mut out), expect);
            assert_eq!(
                aead.open_in_place(&nonce, &ad, &mut [0; 64])
                    .map(|p| p.len()),
                expect
            );
        }
        // Additional data: exactly 11 bytes.
        for n in [0, 10, 12, 13] {
            let ad = vec![0u8; n];
            let expect = Err(Error::InvalidAdLength {
                expected: 11,
                actual: n,
            });
            assert_eq!(aead.seal(good_nonce, &ad, b"x", &mut out), expect);
            assert_eq!(aead.open(good_nonce, &ad, &[0; 64], &mut out), expect);
        }
        // Plaintext and output buffers.
        assert_eq!(
            aead.seal(good_nonce, &ad, &pt, &mut out),
            Err(Error::PlaintextTooLong {
                len: MAX_PLAINTEXT_LEN + 1,
                max: MAX_PLAINTEXT_LEN
            })
        );
        let needed = aead.sealed_len(100);
        assert_eq!(
            aead.seal(good_nonce, &ad, &pt[..100], &mut out[..needed - 1]),
            Err(Error::BufferTooSmall {
                needed,
                actual: needed - 1
            })
        );
        assert_eq!(
            aead.seal_in_place(good_nonce, &ad, &mut out[..needed - 1], 100),
            Err(Error::BufferTooSmall {
                needed,
                actual: needed - 1
            })
        );
        // Ciphertext lengths, checked before anything is decrypted.
        let min = (algorithm.mac_len() + 1).next_multiple_of(16);
        for len in [0, 16, min - 16] {
            assert_eq!(
                aead.open(good_nonce, &ad, &vec![0; len], &mut out),
                Err(Error::RecordTooShort { len, min })
            );
        }
        for len in [min + 1, min + 15, 1001] {
            assert_eq!(
                aead.open(good_nonce, &ad, &vec![0; len], &mut out),
                Err(Error::RecordNotBlockAligned { len })
            );
        }
        let len = MAX_FRAGMENT_LEN + 16;
        assert_eq!(
            aead.open_in_place(good_nonce, &ad, &mut vec![0; len])
                .map(|p| p.len()),
            Err(Error::RecordTooLong {
                len,
                max: MAX_FRAGMENT_LEN
            })
        );
        assert_eq!(
            aead.open(good_nonce, &ad, &[0; 64], &mut [0; 63]),
            Err(Error::BufferTooSmall {
                needed: 64,
                actual: 63
            })
        );
        // A bad open leaves an implicit chain where it was: a genuine
        // record still opens.
        let mut sealer = TlsAead::new(algorithm, &key).unwrap();
        let mut sealed = vec![0u8; sealer.sealed_len(5)];
        sealer.seal(good_nonce, &ad, b"hello", &mut sealed).unwrap();
        assert_eq!(
            aead.open(good_nonce, &ad, &[0; 64], &mut out),
            Err(Error::BadRecordMac)
        );
        assert_eq!(aead.open(good_nonce, &ad, &sealed, &mut out), Ok(5));
    }
    // A backend this CPU lacks.
    for backend in Backend::ALL.into_iter().filter(|b| !b.is_available()) {
        let a = TlsAeadAlgorithm::AES_128_CBC_SHA1_TLS;
        assert_eq!(
            TlsAead::with_backend(a, &[0; 36], backend).map(|_| ()),
            Err(Error::BackendUnavailable { backend })
        );
    }
}

#[test]
fn errors_say_what_is_wrong() {
    let e = Error::InvalidNonceLength {
        expected: 16,
        actual: 12,
    };
    assert_eq!(e.to_string(), "invalid nonce length 12, expected 16");
    let e = Error::InvalidAdLength {
        expected: 11,
        actual: 13,
    };
    assert_eq!(
        e.to_string(),
        "invalid additional data length 13, expected 11"
    );
    let aead = TlsAead::new(TlsAeadAlgorithm::AES_128_CBC_SHA1_TLS, &[0; 36]).unwrap();
    let shown = format!("{aead:?}");
    assert!(
        shown.starts_with("TlsAead {") && shown.contains("Aes128CbcSha1"),
        "{shown}"
    );
    assert!(!shown.contains("key"), "{shown}");
}
