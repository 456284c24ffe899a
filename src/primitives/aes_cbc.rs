//! Keyed AES-CBC: the key schedule is expanded once, at construction, and
//! reused by every call.

use core::fmt;

use super::ct_padding::check_pkcs7;
use crate::backends::{AesKey, Backend};
use crate::combination::Cipher;
use crate::error::Error;

/// An AES key for CBC mode, expanded once (encryption and decryption
/// schedules) and wiped on drop.
///
/// ```
/// use cbc_hmac::{AesCbcKey, Cipher};
///
/// let key = AesCbcKey::new(Cipher::Aes128Cbc, &[0x42; 16])?;
/// let iv = [7u8; 16];
/// let mut data = *b"sixteen byte msgand another one!";
/// key.encrypt(&iv, &mut data)?;
/// key.decrypt(&iv, &mut data)?;
/// assert_eq!(&data, b"sixteen byte msgand another one!");
/// # Ok::<(), cbc_hmac::Error>(())
/// ```
#[derive(Clone)]
pub struct AesCbcKey {
    key: AesKey,
    cipher: Cipher,
    backend: Backend,
}

impl AesCbcKey {
    /// Expands `key` on the best available backend. The key must be 16 bytes
    /// for AES-128 and 32 for AES-256.
    pub fn new(cipher: Cipher, key: &[u8]) -> Result<Self, Error> {
        Self::with_backend(cipher, key, Backend::detect())
    }

    /// Like [`AesCbcKey::new`] on a chosen backend.
    pub fn with_backend(cipher: Cipher, key: &[u8], backend: Backend) -> Result<Self, Error> {
        let backend = backend.check()?;
        check_key(cipher, key)?;
        Ok(AesCbcKey {
            key: AesKey::new(backend, cipher, key),
            cipher,
            backend,
        })
    }

    /// The cipher.
    pub fn cipher(&self) -> Cipher {
        self.cipher
    }

    /// The backend this key runs on.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    pub(crate) fn raw(&self) -> &AesKey {
        &self.key
    }

    /// Encrypts `data` (whole 16-byte blocks, no padding) in place with the
    /// 16-byte `iv`; returns the last ciphertext block, the IV that
    /// continues the chain.
    pub fn encrypt(&self, iv: &[u8], data: &mut [u8]) -> Result<[u8; 16], Error> {
        let mut chain = check_iv(iv)?;
        let blocks = blocks_mut(data)?;
        self.key.encrypt_cbc(&mut chain, blocks);
        Ok(chain)
    }

    /// Decrypts `data` (whole 16-byte blocks) in place with the 16-byte
    /// `iv`; returns the last ciphertext block, the IV that continues the
    /// chain.
    pub fn decrypt(&self, iv: &[u8], data: &mut [u8]) -> Result<[u8; 16], Error> {
        let mut chain = check_iv(iv)?;
        let blocks = blocks_mut(data)?;
        self.key.decrypt_cbc(&mut chain, blocks);
        Ok(chain)
    }
}

/// Fills `buf[len..]` (`buf` whole blocks, `len` checked) with PKCS#7
/// padding.
pub(crate) fn pad_pkcs7(buf: &mut [u8], len: usize) {
    let value = (buf.len() - len) as u8;
    buf[len..].fill(value);
}

impl AesCbcKey {
    /// The length of `len` bytes after PKCS#7 padding: the next multiple of
    /// 16 above `len` (a whole block of padding when `len` is aligned).
    pub const fn padded_len(len: usize) -> usize {
        (len / 16 + 1) * 16
    }

    /// Pads `buf[..len]` with PKCS#7 (RFC 5652 section 6.3) and encrypts it
    /// in place; returns the ciphertext length,
    /// [`AesCbcKey::padded_len`]`(len)` (`buf` must be at least that long).
    ///
    /// ```
    /// use cbc_hmac::{AesCbcKey, Cipher, Error};
    ///
    /// let key = AesCbcKey::new(Cipher::Aes128Cbc, &[0x42; 16])?;
    /// let iv = [7u8; 16];
    /// let mut buf = [0u8; 32];
    /// buf[..5].copy_from_slice(b"hello");
    /// let n = key.encrypt_padded(&iv, &mut buf, 5)?;
    /// assert_eq!(n, 16);
    /// assert_eq!(key.decrypt_padded(&iv, &mut buf[..n])?, b"hello");
    /// buf[15] ^= 1; // the last ciphertext byte: the padding now fails
    /// assert_eq!(key.decrypt_padded(&iv, &mut buf[..n]), Err(Error::BadPadding));
    /// # Ok::<(), cbc_hmac::Error>(())
    /// ```
    pub fn encrypt_padded(&self, iv: &[u8], buf: &mut [u8], len: usize) -> Result<usize, Error> {
        let n = Self::padded_len(len);
        if buf.len() < n {
            return Err(Error::BufferTooSmall {
                needed: n,
                actual: buf.len(),
            });
        }
        let iv = check_iv(iv)?;
        self.encrypt_padded_with(iv, &mut buf[..n], len);
        Ok(n)
    }

    /// Pads `buf[len..]` (whole blocks; lengths checked) and encrypts.
    pub(crate) fn encrypt_padded_with(&self, mut iv: [u8; 16], buf: &mut [u8], len: usize) {
        pad_pkcs7(buf, len);
        let (blocks, _) = buf.as_chunks_mut::<16>();
        self.key.encrypt_cbc(&mut iv, blocks);
    }

    /// Decrypts `data` (whole blocks, at least one) in place and removes its
    /// PKCS#7 padding; returns the plaintext, a prefix of `data`.
    ///
    /// The padding is checked in constant time and every bad padding is
    /// the one error [`Error::BadPadding`]. Unauthenticated CBC with a
    /// padding check is a padding oracle (Vaudenay 2002) whenever the
    /// caller lets an attacker see the outcome: check a MAC over the
    /// ciphertext first (encrypt-then-MAC), as the ESP and JWE layers do.
    pub fn decrypt_padded<'a>(&self, iv: &[u8], data: &'a mut [u8]) -> Result<&'a mut [u8], Error> {
        let iv = check_iv(iv)?;
        if data.is_empty() {
            return Err(Error::NotBlockAligned { len: 0 });
        }
        blocks_mut(data)?;
        let (good, pad) = self.decrypt_padded_with(iv, data);
        // The one declassification.
        if good != usize::MAX {
            return Err(Error::BadPadding);
        }
        let n = data.len() - pad;
        Ok(&mut data[..n])
    }

    /// Decrypts `data` (whole blocks, at least one; checked) and checks its
    /// padding: `(good mask, padding length)`.
    pub(crate) fn decrypt_padded_with(&self, mut iv: [u8; 16], data: &mut [u8]) -> (usize, usize) {
        let (blocks, _) = data.as_chunks_mut::<16>();
        self.key.decrypt_cbc(&mut iv, blocks);
        let last = blocks.last().expect("at least one block");
        check_pkcs7(last)
    }
}

impl fmt::Debug for AesCbcKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AesCbcKey")
            .field("cipher", &self.cipher)
            .field("backend", &self.backend)
            .finish_non_exhaustive()
    }
}

pub(crate) fn check_key(cipher: Cipher, key: &[u8]) -> Result<(), Error> {
    if key.len() != cipher.key_len() {
        return Err(Error::InvalidKeyLength {
            expected: cipher.key_len(),
            actual: key.len(),
        });
    }
    Ok(())
}

pub(crate) fn check_iv(iv: &[u8]) -> Result<[u8; 16], Error> {
    iv.try_into().map_err(|_| Error::InvalidIvLength {
        expected: 16,
        actual: iv.len(),
    })
}

fn blocks_mut(data: &mut [u8]) -> Result<&mut [[u8; 16]], Error> {
    let len = data.len();
    match data.as_chunks_mut::<16>() {
        (blocks, []) => Ok(blocks),
        _ => Err(Error::NotBlockAligned { len }),
    }
}
