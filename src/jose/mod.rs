//! The AES_CBC_HMAC_SHA2 content encryption of JSON Web Encryption (RFC
//! 7518 section 5.2, from draft-mcgrew-aead-aes-cbc-hmac-sha2): an AEAD
//! built as encrypt-then-MAC over this crate's AES-CBC and HMAC.
//!
//! The key `K` is `MAC_KEY || ENC_KEY`. Sealing PKCS#7-pads and encrypts
//! the plaintext `P` under `ENC_KEY` with a fresh IV to `E`, and the tag
//! `T` is the first half of `HMAC(MAC_KEY, A || IV || E || AL)`, where `A`
//! is the additional authenticated data (for JWE the ASCII of the encoded
//! protected header) and `AL` the bit length of `A` as a 64-bit big-endian
//! number. Opening checks `T` in constant time before decrypting anything,
//! then removes the padding without branching on it; both failures are the
//! one [`Error::AuthenticationFailed`](crate::Error::AuthenticationFailed).
//!
//! | `enc` | Key | Tag | Status |
//! | --- | --- | --- | --- |
//! | `A128CBC-HS256` | 32 bytes | 16 bytes | supported |
//! | `A192CBC-HS384` | 48 bytes | 24 bytes | [`Error::UnsupportedAlgorithm`](crate::Error::UnsupportedAlgorithm): needs AES-192, which this crate does not have |
//! | `A256CBC-HS512` | 64 bytes | 32 bytes | supported (AES-256-CBC, HMAC-SHA-512) |
//!
//! Parsing JWE serializations (base64url, JSON) is the caller's:
//! `examples/jwe_dir.rs` decrypts a compact serialization with
//! `"alg":"dir"`.
//!
//! ```
//! use cbc_hmac::jose::{CbcHmacAead, ContentEncryption};
//!
//! let key = [0x5a; 32]; // MAC_KEY || ENC_KEY
//! let mut aead = CbcHmacAead::new(ContentEncryption::A128CbcHs256, &key)?;
//! let aad = b"eyJhbGciOiJkaXIiLCJlbmMiOiJBMTI4Q0JDLUhTMjU2In0";
//!
//! let mut buf = [0u8; 64];
//! buf[..11].copy_from_slice(b"hello, JOSE");
//! let (mut iv, mut tag) = ([0u8; 16], [0u8; 16]);
//! let n = aead.seal_in_place(aad, &mut buf, 11, &mut iv, &mut tag)?;
//! assert_eq!(n, 16);
//!
//! let plaintext = aead.open_in_place(&iv, aad, &mut buf[..n], &tag)?;
//! assert_eq!(plaintext, b"hello, JOSE");
//! # Ok::<(), cbc_hmac::Error>(())
//! ```

mod aead;

pub use aead::CbcHmacAead;

use crate::combination::{Cipher, MacAlgorithm};

/// A JWE content encryption algorithm of the AES_CBC_HMAC_SHA2 family (RFC
/// 7518 section 5.2.3 to 5.2.5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ContentEncryption {
    /// `A128CBC-HS256`: AES-128-CBC, HMAC-SHA-256 truncated to 16 bytes.
    A128CbcHs256,
    /// `A192CBC-HS384`: not supported (AES-192).
    A192CbcHs384,
    /// `A256CBC-HS512`: AES-256-CBC, HMAC-SHA-512 truncated to 32 bytes.
    A256CbcHs512,
}

impl ContentEncryption {
    /// All three, in the RFC's order.
    pub const ALL: [ContentEncryption; 3] = [
        ContentEncryption::A128CbcHs256,
        ContentEncryption::A192CbcHs384,
        ContentEncryption::A256CbcHs512,
    ];

    /// The `enc` header value, for example `A128CBC-HS256`.
    pub const fn name(self) -> &'static str {
        match self {
            ContentEncryption::A128CbcHs256 => "A128CBC-HS256",
            ContentEncryption::A192CbcHs384 => "A192CBC-HS384",
            ContentEncryption::A256CbcHs512 => "A256CBC-HS512",
        }
    }

    /// Looks an `enc` value up (exact, as JWE header values are).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|e| e.name() == name)
    }

    /// Length of `K = MAC_KEY || ENC_KEY` in bytes.
    pub const fn key_len(self) -> usize {
        match self {
            ContentEncryption::A128CbcHs256 => 32,
            ContentEncryption::A192CbcHs384 => 48,
            ContentEncryption::A256CbcHs512 => 64,
        }
    }

    /// Length of the tag `T` in bytes: half the key.
    pub const fn tag_len(self) -> usize {
        self.key_len() / 2
    }

    /// The cipher and MAC underneath, if this crate has both.
    pub(crate) const fn parts(self) -> Option<(Cipher, MacAlgorithm)> {
        match self {
            ContentEncryption::A128CbcHs256 => Some((Cipher::Aes128Cbc, MacAlgorithm::HmacSha256)),
            ContentEncryption::A256CbcHs512 => Some((Cipher::Aes256Cbc, MacAlgorithm::HmacSha512)),
            ContentEncryption::A192CbcHs384 => None,
        }
    }
}
