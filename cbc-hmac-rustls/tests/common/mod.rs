//! Shared pieces of the tests: the suites under test, certificates made
//! with the `openssl` command line, rustls configurations, test data, and
//! peer processes that cannot outlive their test.

#![allow(dead_code)]

pub mod drive;
#[path = "../../../tests/common/ports.rs"]
pub mod ports;
pub mod proxy;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{ClientConfig, RootCertStore, ServerConfig, SupportedCipherSuite};

/// Bytes moved in each direction by the tests that move data.
pub const TRANSFER_LEN: usize = 1 << 20;

/// The longest a test waits for anything, and a peer process may live.
pub const TIMEOUT: Duration = Duration::from_secs(60);

/// The certificate type a suite needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyType {
    Ecdsa,
    Rsa,
}

/// One suite under test with its names at the peers.
#[derive(Clone, Copy)]
pub struct Case {
    pub suite: SupportedCipherSuite,
    pub key: KeyType,
    /// OpenSSL's name.
    pub openssl: &'static str,
    /// GnuTLS priority pieces: cipher, MAC, key exchange.
    pub gnutls: (&'static str, &'static str, &'static str),
}

impl Case {
    pub fn name(&self) -> String {
        format!("{:?}", self.suite.suite())
    }

    /// A GnuTLS priority string allowing exactly this suite on TLS 1.2,
    /// without encrypt-then-MAC.
    pub fn gnutls_priority(&self) -> String {
        let (cipher, mac, kx) = self.gnutls;
        format!(
            "NORMAL:-VERS-ALL:+VERS-TLS1.2:-CIPHER-ALL:+{cipher}:-MAC-ALL:+{mac}:-KX-ALL:+{kx}:%NO_ETM"
        )
    }
}

/// Every suite of the crate.
pub fn cases() -> Vec<Case> {
    use cbc_hmac_rustls::*;
    vec![
        Case {
            suite: TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA,
            key: KeyType::Ecdsa,
            openssl: "ECDHE-ECDSA-AES128-SHA",
            gnutls: ("AES-128-CBC", "SHA1", "ECDHE-ECDSA"),
        },
        Case {
            suite: TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA,
            key: KeyType::Ecdsa,
            openssl: "ECDHE-ECDSA-AES256-SHA",
            gnutls: ("AES-256-CBC", "SHA1", "ECDHE-ECDSA"),
        },
        Case {
            suite: TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256,
            key: KeyType::Ecdsa,
            openssl: "ECDHE-ECDSA-AES128-SHA256",
            gnutls: ("AES-128-CBC", "SHA256", "ECDHE-ECDSA"),
        },
        Case {
            suite: TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA,
            key: KeyType::Rsa,
            openssl: "ECDHE-RSA-AES128-SHA",
            gnutls: ("AES-128-CBC", "SHA1", "ECDHE-RSA"),
        },
        Case {
            suite: TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA,
            key: KeyType::Rsa,
            openssl: "ECDHE-RSA-AES256-SHA",
            gnutls: ("AES-256-CBC", "SHA1", "ECDHE-RSA"),
        },
        Case {
            suite: TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256,
            key: KeyType::Rsa,
            openssl: "ECDHE-RSA-AES128-SHA256",
            gnutls: ("AES-128-CBC", "SHA256", "ECDHE-RSA"),
        },
    ]
}

/// Whether `program args...` runs and exits successfully.
pub fn tool_runs(program: &str, args: &[&str]) -> bool {
    Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Prints the skip line and returns false when `program` is missing.
pub fn have_tool(program: &str, version_args: &[&str], package: &str, what: &str) -> bool {
    if tool_runs(program, version_args) {
        true
    } else {
        eprintln!("SKIPPED: {what} ({program} not found; install package {package})");
        false
    }
}

/// A directory under the system temporary directory, removed on drop.
pub struct TempDir {
    path: PathBuf,
}

impl TempDir {
    pub fn new(prefix: &str) -> TempDir {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("{prefix}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).expect("create temporary directory");
        TempDir { path }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// A CA and a server certificate it signed, for `localhost` and
/// `127.0.0.1`, as PEM files.
pub struct Certs {
    pub ca: PathBuf,
    pub cert: PathBuf,
    pub key: PathBuf,
}

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .expect("run openssl");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Makes the certificates of `key` type in `dir` with the `openssl` CLI
/// (ECDSA P-256 or RSA-2048).
pub fn make_certs(dir: &Path, key: KeyType) -> Certs {
    let tag = match key {
        KeyType::Ecdsa => "ecdsa",
        KeyType::Rsa => "rsa",
    };
    let alg: &[&str] = match key {
        KeyType::Ecdsa => &["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"],
        KeyType::Rsa => &["-newkey", "rsa:2048"],
    };
    let (ca, ca_key) = (format!("{tag}-ca.pem"), format!("{tag}-ca.key"));
    let (cert, key, csr) = (
        format!("{tag}-cert.pem"),
        format!("{tag}-key.pem"),
        format!("{tag}.csr"),
    );
    let ext = dir.join(format!("{tag}.ext"));
    std::fs::write(
        &ext,
        "basicConstraints=critical,CA:FALSE\n\
         keyUsage=critical,digitalSignature,keyEncipherment\n\
         extendedKeyUsage=serverAuth\n\
         subjectAltName=DNS:localhost,IP:127.0.0.1\n",
    )
    .unwrap();
    let mut args = vec![
        "req",
        "-x509",
        "-nodes",
        "-days",
        "2",
        "-subj",
        "/CN=cbc-hmac-rustls test CA",
    ];
    args.extend_from_slice(alg);
    args.extend_from_slice(&["-keyout", &ca_key, "-out", &ca]);
    openssl(dir, &args);
    let mut args = vec!["req", "-nodes", "-subj", "/CN=localhost"];
    args.extend_from_slice(alg);
    args.extend_from_slice(&["-keyout", &key, "-out", &csr]);
    openssl(dir, &args);
    let ext = ext.display().to_string();
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            &csr,
            "-CA",
            &ca,
            "-CAkey",
            &ca_key,
            "-CAcreateserial",
            "-days",
            "2",
            "-extfile",
            &ext,
            "-out",
            &cert,
        ],
    );
    Certs {
        ca: dir.join(ca),
        cert: dir.join(cert),
        key: dir.join(key),
    }
}

/// The `ring` provider with only `suites`.
pub fn provider_with(suites: &[SupportedCipherSuite]) -> Arc<CryptoProvider> {
    Arc::new(CryptoProvider {
        cipher_suites: suites.to_vec(),
        ..rustls::crypto::ring::default_provider()
    })
}

/// A TLS 1.2 client trusting `certs.ca`.
pub fn client_config(provider: Arc<CryptoProvider>, certs: &Certs) -> Arc<ClientConfig> {
    let mut roots = RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_file(&certs.ca).expect("read CA"))
        .expect("add CA");
    Arc::new(
        ClientConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS12])
            .expect("TLS 1.2 with these suites")
            .with_root_certificates(roots)
            .with_no_client_auth(),
    )
}

/// A TLS 1.2 server with `certs.cert`.
pub fn server_config(provider: Arc<CryptoProvider>, certs: &Certs) -> Arc<ServerConfig> {
    let chain = vec![CertificateDer::from_pem_file(&certs.cert).expect("read certificate")];
    let key = PrivateKeyDer::from_pem_file(&certs.key).expect("read key");
    Arc::new(
        ServerConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS12])
            .expect("TLS 1.2 with these suites")
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .expect("certificate and key"),
    )
}

pub fn server_name() -> ServerName<'static> {
    ServerName::try_from("localhost").unwrap()
}

/// `len` bytes that differ from record to record and from `seed` to
/// `seed`, so a dropped, repeated or reordered record shows. No `*`:
/// `gnutls-serv --echo` reads `**...` in its input as a command.
pub fn test_data(len: usize, seed: u8) -> Vec<u8> {
    let mut x = 0x9e37_79b9_u32 ^ u32::from(seed);
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            match (x >> 24) as u8 {
                b'*' => b'+',
                b => b,
            }
        })
        .collect()
}

/// Like [`test_data`] but lines of printable text, 64 bytes with the
/// newline: `gnutls-serv --echo` handles its input as text lines.
pub fn text_data(len: usize, seed: u8) -> Vec<u8> {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789 .";
    let mut data = test_data(len, seed);
    for (i, b) in data.iter_mut().enumerate() {
        *b = if i % 64 == 63 {
            b'\n'
        } else {
            ALPHABET[usize::from(*b) % 64]
        };
    }
    data
}

/// Where two byte strings first differ, for assertion messages.
pub fn first_difference(a: &[u8], b: &[u8]) -> String {
    match a.iter().zip(b).position(|(x, y)| x != y) {
        Some(i) => format!(
            "first difference at byte {i}, lengths {} and {}",
            a.len(),
            b.len()
        ),
        None => format!("lengths {} and {}", a.len(), b.len()),
    }
}

/// A running peer: stdout and stderr captured apart, in its own process
/// group, under `timeout -s KILL` where the host has it, killed on drop.
pub struct Peer {
    name: String,
    child: Child,
    stdin: Option<ChildStdin>,
    writer: Option<JoinHandle<ChildStdin>>,
    stdout: Arc<Mutex<Vec<u8>>>,
    stderr: Arc<Mutex<Vec<u8>>>,
    /// Where the peer writes its status lines, if not to stderr.
    log: Option<PathBuf>,
}

impl Peer {
    pub fn spawn(name: &str, program: &str, args: &[String], dir: &Path) -> Peer {
        let mut cmd = if tool_runs("timeout", &["--version"]) {
            let mut c = Command::new("timeout");
            c.args(["-s", "KILL", &TIMEOUT.as_secs().to_string(), program]);
            c
        } else {
            Command::new(program)
        };
        cmd.args(args)
            .current_dir(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("start {program}: {e}"));
        let stdout = Arc::new(Mutex::new(Vec::new()));
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let mut out = child.stdout.take().unwrap();
        let mut err = child.stderr.take().unwrap();
        let (o, e) = (Arc::clone(&stdout), Arc::clone(&stderr));
        thread::spawn(move || drain(&mut out, &o));
        thread::spawn(move || drain(&mut err, &e));
        Peer {
            name: name.to_string(),
            stdin: child.stdin.take(),
            writer: None,
            child,
            stdout,
            stderr,
            log: None,
        }
    }

    /// Names the file the peer was told to write its status lines to,
    /// which is then read as its stderr is.
    pub fn with_log(mut self, log: &Path) -> Peer {
        self.log = Some(log.to_path_buf());
        self
    }

    /// What the peer wrote to its log file, if it has one.
    fn log_text(&self) -> String {
        self.log
            .as_ref()
            .and_then(|l| std::fs::read_to_string(l).ok())
            .unwrap_or_default()
    }

    /// Writes `data` to the peer's stdin from a thread (a pipe holds far
    /// less than the test data), keeping stdin open afterwards.
    pub fn feed_stdin(&mut self, data: Vec<u8>) {
        let mut stdin = self.stdin.take().expect("stdin");
        // Closing stdin makes some tools hang up: the thread hands it back,
        // to be closed when the peer is stopped.
        self.writer = Some(thread::spawn(move || {
            let _ = stdin.write_all(&data);
            let _ = stdin.flush();
            stdin
        }));
    }

    pub fn stdout_len(&self) -> usize {
        self.stdout.lock().unwrap().len()
    }

    pub fn stdout(&self) -> Vec<u8> {
        self.stdout.lock().unwrap().clone()
    }

    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.stderr.lock().unwrap()).into_owned()
    }

    pub fn exited(&mut self) -> bool {
        !matches!(self.child.try_wait(), Ok(None))
    }

    /// Waits until the peer has printed `len` bytes on stdout; false if
    /// it exits first or the time-out passes.
    pub fn wait_stdout(&mut self, len: usize, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            if self.stdout_len() >= len {
                return true;
            }
            if self.exited() || Instant::now() > deadline {
                thread::sleep(Duration::from_millis(50));
                return self.stdout_len() >= len;
            }
            thread::sleep(Duration::from_millis(5));
        }
    }

    /// Whether the peer was ended by a signal: the test sends none before
    /// it drops a peer, so something outside the test ended it.
    pub fn killed(&mut self) -> bool {
        use std::os::unix::process::ExitStatusExt;
        matches!(self.child.try_wait(), Ok(Some(status)) if status.signal().is_some())
    }

    /// Waits for the peer to exit by itself, for at most `timeout`.
    pub fn wait_exit(&mut self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if self.exited() {
                return true;
            }
            thread::sleep(Duration::from_millis(10));
        }
        false
    }

    /// Waits until the peer has said `needle` (on stderr, stdout, or in
    /// its log file), for at most `timeout`. Polls to the end: the pipes
    /// are drained by threads that can run well after the peer has
    /// exited, so one look at its exit would race with them.
    pub fn wait_said(&mut self, needle: &str, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            let said = format!(
                "{}{}{}",
                self.stderr(),
                String::from_utf8_lossy(&self.stdout()),
                self.log_text()
            );
            if said.contains(needle) {
                return true;
            }
            if Instant::now() > deadline {
                return false;
            }
            thread::sleep(Duration::from_millis(20));
        }
    }

    /// Gives the threads draining the peer's pipes time to catch up: a
    /// peer that prints why it closes and then closes is seen closing
    /// first, and its words arrive a little later.
    pub fn settle(&self) {
        thread::sleep(Duration::from_millis(300));
    }

    /// Whether the peer said anything of an error or an alert: on
    /// stderr or in its log, and on stdout too unless stdout carries the
    /// test data.
    pub fn said_error(&self, stdout_is_data: bool) -> bool {
        let mut said = self.stderr() + &self.log_text();
        if !stdout_is_data {
            said.push_str(&String::from_utf8_lossy(&self.stdout()));
        }
        let said = said.to_ascii_lowercase();
        said.contains("error") || said.contains("alert")
    }

    /// What the peer said (the end of it: an echo server logs every line
    /// it echoes), and whether it has exited, for failure messages.
    pub fn describe(&mut self) -> String {
        const TAIL: usize = 4096;
        let status = match self.child.try_wait() {
            Ok(Some(status)) => format!("exited ({status})"),
            Ok(None) => "running".to_string(),
            Err(e) => format!("unknown ({e})"),
        };
        let stdout = self.stdout();
        // Escaped: where stdout carries the test data, it is binary.
        let end = &stdout[stdout.len().saturating_sub(TAIL / 4)..];
        let log = match &self.log {
            Some(path) => format!(
                "\nlog {}:\n{}",
                path.display(),
                tail(&self.log_text(), TAIL)
            ),
            None => String::new(),
        };
        format!(
            "{} {status}; stdout: {} bytes, ending:\n{}\nstderr:\n{}{log}",
            self.name,
            stdout.len(),
            end.escape_ascii(),
            tail(&self.stderr(), TAIL),
        )
    }
}

/// The last `max` bytes of `text` or a little more (whole characters).
fn tail(text: &str, max: usize) -> &str {
    let mut start = text.len().saturating_sub(max);
    while !text.is_char_boundary(start) {
        start -= 1;
    }
    &text[start..]
}

fn drain(pipe: &mut dyn Read, into: &Mutex<Vec<u8>>) {
    let mut buf = [0u8; 16384];
    while let Ok(n) = pipe.read(&mut buf) {
        if n == 0 {
            break;
        }
        into.lock().unwrap().extend_from_slice(&buf[..n]);
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        // The group is the child's own (process_group(0)).
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.child.id())])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
        // The child is gone, so a blocked write fails and the thread ends.
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
        }
    }
}

/// Connects to a peer server on `port` once it listens.
pub fn connect_when_listening(port: u16, peer: &mut Peer) -> TcpStream {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(s) = TcpStream::connect(("127.0.0.1", port)) {
            s.set_read_timeout(Some(TIMEOUT)).unwrap();
            s.set_write_timeout(Some(TIMEOUT)).unwrap();
            return s;
        }
        assert!(
            !peer.exited() && Instant::now() < deadline,
            "peer server never listened on {port}: {}",
            peer.describe()
        );
        thread::sleep(Duration::from_millis(20));
    }
}

/// Accepts one connection on `listener`, giving up after the time-out.
pub fn accept_within(listener: &TcpListener, peer: &mut Peer) -> TcpStream {
    listener.set_nonblocking(true).unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match listener.accept() {
            Ok((s, _)) => {
                s.set_nonblocking(false).unwrap();
                s.set_read_timeout(Some(TIMEOUT)).unwrap();
                s.set_write_timeout(Some(TIMEOUT)).unwrap();
                return s;
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                assert!(
                    !peer.exited() && Instant::now() < deadline,
                    "peer client never connected: {}",
                    peer.describe()
                );
                thread::sleep(Duration::from_millis(10));
            }
            Err(e) => panic!("accept: {e}"),
        }
    }
}
