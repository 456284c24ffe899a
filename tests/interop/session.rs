//! Following a TLS or DTLS connection record by record, from both
//! directions: the hellos (randoms, suite, encrypt-then-MAC), the keys (from
//! a key log, through `cbc_hmac::key_schedule`), and every protected record
//! opened with `cbc_hmac::Opener`. The Finished messages are checked against
//! the handshake transcript.
//!
//! Used live by the interop proxy and offline by the `decrypt_session`
//! example (which includes this file and `wire.rs` with `#[path]`).

use cbc_hmac::key_schedule::{KeyBlock, MasterSecret, Prf, Side};
use cbc_hmac::suite::CipherSuite;
use cbc_hmac::{MacAlgorithm, MacOrder, Opener, ProtocolVersion};

use super::wire::{self, HandshakeMessage, HandshakeReassembler, RecordHeader};

/// A direction of the connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dir {
    /// Client to server.
    ClientToServer,
    /// Server to client.
    ServerToClient,
}

impl Dir {
    /// Both directions.
    pub const BOTH: [Dir; 2] = [Dir::ClientToServer, Dir::ServerToClient];

    /// 0 or 1.
    pub fn index(self) -> usize {
        match self {
            Dir::ClientToServer => 0,
            Dir::ServerToClient => 1,
        }
    }

    /// `client -> server` or `server -> client`.
    pub fn name(self) -> &'static str {
        match self {
            Dir::ClientToServer => "client -> server",
            Dir::ServerToClient => "server -> client",
        }
    }
}

/// What the hellos settled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Negotiated {
    /// The version from the ServerHello.
    pub version: ProtocolVersion,
    /// The chosen suite.
    pub suite: CipherSuite,
    /// Encrypt-then-MAC if the ServerHello carries the extension.
    pub mac_order: MacOrder,
    /// Whether the ServerHello carries `extended_master_secret`.
    pub extended_master_secret: bool,
    /// Whether the client offered encrypt-then-MAC.
    pub client_offered_etm: bool,
    /// The ClientHello random.
    pub client_random: [u8; 32],
    /// The ServerHello random.
    pub server_random: [u8; 32],
}

/// Something the tracker saw.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// The ServerHello was read.
    Hello(Negotiated),
    /// A ChangeCipherSpec.
    ChangeCipherSpec(Dir),
    /// A protected Finished message: `verified` says whether its
    /// verify_data matched the transcript (`None` if the transcript was not
    /// that of a full handshake).
    Finished {
        /// Who sent it.
        dir: Dir,
        /// verify_data check.
        verified: Option<bool>,
    },
    /// A record opened (or, before ChangeCipherSpec, a plaintext alert).
    Record {
        /// Direction.
        dir: Dir,
        /// The MAC sequence value.
        seq: u64,
        /// Content type.
        content_type: u8,
        /// Plaintext.
        plaintext: Vec<u8>,
    },
    /// A protected record failed to open.
    OpenFailed {
        /// Direction.
        dir: Dir,
        /// The MAC sequence value it was tried with.
        seq: u64,
        /// Content type.
        content_type: u8,
        /// The opener's error.
        error: cbc_hmac::Error,
    },
    /// Something that stops decryption or breaks an expectation.
    Problem(String),
}

/// Where the tracker gets the master secret of a client random.
pub type KeySource<'a> = dyn FnMut(&[u8; 32]) -> Result<MasterSecret, String> + 'a;

#[derive(Default)]
struct DirState {
    reassembler: Option<HandshakeReassembler>,
    messages: Vec<HandshakeMessage>,
    finished: Option<HandshakeMessage>,
    opener: Option<Opener>,
    /// TLS: ChangeCipherSpec seen; records after it are protected.
    protected: bool,
    /// TLS: the next record's sequence number.
    next_seq: u64,
    /// TLS: a record failed to open; nothing after it can be.
    dead: bool,
    app_data: Vec<u8>,
    last_seq: Option<u64>,
}

/// Follows one connection.
pub struct Tracker {
    dtls: bool,
    client_hello: Option<wire::ClientHello>,
    negotiated: Option<Negotiated>,
    master: Option<MasterSecret>,
    keys: Option<KeyBlock>,
    dirs: [DirState; 2],
}

impl Tracker {
    /// A tracker for a TLS or a DTLS connection.
    pub fn new(dtls: bool) -> Self {
        let mut dirs: [DirState; 2] = Default::default();
        for d in &mut dirs {
            d.reassembler = Some(HandshakeReassembler::new(dtls));
        }
        Tracker {
            dtls,
            client_hello: None,
            negotiated: None,
            master: None,
            keys: None,
            dirs,
        }
    }

    /// Whether this is DTLS.
    pub fn is_dtls(&self) -> bool {
        self.dtls
    }

    /// The hellos' outcome, once the ServerHello was read.
    pub fn negotiated(&self) -> Option<&Negotiated> {
        self.negotiated.as_ref()
    }

    /// The key block, once derived.
    pub fn key_block(&self) -> Option<&KeyBlock> {
        self.keys.as_ref()
    }

    /// All application data opened in a direction.
    pub fn app_data(&self, dir: Dir) -> &[u8] {
        &self.dirs[dir.index()].app_data
    }

    /// The sequence value of the last protected record of a direction.
    pub fn last_seq(&self, dir: Dir) -> Option<u64> {
        self.dirs[dir.index()].last_seq
    }

    /// Whether records of `dir` with this header are protected.
    pub fn is_protected(&self, dir: Dir, header: &RecordHeader) -> bool {
        if self.dtls {
            header.epoch() > 0
        } else {
            self.dirs[dir.index()].protected
        }
    }

    /// Processes one record of `dir`.
    pub fn process(
        &mut self,
        dir: Dir,
        header: &RecordHeader,
        fragment: &[u8],
        keys: &mut KeySource<'_>,
    ) -> Vec<Event> {
        let mut events = Vec::new();
        if self.dirs[dir.index()].dead {
            return events;
        }
        if !self.is_protected(dir, header) {
            self.plaintext_record(dir, header, fragment, &mut events);
        } else {
            self.protected_record(dir, header, fragment, keys, &mut events);
        }
        events
    }

    fn plaintext_record(
        &mut self,
        dir: Dir,
        header: &RecordHeader,
        fragment: &[u8],
        events: &mut Vec<Event>,
    ) {
        match header.content_type {
            wire::HANDSHAKE => {
                let d = &mut self.dirs[dir.index()];
                let messages = match d.reassembler.as_mut().unwrap().push(fragment) {
                    Ok(m) => m,
                    Err(e) => return events.push(Event::Problem(format!("{}: {e}", dir.name()))),
                };
                for m in messages {
                    self.plaintext_message(dir, m, events);
                }
            }
            wire::CHANGE_CIPHER_SPEC => {
                let d = &mut self.dirs[dir.index()];
                if !self.dtls {
                    d.protected = true;
                    d.next_seq = 0;
                }
                events.push(Event::ChangeCipherSpec(dir));
            }
            wire::ALERT => events.push(Event::Record {
                dir,
                seq: header.dtls_seq.unwrap_or(0),
                content_type: wire::ALERT,
                plaintext: fragment.to_vec(),
            }),
            t => events.push(Event::Problem(format!(
                "{}: unprotected record of type {t}",
                dir.name()
            ))),
        }
    }

    fn plaintext_message(&mut self, dir: Dir, m: HandshakeMessage, events: &mut Vec<Event>) {
        match (dir, m.msg_type) {
            (Dir::ClientToServer, wire::CLIENT_HELLO) => {
                match wire::parse_client_hello(&m.body, self.dtls) {
                    Ok(ch) => self.client_hello = Some(ch),
                    Err(e) => events.push(Event::Problem(e)),
                }
            }
            (Dir::ServerToClient, wire::SERVER_HELLO) => match self.server_hello(&m.body) {
                Ok(n) => {
                    self.negotiated = Some(n.clone());
                    events.push(Event::Hello(n));
                }
                Err(e) => events.push(Event::Problem(e)),
            },
            _ => {}
        }
        self.dirs[dir.index()].messages.push(m);
    }

    fn server_hello(&self, body: &[u8]) -> Result<Negotiated, String> {
        let sh = wire::parse_server_hello(body)?;
        let ch = self
            .client_hello
            .as_ref()
            .ok_or("ServerHello before any ClientHello")?;
        let version = match sh.version {
            [3, 1] => ProtocolVersion::Tls10,
            [3, 2] => ProtocolVersion::Tls11,
            [3, 3] => ProtocolVersion::Tls12,
            [0xfe, 0xff] => ProtocolVersion::Dtls10,
            [0xfe, 0xfd] => ProtocolVersion::Dtls12,
            v => return Err(format!("unsupported version {v:02x?} in ServerHello")),
        };
        let suite = CipherSuite::from_code_point(sh.cipher_suite)
            .map_err(|e| format!("ServerHello chose a suite this crate does not protect: {e}"))?;
        let mac_order = if sh.extensions.contains(&wire::EXT_ENCRYPT_THEN_MAC) {
            MacOrder::EncryptThenMac
        } else {
            MacOrder::MacThenEncrypt
        };
        Ok(Negotiated {
            version,
            suite,
            mac_order,
            extended_master_secret: sh.extensions.contains(&wire::EXT_EXTENDED_MASTER_SECRET),
            client_offered_etm: ch.extensions.contains(&wire::EXT_ENCRYPT_THEN_MAC),
            client_random: ch.random,
            server_random: sh.random,
        })
    }

    /// Derives the key block once (from the key source) and builds the
    /// direction's opener.
    fn ensure_opener(&mut self, dir: Dir, keys: &mut KeySource<'_>) -> Result<(), String> {
        if self.dirs[dir.index()].opener.is_some() {
            return Ok(());
        }
        let n = self
            .negotiated
            .clone()
            .ok_or("protected record before a ServerHello")?;
        if self.keys.is_none() {
            let master = keys(&n.client_random)?;
            let block = KeyBlock::derive(
                n.suite.combination(),
                n.version,
                master.as_bytes(),
                &n.client_random,
                &n.server_random,
            )
            .map_err(|e| format!("key block: {e}"))?;
            self.master = Some(master);
            self.keys = Some(block);
        }
        let block = self.keys.as_ref().unwrap();
        let record_keys = match dir {
            Dir::ClientToServer => block.client_write_keys(),
            Dir::ServerToClient => block.server_write_keys(),
        };
        let opener = Opener::new(block.record_config(n.mac_order), record_keys)
            .map_err(|e| format!("opener: {e}"))?;
        self.dirs[dir.index()].opener = Some(opener);
        Ok(())
    }

    fn protected_record(
        &mut self,
        dir: Dir,
        header: &RecordHeader,
        fragment: &[u8],
        keys: &mut KeySource<'_>,
        events: &mut Vec<Event>,
    ) {
        if let Err(e) = self.ensure_opener(dir, keys) {
            self.dirs[dir.index()].dead = true;
            return events.push(Event::Problem(format!("{}: {e}", dir.name())));
        }
        let dtls = self.dtls;
        let d = &mut self.dirs[dir.index()];
        let seq = match header.dtls_seq {
            Some(s) => s,
            None => {
                d.next_seq += 1;
                d.next_seq - 1
            }
        };
        d.last_seq = Some(seq);
        let mut buf = fragment.to_vec();
        let opened = d
            .opener
            .as_mut()
            .unwrap()
            .open_in_place(seq, header.content_type, &mut buf)
            .map(|p| p.to_vec());
        let plaintext = match opened {
            Ok(p) => p,
            Err(error) => {
                // TLS: the connection is over (and TLS 1.0's IV chain is
                // lost). DTLS discards the record and goes on.
                if !dtls {
                    d.dead = true;
                }
                return events.push(Event::OpenFailed {
                    dir,
                    seq,
                    content_type: header.content_type,
                    error,
                });
            }
        };
        if header.content_type == wire::APPLICATION_DATA {
            d.app_data.extend_from_slice(&plaintext);
        }
        let finished = header.content_type == wire::HANDSHAKE && d.finished.is_none();
        events.push(Event::Record {
            dir,
            seq,
            content_type: header.content_type,
            plaintext: plaintext.clone(),
        });
        if finished {
            let event = self.finished(dir, &plaintext);
            events.push(event);
        }
    }

    /// Checks that a protected handshake record is a Finished message, and
    /// its verify_data.
    fn finished(&mut self, dir: Dir, plaintext: &[u8]) -> Event {
        let header_len = if self.dtls { 12 } else { 4 };
        let ok_shape = plaintext.len() == header_len + 12
            && plaintext[0] == wire::FINISHED
            && plaintext[1..4] == [0, 0, 12]
            && (!self.dtls || (plaintext[6..9] == [0, 0, 0] && plaintext[9..12] == [0, 0, 12]));
        if !ok_shape {
            return Event::Problem(format!(
                "{}: first protected handshake record is not a Finished message: {:02x?}",
                dir.name(),
                plaintext
            ));
        }
        let message = HandshakeMessage {
            msg_type: wire::FINISHED,
            message_seq: self
                .dtls
                .then(|| u16::from_be_bytes([plaintext[4], plaintext[5]])),
            body: plaintext[header_len..].to_vec(),
        };
        let side = match dir {
            Dir::ClientToServer => Side::Client,
            Dir::ServerToClient => Side::Server,
        };
        let verified = self
            .expected_verify_data(side)
            .map(|v| v[..] == message.body[..]);
        self.dirs[dir.index()].finished = Some(message);
        Event::Finished { dir, verified }
    }

    /// The verify_data `side`'s Finished must carry, if the messages are
    /// those of a full handshake.
    fn expected_verify_data(&self, side: Side) -> Option<[u8; 12]> {
        let transcript = self.transcript(side)?;
        let n = self.negotiated.as_ref()?;
        let prf = Prf::for_connection(n.suite.combination(), n.version);
        let hash = handshake_hash(prf, &transcript);
        self.master.as_ref()?.verify_data(prf, side, &hash).ok()
    }

    /// The handshake messages up to (not including) `side`'s Finished, in
    /// the order of a full handshake: ClientHello; the server's flight up
    /// to ServerHelloDone; the client's second flight; then, for the
    /// server's Finished, the client's Finished and the rest of the
    /// server's messages (NewSessionTicket). DTLS leaves out the
    /// HelloVerifyRequest and the ClientHello before it.
    fn transcript(&self, side: Side) -> Option<Vec<u8>> {
        let server: Vec<&HandshakeMessage> = self.dirs[1]
            .messages
            .iter()
            .filter(|m| m.msg_type != wire::HELLO_VERIFY_REQUEST)
            .collect();
        let verify_request = self.dirs[1]
            .messages
            .iter()
            .any(|m| m.msg_type == wire::HELLO_VERIFY_REQUEST);
        let client: Vec<&HandshakeMessage> = self.dirs[0]
            .messages
            .iter()
            .skip(usize::from(verify_request))
            .collect();
        if client.first()?.msg_type != wire::CLIENT_HELLO {
            return None;
        }
        let done = server
            .iter()
            .position(|m| m.msg_type == wire::SERVER_HELLO_DONE)?;
        let mut t = client[0].transcript_bytes();
        for m in &server[..=done] {
            t.extend(m.transcript_bytes());
        }
        for m in &client[1..] {
            t.extend(m.transcript_bytes());
        }
        if side == Side::Server {
            t.extend(self.dirs[0].finished.as_ref()?.transcript_bytes());
            for m in &server[done + 1..] {
                t.extend(m.transcript_bytes());
            }
        }
        Some(t)
    }
}

/// The handshake hash a PRF goes with: `MD5 || SHA-1` for the TLS 1.0 PRF,
/// else the PRF's hash.
pub fn handshake_hash(prf: Prf, transcript: &[u8]) -> Vec<u8> {
    use md5::Digest;
    let mut out = vec![0u8; 48];
    match prf {
        Prf::Tls10 => {
            let mut v = md5::Md5::digest(transcript).to_vec();
            let n = cbc_hmac::digest(MacAlgorithm::HmacSha1, transcript, &mut out).unwrap();
            v.extend_from_slice(&out[..n]);
            v
        }
        Prf::Sha256 => {
            let n = cbc_hmac::digest(MacAlgorithm::HmacSha256, transcript, &mut out).unwrap();
            out.truncate(n);
            out
        }
        Prf::Sha384 => {
            let n = cbc_hmac::digest(MacAlgorithm::HmacSha384, transcript, &mut out).unwrap();
            out.truncate(n);
            out
        }
    }
}

/// Decrypts a recorded connection: the record streams of both directions
/// (complete records back to back, TLS or DTLS), with the master secret
/// from `keys`. The records are taken in an order a full handshake allows
/// (the client's unprotected records, the server's, then the rest of each)
/// so that the hellos come before the keys are needed. Returns the tracker
/// and every event, in processing order.
pub fn decrypt_capture(
    client_to_server: &[u8],
    server_to_client: &[u8],
    keys: &mut KeySource<'_>,
) -> (Tracker, Vec<Event>) {
    let dtls = wire::looks_like_dtls(client_to_server);
    let mut tracker = Tracker::new(dtls);
    let mut events = Vec::new();
    let streams = [client_to_server, server_to_client];
    let mut records: [Vec<(RecordHeader, &[u8])>; 2] = Default::default();
    for (i, stream) in streams.iter().enumerate() {
        let (rs, used) = wire::split_records(stream, dtls);
        records[i] = rs.into_iter().map(|(h, r)| (h, &stream[r])).collect();
        if used < stream.len() {
            events.push(Event::Problem(format!(
                "{}: {} trailing bytes are not a whole record",
                Dir::BOTH[i].name(),
                stream.len() - used
            )));
        }
    }
    // The unprotected prefix of each direction: up to the ChangeCipherSpec
    // (or, DTLS, the first record of a later epoch).
    let prefix = |rs: &[(RecordHeader, &[u8])]| {
        rs.iter()
            .position(|(h, _)| h.content_type == wire::CHANGE_CIPHER_SPEC || h.epoch() > 0)
            .unwrap_or(rs.len())
    };
    let cut = [prefix(&records[0]), prefix(&records[1])];
    let order = [
        (0, 0..cut[0]),
        (1, 0..cut[1]),
        (0, cut[0]..records[0].len()),
        (1, cut[1]..records[1].len()),
    ];
    for (i, range) in order {
        for (header, fragment) in &records[i][range] {
            events.extend(tracker.process(Dir::BOTH[i], header, fragment, keys));
        }
    }
    (tracker, events)
}
