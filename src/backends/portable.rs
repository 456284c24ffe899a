//! The portable backend: the RustCrypto `aes`, `cbc`, `sha1` and `sha2`
//! crates.
//!
//! Those crates pick their own implementations at run time (AES-NI, SHA-NI,
//! AVX2 where the CPU has them), independently of this crate's
//! `CBC_HMAC_CPUID_OVERRIDE`; they can be forced to software only at compile
//! time with `--cfg aes_backend="soft"`, `--cfg sha1_backend="soft"` and
//! `--cfg sha2_backend="soft"`.

use aes::cipher::{BlockCipherEncrypt, BlockModeDecrypt, BlockModeEncrypt, InnerIvInit, KeyInit};
use aes::{Aes128, Aes256};

use crate::combination::Cipher;
use crate::primitives::hash::{Compress, Sha1, Sha256, Sha384, Sha512};

/// The compression functions of the `sha1` and `sha2` crates.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct CrateCompress;

impl Compress<Sha1> for CrateCompress {
    #[inline]
    fn compress(&self, state: &mut [u32; 5], blocks: &[[u8; 64]]) {
        sha1::block_api::compress(state, blocks);
    }
}

impl Compress<Sha256> for CrateCompress {
    #[inline]
    fn compress(&self, state: &mut [u32; 8], blocks: &[[u8; 64]]) {
        sha2::block_api::compress256(state, blocks);
    }
}

impl Compress<Sha384> for CrateCompress {
    #[inline]
    fn compress(&self, state: &mut [u64; 8], blocks: &[[u8; 128]]) {
        sha2::block_api::compress512(state, blocks);
    }
}

impl Compress<Sha512> for CrateCompress {
    #[inline]
    fn compress(&self, state: &mut [u64; 8], blocks: &[[u8; 128]]) {
        sha2::block_api::compress512(state, blocks);
    }
}

/// An expanded AES key (encryption and decryption schedules), wiped on drop
/// by the `aes` crate.
#[derive(Clone)]
pub(crate) enum AesKey {
    Aes128(Aes128),
    Aes256(Aes256),
}

impl AesKey {
    /// Expands `key`; the caller has checked its length against `cipher`.
    pub(crate) fn new(cipher: Cipher, key: &[u8]) -> Self {
        match cipher {
            Cipher::Aes128Cbc => {
                AesKey::Aes128(Aes128::new(key.try_into().expect("checked length")))
            }
            Cipher::Aes256Cbc => {
                AesKey::Aes256(Aes256::new(key.try_into().expect("checked length")))
            }
        }
    }

    /// CBC-encrypts whole blocks in place; `iv` becomes the last ciphertext
    /// block, ready to chain.
    pub(crate) fn encrypt_cbc(&self, iv: &mut [u8; 16], blocks: &mut [[u8; 16]]) {
        let blocks = as_arrays(blocks);
        match self {
            AesKey::Aes128(k) => {
                cbc::Encryptor::<&Aes128>::inner_iv_init(k, &(*iv).into()).encrypt_blocks(blocks)
            }
            AesKey::Aes256(k) => {
                cbc::Encryptor::<&Aes256>::inner_iv_init(k, &(*iv).into()).encrypt_blocks(blocks)
            }
        }
        if let Some(last) = blocks.last() {
            iv.copy_from_slice(last);
        }
    }

    /// CBC-decrypts whole blocks in place; `iv` becomes the last ciphertext
    /// block, ready to chain.
    pub(crate) fn decrypt_cbc(&self, iv: &mut [u8; 16], blocks: &mut [[u8; 16]]) {
        let next_iv = blocks.last().copied();
        let blocks = as_arrays(blocks);
        match self {
            AesKey::Aes128(k) => {
                cbc::Decryptor::<&Aes128>::inner_iv_init(k, &(*iv).into()).decrypt_blocks(blocks)
            }
            AesKey::Aes256(k) => {
                cbc::Decryptor::<&Aes256>::inner_iv_init(k, &(*iv).into()).decrypt_blocks(blocks)
            }
        }
        if let Some(next) = next_iv {
            *iv = next;
        }
    }

    /// Encrypts one block (the explicit-IV generator's use).
    pub(crate) fn encrypt_block(&self, block: &mut [u8; 16]) {
        let b = aes::Block::cast_from_core_mut(block);
        match self {
            AesKey::Aes128(k) => k.encrypt_block(b),
            AesKey::Aes256(k) => k.encrypt_block(b),
        }
    }
}

impl AesKey {
    /// Encrypts independent blocks (ECB), several at a time.
    pub(crate) fn encrypt_blocks(&self, blocks: &mut [[u8; 16]]) {
        let b = as_arrays(blocks);
        match self {
            AesKey::Aes128(k) => k.encrypt_blocks(b),
            AesKey::Aes256(k) => k.encrypt_blocks(b),
        }
    }
}

fn as_arrays(blocks: &mut [[u8; 16]]) -> &mut [aes::Block] {
    aes::Block::cast_slice_from_core_mut(blocks)
}
