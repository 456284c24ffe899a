//! Keyed AES-CBC: the key schedule is expanded once, at construction, and
//! reused by every call.

use core::fmt;

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

fn check_iv(iv: &[u8]) -> Result<[u8; 16], Error> {
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
