//! Keys prepared once: the AES schedules and the HMAC inner and outer
//! states that every job points to.

use std::fmt;

use zeroize::Zeroize;

use crate::Manager;
use crate::error::Result;

/// 16-byte-aligned AES round keys (15 x 16 bytes: enough for AES-256).
#[repr(C, align(64))]
struct Schedule([u8; 240]);

/// An AES key expanded once for the library (encryption and decryption
/// schedules). Wiped on drop.
pub struct AesKey {
    enc: Box<Schedule>,
    dec: Box<Schedule>,
    key_len: usize,
}

impl AesKey {
    /// Expands `key` (16, 24 or 32 bytes) with `IMB_AES_KEYEXP_*`.
    pub fn new(mgr: &mut Manager, key: &[u8]) -> Result<AesKey> {
        let mut enc = Box::new(Schedule([0; 240]));
        let mut dec = Box::new(Schedule([0; 240]));
        mgr.raw().aes_keyexp(key, &mut enc.0, &mut dec.0)?;
        Ok(AesKey {
            enc,
            dec,
            key_len: key.len(),
        })
    }

    /// The key length in bytes.
    pub fn key_len(&self) -> usize {
        self.key_len
    }

    pub(crate) fn enc_ptr(&self) -> *const u8 {
        self.enc.0.as_ptr()
    }

    pub(crate) fn dec_ptr(&self) -> *const u8 {
        self.dec.0.as_ptr()
    }
}

impl Drop for AesKey {
    fn drop(&mut self) {
        self.enc.0.zeroize();
        self.dec.0.zeroize();
    }
}

impl fmt::Debug for AesKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AesKey")
            .field("key_len", &self.key_len)
            .finish_non_exhaustive()
    }
}

/// The HMAC hash functions the wrapper offers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Hash {
    /// HMAC-SHA1 (`IMB_AUTH_HMAC_SHA_1`), 20-byte tags.
    Sha1,
    /// HMAC-SHA256 (`IMB_AUTH_HMAC_SHA_256`), 32-byte tags.
    Sha256,
    /// HMAC-SHA384 (`IMB_AUTH_HMAC_SHA_384`), 48-byte tags.
    Sha384,
}

impl Hash {
    /// The full tag length: 20, 32 or 48 bytes.
    pub fn tag_len(self) -> usize {
        match self {
            Hash::Sha1 => 20,
            Hash::Sha256 => 32,
            Hash::Sha384 => 48,
        }
    }

    /// The shim's code for the hash.
    pub(crate) fn code(self) -> u32 {
        match self {
            Hash::Sha1 => 1,
            Hash::Sha256 => 2,
            Hash::Sha384 => 3,
        }
    }
}

/// 64-byte-aligned hash state (up to SHA-512's eight 64-bit words).
#[repr(C, align(64))]
struct State([u8; 64]);

/// An HMAC key as the library's jobs take it: the hash states after one
/// block of `key ^ ipad` and of `key ^ opad`, computed once. Wiped on drop.
pub struct HmacKey {
    hash: Hash,
    ipad: Box<State>,
    opad: Box<State>,
}

impl HmacKey {
    /// Precomputes the inner and outer states of `key` (any length; keys
    /// longer than the hash's block are hashed first, as RFC 2104 says).
    pub fn new(mgr: &mut Manager, hash: Hash, key: &[u8]) -> Result<HmacKey> {
        let mut ipad = Box::new(State([0; 64]));
        let mut opad = Box::new(State([0; 64]));
        mgr.raw()
            .hmac_pads(hash.code(), key, &mut ipad.0, &mut opad.0)?;
        Ok(HmacKey { hash, ipad, opad })
    }

    /// The hash function.
    pub fn hash(&self) -> Hash {
        self.hash
    }

    /// The tag length the jobs write (the full digest).
    pub fn tag_len(&self) -> usize {
        self.hash.tag_len()
    }

    pub(crate) fn ipad_ptr(&self) -> *const u8 {
        self.ipad.0.as_ptr()
    }

    pub(crate) fn opad_ptr(&self) -> *const u8 {
        self.opad.0.as_ptr()
    }
}

impl Drop for HmacKey {
    fn drop(&mut self) {
        self.ipad.0.zeroize();
        self.opad.0.zeroize();
    }
}

impl fmt::Debug for HmacKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HmacKey")
            .field("hash", &self.hash)
            .finish_non_exhaustive()
    }
}
