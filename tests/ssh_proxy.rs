//! A re-sealing proxy between a paramiko client and OpenSSH's `sshd`.
//!
//! For each suite: sshd on loopback (`Ciphers`/`MACs` that suite only,
//! public-key login with a key made here), a TCP proxy in this process, and
//! `tests/ssh_proxy_client.py` (paramiko) connecting to the proxy with that
//! cipher and MAC, logging the session keys it derives to a file. The proxy
//! forwards the version lines and the clear key exchange untouched,
//! counting packets; after each direction's NEWKEYS it reads that
//! direction's keys from the log and from then on opens every packet with
//! [`SshOpener`] and seals it again with [`SshSealer`] (fresh random
//! padding, a CBC chain of its own), so each side receives only packets
//! sealed by this crate. The session authenticates, runs `echo` of a random
//! token and the client's output is checked.
//!
//! Three sessions per suite: a clean one (sequence numbers counted on from
//! the first clear packet), one with strict key exchange (they restart at
//! NEWKEYS) where the proxy flips a bit in the first packet to sshd after
//! authentication (sshd must log a MAC error and drop the connection; for
//! the non-EtM forms only after consuming its 256 KiB bound, so the proxy
//! sends filler), and one where it flips a bit in the first packet to the
//! client after authentication (paramiko must fail on the MAC).
//!
//! Prints `SKIPPED: ...` when sshd, python3 or paramiko is missing (CI:
//! `apt-get install openssh-server`, `pip install paramiko==5.1.0`).

mod common;

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cbc_hmac::ssh::{SshKeys, SshOpener, SshSealer, SshSuite};
use common::sshd::{keygen, sshd_path, start_sshd};

const CLIENT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/ssh_proxy_client.py");
const TIMEOUT: Duration = Duration::from_secs(20);

const MSG_KEXINIT: u8 = 20;
const MSG_NEWKEYS: u8 = 21;
const MSG_USERAUTH_SUCCESS: u8 = 52;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Dir {
    ToServer,
    ToClient,
}

/// What one session's proxy does to the traffic.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Tamper {
    None,
    /// Flip a bit in the first re-sealed packet of this direction after
    /// the server's USERAUTH_SUCCESS.
    After(Dir),
}

/// State the two directions of one connection share.
#[derive(Default)]
struct Shared {
    /// KEXINIT payloads: client's, server's.
    kexinit: Mutex<[Option<Vec<u8>>; 2]>,
    authenticated: AtomicBool,
    tampered: AtomicBool,
    strict: AtomicBool,
}

/// What one direction of the proxy saw.
#[derive(Debug, Default)]
struct DirReport {
    clear: u32,
    resealed: u32,
    /// Re-sealed packets byte-for-byte equal to the one received (fresh
    /// padding and our own chain make that vanishingly unlikely).
    identical: u32,
    /// Why the direction ended, when not at the peer's end of stream.
    error: Option<String>,
}

fn bad(msg: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.into())
}

/// The first name-list of a KEXINIT payload (the key exchange methods).
fn kex_names(kexinit: &[u8]) -> Vec<String> {
    let Some(list) = kexinit.get(17..21) else {
        return Vec::new();
    };
    let len = u32::from_be_bytes(list.try_into().unwrap()) as usize;
    let names = kexinit.get(21..21 + len).unwrap_or_default();
    String::from_utf8_lossy(names)
        .split(',')
        .map(str::to_string)
        .collect()
}

/// Waits for the three keys of `letters` (IV, encryption, MAC) in the
/// client's key log: `LETTER HEX` lines, the first of each letter.
fn wait_for_keys(log: &Path, letters: [char; 3], lens: [usize; 3]) -> io::Result<[Vec<u8>; 3]> {
    let until = Instant::now() + TIMEOUT;
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        let mut found: [Option<Vec<u8>>; 3] = [None, None, None];
        // Only whole lines: the client may be writing the next.
        for line in text.split_inclusive('\n').filter(|l| l.ends_with('\n')) {
            let mut parts = line.split_whitespace();
            let (Some(letter), Some(hex)) = (parts.next(), parts.next()) else {
                continue;
            };
            for i in 0..3 {
                if found[i].is_none() && letter == letters[i].to_string() {
                    let key: Vec<u8> = (0..hex.len() / 2)
                        .map(|j| u8::from_str_radix(&hex[2 * j..2 * j + 2], 16))
                        .collect::<Result<_, _>>()
                        .map_err(|_| bad("key log: bad hex"))?;
                    if key.len() != lens[i] {
                        return Err(bad(format!(
                            "key {letter}: {} bytes, expected {}",
                            key.len(),
                            lens[i]
                        )));
                    }
                    found[i] = Some(key);
                }
            }
        }
        if let [Some(iv), Some(enc), Some(mac)] = found {
            return Ok([iv, enc, mac]);
        }
        if Instant::now() > until {
            return Err(bad(format!("keys {letters:?} not logged")));
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Copies the version line(s) and the clear packets up to and including
/// NEWKEYS; returns how many packets passed (the sequence number so far).
fn relay_clear(
    from: &mut BufReader<TcpStream>,
    to: &mut TcpStream,
    dir: Dir,
    shared: &Shared,
) -> io::Result<u32> {
    loop {
        let mut line = Vec::new();
        if from.read_until(b'\n', &mut line)? == 0 {
            return Err(bad("end of stream before the version line"));
        }
        to.write_all(&line)?;
        if line.starts_with(b"SSH-") {
            break;
        }
    }
    let mut seq = 0u32;
    loop {
        let mut head = [0u8; 4];
        from.read_exact(&mut head)?;
        let len = u32::from_be_bytes(head) as usize;
        if !(5..=35000).contains(&len) {
            return Err(bad(format!("clear packet length {len}")));
        }
        let mut body = vec![0u8; len];
        from.read_exact(&mut body)?;
        to.write_all(&head)?;
        to.write_all(&body)?;
        seq = seq.wrapping_add(1);
        let pad = body[0] as usize;
        let payload = body.get(1..len.saturating_sub(pad)).unwrap_or_default();
        match payload.first() {
            Some(&MSG_KEXINIT) => {
                shared.kexinit.lock().unwrap()[(dir == Dir::ToClient) as usize] =
                    Some(payload.to_vec());
            }
            Some(&MSG_NEWKEYS) => return Ok(seq),
            _ => {}
        }
    }
}

/// One direction of the proxy.
fn relay(
    from: TcpStream,
    mut to: TcpStream,
    dir: Dir,
    suite: SshSuite,
    keylog: &Path,
    shared: &Shared,
    tamper: Tamper,
) -> DirReport {
    let mut report = DirReport::default();
    let mut from = BufReader::new(from);
    let result = relay_inner(
        &mut from,
        &mut to,
        dir,
        suite,
        keylog,
        shared,
        tamper,
        &mut report,
    );
    match result {
        // The peer closed: pass that on.
        Ok(true) => {
            let _ = to.shutdown(Shutdown::Write);
        }
        // Tampered: the receiver is to notice on its own.
        Ok(false) => {}
        // A peer that closes with data unread resets the connection: an
        // end as well (the session's outcome is judged by the client).
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::ConnectionReset
                    | io::ErrorKind::ConnectionAborted
                    | io::ErrorKind::BrokenPipe
            ) =>
        {
            let _ = to.shutdown(Shutdown::Both);
        }
        Err(e) => {
            report.error = Some(e.to_string());
            let _ = to.shutdown(Shutdown::Both);
        }
    }
    report
}

/// Returns `Ok(true)` at the sender's end of stream, `Ok(false)` after
/// sending the tampered packet.
#[allow(clippy::too_many_arguments)]
fn relay_inner(
    from: &mut BufReader<TcpStream>,
    to: &mut TcpStream,
    dir: Dir,
    suite: SshSuite,
    keylog: &Path,
    shared: &Shared,
    tamper: Tamper,
    report: &mut DirReport,
) -> io::Result<bool> {
    let mut seq = relay_clear(from, to, dir, shared)?;
    report.clear = seq;
    // Strict key exchange (OpenSSH's PROTOCOL, "kex-strict"): both sides
    // offered it, so the numbers restart at 0 after NEWKEYS. Both KEXINITs
    // have passed: each side sends NEWKEYS only after receiving the other's.
    let strict = {
        let kexinit = shared.kexinit.lock().unwrap();
        let offered = |i: usize, name: &str| {
            kexinit[i]
                .as_deref()
                .is_some_and(|k| kex_names(k).iter().any(|n| n == name))
        };
        offered(0, "kex-strict-c-v00@openssh.com") && offered(1, "kex-strict-s-v00@openssh.com")
    };
    if strict {
        shared.strict.store(true, Ordering::SeqCst);
        seq = 0;
    }
    let letters = match dir {
        Dir::ToServer => ['A', 'C', 'E'],
        Dir::ToClient => ['B', 'D', 'F'],
    };
    let [iv, enc, mac] = wait_for_keys(
        keylog,
        letters,
        [16, suite.cipher().key_len(), suite.mac_key_len()],
    )?;
    let keys = SshKeys {
        enc_key: &enc,
        iv: &iv,
        mac_key: &mac,
    };
    let mut opener = SshOpener::new(suite, keys, seq).map_err(|e| bad(format!("opener: {e}")))?;
    let mut sealer = SshSealer::new(suite, keys, seq).map_err(|e| bad(format!("sealer: {e}")))?;

    let mut head = vec![0u8; opener.length_prefix_len()];
    loop {
        // The peer's end of stream, between packets only.
        let mut got = 0;
        while got < head.len() {
            match from.read(&mut head[got..])? {
                0 if got == 0 => return Ok(true),
                0 => return Err(bad("end of stream inside a packet")),
                n => got += n,
            }
        }
        let total = opener
            .open_length(&head)
            .map_err(|e| bad(format!("packet {}: length: {e}", opener.sequence())))?;
        let mut packet = vec![0u8; total];
        packet[..head.len()].copy_from_slice(&head);
        from.read_exact(&mut packet[head.len()..])?;
        let received = packet.clone();
        let number = opener.sequence();
        let payload = opener
            .open(&mut packet)
            .map_err(|e| bad(format!("packet {number} does not open: {e}")))?;

        let mut wire = vec![0u8; sealer.sealed_len(payload.len())];
        let n = sealer
            .seal(payload, &mut wire)
            .map_err(|e| bad(format!("seal: {e}")))?;
        report.resealed += 1;
        if wire[..n] == received[..] {
            report.identical += 1;
        }
        // Authentication is over once sshd says so; the packet after that
        // in the chosen direction is the one to spoil.
        let spoil = tamper == Tamper::After(dir)
            && shared.authenticated.load(Ordering::SeqCst)
            && !shared.tampered.load(Ordering::SeqCst);
        if dir == Dir::ToClient && payload.first() == Some(&MSG_USERAUTH_SUCCESS) {
            shared.authenticated.store(true, Ordering::SeqCst);
        }
        if spoil {
            // The last encrypted byte: a bad MAC (and, without EtM, a
            // spoilt padding block) for the receiver.
            wire[n - suite.mac_len() - 1] ^= 0x01;
            shared.tampered.store(true, Ordering::SeqCst);
            to.write_all(&wire[..n])?;
            if dir == Dir::ToServer && !suite.encrypt_then_mac() {
                // sshd consumes its 256 KiB bound before failing.
                let _ = to.write_all(&vec![0u8; 300 * 1024]);
            }
            return Ok(false);
        }
        to.write_all(&wire[..n])?;
    }
}

/// The proxy for one connection, on a port of its own.
struct Proxy {
    port: u16,
    thread: std::thread::JoinHandle<io::Result<ProxyReport>>,
}

struct ProxyReport {
    to_server: DirReport,
    to_client: DirReport,
    tampered: bool,
    strict: bool,
}

fn start_proxy(sshd_port: u16, suite: SshSuite, keylog: PathBuf, tamper: Tamper) -> Proxy {
    let listener = TcpListener::bind("127.0.0.1:0").expect("proxy listens");
    let port = listener.local_addr().unwrap().port();
    let thread = std::thread::spawn(move || {
        listener.set_nonblocking(true)?;
        let until = Instant::now() + TIMEOUT;
        let client = loop {
            match listener.accept() {
                Ok((s, _)) => break s,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock && Instant::now() < until => {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(e) => return Err(e),
            }
        };
        client.set_nonblocking(false)?;
        let server = TcpStream::connect(("127.0.0.1", sshd_port))?;
        for s in [&client, &server] {
            s.set_read_timeout(Some(TIMEOUT))?;
            s.set_nodelay(true)?;
        }
        let shared = Arc::new(Shared::default());
        let up = {
            let (from, to) = (client.try_clone()?, server.try_clone()?);
            let (shared, keylog) = (shared.clone(), keylog.clone());
            std::thread::spawn(move || {
                relay(from, to, Dir::ToServer, suite, &keylog, &shared, tamper)
            })
        };
        let to_client = relay(
            server,
            client,
            Dir::ToClient,
            suite,
            &keylog,
            &shared,
            tamper,
        );
        let to_server = up.join().expect("relay thread");
        Ok(ProxyReport {
            to_server,
            to_client,
            tampered: shared.tampered.load(Ordering::SeqCst),
            strict: shared.strict.load(Ordering::SeqCst),
        })
    });
    Proxy { port, thread }
}

/// The client's stdout and whether it exited 0; killed after the timeout.
fn run_client(args: &[String]) -> io::Result<(String, bool)> {
    let mut child = Command::new("python3")
        .arg(CLIENT)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let until = Instant::now() + TIMEOUT + Duration::from_secs(5);
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if Instant::now() > until {
            let _ = child.kill();
            break child.wait()?;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let mut out = String::new();
    child.stdout.take().unwrap().read_to_string(&mut out)?;
    let mut err = String::new();
    child.stderr.take().unwrap().read_to_string(&mut err)?;
    if !err.trim().is_empty() {
        out.push_str("\nstderr: ");
        out.push_str(err.trim());
    }
    Ok((out, status.success()))
}

/// Why the client or its SSH stack cannot run here, if so.
fn client_missing() -> Option<String> {
    match Command::new("python3")
        .args(["-c", "import paramiko; print(paramiko.__version__)"])
        .output()
    {
        Err(e) => Some(format!("python3 not runnable ({e})")),
        Ok(o) if !o.status.success() => {
            Some("python3 lacks paramiko; pip install paramiko==5.1.0".into())
        }
        Ok(o) => {
            eprintln!("paramiko {}", String::from_utf8_lossy(&o.stdout).trim());
            None
        }
    }
}

struct Session {
    output: String,
    client_ok: bool,
    proxy: io::Result<ProxyReport>,
}

#[allow(clippy::too_many_arguments)]
fn session(
    sshd_port: u16,
    suite: SshSuite,
    dir: &Path,
    user: &str,
    name: &str,
    tamper: Tamper,
    strict: bool,
    command: &str,
) -> Session {
    let keylog = dir.join(format!("keys-{name}"));
    let _ = std::fs::remove_file(&keylog);
    let proxy = start_proxy(sshd_port, suite, keylog.clone(), tamper);
    let args = [
        "127.0.0.1".to_string(),
        proxy.port.to_string(),
        user.to_string(),
        dir.join("id_ed25519").display().to_string(),
        suite.cipher_name().to_string(),
        suite.mac_name().to_string(),
        keylog.display().to_string(),
        if strict { "strict" } else { "plain" }.to_string(),
        command.to_string(),
    ];
    let (output, client_ok) = match run_client(&args) {
        Ok(r) => r,
        Err(e) => (format!("ERROR: client not run: {e}"), false),
    };
    let proxy = proxy.thread.join().expect("proxy thread");
    Session {
        output,
        client_ok,
        proxy,
    }
}

/// Whether the proxy relayed cleanly: re-sealed packets both ways, none
/// equal to the original, no packet it failed to open.
fn relayed(p: &ProxyReport) -> Result<(), String> {
    for (name, d) in [("to sshd", &p.to_server), ("to client", &p.to_client)] {
        if let Some(e) = &d.error {
            return Err(format!("{name}: {e}"));
        }
        if d.resealed == 0 || d.identical != 0 {
            return Err(format!("{name}: {d:?}"));
        }
    }
    Ok(())
}

fn mac_errors(log: &str) -> usize {
    log.lines()
        .filter(|l| l.contains("Corrupted MAC") || l.contains("message authentication code"))
        .count()
}

#[test]
fn paramiko_and_sshd_through_our_resealing_proxy() {
    let Some(sshd) = sshd_path() else {
        eprintln!("SKIPPED: ssh re-sealing proxy (no sshd; apt-get install openssh-server)");
        return;
    };
    if let Some(why) = client_missing() {
        eprintln!("SKIPPED: ssh re-sealing proxy ({why})");
        return;
    }
    let user = Command::new("id")
        .arg("-un")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    let dir = std::env::temp_dir().join(format!("cbc-hmac-ssh-proxy-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let key = dir.join("id_ed25519");
    if let Err(why) = keygen(&key) {
        eprintln!("SKIPPED: ssh re-sealing proxy ({why})");
        return;
    }
    std::fs::copy(dir.join("id_ed25519.pub"), dir.join("authorized_keys")).expect("copy");
    let options = [
        format!(
            "AuthorizedKeysFile={}",
            dir.join("authorized_keys").display()
        ),
        "PubkeyAuthentication=yes".into(),
        "AuthenticationMethods=publickey".into(),
        "PasswordAuthentication=no".into(),
        "KbdInteractiveAuthentication=no".into(),
        // paramiko's name for curve25519-sha256.
        "KexAlgorithms=curve25519-sha256@libssh.org".into(),
        // CI runs as root.
        "PermitRootLogin=prohibit-password".into(),
    ];

    let started = Instant::now();
    println!(
        "{:<12} {:<30} {:<22} {:<26} tampered to client",
        "cipher", "mac", "auth+command", "tampered to sshd (strict)"
    );
    let (mut passed, mut ran) = (0, 0);
    for (i, suite) in SshSuite::ALL.into_iter().enumerate() {
        let server = match start_sshd(&sshd, suite, &format!("proxy-{i}"), &options) {
            Ok(s) => s,
            Err(why) => {
                eprintln!("SKIPPED: ssh re-sealing proxy, {suite}: {why}");
                continue;
            }
        };
        ran += 1;
        let mut token = [0u8; 12];
        getrandom::fill(&mut token).unwrap();
        let token = common::hex(&token);
        let command = format!("echo {token}");
        let mut problems = Vec::new();

        // Clean: sequence numbers count on from the clear packets.
        let clean = session(
            server.port,
            suite,
            &dir,
            &user,
            &format!("{i}-clean"),
            Tamper::None,
            false,
            &command,
        );
        let clean_ok = match &clean.proxy {
            Ok(p) => {
                let ok = clean.client_ok
                    && clean.output.contains(&format!("OUTPUT: {token}\n"))
                    && !p.strict
                    && relayed(p).map_err(|e| problems.push(e)).is_ok();
                if ok {
                    format!(
                        "ok ({}+{} packets)",
                        p.to_server.resealed, p.to_client.resealed
                    )
                } else {
                    "FAILED".into()
                }
            }
            Err(e) => {
                problems.push(format!("proxy: {e}"));
                "FAILED".into()
            }
        };
        if !clean_ok.starts_with("ok") {
            problems.push(format!("clean session: {}", clean.output.trim()));
        }

        // Strict key exchange, a bit flipped on the way to sshd.
        let macs_before = mac_errors(&server.log());
        let to_sshd = session(
            server.port,
            suite,
            &dir,
            &user,
            &format!("{i}-to-sshd"),
            Tamper::After(Dir::ToServer),
            true,
            &command,
        );
        std::thread::sleep(Duration::from_millis(100));
        let sshd_noticed = mac_errors(&server.log()) > macs_before;
        let to_sshd_ok = match &to_sshd.proxy {
            Ok(p) => p.tampered && p.strict && sshd_noticed && !to_sshd.client_ok,
            Err(e) => {
                problems.push(format!("proxy: {e}"));
                false
            }
        } && !to_sshd.output.contains(&token);
        if !to_sshd_ok {
            problems.push(format!("tamper to sshd: {}", to_sshd.output.trim()));
        }

        // A bit flipped on the way to the client.
        let to_client = session(
            server.port,
            suite,
            &dir,
            &user,
            &format!("{i}-to-client"),
            Tamper::After(Dir::ToClient),
            false,
            &command,
        );
        let to_client_ok = match &to_client.proxy {
            Ok(p) => {
                p.tampered && !to_client.client_ok && to_client.output.contains("Mismatched MAC")
            }
            Err(e) => {
                problems.push(format!("proxy: {e}"));
                false
            }
        } && !to_client.output.contains(&token);
        if !to_client_ok {
            problems.push(format!("tamper to client: {}", to_client.output.trim()));
        }

        println!(
            "{:<12} {:<30} {:<22} {:<26} {}",
            suite.cipher_name(),
            suite.mac_name(),
            clean_ok,
            if to_sshd_ok {
                "sshd dropped: bad MAC"
            } else {
                "NOT DROPPED"
            },
            if to_client_ok {
                "paramiko failed: bad MAC"
            } else {
                "NOT DETECTED"
            },
        );
        if clean_ok.starts_with("ok") && to_sshd_ok && to_client_ok {
            passed += 1;
        } else {
            eprintln!(
                "{suite}: {}\nsshd log:\n{}",
                problems.join("\n"),
                server.log()
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    if ran == 0 {
        eprintln!("SKIPPED: ssh re-sealing proxy (sshd would not start for any suite)");
        return;
    }
    println!(
        "TESTING: ssh re-sealing proxy: {passed}/{ran} suites ({:.1} s)",
        started.elapsed().as_secs_f64()
    );
    assert_eq!(passed, ran, "every suite sshd accepts must pass");
}
