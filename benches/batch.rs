//! Multi-record seals: `seal_batch` with 1, 2, 4, 8, 16 and 64 jobs from as
//! many connections, and the same records sealed one by one, for
//! AES-128-CBC-SHA1, AES-128-CBC-SHA256 and AES-256-CBC-SHA384 (TLS 1.2
//! MAC-then-encrypt) at 1408 and 16384 bytes, on `Backend::detect()`.
//!
//! Bench ids are `batch/<combination>/<payload>/<jobs>` and
//! `one-by-one/<combination>/<payload>/<jobs>`; throughput is payload bytes
//! of all the jobs.
//!
//! Multi-record opens: `open_batch` with 1, 2, 4, 8, 16, 32 and 64 jobs
//! from as many connections (one opener each), and the same records opened
//! one by one with `open_in_place`, for AES-128-CBC-SHA1 and
//! AES-128-CBC-SHA256 (TLS 1.2 MAC-then-encrypt) at 256 and 16384 bytes.
//! Opens work in place, so every iteration starts from fresh copies of the
//! sealed fragments, made outside the timed part in both variants
//! (`iter_batched`); the batch variant's timing includes building its job
//! list, as a caller's would. Ids are `open-batch/...` and
//! `open-one-by-one/...` in group `open`.

use std::hint::black_box;
use std::time::Duration;

use cbc_hmac::record::{OpenJob, open_batch};
use cbc_hmac::{
    Backend, Combination, MacOrder, Opener, ProtocolVersion, RecordConfig, RecordKeys, SealJob,
    Sealer, seal_batch,
};
use criterion::{BatchSize, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

const JOBS: [usize; 6] = [1, 2, 4, 8, 16, 64];
const PAYLOADS: [usize; 2] = [1408, 16384];
const COMBINATIONS: [Combination; 3] = [
    Combination::Aes128CbcSha1,
    Combination::Aes128CbcSha256,
    Combination::Aes256CbcSha384,
];

fn config(c: Combination) -> RecordConfig {
    RecordConfig::new(c, ProtocolVersion::Tls12, MacOrder::MacThenEncrypt)
}

fn keys(c: Combination, i: usize) -> (Vec<u8>, Vec<u8>) {
    (
        vec![i as u8 ^ 0x11; c.cipher().key_len()],
        vec![i as u8 ^ 0x22; c.mac().tls_key_len()],
    )
}

fn sealers(c: Combination, n: usize) -> Vec<Sealer> {
    (0..n)
        .map(|i| {
            let (e, m) = keys(c, i);
            let k = RecordKeys {
                enc_key: &e,
                mac_key: &m,
                iv: None,
            };
            Sealer::with_backend(config(c), k, Backend::detect()).expect("sealer")
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("batch");
    for combination in COMBINATIONS {
        for payload in PAYLOADS {
            for jobs in JOBS {
                let mut ss = sealers(combination, jobs);
                let len = ss[0].sealed_len(payload);
                let mut bufs = vec![vec![0x5au8; len]; jobs];
                group.throughput(Throughput::Bytes((jobs * payload) as u64));
                let id = format!("{combination}/{payload}");
                let mut seq = 0u64;
                group.bench_function(BenchmarkId::new(format!("batch/{id}"), jobs), |b| {
                    let mut batch: Vec<SealJob<'_>> = ss
                        .iter_mut()
                        .zip(bufs.iter_mut())
                        .map(|(s, buf)| SealJob::new(s, 0, 23, buf, payload))
                        .collect();
                    b.iter(|| seal_batch(black_box(&mut batch)))
                });
                group.bench_function(BenchmarkId::new(format!("one-by-one/{id}"), jobs), |b| {
                    b.iter(|| {
                        seq += 1;
                        for (s, buf) in ss.iter_mut().zip(bufs.iter_mut()) {
                            s.seal_in_place(black_box(seq), 23, buf, payload)
                                .expect("seal");
                        }
                    })
                });
                // The benchmarked path still seals records that open.
                let plain = vec![0x42u8; payload];
                let offset = ss[0].payload_offset();
                for buf in &mut bufs {
                    buf[offset..offset + payload].copy_from_slice(&plain);
                }
                let mut batch: Vec<SealJob<'_>> = ss
                    .iter_mut()
                    .zip(bufs.iter_mut())
                    .map(|(s, buf)| SealJob::new(s, 9, 23, buf, payload))
                    .collect();
                seal_batch(&mut batch);
                let lens: Vec<usize> = batch.iter().map(|j| j.result().unwrap().unwrap()).collect();
                drop(batch);
                for (i, (buf, n)) in bufs.iter_mut().zip(lens).enumerate() {
                    let (e, m) = keys(combination, i);
                    let k = RecordKeys {
                        enc_key: &e,
                        mac_key: &m,
                        iv: None,
                    };
                    let mut o = Opener::with_backend(config(combination), k, Backend::Portable)
                        .expect("opener");
                    assert_eq!(
                        o.open_in_place(9, 23, &mut buf[..n]).expect("opens"),
                        &plain[..]
                    );
                }
            }
        }
    }
    group.finish();
}

const OPEN_JOBS: [usize; 7] = [1, 2, 4, 8, 16, 32, 64];
const OPEN_PAYLOADS: [usize; 2] = [256, 16384];
const OPEN_COMBINATIONS: [Combination; 2] =
    [Combination::Aes128CbcSha1, Combination::Aes128CbcSha256];
const OPEN_SEQ: u64 = 5;

fn openers(c: Combination, n: usize) -> Vec<Opener> {
    (0..n)
        .map(|i| {
            let (e, m) = keys(c, i);
            let k = RecordKeys {
                enc_key: &e,
                mac_key: &m,
                iv: None,
            };
            Opener::with_backend(config(c), k, Backend::detect()).expect("opener")
        })
        .collect()
}

/// One sealed record of `payload` bytes per connection, at `OPEN_SEQ`.
fn sealed_fragments(c: Combination, n: usize, payload: usize) -> Vec<Vec<u8>> {
    sealers(c, n)
        .iter_mut()
        .enumerate()
        .map(|(i, s)| {
            let mut buf = vec![0u8; s.sealed_len(payload)];
            let offset = s.payload_offset();
            buf[offset..offset + payload].fill(i as u8);
            let n = s
                .seal_in_place(OPEN_SEQ, 23, &mut buf, payload)
                .expect("seal");
            buf.truncate(n);
            buf
        })
        .collect()
}

fn bench_open(c: &mut Criterion) {
    let mut group = c.benchmark_group("open");
    for combination in OPEN_COMBINATIONS {
        for payload in OPEN_PAYLOADS {
            for jobs in OPEN_JOBS {
                let mut os = openers(combination, jobs);
                let pristine = sealed_fragments(combination, jobs, payload);
                group.throughput(Throughput::Bytes((jobs * payload) as u64));
                let id = format!("{combination}/{payload}");
                group.bench_function(BenchmarkId::new(format!("open-batch/{id}"), jobs), |b| {
                    b.iter_batched(
                        || pristine.clone(),
                        |mut bufs| {
                            let mut batch: Vec<OpenJob<'_>> = os
                                .iter_mut()
                                .zip(bufs.iter_mut())
                                .map(|(o, buf)| OpenJob::new(o, OPEN_SEQ, 23, buf))
                                .collect();
                            open_batch(black_box(&mut batch));
                            drop(batch);
                            bufs
                        },
                        BatchSize::SmallInput,
                    )
                });
                group.bench_function(
                    BenchmarkId::new(format!("open-one-by-one/{id}"), jobs),
                    |b| {
                        b.iter_batched(
                            || pristine.clone(),
                            |mut bufs| {
                                for (o, buf) in os.iter_mut().zip(bufs.iter_mut()) {
                                    black_box(o.open_in_place(black_box(OPEN_SEQ), 23, buf))
                                        .expect("open");
                                }
                                bufs
                            },
                            BatchSize::SmallInput,
                        )
                    },
                );
                // The benchmarked batch opens the records to their plaintexts.
                let mut bufs = pristine.clone();
                let mut batch: Vec<OpenJob<'_>> = os
                    .iter_mut()
                    .zip(bufs.iter_mut())
                    .map(|(o, buf)| OpenJob::new(o, OPEN_SEQ, 23, buf))
                    .collect();
                open_batch(&mut batch);
                for (i, job) in batch.iter().enumerate() {
                    assert_eq!(job.plaintext(), Some(&vec![i as u8; payload][..]));
                }
            }
        }
    }
    group.finish();
}

fn criterion_config() -> Criterion {
    Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(200))
        .measurement_time(Duration::from_millis(500))
}

criterion_group! {
    name = benches;
    config = criterion_config();
    targets = bench, bench_open
}
criterion_main!(benches);
