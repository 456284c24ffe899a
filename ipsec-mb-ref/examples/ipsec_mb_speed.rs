//! Prints intel-ipsec-mb's throughput on batches of 16 AES-128-CBC +
//! HMAC-SHA1 / HMAC-SHA256 jobs (16 distinct key pairs, one per job), of
//! 16 KiB and 1408 bytes each, in both shapes, beside cbc-hmac sealing the
//! same payloads one TLS 1.2 record at a time; alternating rounds, GB/s of
//! payload per second of this thread's CPU time (and of wall-clock time),
//! medians, and the median per-round ratio. Print-only: no figure is
//! checked.
//!
//! - ESP / encrypt-then-MAC shape: `IV || data`; encrypt `data`, then MAC
//!   `IV || ciphertext` (`Order::CipherThenHash`).
//! - MAC-then-encrypt shape: `header(13) || data || tag || padding` laid
//!   out once by this program; MAC `header || data`, then encrypt
//!   `data || tag || padding` (`Order::HashThenCipher`, tag in place).
//!
//! The library does no TLS work in either (no header built per record, no
//! padding written, no IV drawn); cbc-hmac's seal does all of it.
//!
//! `cargo run --release -p ipsec-mb-ref --features ffi --example ipsec_mb_speed [seconds per round]`

use std::hint::black_box;
use std::time::{Duration, Instant};

use ipsec_mb_ref::{AesKey, CbcHmacJob, Hash, HmacKey, Manager, Order, version};

const JOBS: usize = 16;
const ROUNDS: usize = 7;

/// The calling thread's CPU time (Linux's `/proc/thread-self/schedstat`):
/// on a shared machine the figures then count only the time this thread
/// ran. `None` where the file is missing (then wall time is used).
fn cpu_time() -> Option<Duration> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: u64 = s.split_whitespace().next()?.parse().ok()?;
    Some(Duration::from_nanos(ns))
}

/// Runs `f` (which seals `bytes` of payload) for about `time` of this
/// thread's CPU time; GB/s per CPU second and per wall-clock second.
fn rate(time: Duration, bytes: usize, mut f: impl FnMut()) -> (f64, f64) {
    f();
    // Calls between clock reads: enough for a millisecond.
    let mut chunk = 1u64;
    loop {
        let t = Instant::now();
        (0..chunk).for_each(|_| f());
        if t.elapsed() >= Duration::from_millis(1) {
            break;
        }
        chunk *= 2;
    }
    let (cpu0, wall0) = (cpu_time(), Instant::now());
    let mut n = 0u64;
    let cpu = loop {
        (0..chunk).for_each(|_| f());
        n += chunk;
        let cpu = match (cpu0, cpu_time()) {
            (Some(a), Some(b)) => b.saturating_sub(a),
            _ => wall0.elapsed(),
        };
        if cpu >= time {
            break cpu;
        }
    };
    let wall = wall0.elapsed();
    let total = n as f64 * bytes as f64 / 1e9;
    (total / cpu.as_secs_f64(), total / wall.as_secs_f64())
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Medians of the CPU-time and wall-time rates, and of the per-round
/// ratio to `base` (CPU time).
fn summary(r: &[(f64, f64)], base: Option<&[(f64, f64)]>) -> String {
    let cpu = median(r.iter().map(|x| x.0).collect());
    let wall = median(r.iter().map(|x| x.1).collect());
    let mut s = format!("{cpu:.2} GB/s per CPU second ({wall:.2} GB/s wall clock)");
    if let Some(base) = base {
        let ratio = median(r.iter().zip(base).map(|(a, b)| a.0 / b.0).collect());
        s += &format!(", {ratio:.2}x cbc-hmac");
    }
    s
}

struct Keys {
    aes: Vec<AesKey>,
    mac: Vec<HmacKey>,
}

/// One batch: 16 jobs over `bufs`, in the given shape.
fn run(mgr: &mut Manager, keys: &Keys, bufs: &mut [Vec<u8>], len: usize, mte: bool) {
    let mut jobs: [Option<CbcHmacJob<'_>>; JOBS] = Default::default();
    for (i, (slot, b)) in jobs.iter_mut().zip(bufs.iter_mut()).enumerate() {
        let total = b.len();
        *slot = Some(if mte {
            CbcHmacJob::new(
                &keys.aes[i],
                &keys.mac[i],
                [i as u8; 16],
                b,
                13..total,
                0..13 + len,
                Order::HashThenCipher,
            )
            .with_tag_at(13 + len)
        } else {
            CbcHmacJob::new(
                &keys.aes[i],
                &keys.mac[i],
                [i as u8; 16],
                b,
                16..total,
                0..total,
                Order::CipherThenHash,
            )
        });
    }
    let mut jobs = jobs.map(|j| j.expect("filled above"));
    mgr.cbc_hmac_batch(&mut jobs).expect("batch");
    black_box(&jobs);
}

fn main() {
    let secs: f64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0.2);
    let time = Duration::from_secs_f64(secs);
    let mut mgr = Manager::new().expect("intel-ipsec-mb manager");
    println!(
        "intel-ipsec-mb {} manager {}; cbc-hmac backend {:?}; {ROUNDS} alternating rounds of {secs} s of CPU time",
        version(),
        mgr.description(),
        cbc_hmac::Backend::detect()
    );
    for (hash, mac_alg, combination) in [
        (
            Hash::Sha1,
            cbc_hmac::MacAlgorithm::HmacSha1,
            cbc_hmac::Combination::Aes128CbcSha1,
        ),
        (
            Hash::Sha256,
            cbc_hmac::MacAlgorithm::HmacSha256,
            cbc_hmac::Combination::Aes128CbcSha256,
        ),
    ] {
        let t = mac_alg.output_len();
        let keys = Keys {
            aes: (0..JOBS)
                .map(|i| AesKey::new(&mut mgr, &[i as u8 + 1; 16]).unwrap())
                .collect(),
            mac: (0..JOBS)
                .map(|i| HmacKey::new(&mut mgr, hash, &vec![i as u8 + 100; t]).unwrap())
                .collect(),
        };
        let mut sealers: Vec<cbc_hmac::Sealer> = (0..JOBS)
            .map(|i| {
                let config = cbc_hmac::RecordConfig::new(
                    combination,
                    cbc_hmac::ProtocolVersion::Tls12,
                    cbc_hmac::MacOrder::MacThenEncrypt,
                );
                let keys = cbc_hmac::RecordKeys {
                    enc_key: &[i as u8 + 1; 16],
                    mac_key: &vec![i as u8 + 100; t],
                    iv: None,
                };
                cbc_hmac::Sealer::new(config, keys).unwrap()
            })
            .collect();
        for len in [16384usize, 1408] {
            let mut etm: Vec<Vec<u8>> = (0..JOBS).map(|_| vec![0x5a; 16 + len]).collect();
            let padded = (len + t + 1).next_multiple_of(16);
            let mut mte: Vec<Vec<u8>> = (0..JOBS)
                .map(|_| {
                    let mut b = vec![0x5a; 13 + padded];
                    let pad = (padded - len - t - 1) as u8;
                    b[13 + len + t..].fill(pad);
                    b
                })
                .collect();
            let mut records: Vec<Vec<u8>> = (0..JOBS)
                .map(|i| vec![0x5a; sealers[i].sealed_len(len)])
                .collect();
            let mut seq = 0u64;
            let (mut r_etm, mut r_mte, mut r_ours) = (Vec::new(), Vec::new(), Vec::new());
            let bytes = JOBS * len;
            for _ in 0..ROUNDS {
                r_etm.push(rate(time, bytes, || {
                    run(&mut mgr, &keys, &mut etm, len, false)
                }));
                r_mte.push(rate(time, bytes, || {
                    run(&mut mgr, &keys, &mut mte, len, true)
                }));
                r_ours.push(rate(time, bytes, || {
                    seq += 1;
                    for (s, r) in sealers.iter_mut().zip(records.iter_mut()) {
                        black_box(s.seal_in_place(seq, 23, r, len).unwrap());
                    }
                }));
            }
            println!("AES-128 {hash:?} {JOBS} x {len}:");
            println!(
                "  ipsec-mb cipher-then-hash: {}",
                summary(&r_etm, Some(&r_ours))
            );
            println!(
                "  ipsec-mb hash-then-cipher: {}",
                summary(&r_mte, Some(&r_ours))
            );
            println!(
                "  cbc-hmac one record at a time: {}",
                summary(&r_ours, None)
            );
        }
    }
}
