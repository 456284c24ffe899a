//! Prints the speed of OpenSSL's multi-block seal (4 and 8 records of
//! 16 KiB per call) beside its one-record stitched seal, AES-128 with
//! HMAC-SHA1 and HMAC-SHA256, TLS 1.2, in alternating rounds; GB/s of
//! payload per second of this thread's CPU time (and of wall-clock time),
//! medians, and the median per-round ratio. Print-only: no figure is
//! checked.
//!
//! `cargo run --release -p openssl-ref --features ffi --example multiblock_speed [seconds per round]`

use std::hint::black_box;
use std::time::{Duration, Instant};

use openssl_ref::{
    Digest, MacOrder, MultiBlockSealer, StitchedTlsCipher, TLS1_2, TlsParams, version,
};

const RECORD: usize = 16384;
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
        s += &format!(", {ratio:.2}x one record");
    }
    s
}

fn main() {
    let secs: f64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0.2);
    let time = Duration::from_secs_f64(secs);
    println!(
        "{}; {ROUNDS} alternating rounds of {secs} s of CPU time per engine",
        version()
    );
    for digest in [Digest::Sha1, Digest::Sha256] {
        let enc = [0x11u8; 16];
        let mac = vec![0x22u8; digest.output_len()];
        let params = TlsParams {
            enc_key: &enc,
            mac_key: &mac,
            digest,
            version: TLS1_2,
            mac_order: MacOrder::MacThenEncrypt,
            tls10_iv: None,
        };
        let mut one = match StitchedTlsCipher::new(&params) {
            Ok(s) => s,
            Err(e) => {
                println!("SKIPPED: {digest:?}: {e}");
                continue;
            }
        };
        let mut mb = match MultiBlockSealer::new(digest, &enc, &mac) {
            Ok(s) => s,
            Err(e) => {
                println!("SKIPPED: multi-block {digest:?}: {e}");
                continue;
            }
        };
        let plaintext = vec![0x33u8; 8 * RECORD];
        let mut out = vec![0u8; mb.sealed_len(8 * RECORD, 8).unwrap()];
        let mut record = vec![0x33u8; one.sealed_len(RECORD)];
        let mut seq = 0u64;
        let (mut r1, mut r4, mut r8) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..ROUNDS {
            r1.push(rate(time, RECORD, || {
                seq += 1;
                black_box(
                    one.seal_in_place_libssl(seq, 23, &mut record, RECORD)
                        .unwrap(),
                );
            }));
            for (x, r) in [(4, &mut r4), (8, &mut r8)] {
                r.push(rate(time, x * RECORD, || {
                    seq += x as u64;
                    let p = &plaintext[..x * RECORD];
                    black_box(mb.seal(seq, TLS1_2, black_box(p), x, &mut out).unwrap());
                }));
            }
        }
        println!(
            "{} (one record per call): {}",
            one.name(),
            summary(&r1, None)
        );
        println!(
            "{} multi-block 4 x 16384: {}",
            mb.name(),
            summary(&r4, Some(&r1))
        );
        println!(
            "{} multi-block 8 x 16384: {}",
            mb.name(),
            summary(&r8, Some(&r1))
        );
    }
}
