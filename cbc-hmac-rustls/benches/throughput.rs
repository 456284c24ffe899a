//! Throughput through rustls: 64 MiB from a rustls client to a rustls
//! server in one process over in-memory buffers, with
//! TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA on this crate against
//! TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 on the `ring` provider: same
//! buffers, 16 KiB records, alternating rounds, the ratio's median.
//!
//! Also the time cbc-hmac's own `Sealer` and `Opener` take for the same
//! records, so the share spent in rustls (copies, framing, buffering) shows.
//!
//! `cargo bench -p cbc-hmac-rustls --bench throughput [-- --mib N --rounds N]`
//! (the certificate comes from the `openssl` command line).

#[path = "../tests/common/mod.rs"]
mod common;

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use cbc_hmac::{Combination, MacOrder, Opener, ProtocolVersion, RecordConfig, RecordKeys, Sealer};
use rustls::{ClientConnection, ServerConnection, SupportedCipherSuite};

use common::{KeyType, TempDir, client_config, make_certs, provider_with, server_config};

const RECORD: usize = 16384;

fn connect(
    suite: SupportedCipherSuite,
    certs: &common::Certs,
) -> (ClientConnection, ServerConnection) {
    let provider = provider_with(&[suite]);
    let mut c = ClientConnection::new(
        client_config(provider.clone(), certs),
        common::server_name(),
    )
    .unwrap();
    let mut s = ServerConnection::new(server_config(provider, certs)).unwrap();
    let mut wire = Vec::new();
    while c.is_handshaking() || s.is_handshaking() {
        wire.clear();
        while c.wants_write() {
            c.write_tls(&mut wire).unwrap();
        }
        s.read_tls(&mut &wire[..]).unwrap();
        s.process_new_packets().unwrap();
        wire.clear();
        while s.wants_write() {
            s.write_tls(&mut wire).unwrap();
        }
        c.read_tls(&mut &wire[..]).unwrap();
        c.process_new_packets().unwrap();
    }
    assert_eq!(c.negotiated_cipher_suite(), Some(suite));
    (c, s)
}

/// Moves `total` bytes client to server, a record at a time; returns the
/// time taken.
fn run(c: &mut ClientConnection, s: &mut ServerConnection, data: &[u8], total: usize) -> Duration {
    let mut wire = Vec::with_capacity(2 * RECORD + 1024);
    let mut sink = vec![0u8; RECORD];
    let mut received = 0usize;
    let start = Instant::now();
    let mut sent = 0usize;
    while received < total {
        let n = c.writer().write(&data[..RECORD.min(total - sent)]).unwrap();
        sent += n;
        wire.clear();
        while c.wants_write() {
            c.write_tls(&mut wire).unwrap();
        }
        let mut w = &wire[..];
        while !w.is_empty() {
            s.read_tls(&mut w).unwrap();
            s.process_new_packets().unwrap();
            loop {
                match s.reader().read(&mut sink) {
                    Ok(n) if n > 0 => received += n,
                    _ => break,
                }
            }
        }
    }
    start.elapsed()
}

/// cbc-hmac alone: seal and open `total` bytes in 16 KiB records.
fn run_cbc_hmac(total: usize) -> Duration {
    let config = RecordConfig::new(
        Combination::Aes128CbcSha1,
        ProtocolVersion::Tls12,
        MacOrder::MacThenEncrypt,
    );
    let keys = RecordKeys {
        enc_key: &[1; 16],
        mac_key: &[2; 20],
        iv: None,
    };
    let mut sealer = Sealer::new(config, keys).unwrap();
    let mut opener = Opener::new(config, keys).unwrap();
    let mut buf = vec![0x5au8; sealer.sealed_len(RECORD)];
    let start = Instant::now();
    for seq in 0..(total / RECORD) as u64 {
        let n = sealer.seal_in_place(seq, 23, &mut buf, RECORD).unwrap();
        let len = opener.open_in_place(seq, 23, &mut buf[..n]).unwrap().len();
        assert_eq!(len, RECORD);
    }
    start.elapsed()
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn main() {
    let mut args = std::env::args().skip(1);
    let (mut mib, mut rounds) = (64usize, 7usize);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--mib" => mib = args.next().and_then(|v| v.parse().ok()).expect("--mib N"),
            "--rounds" => {
                rounds = args
                    .next()
                    .and_then(|v| v.parse().ok())
                    .expect("--rounds N")
            }
            _ => {} // `cargo bench` passes `--bench`.
        }
    }
    if !common::tool_runs("openssl", &["version"]) {
        eprintln!(
            "SKIPPED: rustls throughput (openssl not found to make the certificate; install package openssl)"
        );
        return;
    }
    let total = mib << 20;
    let dir = TempDir::new("cbc-hmac-rustls-bench");
    let certs = make_certs(dir.path(), KeyType::Rsa);
    let cbc = cbc_hmac_rustls::TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA;
    let gcm = rustls::crypto::ring::cipher_suite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256;
    let data = vec![0xa5u8; RECORD];
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".to_string());
    println!(
        "rustls {mib} MiB client -> server in memory, {RECORD}-byte records, {rounds} rounds, {cpu}"
    );
    let (mut r_cbc, mut r_gcm, mut r_raw, mut ratio) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        // A fresh connection per round: no sequence number nears a limit.
        let (mut c, mut s) = connect(cbc, &certs);
        let t_cbc = run(&mut c, &mut s, &data, total);
        let (mut c, mut s) = connect(gcm, &certs);
        let t_gcm = run(&mut c, &mut s, &data, total);
        let t_raw = run_cbc_hmac(total);
        let gbps = |t: Duration| total as f64 / t.as_secs_f64() / 1e9;
        r_cbc.push(gbps(t_cbc));
        r_gcm.push(gbps(t_gcm));
        r_raw.push(t_raw.as_secs_f64() / t_cbc.as_secs_f64());
        ratio.push(t_gcm.as_secs_f64() / t_cbc.as_secs_f64());
    }
    println!(
        "  {:?} (cbc-hmac): {:.3} GB/s",
        cbc.suite(),
        median(&mut r_cbc)
    );
    println!(
        "  {:?} (ring):     {:.3} GB/s",
        gcm.suite(),
        median(&mut r_gcm)
    );
    println!(
        "  CBC / GCM throughput: {:.2}x (median of per-round ratios)",
        median(&mut ratio)
    );
    println!(
        "  cbc-hmac Sealer+Opener alone on the same records: {:.0}% of the CBC suite's time",
        100.0 * median(&mut r_raw)
    );
}
