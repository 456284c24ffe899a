//! Record seal and open, per combination, backend and payload size.
//!
//! Bench ids are `seal/<combination>/<backend>/<payload>` and
//! `open/<combination>/<backend>/<payload>`: every combination on TLS 1.2
//! MAC-then-encrypt, plus `AES-128-CBC-SHA1-EtM` (encrypt-then-MAC, RFC
//! 7366), on `Backend::detect()` and then every other available backend.
//! Throughput is bytes of payload.
//!
//! Defaults keep a whole `cargo bench --bench records` under about 3
//! minutes (see [`config`]); criterion's own options (`--measurement-time`,
//! `--sample-size`, `--quick`, a filter such as `seal/AES-128-CBC-SHA1/`)
//! override them.

use std::hint::black_box;
use std::time::Duration;

use cbc_hmac::{
    Backend, Combination, MacOrder, Opener, ProtocolVersion, RecordConfig, RecordKeys, Sealer,
};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

const PAYLOADS: [usize; 4] = [16, 256, 1024, 16384];

/// Record content type: application data.
const CONTENT_TYPE: u8 = 23;

/// The detected backend first, then every other available one.
fn backends() -> Vec<Backend> {
    let best = Backend::detect();
    std::iter::once(best)
        .chain(Backend::available().filter(|&b| b != best))
        .collect()
}

/// What is measured: every combination MAC-then-encrypt, and AES-128-CBC-SHA1
/// encrypt-then-MAC.
fn variants() -> Vec<(String, RecordConfig)> {
    let mut v: Vec<(String, RecordConfig)> = Combination::ALL
        .into_iter()
        .map(|c| {
            let config = RecordConfig::new(c, ProtocolVersion::Tls12, MacOrder::MacThenEncrypt);
            (c.name().to_string(), config)
        })
        .collect();
    v.push((
        format!("{}-EtM", Combination::Aes128CbcSha1),
        RecordConfig::new(
            Combination::Aes128CbcSha1,
            ProtocolVersion::Tls12,
            MacOrder::EncryptThenMac,
        ),
    ));
    v
}

struct Keys {
    enc: Vec<u8>,
    mac: Vec<u8>,
}

impl Keys {
    fn new(combination: Combination) -> Self {
        Keys {
            enc: vec![0x11; combination.cipher().key_len()],
            mac: vec![0x22; combination.mac().tls_key_len()],
        }
    }

    fn record_keys(&self) -> RecordKeys<'_> {
        RecordKeys {
            enc_key: &self.enc,
            mac_key: &self.mac,
            iv: None,
        }
    }
}

fn plaintext(payload: usize) -> Vec<u8> {
    (0..payload).map(|i| (i * 7 + 3) as u8).collect()
}

/// Seals the buffer in place, over and over (as `openssl speed` does), with
/// increasing sequence numbers: no copy, no allocation. Afterwards the same
/// sealer must still produce a record that an opener on the portable
/// backend opens to the plaintext.
fn seal(c: &mut Criterion) {
    let mut group = c.benchmark_group("seal");
    for (label, config) in variants() {
        let keys = Keys::new(config.combination);
        for backend in backends() {
            for payload in PAYLOADS {
                let mut sealer = Sealer::with_backend(config, keys.record_keys(), backend)
                    .expect("sealer for the bench");
                let offset = sealer.payload_offset();
                let mut buf = vec![0u8; sealer.sealed_len(payload)];
                buf[offset..offset + payload].copy_from_slice(&plaintext(payload));
                let mut seq = 0u64;

                group.throughput(Throughput::Bytes(payload as u64));
                group.bench_function(
                    BenchmarkId::new(format!("{label}/{backend}"), payload),
                    |b| {
                        b.iter(|| {
                            seq += 1;
                            sealer
                                .seal_in_place(black_box(seq), CONTENT_TYPE, &mut buf, payload)
                                .expect("seal")
                        })
                    },
                );

                let mut verifier =
                    Opener::with_backend(config, keys.record_keys(), Backend::Portable)
                        .expect("opener for the check");
                let input = plaintext(payload);
                let n = sealer
                    .seal(seq + 1, CONTENT_TYPE, &input, &mut buf)
                    .expect("seal");
                let opened = verifier
                    .open_in_place(seq + 1, CONTENT_TYPE, &mut buf[..n])
                    .expect("the benchmarked sealer's record opens");
                assert_eq!(opened, &input[..], "{label}/{backend}/{payload}");
            }
        }
    }
    group.finish();
}

/// Opens one record over and over. Opening decrypts in place, so each
/// iteration first copies the sealed record into the work buffer: the copy
/// is part of the measured work (as in the in-process OpenSSL figures of
/// PERFORMANCE.md, whose open also includes a copy of the record). The
/// record is sealed by a sealer on the portable backend, and the opener
/// must return the plaintext before it is timed.
fn open(c: &mut Criterion) {
    let mut group = c.benchmark_group("open");
    for (label, config) in variants() {
        let keys = Keys::new(config.combination);
        let mut sealer = Sealer::with_backend(config, keys.record_keys(), Backend::Portable)
            .expect("sealer for the bench");
        for backend in backends() {
            for payload in PAYLOADS {
                let mut opener = Opener::with_backend(config, keys.record_keys(), backend)
                    .expect("opener for the bench");
                let input = plaintext(payload);
                let seq = 0x0102_0304_0506_0708;
                let mut sealed = vec![0u8; sealer.sealed_len(payload)];
                let n = sealer
                    .seal(seq, CONTENT_TYPE, &input, &mut sealed)
                    .expect("seal");
                sealed.truncate(n);
                let mut work = sealed.clone();
                let opened = opener
                    .open_in_place(seq, CONTENT_TYPE, &mut work)
                    .expect("the record opens");
                assert_eq!(opened, &input[..], "{label}/{backend}/{payload}");

                group.throughput(Throughput::Bytes(payload as u64));
                group.bench_function(
                    BenchmarkId::new(format!("{label}/{backend}"), payload),
                    |b| {
                        b.iter(|| {
                            work.copy_from_slice(black_box(&sealed));
                            opener
                                .open_in_place(seq, CONTENT_TYPE, &mut work)
                                .expect("open")
                                .len()
                        })
                    },
                );
            }
        }
    }
    group.finish();
}

/// Short enough that the whole run (48 benchmarks per backend) stays under
/// about 3 minutes: the measurement time shrinks with the number of
/// backends, from 1 s for one or two backends to 0.5 s for four or more.
fn config() -> Criterion {
    let per_bench = Duration::from_millis(2000) / backends().len() as u32;
    Criterion::default()
        .sample_size(20)
        .nresamples(10_000)
        .warm_up_time(Duration::from_millis(200))
        .measurement_time(per_bench.clamp(Duration::from_millis(500), Duration::from_secs(1)))
}

criterion_group! {
    name = benches;
    config = config();
    targets = seal, open
}
criterion_main!(benches);
