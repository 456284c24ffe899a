//! Explicit IVs for TLS 1.1+, DTLS and ESP.
//!
//! An explicit IV must be unpredictable to an attacker who chooses plaintext
//! (the BEAST attack exploited TLS 1.0's predictable chained IVs). Each
//! sealer owns a generator that draws a fresh AES-128 key from the
//! operating system once, at construction, and then outputs
//! `AES-128(generator_key, counter)` for a 128-bit counter: a block cipher
//! in counter mode under a secret random key, so no system call per record
//! and no repetition within a sealer's life. IVs are computed eight at a
//! time (independent blocks encrypt in parallel) and handed out in order. The generator key is separate
//! from the record key on purpose: encrypting a counter under the record key
//! would let an attacker who controls plaintext obtain the next IV from an
//! earlier ciphertext block. A process that forks after building a sealer
//! would repeat its IV sequence in the child: build sealers after forking.

use zeroize::Zeroize;

use crate::backends::{AesKey, Backend};
use crate::combination::Cipher;
use crate::error::Error;

/// IVs computed per batch: independent blocks encrypt in parallel, so a
/// batch costs little more than one block.
const BATCH: usize = 8;

pub(crate) struct IvGenerator {
    key: AesKey,
    counter: u128,
    /// Precomputed IVs not yet handed out: `batch[next..]`.
    batch: [[u8; 16]; BATCH],
    next: usize,
}

impl IvGenerator {
    /// Seeds a generator from the operating system's random source.
    pub(crate) fn from_os(backend: Backend) -> Result<Self, Error> {
        let mut seed = [0u8; 16];
        getrandom::fill(&mut seed).map_err(|_| Error::RandomSource)?;
        let key = AesKey::new(backend, Cipher::Aes128Cbc, &seed);
        seed.zeroize();
        Ok(IvGenerator {
            key,
            counter: 0,
            batch: [[0; 16]; BATCH],
            next: BATCH,
        })
    }

    /// The next IV.
    #[inline]
    pub(crate) fn next_iv(&mut self) -> [u8; 16] {
        if self.next == BATCH {
            self.refill();
        }
        let iv = self.batch[self.next];
        self.next += 1;
        iv
    }

    #[cold]
    fn refill(&mut self) {
        for block in &mut self.batch {
            *block = self.counter.to_le_bytes();
            self.counter = self.counter.wrapping_add(1);
        }
        self.key.encrypt_blocks(&mut self.batch);
        self.next = 0;
    }
}

impl Drop for IvGenerator {
    fn drop(&mut self) {
        // Unused IVs are as unpredictable as the key: wipe them with it.
        self.batch.zeroize();
    }
}
