//! Typed errors. No operation panics on bad input; each kind of bad input
//! has its own variant, except the authentication failures of
//! [`crate::Opener`] and [`crate::TlsAead`], which are one variant on
//! purpose.

use core::fmt;

use crate::combination::Combination;
use crate::record::ProtocolVersion;

/// Everything that can go wrong in this crate, apart from name look-ups
/// ([`UnknownName`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// The record failed authentication: bad padding or bad MAC. The two are
    /// deliberately indistinguishable (RFC 5246 section 6.2.3.2; Vaudenay's
    /// padding oracle, Lucky Thirteen). A record layer sends a
    /// `bad_record_mac` alert.
    BadRecordMac,
    /// A standalone HMAC tag did not verify.
    BadMac,
    /// A key had the wrong length for its algorithm.
    InvalidKeyLength {
        /// Required length in bytes.
        expected: usize,
        /// Length given.
        actual: usize,
    },
    /// An IV had the wrong length (AES-CBC IVs are 16 bytes).
    InvalidIvLength {
        /// Required length in bytes.
        expected: usize,
        /// Length given.
        actual: usize,
    },
    /// A nonce of the wrong length for a [`crate::TlsAead`]: 16 bytes (the
    /// CBC IV) for the explicit-IV form, none for the implicit-IV form.
    InvalidNonceLength {
        /// Required length in bytes.
        expected: usize,
        /// Length given.
        actual: usize,
    },
    /// Additional data of the wrong length for a [`crate::TlsAead`]: always
    /// 11 bytes, `seq(8) || type(1) || version(2)`.
    InvalidAdLength {
        /// Required length in bytes.
        expected: usize,
        /// Length given.
        actual: usize,
    },
    /// CBC input whose length is not a multiple of the 16-byte block.
    NotBlockAligned {
        /// Length given.
        len: usize,
    },
    /// A buffer too small for the output.
    BufferTooSmall {
        /// Bytes needed.
        needed: usize,
        /// Bytes available.
        actual: usize,
    },
    /// A tag of the wrong length was given to a verify call.
    InvalidTagLength {
        /// Required length in bytes.
        expected: usize,
        /// Length given.
        actual: usize,
    },
    /// A plaintext longer than a record may carry (2^14 bytes, RFC 5246 6.2.1).
    PlaintextTooLong {
        /// Length given.
        len: usize,
        /// Maximum allowed.
        max: usize,
    },
    /// A record fragment shorter than the smallest valid record for this
    /// configuration (explicit IV, MAC and at least one padding byte).
    RecordTooShort {
        /// Length received.
        len: usize,
        /// Smallest valid length.
        min: usize,
    },
    /// A record fragment whose encrypted part is not whole AES blocks.
    RecordNotBlockAligned {
        /// Length received.
        len: usize,
    },
    /// A record fragment over 2^14 + 2048 bytes (RFC 5246 6.2.3).
    RecordTooLong {
        /// Length received.
        len: usize,
        /// Largest valid length.
        max: usize,
    },
    /// The combination is not defined for this protocol version (the SHA-256
    /// and SHA-384 suites need TLS 1.2 or DTLS 1.2).
    UnsupportedVersion {
        /// The combination asked for.
        combination: Combination,
        /// The version asked for.
        version: ProtocolVersion,
    },
    /// TLS 1.0 chains its IV from record to record, so it needs an initial IV
    /// in the keys (and accepts no per-record IV); later versions take none.
    IvMismatch {
        /// The version configured.
        version: ProtocolVersion,
    },
    /// The requested backend cannot run on this CPU (or is masked by
    /// `CBC_HMAC_CPUID_OVERRIDE`).
    BackendUnavailable {
        /// The backend asked for.
        backend: crate::Backend,
    },
    /// The operating system's random source failed while seeding the
    /// explicit-IV generator.
    RandomSource,
    /// A record of a multi-record seal would need a sequence value past
    /// `u64::MAX` (RFC 5246 section 6.1: sequence numbers never wrap).
    SequenceOverflow,
    /// A truncated tag shorter than the documented minimum: half the hash
    /// output and at least 80 bits (RFC 2104 section 5).
    TagTooShort {
        /// Shortest accepted length in bytes.
        min: usize,
        /// Length given.
        actual: usize,
    },
    /// PKCS#7 padding (RFC 5652 section 6.3) did not check out after a
    /// decryption. Every bad padding gives this one error.
    BadPadding,
    /// An ESP packet or a JWE failed authentication: bad ICV/tag or bad
    /// padding, deliberately indistinguishable.
    AuthenticationFailed,
    /// An ESP packet or a DTLS record whose sequence number the anti-replay
    /// window has already seen, or one left of the window (RFC 4303
    /// section 3.4.3).
    Replayed {
        /// The (reconstructed) 64-bit sequence number.
        seq: u64,
    },
    /// An ESP packet for another security association.
    SpiMismatch {
        /// The SPI this opener was built for.
        expected: u32,
        /// The SPI in the packet.
        actual: u32,
    },
    /// A sequence number that does not fit the security association: above
    /// 2^32 - 1 without extended sequence numbers (RFC 4303 section 3.3.3),
    /// or not matching the low 32 bits in the packet.
    SequenceOutOfRange {
        /// The sequence number given.
        seq: u64,
    },
    /// An ESP packet or a JWE too short to hold its fixed fields, the IV,
    /// one block and the tag.
    PacketTooShort {
        /// Length received.
        len: usize,
        /// Smallest valid length.
        min: usize,
    },
    /// An ESP packet or a JWE whose ciphertext is not whole AES blocks.
    PacketNotBlockAligned {
        /// Length of the ciphertext.
        len: usize,
    },
    /// An algorithm the standard defines but this crate does not implement
    /// (yet): `A192CBC-HS384` needs AES-192; `A256CBC-HS512` and ESP's
    /// HMAC-SHA-512-256 need HMAC-SHA-512.
    UnsupportedAlgorithm {
        /// The algorithm's standard name.
        name: &'static str,
    },
    /// SSH padding the sealer was asked for that RFC 4253 section 6 does
    /// not allow: fewer than 4 or more than 255 bytes, or not aligning the
    /// packet to whole blocks.
    InvalidPadding {
        /// Padding length given.
        len: usize,
    },
    /// An SSH encrypt-then-MAC packet whose clear `packet_length` is out
    /// of range: not whole blocks, under one block, or over 256 KiB. (The
    /// encrypted length of the other forms is never an error by itself:
    /// see [`crate::ssh`].)
    SshPacketLength {
        /// The length field received.
        len: u32,
    },
    /// An SSH packet of another size than [`crate::ssh::SshOpener::open_length`]
    /// announced.
    SshWrongPacketSize {
        /// Bytes announced.
        expected: usize,
        /// Bytes given.
        actual: usize,
    },
    /// An [`crate::ssh::SshOpener`] call out of order: `open` before
    /// `open_length`, `open_length` twice, or either after a failed packet
    /// (the connection is over).
    SshOutOfOrder,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Error::BadRecordMac => f.write_str("bad record MAC"),
            Error::BadMac => f.write_str("MAC verification failed"),
            Error::InvalidKeyLength { expected, actual } => {
                write!(f, "invalid key length {actual}, expected {expected}")
            }
            Error::InvalidIvLength { expected, actual } => {
                write!(f, "invalid IV length {actual}, expected {expected}")
            }
            Error::InvalidNonceLength { expected, actual } => {
                write!(f, "invalid nonce length {actual}, expected {expected}")
            }
            Error::InvalidAdLength { expected, actual } => {
                write!(
                    f,
                    "invalid additional data length {actual}, expected {expected}"
                )
            }
            Error::NotBlockAligned { len } => {
                write!(f, "length {len} is not a multiple of the 16-byte block")
            }
            Error::BufferTooSmall { needed, actual } => {
                write!(f, "buffer too small: {actual} bytes, need {needed}")
            }
            Error::InvalidTagLength { expected, actual } => {
                write!(f, "invalid tag length {actual}, expected {expected}")
            }
            Error::PlaintextTooLong { len, max } => {
                write!(
                    f,
                    "plaintext of {len} bytes exceeds the record limit of {max}"
                )
            }
            Error::RecordTooShort { len, min } => {
                write!(
                    f,
                    "record fragment of {len} bytes is shorter than the minimum {min}"
                )
            }
            Error::RecordNotBlockAligned { len } => {
                write!(f, "record fragment of {len} bytes is not block-aligned")
            }
            Error::RecordTooLong { len, max } => {
                write!(
                    f,
                    "record fragment of {len} bytes exceeds the maximum {max}"
                )
            }
            Error::UnsupportedVersion {
                combination,
                version,
            } => write!(f, "{combination} is not defined for {version}"),
            Error::IvMismatch { version } => match version {
                ProtocolVersion::Tls10 => {
                    f.write_str("TLS 1.0 needs an initial IV and chains it; no per-record IV")
                }
                _ => write!(f, "{version} uses explicit per-record IVs; no initial IV"),
            },
            Error::BackendUnavailable { backend } => {
                write!(f, "backend {backend} is not available on this CPU")
            }
            Error::RandomSource => f.write_str("the operating system's random source failed"),
            Error::SequenceOverflow => f.write_str("the sequence number would wrap"),
            Error::TagTooShort { min, actual } => {
                write!(
                    f,
                    "truncated tag of {actual} bytes is shorter than the minimum {min}"
                )
            }
            Error::BadPadding => f.write_str("bad PKCS#7 padding"),
            Error::AuthenticationFailed => f.write_str("authentication failed"),
            Error::Replayed { seq } => write!(f, "sequence number {seq} replayed or too old"),
            Error::SpiMismatch { expected, actual } => {
                write!(f, "SPI {actual:#010x}, expected {expected:#010x}")
            }
            Error::SequenceOutOfRange { seq } => {
                write!(f, "sequence number {seq} out of range for this association")
            }
            Error::PacketTooShort { len, min } => {
                write!(f, "packet of {len} bytes is shorter than the minimum {min}")
            }
            Error::PacketNotBlockAligned { len } => {
                write!(f, "ciphertext of {len} bytes is not block-aligned")
            }
            Error::UnsupportedAlgorithm { name } => write!(f, "{name} is not supported"),
            Error::InvalidPadding { len } => write!(f, "invalid SSH padding length {len}"),
            Error::SshPacketLength { len } => write!(f, "SSH packet length {len} out of range"),
            Error::SshWrongPacketSize { expected, actual } => {
                write!(f, "SSH packet of {actual} bytes, expected {expected}")
            }
            Error::SshOutOfOrder => f.write_str("SSH opener called out of order"),
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for Error {}

/// A name or code point that names no supported cipher suite or combination.
///
/// Holds (up to 64 bytes of) the input so that the message names it, without
/// allocating.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct UnknownName {
    bytes: [u8; 64],
    len: u8,
    truncated: bool,
}

impl UnknownName {
    pub(crate) fn new(input: &str) -> Self {
        let mut bytes = [0u8; 64];
        // Cut on a char boundary so `input()` stays valid UTF-8.
        let mut len = input.len().min(64);
        while !input.is_char_boundary(len) {
            len -= 1;
        }
        bytes[..len].copy_from_slice(&input.as_bytes()[..len]);
        UnknownName {
            bytes,
            len: len as u8,
            truncated: len < input.len(),
        }
    }

    pub(crate) fn code_point(code: u16) -> Self {
        let mut bytes = [0u8; 64];
        const HEX: &[u8; 16] = b"0123456789ABCDEF";
        bytes[0] = b'0';
        bytes[1] = b'x';
        for i in 0..4 {
            bytes[2 + i] = HEX[((code >> (12 - 4 * i)) & 0xf) as usize];
        }
        UnknownName {
            bytes,
            len: 6,
            truncated: false,
        }
    }

    /// The input that was not recognised (its first 64 bytes at most).
    pub fn input(&self) -> &str {
        core::str::from_utf8(&self.bytes[..self.len as usize]).unwrap_or("")
    }
}

impl fmt::Debug for UnknownName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("UnknownName").field(&self.input()).finish()
    }
}

impl fmt::Display for UnknownName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ellipsis = if self.truncated { "..." } else { "" };
        write!(
            f,
            "unknown cipher suite or combination: \"{}{ellipsis}\"",
            self.input()
        )
    }
}

#[cfg(feature = "std")]
impl std::error::Error for UnknownName {}
