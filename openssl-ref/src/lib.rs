//! A small, safe wrapper over OpenSSL's libcrypto: the reference that
//! `cbc-hmac`'s differential tests and benchmarks compare against.
//!
//! All FFI of the workspace lives here (each `unsafe` block carries a
//! `// SAFETY:` comment), so that the library, its tests and its benchmarks
//! need none. Errors are [`Result`]s; no input makes these functions panic.
//!
//! - [`EvpAesCbc`]: AES-CBC through EVP (no padding), the key expanded once
//!   in a reusable context, the IV reset per call. [`aes_cbc_encrypt`] and
//!   [`aes_cbc_decrypt`] are one-shot forms.
//! - [`Hmac`]: HMAC-SHA1/SHA256/SHA384/SHA512 keyed once, each message MAC'd from
//!   the stored inner/outer states without re-keying. [`hmac`] is one-shot.
//! - [`hash`]: SHA-1/SHA-256/SHA-384/SHA-512 through the low-level
//!   `SHA*_Init/Update/Final` calls (no EVP lookup).
//! - [`StitchedTlsCipher`]: OpenSSL's stitched `AES-{128,256}-CBC-HMAC-SHA{1,256}`
//!   ciphers in TLS record mode (MAC-then-encrypt only; x86-64 with AES-NI
//!   only), driven exactly as libssl drives them.
//! - [`ComposedTls`]: EVP AES-CBC plus HMAC laid out by hand as TLS/DTLS CBC
//!   records, for every combination (SHA-384 included), both MAC orders and
//!   every version (TLS 1.0's chained IV carried in the object).
//! - [`version`]: OpenSSL's version string.
//!
//! (The examples are on the items: without the `ffi` feature the crate
//! is empty.)
//!
//! The record code here is a *reference*: it checks padding and MAC in the
//! obvious, variable-time way ([`ComposedTls`]) or however OpenSSL does
//! ([`StitchedTlsCipher`]). It is for comparing outputs and speed, not for
//! protecting traffic.
#![cfg(feature = "ffi")]

mod aes;
mod composed;
mod digest;
mod error;
mod ffi;
mod hmac;
mod multiblock;
#[cfg(test)]
mod multiblock_tests;
mod stitched;
#[cfg(test)]
mod tests;

pub use aes::{EvpAesCbc, aes_cbc_decrypt, aes_cbc_encrypt};
pub use composed::ComposedTls;
pub use digest::hash;
pub use error::{Error, Result};
pub use hmac::{Digest, Hmac, Tag, hmac};
pub use multiblock::{MULTIBLOCK_CONTENT_TYPE, MultiBlockSealer, RECORD_HEADER_LEN, split_records};
pub use stitched::StitchedTlsCipher;

use std::fmt;

/// TLS 1.0's version bytes (chained IV).
pub const TLS1_0: [u8; 2] = [0x03, 0x01];
/// TLS 1.1's version bytes (explicit IV).
pub const TLS1_1: [u8; 2] = [0x03, 0x02];
/// TLS 1.2's version bytes (explicit IV).
pub const TLS1_2: [u8; 2] = [0x03, 0x03];
/// DTLS 1.0's version bytes (explicit IV).
pub const DTLS1_0: [u8; 2] = [0xfe, 0xff];
/// DTLS 1.2's version bytes (explicit IV).
pub const DTLS1_2: [u8; 2] = [0xfe, 0xfd];

/// The largest plaintext a TLS record carries (2^14 bytes); the sealers
/// refuse more.
pub const MAX_PLAINTEXT_LEN: usize = 1 << 14;

/// The order of MAC and encryption in a CBC record.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MacOrder {
    /// MAC the plaintext, then encrypt plaintext || MAC || padding
    /// (RFC 5246 section 6.2.3.2). The only order OpenSSL's stitched ciphers
    /// implement.
    MacThenEncrypt,
    /// Encrypt plaintext || padding, then MAC IV || ciphertext (RFC 7366).
    EncryptThenMac,
}

/// The keys and parameters of one connection direction.
#[derive(Clone, Copy)]
pub struct TlsParams<'a> {
    /// The AES key: 16 bytes (AES-128) or 32 bytes (AES-256).
    pub enc_key: &'a [u8],
    /// The HMAC key (TLS uses the digest's output length; any length works).
    pub mac_key: &'a [u8],
    /// The HMAC digest.
    pub digest: Digest,
    /// The version bytes: [`TLS1_0`], [`TLS1_1`], [`TLS1_2`], [`DTLS1_0`] or
    /// [`DTLS1_2`].
    pub version: [u8; 2],
    /// MAC-then-encrypt or encrypt-then-MAC.
    pub mac_order: MacOrder,
    /// TLS 1.0 only (and required there): the initial IV from the key block.
    pub tls10_iv: Option<&'a [u8; 16]>,
}

impl fmt::Debug for TlsParams<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsParams")
            .field("enc_key_len", &self.enc_key.len())
            .field("mac_key_len", &self.mac_key.len())
            .field("digest", &self.digest)
            .field("version", &self.version)
            .field("mac_order", &self.mac_order)
            .finish_non_exhaustive()
    }
}

impl TlsParams<'_> {
    /// Checks version and IV; returns whether records carry an explicit IV
    /// (every version but TLS 1.0), and the initial chained IV (TLS 1.0).
    pub(crate) fn iv_mode(&self) -> Result<(bool, [u8; 16])> {
        let explicit = explicit_iv(self.version)?;
        match (explicit, self.tls10_iv) {
            (false, Some(iv)) => Ok((false, *iv)),
            (false, None) => Err(Error::InvalidInput("TLS 1.0 needs an initial IV")),
            (true, None) => Ok((true, [0; 16])),
            (true, Some(_)) => Err(Error::InvalidInput(
                "only TLS 1.0 takes an initial IV; later versions use explicit IVs",
            )),
        }
    }
}

/// Whether records of `version` start with an explicit IV: `false` for TLS
/// 1.0, `true` for TLS 1.1, TLS 1.2, DTLS 1.0 and DTLS 1.2; an error for
/// anything else (SSL 3.0 included).
pub fn explicit_iv(version: [u8; 2]) -> Result<bool> {
    match version {
        TLS1_0 => Ok(false),
        TLS1_1 | TLS1_2 | DTLS1_0 | DTLS1_2 => Ok(true),
        _ => Err(Error::InvalidInput("unsupported protocol version")),
    }
}

/// The 13 bytes the record MAC starts with: `seq(8) || type(1) ||
/// version(2) || length(2)` (for DTLS, `seq` is `epoch << 48 | sequence`).
pub fn tls_mac_header(seq: u64, content_type: u8, version: [u8; 2], len: u16) -> [u8; 13] {
    let mut h = [0u8; 13];
    h[..8].copy_from_slice(&seq.to_be_bytes());
    h[8] = content_type;
    h[9..11].copy_from_slice(&version);
    h[11..].copy_from_slice(&len.to_be_bytes());
    h
}

/// OpenSSL's version string, for example `OpenSSL 3.0.19 27 Jan 2026`.
pub fn version() -> &'static str {
    ffi::version()
}

/// The length of a sealed record: explicit IV (if any) plus the CBC blocks
/// plus, for encrypt-then-MAC, the MAC; with the least padding.
pub(crate) fn sealed_len(
    explicit: bool,
    order: MacOrder,
    mac_len: usize,
    plaintext_len: usize,
) -> usize {
    let iv = if explicit { 16 } else { 0 };
    match order {
        MacOrder::MacThenEncrypt => iv + (plaintext_len + mac_len + 1).next_multiple_of(16),
        MacOrder::EncryptThenMac => iv + (plaintext_len + 1).next_multiple_of(16) + mac_len,
    }
}
