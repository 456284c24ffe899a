//! Multi-lane kernels: independent messages side by side in the lanes of
//! vector registers (or in interleaved chains), for sealing and opening
//! many records at once.
//!
//! The kernels know lanes and block counts, never record formats: the
//! batch layer above turns records into lanes, schedules them and builds
//! each lane's first and final blocks.
//!
//! - `cbc_x16`: AES-CBC encryption of up to sixteen lanes with VAES, four
//!   lanes per zmm register, each lane with its own round keys.
//! - `cbc_aesni_x8`: the same for up to eight lanes with AES-NI, one lane
//!   per xmm register, for CPUs without AVX-512.
//! - `sha1_x16`, `sha256_x16`: SHA-1 and SHA-256 compression of sixteen
//!   lanes, one 32-bit word of every lane per zmm register.
//! - `sha_x8`: the same round code for eight lanes, one word of every
//!   lane per ymm register, for when eight or fewer lanes are busy.
//! - `sha1_avx2_x8`: SHA-1's round code for eight lanes with AVX2 alone,
//!   for CPUs without AVX-512 whose SHA-NI hashes slower than that.
//! - `sha1_cbc_x8`: both in one loop, up to eight lanes' SHA-1 blocks
//!   with the AES rounds that encrypt the bytes behind them between the
//!   hash rounds, for sealing a few MAC-then-encrypt records.
//! - `ni_cbc`: the same on SHA-NI: two lanes of SHA-1 or SHA-256 hashed
//!   as two streams, with the AES rounds of up to four CBC chains (the
//!   two hashed lanes and two already hashed) between the rounds, VAES
//!   or AES-NI ones.
//! - `secret_tail`: the secret-length finish of sixteen or eight SHA-1 or
//!   SHA-256 lanes, the masks applied to the transposed message words.
//! - `words`: the 32-bit lane operations that code is written over, at
//!   both widths.
//! - `sha_ni_x2`: SHA-1 and SHA-256 of two streams interleaved on SHA-NI,
//!   for when only a few lanes are busy, and for CPUs without AVX-512.
//! - `sha512_x8`: SHA-512 compression of eight lanes (64-bit words), for
//!   HMAC-SHA384.
//! - `sha512_avx2_x4`: the same for four lanes with AVX2 alone, for CPUs
//!   without AVX-512.
//! - `words64`: the 64-bit lane operations and SHA-512 rounds both are
//!   written over.

use super::{AesNi, Vaes512};

/// The CBC lane kernel a batch runs on.
#[derive(Clone, Copy)]
pub(crate) enum Cbc {
    /// Sixteen lanes of VAES (`cbc_x16`).
    Vaes(Vaes512),
    /// Eight lanes of AES-NI at a time (`cbc_aesni_x8`).
    AesNi(AesNi),
}

impl PartialEq for Cbc {
    fn eq(&self, other: &Cbc) -> bool {
        matches!(
            (self, other),
            (Cbc::Vaes(_), Cbc::Vaes(_)) | (Cbc::AesNi(_), Cbc::AesNi(_))
        )
    }
}

impl Eq for Cbc {}

pub(crate) mod cbc_aesni_x8;
pub(crate) mod cbc_x16;
pub(crate) mod ni_cbc;
pub(crate) mod secret_tail;
pub(crate) mod sha1_avx2_x8;
pub(crate) mod sha1_cbc_x8;
pub(crate) mod sha1_x16;
pub(crate) mod sha256_x16;
pub(crate) mod sha512_avx2_x4;
pub(crate) mod sha512_x8;
pub(crate) mod sha_ni_x2;
pub(crate) mod sha_x8;
pub(crate) mod words;
pub(crate) mod words64;
