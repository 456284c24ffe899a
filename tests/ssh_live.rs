//! SSH packets against a live OpenSSH `sshd` on loopback.
//!
//! A minimal test-only client: version exchange, KEXINIT, the
//! `curve25519-sha256` key exchange (RFC 8731), key derivation (RFC 4253
//! section 7.2), NEWKEYS; then an encrypted SERVICE_REQUEST
//! `ssh-userauth` sealed by [`SshSealer`] and the SERVICE_ACCEPT opened by
//! [`SshOpener`], for each suite, with `sshd -o Ciphers=... -o MACs=...`
//! on a free port (temporary host key, `-D -e`, killed at the end). Then a
//! tampered packet: sshd must drop the connection (for the non-EtM forms
//! only once the bound of 256 KiB has been consumed, OpenSSH's own
//! length-oracle defence). The host key signature is not checked: this
//! client only needs the keys. Prints `SKIPPED: ...` when sshd cannot be
//! found or started (Debian: `apt-get install openssh-server`; run as
//! root).

mod common;

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use cbc_hmac::ssh::{SshKeys, SshOpener, SshSealer, SshSuite};
use common::sshd::{sshd_path, start_sshd};
use sha2::{Digest, Sha256};

const CLIENT_VERSION: &str = "SSH-2.0-cbchmac_test";

// --- the wire encoding (RFC 4251 section 5) ---

fn put_string(out: &mut Vec<u8>, s: &[u8]) {
    out.extend_from_slice(&(s.len() as u32).to_be_bytes());
    out.extend_from_slice(s);
}

fn put_mpint(out: &mut Vec<u8>, n: &[u8]) {
    let n = &n[n.iter().position(|&b| b != 0).unwrap_or(n.len())..];
    if n.first().is_some_and(|&b| b & 0x80 != 0) {
        out.extend_from_slice(&(n.len() as u32 + 1).to_be_bytes());
        out.push(0);
        out.extend_from_slice(n);
    } else {
        put_string(out, n);
    }
}

fn get_string<'a>(data: &mut &'a [u8]) -> io::Result<&'a [u8]> {
    let bad = || io::Error::new(io::ErrorKind::InvalidData, "short string");
    let len = u32::from_be_bytes(data.get(..4).ok_or_else(bad)?.try_into().unwrap()) as usize;
    let s = data.get(4..4 + len).ok_or_else(bad)?;
    *data = &data[4 + len..];
    Ok(s)
}

/// The transport before NEWKEYS: clear packets, block size 8.
struct Clear {
    stream: TcpStream,
    sent: u32,
    received: u32,
}

impl Clear {
    fn send(&mut self, payload: &[u8]) -> io::Result<()> {
        let mut pad = 8 - (5 + payload.len()) % 8;
        if pad < 4 {
            pad += 8;
        }
        let mut p = Vec::new();
        p.extend_from_slice(&((1 + payload.len() + pad) as u32).to_be_bytes());
        p.push(pad as u8);
        p.extend_from_slice(payload);
        p.extend(std::iter::repeat_n(0u8, pad));
        self.sent += 1;
        self.stream.write_all(&p)
    }

    fn recv(&mut self) -> io::Result<Vec<u8>> {
        let mut head = [0u8; 5];
        self.stream.read_exact(&mut head)?;
        let len = u32::from_be_bytes(head[..4].try_into().unwrap()) as usize;
        if !(5..=35000).contains(&len) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "bad clear length",
            ));
        }
        let mut rest = vec![0u8; len - 1];
        self.stream.read_exact(&mut rest)?;
        self.received += 1;
        let pad = head[4] as usize;
        rest.truncate(rest.len() - pad);
        Ok(rest)
    }
}

fn name_list(out: &mut Vec<u8>, s: &str) {
    put_string(out, s.as_bytes());
}

/// RFC 4253 section 7.2: `HASH(K || H || letter || session_id)`, extended
/// by `HASH(K || H || K1 || ...)` to `len` bytes.
fn derive(k: &[u8], h: &[u8], letter: u8, session_id: &[u8], len: usize) -> Vec<u8> {
    let mut out = Sha256::new()
        .chain_update(k)
        .chain_update(h)
        .chain_update([letter])
        .chain_update(session_id)
        .finalize()
        .to_vec();
    while out.len() < len {
        let more = Sha256::new()
            .chain_update(k)
            .chain_update(h)
            .chain_update(&out)
            .finalize();
        out.extend_from_slice(&more);
    }
    out.truncate(len);
    out
}

/// What happened in one session.
struct Outcome {
    accepted: bool,
    tamper_dropped: bool,
}

fn session(port: u16, suite: SshSuite) -> io::Result<Outcome> {
    let stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(Duration::from_secs(20)))?;
    let mut t = Clear {
        stream,
        sent: 0,
        received: 0,
    };
    t.stream
        .write_all(format!("{CLIENT_VERSION}\r\n").as_bytes())?;
    // The server's version line (lines before it may be banners).
    let server_version = loop {
        let mut line = Vec::new();
        let mut b = [0u8; 1];
        while line.last() != Some(&b'\n') {
            t.stream.read_exact(&mut b)?;
            line.push(b[0]);
        }
        let line = String::from_utf8_lossy(&line).trim_end().to_string();
        if line.starts_with("SSH-") {
            break line;
        }
    };

    let mut cookie = [0u8; 16];
    getrandom::fill(&mut cookie).unwrap();
    let mut kexinit = vec![20u8];
    kexinit.extend_from_slice(&cookie);
    name_list(&mut kexinit, "curve25519-sha256");
    name_list(&mut kexinit, "ssh-ed25519");
    for _ in 0..2 {
        name_list(&mut kexinit, suite.cipher_name());
    }
    for _ in 0..2 {
        name_list(&mut kexinit, suite.mac_name());
    }
    for _ in 0..2 {
        name_list(&mut kexinit, "none");
    }
    for _ in 0..2 {
        name_list(&mut kexinit, "");
    }
    kexinit.push(0); // first_kex_packet_follows
    kexinit.extend_from_slice(&[0; 4]);
    t.send(&kexinit)?;
    let server_kexinit = t.recv()?;
    assert_eq!(server_kexinit[0], 20, "KEXINIT expected");

    let mut secret = [0u8; 32];
    getrandom::fill(&mut secret).unwrap();
    let secret = x25519_dalek::StaticSecret::from(secret);
    let q_c = x25519_dalek::PublicKey::from(&secret);
    let mut init = vec![30u8];
    put_string(&mut init, q_c.as_bytes());
    t.send(&init)?;
    let reply = t.recv()?;
    assert_eq!(reply[0], 31, "KEX_ECDH_REPLY expected");
    let mut r = &reply[1..];
    let k_s = get_string(&mut r)?;
    let q_s = get_string(&mut r)?;
    let q_s: [u8; 32] = q_s
        .try_into()
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "Q_S length"))?;
    let shared = secret.diffie_hellman(&x25519_dalek::PublicKey::from(q_s));
    let mut k = Vec::new();
    put_mpint(&mut k, shared.as_bytes());

    let mut h_input = Vec::new();
    put_string(&mut h_input, CLIENT_VERSION.as_bytes());
    put_string(&mut h_input, server_version.as_bytes());
    put_string(&mut h_input, &kexinit);
    put_string(&mut h_input, &server_kexinit);
    put_string(&mut h_input, k_s);
    put_string(&mut h_input, q_c.as_bytes());
    put_string(&mut h_input, &q_s);
    h_input.extend_from_slice(&k);
    let h = Sha256::digest(&h_input).to_vec();
    let session_id = h.clone();

    t.send(&[21])?;
    let newkeys = t.recv()?;
    assert_eq!(newkeys, [21], "NEWKEYS expected");

    let key_len = suite.cipher().key_len();
    let mac_len = suite.mac_key_len();
    let (iv_c, iv_s) = (
        derive(&k, &h, b'A', &session_id, 16),
        derive(&k, &h, b'B', &session_id, 16),
    );
    let (enc_c, enc_s) = (
        derive(&k, &h, b'C', &session_id, key_len),
        derive(&k, &h, b'D', &session_id, key_len),
    );
    let (mac_c, mac_s) = (
        derive(&k, &h, b'E', &session_id, mac_len),
        derive(&k, &h, b'F', &session_id, mac_len),
    );
    let to_server = SshKeys {
        enc_key: &enc_c,
        iv: &iv_c,
        mac_key: &mac_c,
    };
    let from_server = SshKeys {
        enc_key: &enc_s,
        iv: &iv_s,
        mac_key: &mac_s,
    };
    let mut sealer = SshSealer::new(suite, to_server, t.sent).expect("sealer");
    let mut opener = SshOpener::new(suite, from_server, t.received).expect("opener");

    let mut request = vec![5u8];
    put_string(&mut request, b"ssh-userauth");
    let mut wire = vec![0u8; sealer.sealed_len(request.len())];
    let n = sealer.seal(&request, &mut wire).expect("seal");
    t.stream.write_all(&wire[..n])?;

    // The reply, read in the opener's two steps.
    let mut head = vec![0u8; opener.length_prefix_len()];
    t.stream.read_exact(&mut head)?;
    let total = opener.open_length(&head).expect("length");
    assert!(total < 4096, "{suite}: announced {total} bytes");
    let mut packet = vec![0u8; total];
    packet[..head.len()].copy_from_slice(&head);
    t.stream.read_exact(&mut packet[head.len()..])?;
    let payload = opener.open(&mut packet).expect("sshd's packet opens");
    let mut expected = vec![6u8];
    put_string(&mut expected, b"ssh-userauth");
    let accepted = payload == &expected[..];

    // A tampered packet: sshd must drop the connection. Without EtM it
    // waits for 256 KiB first (its discard), so send that much filler.
    let n = sealer.seal(&[2, 0, 0, 0, 0], &mut wire).expect("seal");
    wire[n - 1] ^= 1;
    let _ = t.stream.write_all(&wire[..n]);
    if !suite.encrypt_then_mac() {
        let filler = vec![0u8; 300 * 1024];
        let _ = t.stream.write_all(&filler);
    }
    let mut rest = Vec::new();
    let tamper_dropped = match t.stream.read_to_end(&mut rest) {
        // EOF: sshd closed. Whatever it sent first (a DISCONNECT, sealed)
        // is not a packet we wait for.
        Ok(_) => true,
        Err(e) => matches!(
            e.kind(),
            io::ErrorKind::ConnectionReset | io::ErrorKind::ConnectionAborted
        ),
    };
    Ok(Outcome {
        accepted,
        tamper_dropped,
    })
}

#[test]
fn live_sshd_accepts_our_packets_and_we_open_its() {
    let Some(sshd) = sshd_path() else {
        eprintln!("SKIPPED: live sshd interop (no sshd; apt-get install openssh-server)");
        return;
    };
    println!(
        "{:<12} {:<32} {:<16} tampered packet",
        "cipher", "mac", "service accept"
    );
    let mut passed = 0;
    let mut ran = 0;
    for (i, suite) in SshSuite::ALL.into_iter().enumerate() {
        let server = match start_sshd(&sshd, suite, &i.to_string(), &[]) {
            Ok(s) => s,
            Err(why) => {
                eprintln!("SKIPPED: live sshd interop, {suite}: {why}");
                continue;
            }
        };
        ran += 1;
        let outcome = session(server.port, suite);
        // Give sshd a moment to write its log, then find why it dropped us.
        std::thread::sleep(Duration::from_millis(200));
        let log = server.log();
        let mac_logged = log
            .lines()
            .any(|l| l.contains("Corrupted MAC") || l.contains("message authentication code"));
        let (accept, tamper) = match &outcome {
            Ok(o) => (
                if o.accepted { "ok" } else { "WRONG" },
                match (o.tamper_dropped, mac_logged) {
                    (true, true) => "dropped: bad MAC",
                    (true, false) => "dropped, no MAC error logged",
                    _ => "NOT DROPPED",
                },
            ),
            Err(_) => ("ERROR", "-"),
        };
        println!(
            "{:<12} {:<32} {:<16} {}",
            suite.cipher_name(),
            suite.mac_name(),
            accept,
            tamper
        );
        match outcome {
            Ok(o) if o.accepted && o.tamper_dropped && mac_logged => passed += 1,
            Ok(_) => eprintln!("{suite}: sshd log:\n{log}"),
            Err(e) => eprintln!("{suite}: {e}\nsshd log:\n{log}"),
        }
        drop(server);
    }
    if ran == 0 {
        eprintln!("SKIPPED: live sshd interop (sshd would not start for any suite)");
        return;
    }
    println!("TESTING: live sshd interop: {passed}/{ran} suites");
    assert_eq!(passed, ran, "every suite sshd accepts must pass");
}
