//! No per-record or per-message call allocates: counted with a global
//! allocator that tallies every allocation made on this thread.

use allocation_counter::measure;
use cbc_hmac::{
    AesCbcKey, Backend, Cipher, Combination, HmacKey, MacAlgorithm, MacOrder, Opener,
    ProtocolVersion, RecordConfig, RecordKeys, Sealer, TlsAead, TlsAeadAlgorithm,
    digest_with_backend,
};

const CALLS: usize = 200;

#[test]
fn seal_and_open_do_not_allocate() {
    for backend in Backend::available() {
        for combination in Combination::ALL {
            for version in [ProtocolVersion::Tls10, ProtocolVersion::Tls12] {
                if !combination.allows(version) {
                    continue;
                }
                for order in MacOrder::ALL {
                    let config = RecordConfig::new(combination, version, order);
                    let enc = vec![1u8; combination.cipher().key_len()];
                    let mac = vec![2u8; combination.mac().output_len()];
                    let iv = [3u8; 16];
                    let keys = RecordKeys {
                        enc_key: &enc,
                        mac_key: &mac,
                        iv: (version == ProtocolVersion::Tls10).then_some(&iv[..]),
                    };
                    let mut sealer = Sealer::with_backend(config, keys, backend).unwrap();
                    let mut opener = Opener::with_backend(config, keys, backend).unwrap();
                    let mut buf = vec![0u8; 17000];
                    let mut work = vec![0u8; 17000];
                    let mut opened = 0usize;
                    let mut failures = 0usize;
                    let info = measure(|| {
                        for i in 0..CALLS {
                            let len = [0, 16, 255, 1024, 16384][i % 5];
                            let n = sealer.seal_in_place(i as u64, 23, &mut buf, len).unwrap();
                            let _ = sealer
                                .seal_in_place_with_iv(i as u64, 23, &mut work, len, &iv)
                                .is_ok();
                            work[..n].copy_from_slice(&buf[..n]);
                            opened += opener
                                .open_in_place(i as u64, 23, &mut work[..n])
                                .unwrap()
                                .len();
                            // The failure path must not allocate either.
                            work[..n].copy_from_slice(&buf[..n]);
                            work[n - 1] ^= 1;
                            failures += opener.open_in_place(i as u64, 23, &mut work[..n]).is_err()
                                as usize;
                        }
                    });
                    assert!(opened > 0);
                    assert_eq!(failures, CALLS);
                    assert_eq!(
                        info.count_total, 0,
                        "{config:?} on {backend}: {} allocations in {CALLS} seal/open rounds",
                        info.count_total
                    );
                }
            }
        }
    }
}

#[test]
fn tls_aead_seal_and_open_do_not_allocate() {
    // Each length ten times per algorithm and backend.
    const AEAD_CALLS: usize = 50;
    for backend in Backend::available() {
        for algorithm in TlsAeadAlgorithm::ALL {
            let key = vec![5u8; algorithm.key_len()];
            let mut sealer = TlsAead::with_backend(algorithm, &key, backend).unwrap();
            let mut opener = TlsAead::with_backend(algorithm, &key, backend).unwrap();
            let nonce = [6u8; 16];
            let nonce = &nonce[..algorithm.nonce_len()];
            let plaintext = vec![4u8; 16384];
            let mut buf = vec![0u8; 17000];
            let mut work = vec![0u8; 17000];
            let mut spare = vec![0u8; 17000];
            let mut opened = 0usize;
            let mut failures = 0usize;
            let info = measure(|| {
                for i in 0..AEAD_CALLS {
                    let len = [0, 16, 255, 1024, 16384][i % 5];
                    let mut ad = [0u8; 11];
                    ad[..8].copy_from_slice(&(i as u64).to_be_bytes());
                    ad[8] = 23;
                    ad[9..].copy_from_slice(&[3, 3]);
                    let n = sealer
                        .seal(nonce, &ad, &plaintext[..len], &mut buf)
                        .unwrap();
                    opened += opener.open(nonce, &ad, &buf[..n], &mut work).unwrap();
                    // In place, and the failure path (which wipes, and
                    // leaves an implicit chain where it was).
                    let m = sealer.seal_in_place(nonce, &ad, &mut work, len).unwrap();
                    spare[..m].copy_from_slice(&work[..m]);
                    spare[m - 1] ^= 1;
                    failures += opener.open_in_place(nonce, &ad, &mut spare[..m]).is_err() as usize;
                    opened += opener
                        .open_in_place(nonce, &ad, &mut work[..m])
                        .unwrap()
                        .len();
                }
            });
            assert!(opened > 0);
            assert_eq!(failures, AEAD_CALLS);
            assert_eq!(
                info.count_total, 0,
                "{algorithm} on {backend}: {} allocations in {AEAD_CALLS} seal/open rounds",
                info.count_total
            );
        }
    }
}

#[test]
fn primitives_do_not_allocate() {
    for backend in Backend::available() {
        for cipher in Cipher::ALL {
            let key =
                AesCbcKey::with_backend(cipher, &vec![7u8; cipher.key_len()], backend).unwrap();
            let mut data = vec![0u8; 16384];
            let info = measure(|| {
                for i in 0..CALLS {
                    let len = 16 * (1 + i % 1024);
                    let iv = key.encrypt(&[0; 16], &mut data[..len]).unwrap();
                    key.decrypt(&iv, &mut data[..len]).unwrap();
                }
            });
            assert_eq!(info.count_total, 0, "{cipher} on {backend}");
        }
        for alg in MacAlgorithm::ALL {
            let key = HmacKey::with_backend(alg, b"key", backend).unwrap();
            let msg = vec![9u8; 5000];
            let mut out = [0u8; 64];
            let mut ok = 0;
            let info = measure(|| {
                for i in 0..CALLS {
                    let m = &msg[..i * 25];
                    let tag = key.sign(m);
                    key.mac(m, &mut out).unwrap();
                    ok += key.verify(m, tag.as_bytes()).is_ok() as usize;
                    let mut ctx = key.context();
                    ctx.update(&m[..m.len() / 3]);
                    ctx.update(&m[m.len() / 3..]);
                    assert_eq!(ctx.finish(), tag);
                    digest_with_backend(alg, m, &mut out, backend).unwrap();
                }
            });
            assert_eq!(ok, CALLS);
            assert_eq!(info.count_total, 0, "{alg} on {backend}");
        }
    }
}

#[test]
fn esp_and_jose_do_not_allocate() {
    use cbc_hmac::ReplayWindow;
    use cbc_hmac::esp::{EspConfig, EspIntegrity, EspKeys, EspOpener, EspSealer};
    use cbc_hmac::jose::{CbcHmacAead, ContentEncryption};
    for backend in Backend::available() {
        for integrity in [
            EspIntegrity::HmacSha1_96,
            EspIntegrity::HmacSha256_128,
            EspIntegrity::HmacSha384_192,
        ] {
            for esn in [false, true] {
                let config = EspConfig {
                    cipher: Cipher::Aes128Cbc,
                    integrity,
                    spi: 9,
                    esn,
                };
                let auth = vec![2u8; integrity.key_len()];
                let keys = EspKeys {
                    enc_key: &[1; 16],
                    auth_key: &auth,
                };
                let mut sealer = EspSealer::with_backend(config, keys, backend).unwrap();
                let opener = EspOpener::with_backend(config, keys, backend).unwrap();
                let mut window = ReplayWindow::<16>::new();
                let mut buf = vec![0u8; 2000];
                let mut work = vec![0u8; 2000];
                let (mut opened, mut failures) = (0usize, 0usize);
                let info = measure(|| {
                    for i in 1..=CALLS as u64 {
                        let len = [0, 64, 1400][i as usize % 3];
                        let n = sealer.seal_in_place(i, 4, &mut buf, len).unwrap();
                        // A forgery, the real packet, then its replay.
                        work[..n].copy_from_slice(&buf[..n]);
                        work[n - 1] ^= 1;
                        failures += opener
                            .open_with_window(&mut window, &mut work[..n])
                            .is_err() as usize;
                        work[..n].copy_from_slice(&buf[..n]);
                        opened += opener
                            .open_with_window(&mut window, &mut work[..n])
                            .unwrap()
                            .payload
                            .len();
                        failures +=
                            opener.open_with_window(&mut window, &mut buf[..n]).is_err() as usize;
                    }
                });
                assert!(opened > 0);
                assert_eq!(failures, 2 * CALLS);
                assert_eq!(
                    info.count_total, 0,
                    "ESP {integrity:?} esn {esn} on {backend}: {} allocations",
                    info.count_total
                );
            }
        }
        let mut aead =
            CbcHmacAead::with_backend(ContentEncryption::A128CbcHs256, &[3; 32], backend).unwrap();
        let mut buf = vec![0u8; 70000];
        let (mut iv, mut tag) = ([0u8; 16], [0u8; 16]);
        let mut failures = 0;
        let info = measure(|| {
            for i in 0..CALLS {
                let len = [0, 1024, 65536][i % 3];
                let n = aead
                    .seal_in_place(b"aad", &mut buf, len, &mut iv, &mut tag)
                    .unwrap();
                assert_eq!(
                    aead.open_in_place(&iv, b"aad", &mut buf[..n], &tag)
                        .unwrap()
                        .len(),
                    len
                );
                let n = aead
                    .seal_in_place(b"aad", &mut buf, len, &mut iv, &mut tag)
                    .unwrap();
                tag[0] ^= 1;
                failures += aead
                    .open_in_place(&iv, b"aad", &mut buf[..n], &tag)
                    .is_err() as usize;
            }
        });
        assert_eq!(failures, CALLS);
        assert_eq!(
            info.count_total, 0,
            "JWE on {backend}: {} allocations",
            info.count_total
        );
        // The padded primitives and the truncated verification.
        let key = AesCbcKey::with_backend(Cipher::Aes256Cbc, &[5; 32], backend).unwrap();
        let mac = HmacKey::with_backend(MacAlgorithm::HmacSha256, b"k", backend).unwrap();
        let tag = mac.sign(b"message");
        let info = measure(|| {
            for i in 0..CALLS {
                let n = key.encrypt_padded(&[0; 16], &mut buf, i).unwrap();
                assert_eq!(
                    key.decrypt_padded(&[0; 16], &mut buf[..n]).unwrap().len(),
                    i
                );
                mac.verify_truncated(b"message", &tag.as_bytes()[..16])
                    .unwrap();
            }
        });
        assert_eq!(info.count_total, 0, "padded CBC on {backend}");
    }
}

#[test]
fn the_counter_counts() {
    // Guards against a counter that is not installed and always reads 0.
    let info = measure(|| {
        std::hint::black_box(vec![1u8; 10]);
    });
    assert_eq!(info.count_total, 1);
}

#[test]
fn batch_seals_do_not_allocate() {
    use cbc_hmac::{SealJob, SealRecord, seal_batch};
    for backend in Backend::available() {
        for combination in Combination::ALL {
            for order in MacOrder::ALL {
                let config = RecordConfig::new(combination, ProtocolVersion::Tls12, order);
                let enc = vec![1u8; combination.cipher().key_len()];
                let mac = vec![2u8; combination.mac().output_len()];
                let keys = RecordKeys {
                    enc_key: &enc,
                    mac_key: &mac,
                    iv: None,
                };
                let mut one = Sealer::with_backend(config, keys, backend).unwrap();
                let mut many: Vec<Sealer> = (0..20)
                    .map(|_| Sealer::with_backend(config, keys, backend).unwrap())
                    .collect();
                let lens = [0usize, 16, 255, 1024, 16384];
                let mut bufs: Vec<Vec<u8>> = (0..20).map(|_| vec![0u8; 17000]).collect();
                let (left, right) = bufs.split_at_mut(10);
                // Built outside the measured closure: the caller owns them.
                let mut records: Vec<SealRecord<'_>> = left
                    .iter_mut()
                    .enumerate()
                    .map(|(i, b)| SealRecord::new(b, lens[i % 5]))
                    .collect();
                let mut jobs: Vec<SealJob<'_>> = many
                    .iter_mut()
                    .zip(right.iter_mut())
                    .enumerate()
                    .map(|(i, (s, b))| SealJob::new(s, i as u64, 23, b, lens[i % 5]))
                    .collect();
                let info = measure(|| {
                    for i in 0..20 {
                        one.seal_many_in_place(10 * i, 23, &mut records);
                        seal_batch(&mut jobs);
                    }
                });
                assert!(records.iter().all(|r| matches!(r.result(), Some(Ok(_)))));
                assert!(jobs.iter().all(|j| matches!(j.result(), Some(Ok(_)))));
                assert_eq!(
                    info.count_total, 0,
                    "{config:?} on {backend}: {} allocations in batch seals",
                    info.count_total
                );
            }
        }
    }
}

#[test]
fn ssh_does_not_allocate() {
    use cbc_hmac::ssh::{SshKeys, SshOpener, SshSealer, SshSuite};
    for backend in Backend::available() {
        for suite in SshSuite::ALL {
            let enc = vec![1u8; suite.cipher().key_len()];
            let mac = vec![2u8; suite.mac_key_len()];
            let keys = SshKeys {
                enc_key: &enc,
                iv: &[3; 16],
                mac_key: &mac,
            };
            let mut sealer = SshSealer::with_backend(suite, keys, 0, backend).unwrap();
            let mut opener = SshOpener::with_backend(suite, keys, 0, backend).unwrap();
            let mut buf = vec![0u8; 40_000];
            let mut work = vec![0u8; 40_000];
            let (mut opened, mut failures) = (0usize, 0usize);
            let info = measure(|| {
                for i in 0..CALLS {
                    let len = [0, 64, 1400, 32 * 1024][i % 4];
                    let n = sealer.seal_in_place(&mut buf, len).unwrap();
                    let total = opener.open_length(&buf[..n]).unwrap();
                    opened += opener.open(&mut buf[..total]).unwrap().len();
                }
                // Then one forgery through the whole failure path (the
                // last packet this opener sees).
                let n = sealer.seal_in_place(&mut work, 100).unwrap();
                work[n - 1] ^= 1;
                let total = opener.open_length(&work[..n]).unwrap();
                failures += opener.open(&mut work[..total]).is_err() as usize;
                while opener.discard(&buf[..8192]) > 0 {}
            });
            assert!(opened > 0);
            assert_eq!(failures, 1);
            assert_eq!(
                info.count_total, 0,
                "SSH {suite} on {backend}: {} allocations",
                info.count_total
            );
        }
    }
}

#[test]
fn batch_opens_do_not_allocate() {
    use cbc_hmac::record::{OpenJob, OpenRecord, open_batch};
    for backend in Backend::available() {
        for combination in Combination::ALL {
            for order in MacOrder::ALL {
                let config = RecordConfig::new(combination, ProtocolVersion::Tls12, order);
                let enc = vec![1u8; combination.cipher().key_len()];
                let mac = vec![2u8; combination.mac().output_len()];
                let keys = RecordKeys {
                    enc_key: &enc,
                    mac_key: &mac,
                    iv: None,
                };
                let mut sealer = Sealer::with_backend(config, keys, backend).unwrap();
                let lens = [0usize, 16, 255, 1024, 16384];
                // Twenty records, every fifth damaged; opened in place, so
                // each round opens fresh copies made outside the count.
                let fragments: Vec<Vec<u8>> = (0..20)
                    .map(|i| {
                        let len = lens[i % 5];
                        let mut buf = vec![3u8; sealer.sealed_len(len)];
                        let n = sealer.seal_in_place(i as u64, 23, &mut buf, len).unwrap();
                        buf.truncate(n);
                        if i % 5 == 4 {
                            buf[n - 1] ^= 1;
                        }
                        buf
                    })
                    .collect();
                let mut one = Opener::with_backend(config, keys, backend).unwrap();
                let mut many: Vec<Opener> = (0..10)
                    .map(|_| Opener::with_backend(config, keys, backend).unwrap())
                    .collect();
                let mut copies = fragments.clone();
                let (left, right) = copies.split_at_mut(10);
                let mut records: Vec<OpenRecord<'_>> =
                    left.iter_mut().map(|b| OpenRecord::new(23, b)).collect();
                let mut jobs: Vec<OpenJob<'_>> = many
                    .iter_mut()
                    .zip(right.iter_mut())
                    .enumerate()
                    .map(|(i, (o, b))| OpenJob::new(o, 10 + i as u64, 23, b))
                    .collect();
                let info = measure(|| {
                    one.open_many_in_place(0, &mut records);
                    open_batch(&mut jobs);
                });
                for (i, r) in records.iter().enumerate() {
                    assert_eq!(
                        r.result().unwrap().is_ok(),
                        i % 5 != 4,
                        "{config:?} record {i}"
                    );
                }
                for (i, j) in jobs.iter().enumerate() {
                    assert_eq!(
                        j.result().unwrap().is_ok(),
                        i % 5 != 4,
                        "{config:?} job {i}"
                    );
                }
                assert_eq!(
                    info.count_total, 0,
                    "{config:?} on {backend}: {} allocations in batch opens",
                    info.count_total
                );
            }
        }
    }
}
