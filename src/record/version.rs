//! Protocol versions and what each implies for CBC records.

use core::fmt;

/// A TLS or DTLS version whose CBC cipher suites this crate protects.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ProtocolVersion {
    /// TLS 1.0 (RFC 2246): the CBC IV is the last ciphertext block of the
    /// previous record.
    Tls10,
    /// TLS 1.1 (RFC 4346): an explicit IV per record.
    Tls11,
    /// TLS 1.2 (RFC 5246): an explicit IV per record.
    Tls12,
    /// DTLS 1.0 (RFC 4347, based on TLS 1.1).
    Dtls10,
    /// DTLS 1.2 (RFC 6347, based on TLS 1.2).
    Dtls12,
}

impl ProtocolVersion {
    /// Every version.
    pub const ALL: [ProtocolVersion; 5] = [
        ProtocolVersion::Tls10,
        ProtocolVersion::Tls11,
        ProtocolVersion::Tls12,
        ProtocolVersion::Dtls10,
        ProtocolVersion::Dtls12,
    ];

    /// The two version bytes of the record header (and of the MAC input).
    pub const fn wire(self) -> [u8; 2] {
        match self {
            ProtocolVersion::Tls10 => [3, 1],
            ProtocolVersion::Tls11 => [3, 2],
            ProtocolVersion::Tls12 => [3, 3],
            ProtocolVersion::Dtls10 => [0xfe, 0xff],
            ProtocolVersion::Dtls12 => [0xfe, 0xfd],
        }
    }

    /// Whether this is a DTLS version (its 64-bit MAC sequence value is
    /// `epoch << 48 | sequence`, see [`dtls_sequence`]).
    pub const fn is_dtls(self) -> bool {
        matches!(self, ProtocolVersion::Dtls10 | ProtocolVersion::Dtls12)
    }

    /// Bytes of explicit IV in front of each record: 0 for TLS 1.0 (chained
    /// IV), 16 otherwise.
    pub const fn explicit_iv_len(self) -> usize {
        match self {
            ProtocolVersion::Tls10 => 0,
            _ => 16,
        }
    }
}

impl fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ProtocolVersion::Tls10 => "TLS 1.0",
            ProtocolVersion::Tls11 => "TLS 1.1",
            ProtocolVersion::Tls12 => "TLS 1.2",
            ProtocolVersion::Dtls10 => "DTLS 1.0",
            ProtocolVersion::Dtls12 => "DTLS 1.2",
        })
    }
}

/// The DTLS MAC sequence value: the 16-bit epoch above the 48-bit record
/// sequence number (RFC 6347 section 4.1.2.1). Bits of `sequence` above 48
/// are ignored.
///
/// ```
/// assert_eq!(cbc_hmac::dtls_sequence(1, 5), 0x0001_0000_0000_0005);
/// ```
pub const fn dtls_sequence(epoch: u16, sequence: u64) -> u64 {
    ((epoch as u64) << 48) | (sequence & 0x0000_ffff_ffff_ffff)
}
