//! The NSS key log format: how a user gets the secrets of a live session.
//!
//! OpenSSL (`s_client -keylogfile FILE`, `SSL_CTX_set_keylog_callback`),
//! GnuTLS, NSS and the browsers (`SSLKEYLOGFILE=FILE`) append one line per
//! secret. For TLS 1.0-1.2 the line is
//!
//! ```text
//! CLIENT_RANDOM <64 hex digits: client random> <96 hex digits: master secret>
//! ```
//!
//! Blank lines and lines starting with `#` are comments. Lines with any
//! other label (the TLS 1.3 traffic secrets, `RSA`, `EXPORTER_SECRET`, ...)
//! are skipped. A `CLIENT_RANDOM` line that does not have exactly two
//! values of the right length in hex, or a line whose first word is not a
//! label (letters, digits and underscores), is a [`KeyLogError`] naming its
//! line. Parsing borrows the text and never allocates.
//!
//! ```
//! use cbc_hmac::key_schedule::key_log::{self, KeyLogErrorKind};
//!
//! let log = "# comment\n\
//!            CLIENT_TRAFFIC_SECRET_0 aa bb\n\
//!            CLIENT_RANDOM 0101010101010101010101010101010101010101010101010101010101010101 \
//!            020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202\n";
//! let entries: Vec<_> = key_log::entries(log).collect::<Result<_, _>>()?;
//! assert_eq!(entries.len(), 1);
//! assert_eq!(entries[0].client_random, [1; 32]);
//! assert_eq!(entries[0].master_secret.as_bytes(), &[2; 48]);
//!
//! let err = key_log::entries("CLIENT_RANDOM 0102 03\n").next().unwrap().unwrap_err();
//! assert_eq!(err.line(), 1);
//! assert_eq!(err.kind(), KeyLogErrorKind::ClientRandomLength { digits: 4 });
//! # Ok::<(), key_log::KeyLogError>(())
//! ```

use core::fmt;

use super::{MASTER_SECRET_LEN, MasterSecret, RANDOM_LEN};

/// The label of the TLS 1.0-1.2 master secret lines.
pub const CLIENT_RANDOM_LABEL: &str = "CLIENT_RANDOM";

/// One `CLIENT_RANDOM` line: the master secret of the session whose
/// ClientHello carried `client_random`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyLogEntry {
    /// The ClientHello random that names the session.
    pub client_random: [u8; RANDOM_LEN],
    /// The session's master secret (wiped on drop).
    pub master_secret: MasterSecret,
}

impl KeyLogEntry {
    /// Parses one line (without its line ending; a trailing `\r` is
    /// ignored). `Ok(None)` for a comment, a blank line or another label.
    pub fn parse_line(line: &str) -> Result<Option<KeyLogEntry>, KeyLogErrorKind> {
        let line = line.strip_suffix('\r').unwrap_or(line);
        let trimmed = line.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            return Ok(None);
        }
        let mut fields = trimmed.split_ascii_whitespace();
        let label = fields.next().unwrap_or("");
        if label.is_empty()
            || !label
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_')
        {
            return Err(KeyLogErrorKind::InvalidLabel);
        }
        if label != CLIENT_RANDOM_LABEL {
            return Ok(None);
        }
        let random = fields.next().ok_or(KeyLogErrorKind::MissingField)?;
        let secret = fields.next().ok_or(KeyLogErrorKind::MissingField)?;
        if fields.next().is_some() {
            return Err(KeyLogErrorKind::ExtraField);
        }
        if random.len() != 2 * RANDOM_LEN {
            return Err(KeyLogErrorKind::ClientRandomLength {
                digits: random.len(),
            });
        }
        if secret.len() != 2 * MASTER_SECRET_LEN {
            return Err(KeyLogErrorKind::MasterSecretLength {
                digits: secret.len(),
            });
        }
        let mut client_random = [0u8; RANDOM_LEN];
        decode_hex(random, &mut client_random).map_err(|()| KeyLogErrorKind::InvalidHex {
            field: KeyLogField::ClientRandom,
        })?;
        let mut master_secret = MasterSecret::from_bytes([0; MASTER_SECRET_LEN]);
        decode_hex(secret, &mut master_secret.0).map_err(|()| KeyLogErrorKind::InvalidHex {
            field: KeyLogField::MasterSecret,
        })?;
        Ok(Some(KeyLogEntry {
            client_random,
            master_secret,
        }))
    }
}

/// The `CLIENT_RANDOM` entries of a key log, in order, each malformed line
/// an error (iteration may go on past it).
pub fn entries(key_log: &str) -> KeyLogEntries<'_> {
    KeyLogEntries {
        lines: key_log.split('\n'),
        line: 0,
    }
}

/// The master secret logged for `client_random` (the last one if the
/// session was logged more than once), `Ok(None)` if there is none.
///
/// Fails on the first malformed line, wherever it is: a key log that is not
/// what it seems is better reported than half-read. A program that reads a
/// log while it is being written should pass only its complete lines.
pub fn find_master_secret(
    key_log: &str,
    client_random: &[u8; RANDOM_LEN],
) -> Result<Option<MasterSecret>, KeyLogError> {
    let mut found = None;
    for entry in entries(key_log) {
        let entry = entry?;
        if entry.client_random == *client_random {
            found = Some(entry.master_secret);
        }
    }
    Ok(found)
}

/// Iterator over the entries of a key log (see [`entries`]).
#[derive(Clone, Debug)]
pub struct KeyLogEntries<'a> {
    lines: core::str::Split<'a, char>,
    line: usize,
}

impl Iterator for KeyLogEntries<'_> {
    type Item = Result<KeyLogEntry, KeyLogError>;

    fn next(&mut self) -> Option<Self::Item> {
        for text in self.lines.by_ref() {
            self.line += 1;
            match KeyLogEntry::parse_line(text) {
                Ok(Some(entry)) => return Some(Ok(entry)),
                Ok(None) => {}
                Err(kind) => {
                    return Some(Err(KeyLogError {
                        line: self.line,
                        kind,
                    }));
                }
            }
        }
        None
    }
}

/// Which value of a `CLIENT_RANDOM` line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KeyLogField {
    /// The client random (first value).
    ClientRandom,
    /// The master secret (second value).
    MasterSecret,
}

/// What is wrong with a key log line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum KeyLogErrorKind {
    /// The first word is not a label: letters, digits and underscores.
    InvalidLabel,
    /// A `CLIENT_RANDOM` line with fewer than two values.
    MissingField,
    /// A `CLIENT_RANDOM` line with more than two values.
    ExtraField,
    /// The client random is not 64 hex digits long.
    ClientRandomLength {
        /// Digits found.
        digits: usize,
    },
    /// The master secret is not 96 hex digits long.
    MasterSecretLength {
        /// Digits found.
        digits: usize,
    },
    /// A character that is not a hex digit.
    InvalidHex {
        /// The value it is in.
        field: KeyLogField,
    },
}

impl fmt::Display for KeyLogErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            KeyLogErrorKind::InvalidLabel => f.write_str("the first word is not a key log label"),
            KeyLogErrorKind::MissingField => {
                f.write_str("CLIENT_RANDOM needs a client random and a master secret")
            }
            KeyLogErrorKind::ExtraField => f.write_str("CLIENT_RANDOM has more than two values"),
            KeyLogErrorKind::ClientRandomLength { digits } => {
                write!(f, "client random of {digits} hex digits, expected 64")
            }
            KeyLogErrorKind::MasterSecretLength { digits } => {
                write!(f, "master secret of {digits} hex digits, expected 96")
            }
            KeyLogErrorKind::InvalidHex { field } => match field {
                KeyLogField::ClientRandom => f.write_str("client random is not hex"),
                KeyLogField::MasterSecret => f.write_str("master secret is not hex"),
            },
        }
    }
}

/// A malformed key log line: its number (from 1) and what is wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KeyLogError {
    line: usize,
    kind: KeyLogErrorKind,
}

impl KeyLogError {
    /// The line number, from 1.
    pub fn line(&self) -> usize {
        self.line
    }

    /// What is wrong.
    pub fn kind(&self) -> KeyLogErrorKind {
        self.kind
    }
}

impl fmt::Display for KeyLogError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "key log line {}: {}", self.line, self.kind)
    }
}

#[cfg(feature = "std")]
impl std::error::Error for KeyLogError {}

/// Decodes `hex` (exactly `2 * out.len()` digits, either case) into `out`.
fn decode_hex(hex: &str, out: &mut [u8]) -> Result<(), ()> {
    fn digit(c: u8) -> Result<u8, ()> {
        match c {
            b'0'..=b'9' => Ok(c - b'0'),
            b'a'..=b'f' => Ok(c - b'a' + 10),
            b'A'..=b'F' => Ok(c - b'A' + 10),
            _ => Err(()),
        }
    }
    let (pairs, rest) = hex.as_bytes().as_chunks::<2>();
    if !rest.is_empty() || pairs.len() != out.len() {
        return Err(());
    }
    for (o, [hi, lo]) in out.iter_mut().zip(pairs) {
        *o = (digit(*hi)? << 4) | digit(*lo)?;
    }
    Ok(())
}
