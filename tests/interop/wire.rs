//! The TLS and DTLS wire formats the interop tests and the
//! `decrypt_session` example read: record headers, handshake message
//! framing and reassembly, ClientHello and ServerHello.
//!
//! Shared by `tests/interop/` and `examples/decrypt_session.rs` (which
//! includes this file with `#[path]`), so it uses only `std`.

use std::collections::BTreeMap;

/// Record content types (RFC 5246 section 6.2.1).
pub const CHANGE_CIPHER_SPEC: u8 = 20;
/// `alert`.
pub const ALERT: u8 = 21;
/// `handshake`.
pub const HANDSHAKE: u8 = 22;
/// `application_data`.
pub const APPLICATION_DATA: u8 = 23;

/// Handshake message types (RFC 5246 section 7.4, RFC 6347 section 4.2.2).
pub const CLIENT_HELLO: u8 = 1;
/// `server_hello`.
pub const SERVER_HELLO: u8 = 2;
/// `hello_verify_request` (DTLS).
pub const HELLO_VERIFY_REQUEST: u8 = 3;
/// `server_hello_done`.
pub const SERVER_HELLO_DONE: u8 = 14;
/// `finished`.
pub const FINISHED: u8 = 20;

/// The `encrypt_then_mac` extension (RFC 7366).
pub const EXT_ENCRYPT_THEN_MAC: u16 = 22;
/// The `extended_master_secret` extension (RFC 7627).
pub const EXT_EXTENDED_MASTER_SECRET: u16 = 23;

/// The `bad_record_mac` alert description.
pub const BAD_RECORD_MAC: u8 = 20;

/// A name for a content type.
pub fn content_type_name(t: u8) -> &'static str {
    match t {
        CHANGE_CIPHER_SPEC => "change_cipher_spec",
        ALERT => "alert",
        HANDSHAKE => "handshake",
        APPLICATION_DATA => "application_data",
        _ => "unknown",
    }
}

/// A record header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordHeader {
    /// Content type.
    pub content_type: u8,
    /// The version bytes.
    pub version: [u8; 2],
    /// DTLS only: `epoch << 48 | sequence_number`.
    pub dtls_seq: Option<u64>,
    /// Fragment length.
    pub len: usize,
}

impl RecordHeader {
    /// Header length: 5 for TLS, 13 for DTLS.
    pub fn header_len(dtls: bool) -> usize {
        if dtls { 13 } else { 5 }
    }

    /// Parses a header at the start of `buf`; `None` if `buf` is shorter
    /// than a header.
    pub fn parse(buf: &[u8], dtls: bool) -> Option<RecordHeader> {
        let n = Self::header_len(dtls);
        if buf.len() < n {
            return None;
        }
        let dtls_seq = dtls.then(|| {
            let mut seq = [0u8; 8];
            seq.copy_from_slice(&buf[3..11]);
            u64::from_be_bytes(seq)
        });
        Some(RecordHeader {
            content_type: buf[0],
            version: [buf[1], buf[2]],
            dtls_seq,
            len: usize::from(u16::from_be_bytes([buf[n - 2], buf[n - 1]])),
        })
    }

    /// Appends this header, with fragment length `len`, to `out`.
    pub fn write(&self, len: usize, out: &mut Vec<u8>) {
        out.push(self.content_type);
        out.extend_from_slice(&self.version);
        if let Some(seq) = self.dtls_seq {
            out.extend_from_slice(&seq.to_be_bytes());
        }
        out.extend_from_slice(&(len as u16).to_be_bytes());
    }

    /// The DTLS epoch (0 for TLS).
    pub fn epoch(&self) -> u16 {
        self.dtls_seq.map_or(0, |s| (s >> 48) as u16)
    }
}

/// Splits the complete records off the front of `buf`: returns each header
/// with its fragment's byte range, and how many bytes they take.
pub fn split_records(
    buf: &[u8],
    dtls: bool,
) -> (Vec<(RecordHeader, std::ops::Range<usize>)>, usize) {
    let mut at = 0;
    let mut out = Vec::new();
    let h = RecordHeader::header_len(dtls);
    while let Some(header) = RecordHeader::parse(&buf[at..], dtls) {
        if buf.len() - at < h + header.len {
            break;
        }
        out.push((header, at + h..at + h + header.len));
        at += h + header.len;
    }
    (out, at)
}

/// Whether a byte stream or datagram starts like a DTLS record (version
/// major byte 0xfe).
pub fn looks_like_dtls(buf: &[u8]) -> bool {
    buf.len() > 1 && buf[1] == 0xfe
}

/// A complete handshake message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HandshakeMessage {
    /// Message type.
    pub msg_type: u8,
    /// DTLS only: the message sequence number.
    pub message_seq: Option<u16>,
    /// The message body.
    pub body: Vec<u8>,
}

impl HandshakeMessage {
    /// The bytes the handshake hash covers: the TLS header (type, length)
    /// or the DTLS header as if unfragmented (RFC 6347 section 4.2.6),
    /// then the body.
    pub fn transcript_bytes(&self) -> Vec<u8> {
        let len = self.body.len() as u32;
        let mut out = vec![self.msg_type];
        out.extend_from_slice(&len.to_be_bytes()[1..]);
        if let Some(seq) = self.message_seq {
            out.extend_from_slice(&seq.to_be_bytes());
            out.extend_from_slice(&[0, 0, 0]);
            out.extend_from_slice(&len.to_be_bytes()[1..]);
        }
        out.extend_from_slice(&self.body);
        out
    }
}

fn u24(b: &[u8]) -> usize {
    (usize::from(b[0]) << 16) | (usize::from(b[1]) << 8) | usize::from(b[2])
}

/// Reassembles handshake messages from the handshake records of one
/// direction (TLS: a byte stream of 4-byte headers and bodies; DTLS:
/// fragments with 12-byte headers, reassembled by message sequence,
/// retransmissions dropped).
#[derive(Debug, Default)]
pub struct HandshakeReassembler {
    dtls: bool,
    stream: Vec<u8>,
    /// DTLS: message_seq -> (type, body, bytes received flags).
    partial: BTreeMap<u16, (u8, Vec<u8>, Vec<bool>)>,
    /// DTLS: the next message sequence number to deliver.
    next_seq: u16,
}

impl HandshakeReassembler {
    /// A reassembler for TLS or DTLS.
    pub fn new(dtls: bool) -> Self {
        HandshakeReassembler {
            dtls,
            ..Default::default()
        }
    }

    /// Feeds the plaintext of one handshake record; returns the messages it
    /// completes, in order.
    pub fn push(&mut self, fragment: &[u8]) -> Result<Vec<HandshakeMessage>, String> {
        if self.dtls {
            self.push_dtls(fragment)
        } else {
            self.stream.extend_from_slice(fragment);
            let mut out = Vec::new();
            while self.stream.len() >= 4 {
                let len = u24(&self.stream[1..4]);
                if self.stream.len() < 4 + len {
                    break;
                }
                let body = self.stream[4..4 + len].to_vec();
                out.push(HandshakeMessage {
                    msg_type: self.stream[0],
                    message_seq: None,
                    body,
                });
                self.stream.drain(..4 + len);
            }
            Ok(out)
        }
    }

    fn push_dtls(&mut self, mut fragment: &[u8]) -> Result<Vec<HandshakeMessage>, String> {
        while !fragment.is_empty() {
            if fragment.len() < 12 {
                return Err(format!(
                    "DTLS handshake fragment of {} bytes",
                    fragment.len()
                ));
            }
            let msg_type = fragment[0];
            let length = u24(&fragment[1..4]);
            let seq = u16::from_be_bytes([fragment[4], fragment[5]]);
            let offset = u24(&fragment[6..9]);
            let frag_len = u24(&fragment[9..12]);
            if fragment.len() < 12 + frag_len || offset + frag_len > length {
                return Err("DTLS handshake fragment overruns its record or message".into());
            }
            let data = &fragment[12..12 + frag_len];
            fragment = &fragment[12 + frag_len..];
            if seq < self.next_seq {
                continue; // a retransmission of a delivered message
            }
            let entry = self
                .partial
                .entry(seq)
                .or_insert_with(|| (msg_type, vec![0; length], vec![false; length]));
            if entry.1.len() != length || entry.0 != msg_type {
                return Err(format!("DTLS message {seq} changes type or length"));
            }
            entry.1[offset..offset + frag_len].copy_from_slice(data);
            entry.2[offset..offset + frag_len].fill(true);
        }
        let mut out = Vec::new();
        while let Some((_, _, have)) = self.partial.get(&self.next_seq) {
            if !have.iter().all(|b| *b) {
                break;
            }
            let (msg_type, body, _) = self.partial.remove(&self.next_seq).unwrap();
            out.push(HandshakeMessage {
                msg_type,
                message_seq: Some(self.next_seq),
                body,
            });
            self.next_seq += 1;
        }
        Ok(out)
    }
}

/// What the tests need from a ClientHello.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientHello {
    /// `client_version`.
    pub version: [u8; 2],
    /// The client random.
    pub random: [u8; 32],
    /// Offered cipher suites.
    pub cipher_suites: Vec<u16>,
    /// Extension types, in order.
    pub extensions: Vec<u16>,
}

/// What the tests need from a ServerHello.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerHello {
    /// `server_version`: the negotiated version.
    pub version: [u8; 2],
    /// The server random.
    pub random: [u8; 32],
    /// The chosen cipher suite.
    pub cipher_suite: u16,
    /// Extension types, in order.
    pub extensions: Vec<u16>,
}

/// A cursor over a handshake body.
struct Reader<'a> {
    buf: &'a [u8],
    what: &'static str,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        if self.buf.len() < n {
            return Err(format!("{} truncated", self.what));
        }
        let (a, b) = self.buf.split_at(n);
        self.buf = b;
        Ok(a)
    }

    fn u8(&mut self) -> Result<usize, String> {
        Ok(usize::from(self.take(1)?[0]))
    }

    fn u16(&mut self) -> Result<usize, String> {
        let b = self.take(2)?;
        Ok(usize::from(u16::from_be_bytes([b[0], b[1]])))
    }

    fn vec8(&mut self) -> Result<&'a [u8], String> {
        let n = self.u8()?;
        self.take(n)
    }

    fn vec16(&mut self) -> Result<&'a [u8], String> {
        let n = self.u16()?;
        self.take(n)
    }

    fn extensions(&mut self) -> Result<Vec<u16>, String> {
        let mut out = Vec::new();
        if self.buf.is_empty() {
            return Ok(out);
        }
        let mut ext = Reader {
            buf: self.vec16()?,
            what: self.what,
        };
        while !ext.buf.is_empty() {
            out.push(ext.u16()? as u16);
            ext.vec16()?;
        }
        Ok(out)
    }
}

/// Parses a ClientHello body (DTLS: with its cookie).
pub fn parse_client_hello(body: &[u8], dtls: bool) -> Result<ClientHello, String> {
    let mut r = Reader {
        buf: body,
        what: "ClientHello",
    };
    let version = r.take(2)?;
    let random = r.take(32)?;
    r.vec8()?; // session_id
    if dtls {
        r.vec8()?; // cookie
    }
    let suites = r.vec16()?;
    r.vec8()?; // compression methods
    let extensions = r.extensions()?;
    Ok(ClientHello {
        version: [version[0], version[1]],
        random: random.try_into().unwrap(),
        cipher_suites: suites
            .chunks_exact(2)
            .map(|c| u16::from_be_bytes([c[0], c[1]]))
            .collect(),
        extensions,
    })
}

/// Parses a ServerHello body.
pub fn parse_server_hello(body: &[u8]) -> Result<ServerHello, String> {
    let mut r = Reader {
        buf: body,
        what: "ServerHello",
    };
    let version = r.take(2)?;
    let random = r.take(32)?;
    r.vec8()?; // session_id
    let suite = r.u16()? as u16;
    r.u8()?; // compression method
    let extensions = r.extensions()?;
    Ok(ServerHello {
        version: [version[0], version[1]],
        random: random.try_into().unwrap(),
        cipher_suite: suite,
        extensions,
    })
}
