//! The cipher, MAC and cipher-MAC combinations this crate implements.
//!
//! A [`Combination`] is the *record protection* of a TLS cipher suite: every
//! key exchange (RSA, DHE, ECDHE, PSK, ...) built on AES-128-CBC with
//! HMAC-SHA1 protects records identically, so the many IANA suites map onto
//! five combinations (see [`crate::suite`]).

use core::fmt;
use core::str::FromStr;

use crate::error::UnknownName;
use crate::record::ProtocolVersion;

/// A block cipher in CBC mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Cipher {
    /// AES with a 128-bit key in CBC mode.
    Aes128Cbc,
    /// AES with a 256-bit key in CBC mode.
    Aes256Cbc,
}

impl Cipher {
    /// All ciphers, in a fixed order.
    pub const ALL: [Cipher; 2] = [Cipher::Aes128Cbc, Cipher::Aes256Cbc];

    /// Key length in bytes.
    pub const fn key_len(self) -> usize {
        match self {
            Cipher::Aes128Cbc => 16,
            Cipher::Aes256Cbc => 32,
        }
    }

    /// Block (and IV) length in bytes: 16 for AES.
    pub const fn block_len(self) -> usize {
        16
    }

    /// The GnuTLS-style name, for example `AES-128-CBC`.
    pub const fn name(self) -> &'static str {
        match self {
            Cipher::Aes128Cbc => "AES-128-CBC",
            Cipher::Aes256Cbc => "AES-256-CBC",
        }
    }
}

impl fmt::Display for Cipher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A MAC algorithm: HMAC (RFC 2104) over one of four hash functions.
///
/// HMAC-SHA1, HMAC-SHA256 and HMAC-SHA384 protect TLS records (see
/// [`Combination`]); HMAC-SHA512 is no TLS CBC suite's MAC and serves the
/// other formats (SSH `hmac-sha2-512`, ESP HMAC-SHA-512-256, JWE
/// `A256CBC-HS512`) and [`crate::HmacKey`] users.
///
/// ```
/// use cbc_hmac::{HmacKey, MacAlgorithm};
///
/// let alg = MacAlgorithm::HmacSha512;
/// assert_eq!((alg.output_len(), alg.block_len()), (64, 128));
/// let key = HmacKey::new(alg, b"key")?;
/// assert_eq!(key.sign(b"message").len(), 64);
/// # Ok::<(), cbc_hmac::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MacAlgorithm {
    /// HMAC-SHA1, 20-byte tags.
    HmacSha1,
    /// HMAC-SHA256, 32-byte tags.
    HmacSha256,
    /// HMAC-SHA384, 48-byte tags.
    HmacSha384,
    /// HMAC-SHA512, 64-byte tags (not a TLS record MAC).
    HmacSha512,
}

impl MacAlgorithm {
    /// All MAC algorithms, in a fixed order.
    pub const ALL: [MacAlgorithm; 4] = [
        MacAlgorithm::HmacSha1,
        MacAlgorithm::HmacSha256,
        MacAlgorithm::HmacSha384,
        MacAlgorithm::HmacSha512,
    ];

    /// Tag length in bytes (the full hash output; TLS never truncates it).
    pub const fn output_len(self) -> usize {
        match self {
            MacAlgorithm::HmacSha1 => 20,
            MacAlgorithm::HmacSha256 => 32,
            MacAlgorithm::HmacSha384 => 48,
            MacAlgorithm::HmacSha512 => 64,
        }
    }

    /// The hash function's block length in bytes (64 or 128).
    pub const fn block_len(self) -> usize {
        match self {
            MacAlgorithm::HmacSha1 | MacAlgorithm::HmacSha256 => 64,
            MacAlgorithm::HmacSha384 | MacAlgorithm::HmacSha512 => 128,
        }
    }

    /// The MAC key length TLS derives for this algorithm (equal to the tag
    /// length; for HMAC-SHA512, which no TLS suite uses, the 64 bytes
    /// RFC 2104 recommends). Any key length is accepted by
    /// [`crate::HmacKey`].
    pub const fn tls_key_len(self) -> usize {
        self.output_len()
    }

    /// The GnuTLS-style name, for example `SHA1`.
    pub const fn name(self) -> &'static str {
        match self {
            MacAlgorithm::HmacSha1 => "SHA1",
            MacAlgorithm::HmacSha256 => "SHA256",
            MacAlgorithm::HmacSha384 => "SHA384",
            MacAlgorithm::HmacSha512 => "SHA512",
        }
    }
}

impl fmt::Display for MacAlgorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HMAC-{}", self.name())
    }
}

/// A cipher-MAC combination: the record protection of a CBC cipher suite.
///
/// `Display` and [`Combination::name`] give the GnuTLS-style name;
/// `FromStr` accepts any name [`crate::suite::CipherSuite`] knows (GnuTLS,
/// OpenSSL or IANA, case-insensitive).
///
/// ```
/// use cbc_hmac::{Cipher, Combination, MacAlgorithm};
///
/// let c: Combination = "ECDHE-RSA-AES128-SHA".parse().unwrap();
/// assert_eq!(c, Combination::Aes128CbcSha1);
/// assert_eq!(c.cipher(), Cipher::Aes128Cbc);
/// assert_eq!(c.mac(), MacAlgorithm::HmacSha1);
/// assert_eq!(c.to_string(), "AES-128-CBC-SHA1");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Combination {
    /// AES-128-CBC with HMAC-SHA1 (`TLS_RSA_WITH_AES_128_CBC_SHA`, ...).
    Aes128CbcSha1,
    /// AES-256-CBC with HMAC-SHA1 (`TLS_RSA_WITH_AES_256_CBC_SHA`, ...).
    Aes256CbcSha1,
    /// AES-128-CBC with HMAC-SHA256 (`TLS_RSA_WITH_AES_128_CBC_SHA256`, ...).
    Aes128CbcSha256,
    /// AES-256-CBC with HMAC-SHA256 (`TLS_RSA_WITH_AES_256_CBC_SHA256`, ...).
    Aes256CbcSha256,
    /// AES-256-CBC with HMAC-SHA384 (`TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384`, ...).
    Aes256CbcSha384,
}

impl Combination {
    /// All combinations, in the order the benchmark prints them.
    pub const ALL: [Combination; 5] = [
        Combination::Aes128CbcSha1,
        Combination::Aes256CbcSha1,
        Combination::Aes128CbcSha256,
        Combination::Aes256CbcSha256,
        Combination::Aes256CbcSha384,
    ];

    /// The cipher.
    pub const fn cipher(self) -> Cipher {
        match self {
            Combination::Aes128CbcSha1 | Combination::Aes128CbcSha256 => Cipher::Aes128Cbc,
            _ => Cipher::Aes256Cbc,
        }
    }

    /// The MAC algorithm.
    pub const fn mac(self) -> MacAlgorithm {
        match self {
            Combination::Aes128CbcSha1 | Combination::Aes256CbcSha1 => MacAlgorithm::HmacSha1,
            Combination::Aes128CbcSha256 | Combination::Aes256CbcSha256 => MacAlgorithm::HmacSha256,
            Combination::Aes256CbcSha384 => MacAlgorithm::HmacSha384,
        }
    }

    /// The GnuTLS-style name, for example `AES-128-CBC-SHA1`.
    pub const fn name(self) -> &'static str {
        match self {
            Combination::Aes128CbcSha1 => "AES-128-CBC-SHA1",
            Combination::Aes256CbcSha1 => "AES-256-CBC-SHA1",
            Combination::Aes128CbcSha256 => "AES-128-CBC-SHA256",
            Combination::Aes256CbcSha256 => "AES-256-CBC-SHA256",
            Combination::Aes256CbcSha384 => "AES-256-CBC-SHA384",
        }
    }

    /// Whether a record layer of `version` may use this combination.
    ///
    /// The SHA-256 and SHA-384 suites were defined for TLS 1.2 (RFC 5246,
    /// RFC 5289) and exist in DTLS 1.2 only; the SHA-1 suites run on every
    /// version.
    pub const fn allows(self, version: ProtocolVersion) -> bool {
        match self.mac() {
            MacAlgorithm::HmacSha1 => true,
            MacAlgorithm::HmacSha256 | MacAlgorithm::HmacSha384 => {
                matches!(version, ProtocolVersion::Tls12 | ProtocolVersion::Dtls12)
            }
            // No combination has it (`mac` never returns it).
            MacAlgorithm::HmacSha512 => false,
        }
    }
}

impl fmt::Display for Combination {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Combination {
    type Err = UnknownName;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        crate::suite::combination_by_name(s)
    }
}
