//! Interop tests against real TLS/DTLS peers on loopback, shared by
//! `tests/interop_openssl.rs` and `tests/interop_gnutls.rs`.
//!
//! Each case starts a server and a client of the peer (a certificate made
//! at test time, a key log written by the client) with a proxy between
//! them (see [`proxy`]), and checks, in order:
//!
//! 1. **handshake**: the proxy reads the hellos, derives the keys with
//!    `cbc_hmac::key_schedule` from the key log, opens both Finished
//!    messages with `cbc_hmac::Opener` and checks their verify_data against
//!    the transcript; version, combination and MAC order are the ones asked
//!    for.
//! 2. **data**: known lines written to the client (and to the server, or
//!    echoed by it) are exactly the application data the proxy opens in
//!    each direction, and what the other side prints.
//! 3. **accepts**: the proxy replaces a client record with one sealed by
//!    `cbc_hmac::Sealer` under the same sequence number; the server takes
//!    the new payload.
//! 4. **rejects**: a crate-sealed record with one bit flipped makes the
//!    server fail the connection with a `bad_record_mac` alert, which the
//!    proxy opens (TLS); a DTLS server drops it silently, sends no alert,
//!    and takes the next crate-sealed record (RFC 6347 section 4.1.2.7),
//!    or, where the peer is known to alert instead
//!    ([`PeerRun::dtls_bad_mac_alert`]), fails as a TLS server does.
//! 5. **capture**: the bytes the proxy forwarded, decrypted offline the way
//!    the `decrypt_session` example does, give exactly what each side
//!    received.
#![allow(dead_code)]

#[path = "../common/ports.rs"]
pub mod ports;
pub mod process;
pub mod proxy;
pub mod session;
pub mod wire;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use cbc_hmac::{Combination, MacOrder, ProtocolVersion};

use process::{Proc, TempDir};
use proxy::{Action, Proxy};
use session::{Dir, Event};

/// How long one step of a case may wait.
const STEP: Duration = Duration::from_secs(10);

/// One cell of the matrix.
#[derive(Clone, Debug)]
pub struct Case {
    /// The peer's name, for the table.
    pub peer: String,
    /// Protocol version.
    pub version: ProtocolVersion,
    /// The suite, by OpenSSL name (`AES128-SHA`, ...).
    pub suite: &'static str,
    /// Whether encrypt-then-MAC should be negotiated (else the server
    /// refuses it).
    pub etm: bool,
}

impl Case {
    /// The suite's combination.
    pub fn combination(&self) -> Combination {
        self.suite.parse().expect("suite name")
    }

    /// The MAC order the case should negotiate.
    pub fn mac_order(&self) -> MacOrder {
        if self.etm {
            MacOrder::EncryptThenMac
        } else {
            MacOrder::MacThenEncrypt
        }
    }

    /// A short label.
    pub fn label(&self) -> String {
        format!(
            "{} {} {} {}",
            self.peer,
            self.version,
            self.suite,
            if self.etm { "EtM" } else { "MtE" }
        )
    }

    fn slug(&self) -> String {
        self.label()
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect()
    }
}

/// A program and its arguments and extra environment.
#[derive(Clone, Debug, Default)]
pub struct Cmd {
    /// Program.
    pub program: String,
    /// Arguments.
    pub args: Vec<String>,
    /// Extra environment.
    pub env: Vec<(String, String)>,
}

/// How a peer runs one case.
#[derive(Clone, Debug)]
pub struct PeerRun {
    /// The server command.
    pub server: Cmd,
    /// The client command.
    pub client: Cmd,
    /// Output of the server that means it listens (else the proxy retries
    /// connecting).
    pub server_ready: Option<String>,
    /// The server sends its standard input to the client (OpenSSL
    /// `s_server`); otherwise it echoes what it receives (`gnutls-serv
    /// --echo`).
    pub server_reads_stdin: bool,
    /// The server prints received application data unbuffered.
    pub server_prints_data: bool,
    /// The client prints received application data unbuffered.
    pub client_prints_data: bool,
    /// DTLS: the server answers a record with a bad MAC with a fatal
    /// `bad_record_mac` alert, which RFC 6347 section 4.1.2.7 allows in
    /// place of dropping it silently (OpenSSL does so for encrypt-then-MAC
    /// records, where it checks the MAC before decrypting).
    pub dtls_bad_mac_alert: bool,
}

/// Where a case's peers run.
pub struct Ports {
    /// The server's port.
    pub server: u16,
    /// The proxy's port, for the client.
    pub proxy: u16,
}

/// What the case builder gets.
pub struct Setup<'a> {
    /// Ports.
    pub ports: Ports,
    /// The certificate and key (PEM).
    pub cert: &'a Path,
    /// The key.
    pub key: &'a Path,
    /// Where the client writes its key log.
    pub key_log: &'a Path,
}

/// The result of each check of a case.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The case.
    pub case: Case,
    /// (check, result) in order.
    pub checks: Vec<(&'static str, Result<(), String>)>,
    /// Seconds taken.
    pub seconds: f64,
    /// Whether the case ran a second time because its first run failed:
    /// the first failing check and its error. Live peers on a loaded
    /// machine fail now and then for reasons of their own (a port taken
    /// between choosing and binding it, a peer slow to start, a connection
    /// reset); a fault of the crate fails both runs.
    pub retried: Option<String>,
}

/// The checks, in order.
pub const CHECKS: [&str; 5] = ["handshake", "data", "accepts", "rejects", "capture"];

impl Outcome {
    /// Checks passed.
    pub fn passed(&self) -> usize {
        self.checks.iter().filter(|(_, r)| r.is_ok()).count()
    }

    /// Whether every check passed.
    pub fn ok(&self) -> bool {
        self.passed() == CHECKS.len()
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || haystack.windows(needle.len()).any(|w| w == needle)
}

fn show(bytes: &[u8]) -> String {
    format!("{:?}", String::from_utf8_lossy(bytes))
}

/// Runs one case.
pub fn run_case(
    case: &Case,
    cert: &Path,
    key: &Path,
    build: &(dyn Fn(&Case, &Setup<'_>) -> PeerRun + Sync),
) -> Outcome {
    let start = Instant::now();
    let mut checks = Vec::new();
    let result = Scenario::run(case, cert, key, build, &mut checks);
    if let Err(e) = result {
        // The failing step and those it prevented.
        let failed = CHECKS[checks.len()];
        checks.push((failed, Err(e)));
        for name in &CHECKS[checks.len()..] {
            checks.push((name, Err("not reached".into())));
        }
    }
    Outcome {
        case: case.clone(),
        checks,
        seconds: start.elapsed().as_secs_f64(),
        retried: None,
    }
}

struct Scenario<'a> {
    case: &'a Case,
    run: PeerRun,
    proxy: Proxy,
    server: Proc,
    client: Proc,
    dir: TempDir,
    key_log: PathBuf,
    /// Lines (and payloads) unique to this case.
    lines: BTreeMap<&'static str, Vec<u8>>,
}

impl Scenario<'_> {
    fn run(
        case: &Case,
        cert: &Path,
        key: &Path,
        build: &(dyn Fn(&Case, &Setup<'_>) -> PeerRun + Sync),
        checks: &mut Vec<(&'static str, Result<(), String>)>,
    ) -> Result<(), String> {
        let dtls = case.version.is_dtls();
        let dir = TempDir::new("cbc-hmac-interop").map_err(|e| format!("temp dir: {e}"))?;
        let key_log = dir.path().join("keylog.txt");
        let server_port = if dtls {
            ports::free_udp_port()
        } else {
            ports::free_tcp_port()
        };
        let proxy = if dtls {
            Proxy::udp(server_port, &key_log)
        } else {
            Proxy::tcp(server_port, &key_log)
        }
        .map_err(|e| format!("proxy: {e}"))?;
        let setup = Setup {
            ports: Ports {
                server: server_port,
                proxy: proxy.port(),
            },
            cert,
            key,
            key_log: &key_log,
        };
        let run = build(case, &setup);
        let spawn = |name: &str, c: &Cmd| {
            Proc::spawn(name, &c.program, &c.args, &c.env, dir.path())
                .map_err(|e| format!("starting {}: {e}", c.program))
        };
        let mut server = spawn("server", &run.server)?;
        if let Some(needle) = &run.server_ready
            && !server.wait_printed(needle, STEP)
        {
            return Err(format!("server did not start: {}", server.output()));
        }
        let client = spawn("client", &run.client)?;
        let tag = case.slug();
        let lines = BTreeMap::from([
            ("c1", format!("c1 client line {tag}\n").into_bytes()),
            ("c2", format!("c2 client line {tag}\n").into_bytes()),
            ("c3", format!("c3 client line {tag}\n").into_bytes()),
            ("c4", format!("c4 client line {tag}\n").into_bytes()),
            ("s1", format!("s1 server line {tag}\n").into_bytes()),
            ("p1", format!("p1 sealed by cbc-hmac {tag}\n").into_bytes()),
            ("p2", format!("p2 sealed by cbc-hmac {tag}\n").into_bytes()),
            (
                "t1",
                format!("t1 tampered by cbc-hmac {tag}\n").into_bytes(),
            ),
        ]);
        let mut s = Scenario {
            case,
            run,
            proxy,
            server,
            client,
            dir,
            key_log,
            lines,
        };
        for (i, name) in CHECKS.iter().enumerate() {
            let result = match i {
                0 => s.handshake(),
                1 => s.data(),
                2 => s.accepts(),
                3 => s.rejects(),
                _ => s.capture(),
            };
            result.map_err(|e| s.diagnose(e))?;
            checks.push((name, Ok(())));
        }
        Ok(())
    }

    fn line(&self, name: &str) -> Vec<u8> {
        self.lines[name].clone()
    }

    fn text(&self, name: &str) -> String {
        String::from_utf8(self.line(name))
            .unwrap()
            .trim_end()
            .to_string()
    }

    /// Adds what the peers printed and the proxy saw to an error.
    fn diagnose(&self, e: String) -> String {
        let tail = |s: String| {
            let lines: Vec<&str> = s.lines().collect();
            lines[lines.len().saturating_sub(8)..].join("\n    | ")
        };
        let (errors, problems, ended) = self.proxy.with(|st| {
            let problems: Vec<String> = st
                .events
                .iter()
                .filter_map(|e| match e {
                    Event::Problem(p) => Some(p.clone()),
                    Event::OpenFailed {
                        dir, seq, error, ..
                    } => Some(format!("{} seq {seq}: {error}", dir.name())),
                    _ => None,
                })
                .collect();
            (st.errors.clone(), problems, st.ended.clone())
        });
        format!(
            "{e}\n  proxy errors: {errors:?}\n  tracker problems: {problems:?}\n  relays ended (client to server, server to client): {ended:?}\n  server output:\n    | {}\n  client output:\n    | {}",
            tail(self.server.output()),
            tail(self.client.output())
        )
    }

    fn app_data(&self, dir: Dir) -> Vec<u8> {
        self.proxy.with(|s| s.tracker.app_data(dir).to_vec())
    }

    /// Waits until the application data the proxy opened in `dir` equals
    /// `want`.
    fn wait_data(&self, dir: Dir, want: &[u8]) -> Result<(), String> {
        self.proxy
            .wait(STEP, |s| (s.tracker.app_data(dir) == want).then_some(()))
            .ok_or_else(|| {
                format!(
                    "{}: opened {} but expected exactly {}",
                    dir.name(),
                    show(&self.app_data(dir)),
                    show(want)
                )
            })
    }

    fn handshake(&mut self) -> Result<(), String> {
        let finished = self.proxy.wait(STEP, |s| {
            let mut v = [None, None];
            for e in &s.events {
                if let Event::Finished { dir, verified } = e {
                    v[dir.index()] = Some(*verified);
                }
            }
            match v {
                [Some(c), Some(s)] => Some(Ok((c, s))),
                _ if !s.errors.is_empty() => Some(Err(s.errors.join("; "))),
                _ if s.events.iter().any(|e| matches!(e, Event::Problem(_))) => {
                    Some(Err("the tracker stopped".to_string()))
                }
                _ if s
                    .events
                    .iter()
                    .any(|e| matches!(e, Event::OpenFailed { .. })) =>
                {
                    Some(Err(
                        "a handshake record did not open with the derived keys".to_string()
                    ))
                }
                _ => None,
            }
        });
        let (client, server) = finished.ok_or("no Finished message from both sides")??;
        if client != Some(true) || server != Some(true) {
            return Err(format!(
                "Finished verify_data: client {client:?}, server {server:?}"
            ));
        }
        let n = self
            .proxy
            .with(|s| s.tracker.negotiated().cloned())
            .ok_or("no ServerHello")?;
        if n.version != self.case.version
            || n.suite.combination() != self.case.combination()
            || n.mac_order != self.case.mac_order()
        {
            return Err(format!(
                "negotiated {} {} {:?}, asked for {} {} {:?}",
                n.version,
                n.suite,
                n.mac_order,
                self.case.version,
                self.case.suite,
                self.case.mac_order()
            ));
        }
        if !n.client_offered_etm {
            return Err("the client did not offer encrypt-then-MAC".into());
        }
        Ok(())
    }

    fn data(&mut self) -> Result<(), String> {
        let c1 = self.line("c1");
        self.client.write_stdin(&c1)?;
        self.wait_data(Dir::ClientToServer, &c1)?;
        if self.run.server_prints_data && !self.server.wait_printed(&self.text("c1"), STEP) {
            return Err("the server did not print the client's line".into());
        }
        let s_expect = if self.run.server_reads_stdin {
            let s1 = self.line("s1");
            self.server.write_stdin(&s1)?;
            s1
        } else {
            c1.clone() // the echo
        };
        self.wait_data(Dir::ServerToClient, &s_expect)?;
        let text = String::from_utf8(s_expect).unwrap();
        if self.run.client_prints_data && !self.client.wait_printed(text.trim_end(), STEP) {
            return Err("the client did not print the server's data".into());
        }
        Ok(())
    }

    fn accepts(&mut self) -> Result<(), String> {
        let (c1, c2, p1) = (self.line("c1"), self.line("c2"), self.line("p1"));
        self.proxy.push_action(Action::Replace(p1.clone()));
        self.client.write_stdin(&c2)?;
        // The proxy opened the client's own record ...
        self.wait_data(Dir::ClientToServer, &[c1.clone(), c2].concat())?;
        // ... and the server took the crate's record in its place.
        self.wait_server_took(&["c1", "p1"])?;
        if self.server.printed(&self.text("c2")) {
            return Err("the server printed the replaced line".into());
        }
        Ok(())
    }

    /// Waits until the server has taken the client payloads `taken` (line
    /// names, in order): printed the last of them (a server that sends its
    /// standard input, OpenSSL `s_server`), or echoed exactly them all
    /// (`gnutls-serv --echo`).
    fn wait_server_took(&mut self, taken: &[&str]) -> Result<(), String> {
        let last = taken.last().expect("a payload");
        if self.run.server_reads_stdin {
            if !self.server.wait_printed(&self.text(last), STEP) {
                return Err(format!(
                    "the server did not print the crate-sealed payload {last}"
                ));
            }
            Ok(())
        } else {
            let echo: Vec<u8> = taken.iter().flat_map(|name| self.line(name)).collect();
            self.wait_data(Dir::ServerToClient, &echo)
        }
    }

    fn rejects(&mut self) -> Result<(), String> {
        let t1 = self.line("t1");
        self.proxy.push_action(Action::Tamper(t1.clone()));
        self.client.write_stdin(&self.line("c3"))?;
        if self
            .proxy
            .wait(STEP, |s| {
                (!s.applied.is_empty() && s.actions.is_empty()).then_some(())
            })
            .is_none()
        {
            return Err("the tampered record was not sent".into());
        }
        if self.silent_drop() {
            // Dropped silently; the next good record still gets through.
            self.proxy.push_action(Action::Replace(self.line("p2")));
            self.client.write_stdin(&self.line("c4"))?;
            self.wait_server_took(&["c1", "p1", "p2"])?;
            if let Some(alert) = self.alert() {
                return Err(format!("DTLS server sent alert {alert:?}"));
            }
            // Neither line the proxy rewrote reached the server as sent.
            for name in ["c3", "c4"] {
                if self.server.printed(&self.text(name)) {
                    return Err(format!("the server printed the rewritten line {name}"));
                }
            }
        } else {
            let alert = self
                .proxy
                .wait(STEP, first_server_alert)
                .ok_or("no alert from the server")?;
            if alert != [2, wire::BAD_RECORD_MAC] {
                return Err(format!(
                    "alert {alert:?}, expected fatal bad_record_mac [2, 20]"
                ));
            }
        }
        if contains(&self.app_data(Dir::ServerToClient), &t1)
            || self.server.printed(&self.text("t1"))
        {
            return Err("the server took the tampered record".into());
        }
        Ok(())
    }

    /// Whether the server should drop the tampered record silently (DTLS)
    /// rather than end the connection with an alert.
    fn silent_drop(&self) -> bool {
        self.case.version.is_dtls() && !self.run.dtls_bad_mac_alert
    }

    /// The first alert the server sent, opened.
    fn alert(&self) -> Option<Vec<u8>> {
        self.proxy.with(first_server_alert)
    }

    fn capture(&mut self) -> Result<(), String> {
        // Stop everything so the capture is complete.
        self.client.stop();
        self.server.stop();
        self.proxy.stop();
        let [c2s, s2c] = self.proxy.with(|s| s.capture.clone());
        if let Ok(dir) = std::env::var("CBC_HMAC_INTEROP_CAPTURE_DIR") {
            let dir = Path::new(&dir).join(self.case.slug());
            let _ = std::fs::create_dir_all(&dir);
            let _ = std::fs::write(dir.join("client_to_server.bin"), &c2s);
            let _ = std::fs::write(dir.join("server_to_client.bin"), &s2c);
            let _ = std::fs::copy(&self.key_log, dir.join("keylog.txt"));
        }
        let log = std::fs::read_to_string(&self.key_log).map_err(|e| format!("key log: {e}"))?;
        let mut source = |cr: &[u8; 32]| {
            cbc_hmac::key_schedule::key_log::find_master_secret(&log, cr)
                .map_err(|e| e.to_string())?
                .ok_or_else(|| "not in the key log".to_string())
        };
        let (tracker, events) = session::decrypt_capture(&c2s, &s2c, &mut source);
        let mut finished = 0;
        let mut failures = Vec::new();
        for e in &events {
            match e {
                Event::Finished {
                    verified: Some(true),
                    ..
                } => finished += 1,
                Event::Finished { .. } => return Err("offline: bad Finished".into()),
                Event::Problem(p) => return Err(format!("offline: {p}")),
                Event::OpenFailed { dir, .. } => failures.push(*dir),
                _ => {}
            }
        }
        if finished != 2 {
            return Err(format!("offline: {finished} Finished messages verified"));
        }
        let (c1, p1, p2) = (self.line("c1"), self.line("p1"), self.line("p2"));
        let silent_drop = self.silent_drop();
        let want_c2s = if silent_drop {
            [c1.clone(), p1.clone(), p2.clone()].concat()
        } else {
            [c1.clone(), p1.clone()].concat()
        };
        let want_s2c = match (self.run.server_reads_stdin, silent_drop) {
            (true, _) => self.line("s1"),
            (false, false) => [c1, p1].concat(),
            (false, true) => want_c2s.clone(),
        };
        for (dir, want) in [
            (Dir::ClientToServer, want_c2s),
            (Dir::ServerToClient, want_s2c),
        ] {
            if tracker.app_data(dir) != want {
                return Err(format!(
                    "offline {}: {} instead of {}",
                    dir.name(),
                    show(tracker.app_data(dir)),
                    show(&want)
                ));
            }
        }
        // Exactly the tampered record fails to open.
        if failures != [Dir::ClientToServer] {
            return Err(format!(
                "offline: records that failed to open: {failures:?}"
            ));
        }
        Ok(())
    }
}

/// The first alert the server sent, opened.
fn first_server_alert(s: &proxy::State) -> Option<Vec<u8>> {
    s.events.iter().find_map(|e| match e {
        Event::Record {
            dir: Dir::ServerToClient,
            content_type: wire::ALERT,
            plaintext,
            ..
        } => Some(plaintext.clone()),
        _ => None,
    })
}

/// Runs `cases` on `workers` threads, at most `budget` in all (cases not
/// started by then fail), and prints the table.
pub fn run_matrix(
    title: &str,
    cases: Vec<Case>,
    workers: usize,
    budget: Duration,
    cert: &Path,
    key: &Path,
    build: &(dyn Fn(&Case, &Setup<'_>) -> PeerRun + Sync),
) -> Vec<Outcome> {
    let start = Instant::now();
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Outcome>>> = Mutex::new(vec![None; cases.len()]);
    thread::scope(|scope| {
        for _ in 0..workers.max(1) {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(case) = cases.get(i) else { break };
                    let outcome = if start.elapsed() > budget {
                        Outcome {
                            case: case.clone(),
                            checks: CHECKS
                                .iter()
                                .map(|c| (*c, Err("not run: time budget spent".to_string())))
                                .collect(),
                            seconds: 0.0,
                            retried: None,
                        }
                    } else {
                        let first = run_case(case, cert, key, build);
                        match first.checks.iter().find(|(_, r)| r.is_err()) {
                            Some((name, Err(e))) if start.elapsed() < budget => {
                                let mut again = run_case(case, cert, key, build);
                                again.retried = Some(format!("{name}: {e}"));
                                again
                            }
                            _ => first,
                        }
                    };
                    eprintln!(
                        "{:<48} {}/{} ({:.1} s)",
                        outcome.case.label(),
                        outcome.passed(),
                        CHECKS.len(),
                        outcome.seconds
                    );
                    results.lock().unwrap()[i] = Some(outcome);
                }
            });
        }
    });
    let outcomes: Vec<Outcome> = results
        .into_inner()
        .unwrap()
        .into_iter()
        .flatten()
        .collect();
    print_table(title, &outcomes, start.elapsed());
    outcomes
}

/// Writes to the test's standard output directly, past the test harness's
/// capture, so the table and `SKIPPED:` lines show in every run.
pub fn report(text: &str) {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
}

/// Prints the matrix: one row per peer x version x combination x MAC
/// order, with the checks passed.
pub fn print_table(title: &str, outcomes: &[Outcome], elapsed: Duration) {
    use std::fmt::Write as _;
    let mut t = String::new();
    let _ = writeln!(t);
    let _ = writeln!(t, "{title}");
    let _ = writeln!(
        t,
        "{:<22} {:<9} {:<20} {:<26} {:<16} {:>6}  result",
        "peer", "version", "combination", "suite", "MAC order", "checks"
    );
    for o in outcomes {
        let c = &o.case;
        let result = if o.ok() {
            match &o.retried {
                None => "pass".to_string(),
                Some(e) => format!(
                    "pass on the second run (first: {})",
                    e.lines().next().unwrap_or("")
                ),
            }
        } else {
            let (name, err) = o.checks.iter().find(|(_, r)| r.is_err()).unwrap();
            format!(
                "FAIL at {name}: {}",
                err.as_ref().unwrap_err().lines().next().unwrap_or("")
            )
        };
        let _ = writeln!(
            t,
            "{:<22} {:<9} {:<20} {:<26} {:<16} {:>4}/{}  {}",
            c.peer,
            c.version.to_string(),
            c.combination().name(),
            c.suite,
            if c.etm {
                "encrypt-then-MAC"
            } else {
                "MAC-then-encrypt"
            },
            o.passed(),
            CHECKS.len(),
            result
        );
    }
    let ok = outcomes.iter().filter(|o| o.ok()).count();
    let checks: usize = outcomes.iter().map(Outcome::passed).sum();
    let _ = writeln!(
        t,
        "cases: {ok} of {} fully passed; checks: {checks} of {} ({}); {:.1} s",
        outcomes.len(),
        outcomes.len() * CHECKS.len(),
        CHECKS.join(", "),
        elapsed.as_secs_f64()
    );
    for o in outcomes.iter().filter(|o| !o.ok()) {
        let _ = writeln!(t, "\n{}:", o.case.label());
        for (name, r) in &o.checks {
            if let Err(e) = r {
                let _ = writeln!(t, "  {name}: {e}");
            }
        }
    }
    for o in outcomes.iter().filter(|o| o.ok()) {
        if let Some(e) = &o.retried {
            let _ = writeln!(t, "\n{} (first run):\n  {e}", o.case.label());
        }
    }
    report(&t);
}

/// The suites of the matrix, by OpenSSL name, and the versions each runs
/// on (the SHA-256/384 suites need (D)TLS 1.2).
pub const SUITES: [&str; 5] = [
    "AES128-SHA",
    "AES256-SHA",
    "AES128-SHA256",
    "AES256-SHA256",
    "ECDHE-RSA-AES256-SHA384",
];

/// Every (version, suite, EtM) cell for `versions`.
pub fn cases(peer: &str, versions: &[ProtocolVersion]) -> Vec<Case> {
    let mut out = Vec::new();
    for &version in versions {
        for suite in SUITES {
            let c: Combination = suite.parse().unwrap();
            if !c.allows(version) {
                continue;
            }
            for etm in [true, false] {
                out.push(Case {
                    peer: peer.to_string(),
                    version,
                    suite,
                    etm,
                });
            }
        }
    }
    out
}

/// The first line of `program args` output, for the table title.
pub fn tool_version(program: &str, args: &[&str]) -> String {
    std::process::Command::new(program)
        .args(args)
        .output()
        .ok()
        .and_then(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .next()
                .map(str::to_string)
        })
        .unwrap_or_else(|| program.to_string())
}
