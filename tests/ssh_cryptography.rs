//! SSH packets against an independent implementation: the RFC 4253
//! format written over Python's `cryptography` (PyPI, pinned in .ci/run),
//! through `tests/cross/ssh.py`. For every suite and backend, a run of
//! packets whose CBC chain and sequence number carry on (across the 2^32
//! wrap): with the same padding both seal the same bytes; the peer opens
//! what we seal with random padding; we open what it seals. Skips, saying
//! so, when python3 or `cryptography` is missing.

#[path = "cross/mod.rs"]
mod cross;

use cbc_hmac::Backend;
use cbc_hmac::ssh::{PAYLOAD_OFFSET, SshKeys, SshOpener, SshSealer, SshSuite};
use cross::{Peer, field, hex, unhex};

struct Xs(u64);
impl Xs {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

/// A padding length for `len` that aligns the packet: the least, or up to
/// three blocks more.
fn padding_len(suite: SshSuite, len: usize, extra: usize) -> usize {
    let covered = if suite.encrypt_then_mac() { 1 } else { 5 } + len;
    let mut pad = (16 - covered % 16) % 16;
    if pad < 4 {
        pad += 16;
    }
    pad + 16 * extra
}

#[test]
fn cryptography_agrees_on_every_suite() {
    let mut peer = match Peer::start("ssh.py", "cryptography.hazmat.primitives.ciphers") {
        Ok(p) => p,
        Err(why) => {
            eprintln!("SKIPPED: SSH cross-check with Python cryptography: {why}");
            return;
        }
    };
    let mut rng = Xs(0x5_5eed);
    let backends: Vec<Backend> = Backend::available().collect();
    let mut checked = 0;
    for (b, &backend) in backends.iter().enumerate() {
        for suite in SshSuite::ALL {
            let enc = rng.bytes(suite.cipher().key_len());
            let iv = rng.bytes(16);
            let mac = rng.bytes(suite.mac_key_len());
            let keys = SshKeys {
                enc_key: &enc,
                iv: &iv,
                mac_key: &mac,
            };
            let seq = [0u32, 3, u32::MAX - 4][b % 3];
            let common = format!(
                r#""cipher": "{}", "mac": "{}", "enc_key": "{}", "iv": "{}", "mac_key": "{}", "seq": {seq}"#,
                suite.cipher_name(),
                suite.mac_name(),
                hex(&enc),
                hex(&iv),
                hex(&mac),
            );
            let lens = [0usize, 1, 10, 11, 12, 27, 100, 255, 1024, 32 * 1024, 35000];
            let payloads: Vec<Vec<u8>> = lens.iter().map(|&n| rng.bytes(n)).collect();
            let at = format!("{suite} on {backend}");

            // The same padding: the same bytes.
            let paddings: Vec<Vec<u8>> = lens
                .iter()
                .enumerate()
                .map(|(i, &n)| rng.bytes(padding_len(suite, n, i % 4)))
                .collect();
            let mut sealer = SshSealer::with_backend(suite, keys, seq, backend).unwrap();
            let mut ours = Vec::new();
            for (p, pad) in payloads.iter().zip(&paddings) {
                let mut buf = vec![0u8; PAYLOAD_OFFSET + p.len() + pad.len() + suite.mac_len()];
                buf[PAYLOAD_OFFSET..][..p.len()].copy_from_slice(p);
                let n = sealer
                    .seal_in_place_with_padding(&mut buf, p.len(), pad)
                    .unwrap();
                ours.extend_from_slice(&buf[..n]);
            }
            let join = |v: &[Vec<u8>]| v.iter().map(|x| hex(x)).collect::<Vec<_>>().join(",");
            let reply = peer.ask(&format!(
                r#"{{"op": "seal", {common}, "payloads": "{}", "paddings": "{}"}}"#,
                join(&payloads),
                join(&paddings)
            ));
            let theirs = unhex(field(&reply, "wire").expect("wire"));
            assert_eq!(theirs.len(), ours.len(), "{at}");
            assert!(theirs == ours, "{at}: the peer seals other bytes");

            // We open what the peer sealed.
            let mut opener = SshOpener::with_backend(suite, keys, seq, backend).unwrap();
            let mut stream = theirs;
            let mut pos = 0;
            for p in &payloads {
                let total = opener.open_length(&stream[pos..]).unwrap();
                let opened = opener.open(&mut stream[pos..pos + total]).unwrap();
                assert_eq!(opened, &p[..], "{at}");
                pos += total;
            }
            assert_eq!(pos, stream.len());

            // The peer opens what we seal with random padding.
            let mut sealer = SshSealer::with_backend(suite, keys, seq, backend).unwrap();
            let mut wire = Vec::new();
            for p in &payloads {
                let mut buf = vec![0u8; sealer.sealed_len(p.len())];
                let n = sealer.seal(p, &mut buf).unwrap();
                wire.extend_from_slice(&buf[..n]);
            }
            let reply = peer.ask(&format!(
                r#"{{"op": "open", {common}, "wire": "{}", "count": {}}}"#,
                hex(&wire),
                payloads.len()
            ));
            assert_eq!(field(&reply, "error"), None, "{at}: {reply}");
            assert_eq!(
                field(&reply, "payloads"),
                Some(join(&payloads).as_str()),
                "{at}"
            );

            // A flipped bit in the last MAC: the peer refuses it too.
            let last = wire.len() - 1;
            wire[last] ^= 0x40;
            let reply = peer.ask(&format!(
                r#"{{"op": "open", {common}, "wire": "{}", "count": {}}}"#,
                hex(&wire),
                payloads.len()
            ));
            assert!(field(&reply, "error").is_some(), "{at}: {reply}");
            checked += 1;
        }
    }
    println!(
        "TESTING: SSH cross-check with Python cryptography: {checked} suite x backend runs agree"
    );
    assert_eq!(checked, backends.len() * SshSuite::ALL.len());
}
