//! Record protection for the CBC cipher suites of TLS 1.0-1.2 and DTLS
//! 1.0/1.2: record formats, sequence numbers, padding and MAC order.
//!
//! One [`Sealer`] and one [`Opener`] per direction. The caller's record
//! layer owns sockets, headers and sequence numbers; it hands in the 64-bit
//! MAC sequence value (for DTLS `epoch << 48 | sequence`, see
//! [`dtls_sequence`]) and the content type.
//!
//! For code written against BoringSSL's or aws-lc's legacy TLS AEADs,
//! [`TlsAead`] offers the MAC-then-encrypt records in that shape: the CBC
//! IV as nonce (or chained), and 11 bytes of additional data whose version
//! bytes are taken as they are.
//!
//! # Formats
//!
//! MAC-then-encrypt (RFC 5246 section 6.2.3.2, RFC 4346, RFC 2246):
//! `MAC = HMAC(seq || type || version || length || plaintext)`, then
//! `CBC(plaintext || MAC || padding)`, each padding byte equal to the padding
//! length (0 to 255 accepted on receipt; the sealer uses the least).
//! Encrypt-then-MAC (RFC 7366): `CBC(plaintext || padding)`, then
//! `MAC = HMAC(seq || type || version || length || IV || ciphertext)` over
//! the length of IV and ciphertext, appended in clear. TLS 1.0 chains the IV
//! from the previous record's last ciphertext block; TLS 1.1+ and DTLS send
//! a fresh explicit IV in front of each record (see the sealer).
//!
//! # Opening in constant time
//!
//! See [`Opener`]: every padding or MAC failure is [`crate::Error::BadRecordMac`],
//! and the time and memory accesses of a MAC-then-encrypt open do not depend
//! on the padding length, the padding bytes or the MAC's validity.

mod batch;
mod batch_open;
mod config;
mod ct_open;
mod opener;
mod sealer;
mod tls_aead;
mod version;

pub use batch::{SealJob, SealRecord, seal_batch};
pub use batch_open::{OpenJob, OpenRecord, open_batch};
pub use config::{MacOrder, RecordConfig, RecordKeys};
pub use opener::Opener;
pub use sealer::Sealer;
pub use tls_aead::{TlsAead, TlsAeadAlgorithm, TlsAeadIv};
pub use version::{ProtocolVersion, dtls_sequence};

/// Largest plaintext a record carries: 2^14 bytes (RFC 5246 section 6.2.1).
pub const MAX_PLAINTEXT_LEN: usize = 1 << 14;

/// Largest record fragment accepted by an opener: 2^14 + 2048 bytes
/// (RFC 5246 section 6.2.3).
pub const MAX_FRAGMENT_LEN: usize = (1 << 14) + 2048;

/// The 11 bytes of the MAC header that do not depend on the record's
/// length: `seq(8) || type(1) || version(2)`, the additional data of the
/// AEAD form ([`TlsAead`]).
#[inline]
pub(crate) fn mac_prefix(seq: u64, content_type: u8, version: [u8; 2]) -> [u8; 11] {
    let mut p = [0u8; 11];
    p[..8].copy_from_slice(&seq.to_be_bytes());
    p[8] = content_type;
    p[9..].copy_from_slice(&version);
    p
}

/// The 13 bytes in front of the MAC'd data: `prefix || length(2)`.
#[inline]
pub(crate) fn mac_header_after(prefix: &[u8; 11], len: usize) -> [u8; 13] {
    let mut h = [0u8; 13];
    h[..11].copy_from_slice(prefix);
    h[11] = (len >> 8) as u8;
    h[12] = len as u8;
    h
}

/// The 13 bytes in front of the MAC'd data: `seq(8) || type(1) ||
/// version(2) || length(2)`.
#[inline]
pub(crate) fn mac_header(seq: u64, content_type: u8, version: [u8; 2], len: usize) -> [u8; 13] {
    mac_header_after(&mac_prefix(seq, content_type, version), len)
}

/// `len` plus at least one padding byte, rounded up to whole blocks: the
/// CBC part of a record sealed with the least padding.
pub(crate) const fn padded_len(len: usize) -> usize {
    (len + 1).next_multiple_of(16)
}

/// The smallest MAC-then-encrypt CBC body: MAC and one padding byte, in
/// whole blocks.
pub(crate) const fn min_mac_then_encrypt_len(mac_len: usize) -> usize {
    padded_len(mac_len)
}

/// The public length checks on a received fragment of `len` bytes, in the
/// order every open makes them, before anything is decrypted: at most
/// [`MAX_FRAGMENT_LEN`], at least `min`, and whole blocks once the
/// `outside_cbc` bytes (explicit IV, encrypt-then-MAC tag) are taken off.
pub(crate) fn check_fragment_len(
    len: usize,
    min: usize,
    outside_cbc: usize,
) -> Result<(), crate::Error> {
    use crate::Error;
    // CVE-2016-2107 was a fast path that skipped one of these.
    if len > MAX_FRAGMENT_LEN {
        return Err(Error::RecordTooLong {
            len,
            max: MAX_FRAGMENT_LEN,
        });
    }
    if len < min {
        return Err(Error::RecordTooShort { len, min });
    }
    if !(len - outside_cbc).is_multiple_of(16) {
        return Err(Error::RecordNotBlockAligned { len });
    }
    Ok(())
}

/// Checks the configuration and keys shared by sealers and openers; returns
/// the key objects.
pub(crate) fn build_keys(
    config: &RecordConfig,
    keys: &RecordKeys<'_>,
    backend: crate::Backend,
) -> Result<(crate::AesCbcKey, crate::HmacKey, Option<[u8; 16]>), crate::Error> {
    use crate::Error;
    let combination = config.combination;
    if !combination.allows(config.version) {
        return Err(Error::UnsupportedVersion {
            combination,
            version: config.version,
        });
    }
    let mac = combination.mac();
    if keys.mac_key.len() != mac.tls_key_len() {
        return Err(Error::InvalidKeyLength {
            expected: mac.tls_key_len(),
            actual: keys.mac_key.len(),
        });
    }
    let iv = match (config.version, keys.iv) {
        (ProtocolVersion::Tls10, Some(iv)) => {
            Some(
                <[u8; 16]>::try_from(iv).map_err(|_| Error::InvalidIvLength {
                    expected: 16,
                    actual: iv.len(),
                })?,
            )
        }
        (ProtocolVersion::Tls10, None) | (_, Some(_)) => {
            return Err(Error::IvMismatch {
                version: config.version,
            });
        }
        (_, None) => None,
    };
    let aes = crate::AesCbcKey::with_backend(combination.cipher(), keys.enc_key, backend)?;
    let hmac = crate::HmacKey::with_backend(mac, keys.mac_key, backend)?;
    Ok((aes, hmac, iv))
}
