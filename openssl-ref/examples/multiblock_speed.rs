//! Prints the speed of OpenSSL's multi-block seal (4 and 8 records of
//! 16 KiB per call) beside its one-record stitched seal, AES-128 with
//! HMAC-SHA1 and HMAC-SHA256, TLS 1.2, in alternating rounds; GB/s of
//! payload, medians. Print-only: no figure is checked.
//!
//! `cargo run --release -p openssl-ref --features ffi --example multiblock_speed [seconds per round]`

use std::hint::black_box;
use std::time::{Duration, Instant};

use openssl_ref::{
    Digest, MacOrder, MultiBlockSealer, StitchedTlsCipher, TLS1_2, TlsParams, version,
};

const RECORD: usize = 16384;
const ROUNDS: usize = 7;

/// Runs `f` (which seals `bytes` of payload) for about `time`; GB/s.
fn rate(time: Duration, bytes: usize, mut f: impl FnMut()) -> f64 {
    f();
    let start = Instant::now();
    let mut n = 0u64;
    while start.elapsed() < time {
        f();
        n += 1;
    }
    (n as f64 * bytes as f64) / start.elapsed().as_secs_f64() / 1e9
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let secs: f64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0.2);
    let time = Duration::from_secs_f64(secs);
    println!(
        "{}; {ROUNDS} alternating rounds of {secs} s per engine",
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
        let (m1, m4, m8) = (median(r1), median(r4), median(r8));
        println!("{} (one record per call):  {m1:.2} GB/s", one.name());
        println!(
            "{} multi-block 4 x 16384:     {m4:.2} GB/s ({:.2}x one record)",
            mb.name(),
            m4 / m1
        );
        println!(
            "{} multi-block 8 x 16384:     {m8:.2} GB/s ({:.2}x one record)",
            mb.name(),
            m8 / m1
        );
    }
}
