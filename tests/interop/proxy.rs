//! A loopback proxy between a TLS (TCP) or DTLS (UDP) client and server
//! that records both directions, follows the connection with a
//! [`Tracker`] (keys from the client's key log) and can rewrite the
//! client's application records: replace one with a record sealed by
//! `cbc_hmac::Sealer` under the same sequence number, or do that and flip
//! one bit of it.
//!
//! Once it has replaced a record it re-seals every later client record
//! itself (with the original plaintext unless told otherwise), so a TLS 1.0
//! IV chain stays the one the server expects.

use std::collections::VecDeque;
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use cbc_hmac::key_schedule::{MasterSecret, key_log};
use cbc_hmac::{MacOrder, ProtocolVersion, Sealer};

use super::session::{Dir, Event, Tracker};
use super::wire::{self, RecordHeader};

/// What to do with the next non-empty client application record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Replace its plaintext with this one, sealed by the crate.
    Replace(Vec<u8>),
    /// The same, then flip one bit of the sealed record.
    Tamper(Vec<u8>),
}

/// What the proxy has seen and done.
pub struct State {
    /// The connection as the proxy follows it (the records as sent).
    pub tracker: Tracker,
    /// Every event, in order.
    pub events: Vec<Event>,
    /// Rewrites still to apply.
    pub actions: VecDeque<Action>,
    /// The bytes forwarded in each direction (records as delivered).
    pub capture: [Vec<u8>; 2],
    /// How each direction's relay ended (TCP), once it has: the end of
    /// the stream, or the error that stopped it.
    pub ended: [Option<String>; 2],
    /// Problems in the proxy itself.
    pub errors: Vec<String>,
    /// Rewrites applied: (sequence value, action).
    pub applied: Vec<(u64, Action)>,
    sealer: Option<Sealer>,
    last_c2s_block: Option<[u8; 16]>,
    key_log: PathBuf,
}

type Shared = Arc<(Mutex<State>, Condvar)>;

/// A running proxy.
pub struct Proxy {
    shared: Shared,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
    port: u16,
}

/// How long the proxy waits for a peer to connect or listen.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
const POLL: Duration = Duration::from_millis(20);

impl Proxy {
    fn new_shared(dtls: bool, key_log: &Path) -> Shared {
        Arc::new((
            Mutex::new(State {
                tracker: Tracker::new(dtls),
                events: Vec::new(),
                actions: VecDeque::new(),
                capture: [Vec::new(), Vec::new()],
                ended: [None, None],
                errors: Vec::new(),
                applied: Vec::new(),
                sealer: None,
                last_c2s_block: None,
                key_log: key_log.to_path_buf(),
            }),
            Condvar::new(),
        ))
    }

    /// A TCP proxy listening on 127.0.0.1 (see [`Proxy::port`]) for one
    /// client, which it connects to `127.0.0.1:server_port` (retrying while
    /// the server starts).
    pub fn tcp(server_port: u16, key_log: &Path) -> std::io::Result<Proxy> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let port = listener.local_addr()?.port();
        let shared = Self::new_shared(false, key_log);
        let stop = Arc::new(AtomicBool::new(false));
        let (s, st) = (Arc::clone(&shared), Arc::clone(&stop));
        let acceptor = thread::spawn(move || {
            let deadline = Instant::now() + CONNECT_TIMEOUT;
            let client = loop {
                match listener.accept() {
                    Ok((c, _)) => break c,
                    Err(e) if e.kind() == ErrorKind::WouldBlock => {
                        if st.load(Ordering::Relaxed) || Instant::now() > deadline {
                            return fail(&s, "no client connected to the proxy".into());
                        }
                        thread::sleep(POLL);
                    }
                    Err(e) => return fail(&s, format!("accept: {e}")),
                }
            };
            let server = loop {
                match TcpStream::connect(("127.0.0.1", server_port)) {
                    Ok(c) => break c,
                    Err(e) => {
                        if st.load(Ordering::Relaxed) || Instant::now() > deadline {
                            return fail(&s, format!("connecting to the server: {e}"));
                        }
                        thread::sleep(POLL);
                    }
                }
            };
            let _ = client.set_nonblocking(false);
            let pairs = [
                (Dir::ClientToServer, client.try_clone(), server.try_clone()),
                (Dir::ServerToClient, server.try_clone(), client.try_clone()),
            ];
            let mut relays = Vec::new();
            for (dir, from, to) in pairs {
                let (Ok(from), Ok(to)) = (from, to) else {
                    return fail(&s, "socket clone failed".into());
                };
                let (s, st) = (Arc::clone(&s), Arc::clone(&st));
                relays.push(thread::spawn(move || relay_tcp(from, to, dir, &s, &st)));
            }
            for r in relays {
                let _ = r.join();
            }
        });
        Ok(Proxy {
            shared,
            stop,
            threads: vec![acceptor],
            port,
        })
    }

    /// A UDP proxy on 127.0.0.1 (see [`Proxy::port`]) for one client,
    /// forwarding to `127.0.0.1:server_port`.
    pub fn udp(server_port: u16, key_log: &Path) -> std::io::Result<Proxy> {
        let client_side = UdpSocket::bind("127.0.0.1:0")?;
        let port = client_side.local_addr()?.port();
        let server_side = UdpSocket::bind("127.0.0.1:0")?;
        server_side.connect(("127.0.0.1", server_port))?;
        client_side.set_read_timeout(Some(POLL))?;
        server_side.set_read_timeout(Some(POLL))?;
        let shared = Self::new_shared(true, key_log);
        let stop = Arc::new(AtomicBool::new(false));
        let client_addr: Arc<Mutex<Option<SocketAddr>>> = Arc::new(Mutex::new(None));
        let mut threads = Vec::new();
        {
            let (s, st, addr) = (
                Arc::clone(&shared),
                Arc::clone(&stop),
                Arc::clone(&client_addr),
            );
            let (from, to) = (client_side.try_clone()?, server_side.try_clone()?);
            threads.push(thread::spawn(move || {
                let mut buf = vec![0u8; 65536];
                while !st.load(Ordering::Relaxed) {
                    match from.recv_from(&mut buf) {
                        Ok((n, peer)) => {
                            *addr.lock().unwrap() = Some(peer);
                            let out = process_bytes(&s, Dir::ClientToServer, &buf[..n], true).0;
                            let _ = to.send(&out);
                        }
                        Err(e) if is_timeout(&e) => {}
                        Err(_) => {}
                    }
                }
            }));
        }
        {
            let (s, st, addr) = (
                Arc::clone(&shared),
                Arc::clone(&stop),
                Arc::clone(&client_addr),
            );
            let (from, to) = (server_side, client_side);
            threads.push(thread::spawn(move || {
                let mut buf = vec![0u8; 65536];
                while !st.load(Ordering::Relaxed) {
                    // Errors are timeouts, or ConnectionRefused until the
                    // server listens.
                    if let Ok(n) = from.recv(&mut buf) {
                        let out = process_bytes(&s, Dir::ServerToClient, &buf[..n], true).0;
                        if let Some(peer) = *addr.lock().unwrap() {
                            let _ = to.send_to(&out, peer);
                        }
                    }
                }
            }));
        }
        Ok(Proxy {
            shared,
            stop,
            threads,
            port,
        })
    }

    /// The port clients connect to.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Queues a rewrite of a client application record.
    pub fn push_action(&self, action: Action) {
        self.shared.0.lock().unwrap().actions.push_back(action);
    }

    /// Runs `f` on the state.
    pub fn with<T>(&self, f: impl FnOnce(&State) -> T) -> T {
        f(&self.shared.0.lock().unwrap())
    }

    /// Waits until `f` returns `Some` or `timeout` passes.
    pub fn wait<T>(&self, timeout: Duration, mut f: impl FnMut(&State) -> Option<T>) -> Option<T> {
        let deadline = Instant::now() + timeout;
        let (lock, cv) = &*self.shared;
        let mut state = lock.lock().unwrap();
        loop {
            if let Some(t) = f(&state) {
                return Some(t);
            }
            let now = Instant::now();
            if now >= deadline {
                return None;
            }
            state = cv
                .wait_timeout(state, (deadline - now).min(POLL))
                .unwrap()
                .0;
        }
    }

    /// Stops the proxy's threads.
    pub fn stop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop();
    }
}

fn is_timeout(e: &std::io::Error) -> bool {
    matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut)
}

fn fail(shared: &Shared, message: String) {
    let (lock, cv) = &**shared;
    lock.lock().unwrap().errors.push(message);
    cv.notify_all();
}

fn relay_tcp(mut from: TcpStream, mut to: TcpStream, dir: Dir, shared: &Shared, stop: &AtomicBool) {
    let _ = from.set_read_timeout(Some(POLL));
    let mut pending = Vec::new();
    let mut buf = vec![0u8; 65536];
    let ended = loop {
        if stop.load(Ordering::Relaxed) {
            break "stopped".to_string();
        }
        match from.read(&mut buf) {
            Ok(0) => break "end of stream".to_string(),
            Ok(n) => pending.extend_from_slice(&buf[..n]),
            Err(e) if is_timeout(&e) => continue,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => break format!("read: {e}"),
        }
        let (out, used) = process_bytes(shared, dir, &pending, false);
        pending.drain(..used);
        if let Err(e) = to.write_all(&out) {
            break format!("write: {e}");
        }
    };
    let ended = if pending.is_empty() {
        ended
    } else {
        format!("{ended}, {} bytes of a partial record left", pending.len())
    };
    let (lock, cv) = &**shared;
    lock.lock().unwrap().ended[dir.index()] = Some(ended);
    cv.notify_all();
    let _ = to.shutdown(Shutdown::Write);
}

/// Processes the complete records at the front of `bytes`; returns the
/// bytes to forward and how many input bytes were used. For a datagram,
/// trailing bytes that are not a record are forwarded as they are.
fn process_bytes(shared: &Shared, dir: Dir, bytes: &[u8], dtls: bool) -> (Vec<u8>, usize) {
    let (records, used) = wire::split_records(bytes, dtls);
    let mut out = Vec::with_capacity(bytes.len() + 64);
    let (lock, cv) = &**shared;
    let mut state = lock.lock().unwrap();
    for (header, range) in records {
        handle_record(&mut state, dir, header, &bytes[range], &mut out);
    }
    if dtls && used < bytes.len() {
        out.extend_from_slice(&bytes[used..]);
        state
            .errors
            .push(format!("{}: datagram with a partial record", dir.name()));
    }
    drop(state);
    cv.notify_all();
    (out, if dtls { bytes.len() } else { used })
}

/// Reads the master secret of `client_random` from the key log at `path`,
/// waiting up to five seconds for the client to write it.
pub fn read_key_log(path: &Path, client_random: &[u8; 32]) -> Result<MasterSecret, String> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        if let Ok(text) = std::fs::read_to_string(path) {
            // Only complete lines: the client may be writing.
            let complete = &text[..text.rfind('\n').map_or(0, |i| i + 1)];
            match key_log::find_master_secret(complete, client_random) {
                Ok(Some(ms)) => return Ok(ms),
                Ok(None) => {}
                Err(e) => return Err(format!("{}: {e}", path.display())),
            }
        }
        if Instant::now() > deadline {
            return Err(format!(
                "no CLIENT_RANDOM line for this session in {}",
                path.display()
            ));
        }
        thread::sleep(Duration::from_millis(10));
    }
}

fn handle_record(
    state: &mut State,
    dir: Dir,
    header: RecordHeader,
    fragment: &[u8],
    out: &mut Vec<u8>,
) {
    let protected = state.tracker.is_protected(dir, &header);
    let key_log = state.key_log.clone();
    let mut source = |cr: &[u8; 32]| read_key_log(&key_log, cr);
    let events = state.tracker.process(dir, &header, fragment, &mut source);
    let mut forward = fragment.to_vec();
    if dir == Dir::ClientToServer && protected {
        let opened = events.iter().find_map(|e| match e {
            Event::Record {
                seq,
                content_type,
                plaintext,
                ..
            } => Some((*seq, *content_type, plaintext.clone())),
            _ => None,
        });
        if let Some((seq, content_type, plaintext)) = opened {
            let action = if content_type == wire::APPLICATION_DATA && !plaintext.is_empty() {
                state.actions.pop_front()
            } else {
                None
            };
            if action.is_some() || state.sealer.is_some() {
                match rewrite(state, seq, content_type, plaintext, action) {
                    Ok(f) => forward = f,
                    Err(e) => state.errors.push(e),
                }
            }
        }
        remember_last_block(state, &forward);
    }
    let start = out.len();
    header.write(forward.len(), out);
    out.extend_from_slice(&forward);
    let record = out[start..].to_vec();
    state.capture[dir.index()].extend_from_slice(&record);
    state.events.extend(events);
}

/// TLS 1.0: the last ciphertext block the server has seen from the client,
/// the IV of the next record.
fn remember_last_block(state: &mut State, fragment: &[u8]) {
    let Some(n) = state.tracker.negotiated() else {
        return;
    };
    if n.version != ProtocolVersion::Tls10 {
        return;
    }
    let mac = match n.mac_order {
        MacOrder::MacThenEncrypt => 0,
        MacOrder::EncryptThenMac => n.suite.combination().mac().output_len(),
    };
    if fragment.len() >= mac + 16 {
        let end = fragment.len() - mac;
        state.last_c2s_block = Some(fragment[end - 16..end].try_into().unwrap());
    }
}

fn rewrite(
    state: &mut State,
    seq: u64,
    content_type: u8,
    plaintext: Vec<u8>,
    action: Option<Action>,
) -> Result<Vec<u8>, String> {
    let n = state.tracker.negotiated().ok_or("no hellos")?.clone();
    if state.sealer.is_none() {
        let block = state.tracker.key_block().ok_or("no keys")?;
        let mut keys = block.client_write_keys();
        let chained;
        if n.version == ProtocolVersion::Tls10 {
            chained = state.last_c2s_block.ok_or("no previous client record")?;
            keys.iv = Some(&chained);
        }
        let sealer = Sealer::new(block.record_config(n.mac_order), keys)
            .map_err(|e| format!("sealer: {e}"))?;
        state.sealer = Some(sealer);
    }
    let (payload, flip) = match &action {
        Some(Action::Replace(p)) => (p.clone(), false),
        Some(Action::Tamper(p)) => (p.clone(), true),
        None => (plaintext, false),
    };
    let sealer = state.sealer.as_mut().unwrap();
    let mut record = vec![0u8; sealer.sealed_len(payload.len())];
    let len = sealer
        .seal(seq, content_type, &payload, &mut record)
        .map_err(|e| format!("seal: {e}"))?;
    record.truncate(len);
    if flip {
        let i = record.len() / 2;
        record[i] ^= 0x01;
    }
    if let Some(action) = action {
        state.applied.push((seq, action));
    }
    Ok(record)
}
