//! AES-CBC through EVP, no padding, key expanded once.

use crate::error::{Error, Result};
use crate::ffi::{Cipher, CipherCtx, take_error};

/// AES-CBC (`aes-128-cbc`, `aes-192-cbc` or `aes-256-cbc` by key length)
/// with padding off: two EVP contexts, one per direction, keyed once; each
/// call only resets the IV (`EVP_CipherInit_ex` with a NULL key), so no call
/// re-expands the key or allocates.
pub struct EvpAesCbc {
    enc: CipherCtx,
    dec: CipherCtx,
}

impl EvpAesCbc {
    /// Expands `key` (16, 24 or 32 bytes) for both directions.
    pub fn new(key: &[u8]) -> Result<Self> {
        let cipher = Cipher::aes_cbc(key.len())?;
        Ok(EvpAesCbc {
            enc: CipherCtx::new(cipher, key, &[0; 16], true)?,
            dec: CipherCtx::new(cipher, key, &[0; 16], false)?,
        })
    }

    /// CBC-encrypts `data` (whole 16-byte blocks) in place with `iv`. The
    /// last ciphertext block is the IV that would continue the chain.
    pub fn encrypt(&mut self, iv: &[u8; 16], data: &mut [u8]) -> Result<()> {
        run(&mut self.enc, iv, data)
    }

    /// CBC-decrypts `data` (whole 16-byte blocks) in place with `iv`.
    pub fn decrypt(&mut self, iv: &[u8; 16], data: &mut [u8]) -> Result<()> {
        run(&mut self.dec, iv, data)
    }
}

fn run(ctx: &mut CipherCtx, iv: &[u8; 16], data: &mut [u8]) -> Result<()> {
    if !data.len().is_multiple_of(16) {
        return Err(Error::InvalidInput(
            "AES-CBC data must be whole 16-byte blocks",
        ));
    }
    ctx.reset_iv(iv)?;
    if ctx.update_in_place(data) {
        Ok(())
    } else {
        Err(take_error("EVP_CipherUpdate"))
    }
}

/// One-shot AES-CBC encryption of whole blocks in place (keys a fresh
/// context; use [`EvpAesCbc`] for repeated calls).
pub fn aes_cbc_encrypt(key: &[u8], iv: &[u8; 16], data: &mut [u8]) -> Result<()> {
    EvpAesCbc::new(key)?.encrypt(iv, data)
}

/// One-shot AES-CBC decryption of whole blocks in place.
pub fn aes_cbc_decrypt(key: &[u8], iv: &[u8; 16], data: &mut [u8]) -> Result<()> {
    EvpAesCbc::new(key)?.decrypt(iv, data)
}

impl std::fmt::Debug for EvpAesCbc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EvpAesCbc").finish_non_exhaustive()
    }
}
