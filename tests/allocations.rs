//! No per-record or per-message call allocates: counted with a global
//! allocator that tallies every allocation made on this thread.

use allocation_counter::measure;
use cbc_hmac::{
    AesCbcKey, Backend, Cipher, Combination, HmacKey, MacAlgorithm, MacOrder, Opener,
    ProtocolVersion, RecordConfig, RecordKeys, Sealer, digest_with_backend,
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
            let mut out = [0u8; 48];
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
