//! The AES_CBC_HMAC_SHA2 AEAD itself.

use core::fmt;

use super::ContentEncryption;
use crate::backends::{self, Backend, EtmJob};
use crate::error::Error;
use crate::primitives::aes_cbc::check_iv;
use crate::primitives::explicit_iv::IvGenerator;
use crate::{AesCbcKey, HmacKey};

/// An AES_CBC_HMAC_SHA2 key (RFC 7518 section 5.2) on one backend, with
/// its IV generator (seeded once from the OS, then no system call per
/// message). See [the module](crate::jose) for the construction.
///
/// The ciphertext takes the plaintext's place in the caller's buffer:
/// [`CbcHmacAead::ciphertext_len`] bytes, whole blocks. Nothing allocates.
pub struct CbcHmacAead {
    algorithm: ContentEncryption,
    aes: AesCbcKey,
    mac: HmacKey,
    iv: IvGenerator,
}

impl CbcHmacAead {
    /// Splits `key` (`MAC_KEY || ENC_KEY`,
    /// [`ContentEncryption::key_len`] bytes) and expands both halves on the
    /// best available backend. `A192CBC-HS384` (AES-192) is
    /// [`Error::UnsupportedAlgorithm`].
    pub fn new(algorithm: ContentEncryption, key: &[u8]) -> Result<Self, Error> {
        Self::with_backend(algorithm, key, Backend::detect())
    }

    /// Like [`CbcHmacAead::new`] on a chosen backend.
    pub fn with_backend(
        algorithm: ContentEncryption,
        key: &[u8],
        backend: Backend,
    ) -> Result<Self, Error> {
        let Some((cipher, mac)) = algorithm.parts() else {
            return Err(Error::UnsupportedAlgorithm {
                name: algorithm.name(),
            });
        };
        if key.len() != algorithm.key_len() {
            return Err(Error::InvalidKeyLength {
                expected: algorithm.key_len(),
                actual: key.len(),
            });
        }
        let (mac_key, enc_key) = key.split_at(key.len() / 2);
        let aes = AesCbcKey::with_backend(cipher, enc_key, backend)?;
        let mac = HmacKey::with_backend(mac, mac_key, backend)?;
        let iv = IvGenerator::from_os(aes.backend())?;
        Ok(CbcHmacAead {
            algorithm,
            aes,
            mac,
            iv,
        })
    }

    /// The algorithm.
    pub fn algorithm(&self) -> ContentEncryption {
        self.algorithm
    }

    /// The backend in use.
    pub fn backend(&self) -> Backend {
        self.aes.backend()
    }

    /// The ciphertext length for `plaintext_len` bytes: PKCS#7 padded to
    /// the next whole block.
    pub const fn ciphertext_len(plaintext_len: usize) -> usize {
        AesCbcKey::padded_len(plaintext_len)
    }

    /// Encrypts `buf[..plaintext_len]` in place with a fresh IV (written to
    /// `iv`) and writes the tag to `tag[..tag_len]`; returns the ciphertext
    /// length (`buf` must hold [`CbcHmacAead::ciphertext_len`] bytes).
    pub fn seal_in_place(
        &mut self,
        aad: &[u8],
        buf: &mut [u8],
        plaintext_len: usize,
        iv: &mut [u8; 16],
        tag: &mut [u8],
    ) -> Result<usize, Error> {
        self.check_seal(buf, plaintext_len, tag)?;
        *iv = self.iv.next_iv();
        Ok(self.seal_with(iv, aad, buf, plaintext_len, tag))
    }

    /// Like [`CbcHmacAead::seal_in_place`] with a caller-chosen IV, for
    /// known-answer tests. The IV must be unpredictable in real use.
    pub fn seal_in_place_with_iv(
        &self,
        iv: &[u8],
        aad: &[u8],
        buf: &mut [u8],
        plaintext_len: usize,
        tag: &mut [u8],
    ) -> Result<usize, Error> {
        let iv = check_iv(iv)?;
        self.check_seal(buf, plaintext_len, tag)?;
        Ok(self.seal_with(&iv, aad, buf, plaintext_len, tag))
    }

    fn check_seal(&self, buf: &[u8], plaintext_len: usize, tag: &[u8]) -> Result<(), Error> {
        let t = self.algorithm.tag_len();
        if tag.len() < t {
            return Err(Error::BufferTooSmall {
                needed: t,
                actual: tag.len(),
            });
        }
        let needed = Self::ciphertext_len(plaintext_len);
        if buf.len() < needed {
            return Err(Error::BufferTooSmall {
                needed,
                actual: buf.len(),
            });
        }
        Ok(())
    }

    fn seal_with(
        &self,
        iv: &[u8; 16],
        aad: &[u8],
        buf: &mut [u8],
        plaintext_len: usize,
        tag: &mut [u8],
    ) -> usize {
        let n = Self::ciphertext_len(plaintext_len);
        let ciphertext = &mut buf[..n];
        crate::primitives::aes_cbc::pad_pkcs7(ciphertext, plaintext_len);
        // HMAC(A || IV || E || AL) on the stitched kernels: A's whole hash
        // blocks are hashed in place, its tail and the IV (under one block
        // and 16 bytes) are copied beside each other.
        let block = self.mac.algorithm().block_len();
        let (head, rest) = aad.split_at(aad.len() - aad.len() % block);
        let mut prefix = [0u8; 128 + 16];
        prefix[..rest.len()].copy_from_slice(rest);
        prefix[rest.len()..rest.len() + 16].copy_from_slice(iv);
        let al = (aad.len() as u64).wrapping_mul(8).to_be_bytes();
        let mut chain = *iv;
        let mut full = [0u8; crate::primitives::hmac::MAX_TAG_LEN];
        let job = EtmJob {
            head,
            prefix: &prefix[..rest.len() + 16],
            iv: &mut chain,
            authenticated: ciphertext,
            body_start: 0,
            suffix: &al,
            tag: &mut full,
            mac_plaintext: false,
        };
        backends::encrypt_then_mac(self.aes.raw(), &self.mac, job);
        let t = self.algorithm.tag_len();
        tag[..t].copy_from_slice(&full[..t]);
        n
    }

    /// Checks `tag` over `aad`, `iv` and `ciphertext` in constant time,
    /// then decrypts in place and removes the padding; returns the
    /// plaintext, a prefix of `ciphertext`.
    ///
    /// Wrong lengths of IV, tag or ciphertext are their own typed errors
    /// (public); a bad tag or a bad padding is [`Error::AuthenticationFailed`].
    pub fn open_in_place<'a>(
        &self,
        iv: &[u8],
        aad: &[u8],
        ciphertext: &'a mut [u8],
        tag: &[u8],
    ) -> Result<&'a mut [u8], Error> {
        let iv_block = check_iv(iv)?;
        let t = self.algorithm.tag_len();
        if tag.len() != t {
            return Err(Error::InvalidTagLength {
                expected: t,
                actual: tag.len(),
            });
        }
        let len = ciphertext.len();
        if len == 0 || !len.is_multiple_of(16) {
            return Err(Error::PacketNotBlockAligned { len });
        }
        let al = (aad.len() as u64).wrapping_mul(8).to_be_bytes();
        if !self.mac.truncated_matches(&[aad, iv, ciphertext, &al], tag) {
            return Err(Error::AuthenticationFailed);
        }
        let (good, pad) = self.aes.decrypt_padded_with(iv_block, ciphertext);
        // The one declassification.
        if good != usize::MAX {
            return Err(Error::AuthenticationFailed);
        }
        Ok(&mut ciphertext[..len - pad])
    }
}

impl fmt::Debug for CbcHmacAead {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CbcHmacAead")
            .field("algorithm", &self.algorithm)
            .field("backend", &self.backend())
            .finish_non_exhaustive()
    }
}
