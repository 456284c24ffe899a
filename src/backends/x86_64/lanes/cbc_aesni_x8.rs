//! AES-CBC encryption of up to eight independent lanes with AES-NI, one
//! lane per xmm register, each lane with its own round keys: the lane form
//! for CPUs without AVX-512.
//!
//! One lane's CBC encryption is a chain of dependent `aesenc`s, one every
//! AES latency (about 4 cycles); the AES units accept one or two a cycle.
//! Eight chains interleaved round by round keep them busy, where one
//! record alone leaves them idle most of the time. The round keys are read
//! from memory at each round (eight schedules do not fit in the sixteen
//! xmm registers): loads are cheaper than the rounds they feed.

use core::arch::x86_64::*;

use super::super::aes::Schedule;
use super::super::{AesNi, load, store};
use super::cbc_x16::LaneKeys;
use super::sha1_cbc_x8::Chained;
use super::words::RoundHook;

/// The most lanes one call runs.
pub(crate) const LANES: usize = 8;

/// CBC-encrypts `blocks` 16-byte blocks in place in each lane `i <
/// data.len()` (at most [`LANES`]; `data[i]` holds at least `16 * blocks`
/// bytes) with the round keys `keys[i]`, chaining from `ivs[i]`, which
/// becomes the lane's last ciphertext block.
///
/// # Panics
/// If there are more than [`LANES`] lanes, fewer keys or IVs than lanes, or
/// a lane shorter than `16 * blocks` bytes: the batch layer sizes them
/// (public lengths), so a panic here is a bug there.
pub(crate) fn cbc_encrypt_x8<const N: usize>(
    t: AesNi,
    keys: &[&Schedule<N>],
    ivs: &mut [[u8; 16]],
    data: &mut [&mut [u8]],
    blocks: usize,
) {
    let _ = t;
    let lanes = data.len();
    assert!(lanes <= LANES, "at most {LANES} lanes");
    assert!(
        keys.len() >= lanes && ivs.len() >= lanes,
        "keys and IVs per lane"
    );
    if lanes == 0 || blocks == 0 {
        return;
    }
    let mut views: [&mut [[u8; 16]]; LANES] = Default::default();
    for (v, lane) in views.iter_mut().zip(data.iter_mut()) {
        let (whole, _) = lane.as_chunks_mut::<16>();
        *v = &mut whole[..blocks];
    }
    macro_rules! dispatch {
        ($($l:literal)*) => {
            match lanes {
                $(
                    // SAFETY: `t` proves the CPU has AES-NI (and SSE2), the
                    // kernel's features.
                    $l => unsafe { encrypt::<N, $l>(keys, ivs, &mut views, blocks) },
                )*
                _ => unreachable!("1 to {LANES} lanes"),
            }
        };
    }
    dispatch!(1 2 3 4 5 6 7 8);
}

/// The first `L` lanes of `lanes` (each exactly `blocks` blocks long).
///
/// The blocks are reached through raw pointers and the round keys by
/// aligned loads: indexing eight slices costs a bounds check and a
/// reloaded (spilled) slice per lane and block, about 10% of the kernel's
/// time (AMD family 0x17 model 0x31, 16 KiB lanes: 16.6-16.7 ns per step
/// of eight blocks against 18.3-18.9).
// `l` indexes the keys, blocks and chains of a lane at once.
#[allow(clippy::needless_range_loop)]
#[target_feature(enable = "aes,sse2")]
fn encrypt<const N: usize, const L: usize>(
    keys: &[&Schedule<N>],
    ivs: &mut [[u8; 16]],
    lanes: &mut [&mut [[u8; 16]]; LANES],
    blocks: usize,
) {
    let keys: [&Schedule<N>; L] = core::array::from_fn(|l| keys[l]);
    let round = |l: usize, r: usize| {
        // SAFETY: a `Schedule` is 16-byte aligned and its keys are 16
        // bytes each, so every key is aligned; `r < N`.
        unsafe { _mm_load_si128(keys[l].0[r].as_ptr().cast()) }
    };
    let at: [*mut [u8; 16]; L] = core::array::from_fn(|l| {
        assert_eq!(lanes[l].len(), blocks, "lane {l}: blocks as sliced");
        lanes[l].as_mut_ptr()
    });
    let mut chain: [__m128i; L] = core::array::from_fn(|l| load(&ivs[l]));
    for b in 0..blocks {
        let mut x: [__m128i; L] = core::array::from_fn(|l| {
            // SAFETY: lane `l` is `blocks` blocks long (checked above) and
            // `b < blocks`; `loadu` has no alignment requirement.
            let p = unsafe { _mm_loadu_si128(at[l].add(b).cast()) };
            _mm_xor_si128(_mm_xor_si128(p, chain[l]), round(l, 0))
        });
        for r in 1..N - 1 {
            for l in 0..L {
                x[l] = _mm_aesenc_si128(x[l], round(l, r));
            }
        }
        for l in 0..L {
            chain[l] = _mm_aesenclast_si128(x[l], round(l, N - 1));
            // SAFETY: as for the load above; the lanes are distinct
            // mutable borrows, so nothing else reads or writes the block.
            unsafe { _mm_storeu_si128(at[l].add(b).cast(), chain[l]) };
        }
    }
    for l in 0..L {
        store(&mut ivs[l], chain[l]);
    }
}

/// CBC chains of `L` lanes with AES-NI, one xmm register each, run a
/// few rounds at a time between the rounds of a hash (`ni_cbc`'s loop on
/// CPUs without VAES): the AES-NI form of `sha1_cbc_x8`'s chains, with
/// the same step schedule. Lane `l` uses the round keys of lane `first +
/// l` of a [`LaneKeys`], read from memory where a round needs them.
///
/// One register per lane, holding the block in flight and, between
/// blocks, the last ciphertext block: the two-stream SHA-NI rounds beside
/// these chains can only address the sixteen xmm registers.
pub(super) struct Chains<'k, const N: usize, const L: usize> {
    keys: &'k LaneKeys<N>,
    first: usize,
    /// Each lane's 64 bytes for this iteration.
    p: [*mut u8; 8],
    x: [__m128i; L],
}

impl<'k, const N: usize, const L: usize> Chained<'k, N> for Chains<'k, N, L> {
    #[inline(always)]
    fn start(keys: &'k LaneKeys<N>, first: usize, ivs: &[[u8; 16]; 8]) -> Self {
        assert!(first + L <= 16, "lanes of sixteen");
        Chains {
            keys,
            first,
            p: [core::ptr::null_mut(); 8],
            x: core::array::from_fn(|l| load(&ivs[l])),
        }
    }

    /// Hides the keys' address from the optimizer, as `sha1_cbc_x8`'s
    /// chains do, so they are read where a round uses them.
    #[inline(always)]
    fn at(&mut self, cbc: &[*mut u8; 8], step: &[usize; 8], b: usize) {
        self.p = core::array::from_fn(|i| cbc[i].wrapping_add(step[i] * b));
        self.keys = core::hint::black_box(self.keys);
    }

    #[inline(always)]
    fn store(&self, ivs: &mut [[u8; 16]; 8]) {
        for (iv, x) in ivs.iter_mut().zip(self.x) {
            store(iv, x);
        }
    }

    #[inline(always)]
    fn step(&mut self, k: usize, i: usize) {
        for l in 0..L {
            let lane = self.first + l;
            let row = &self.keys.rk[lane / 4][i][16 * (lane % 4)..16 * (lane % 4) + 16];
            // SAFETY: the caller's features (AES-NI; SSE2 is part of
            // x86_64); the key is 16 readable bytes, 16-byte aligned
            // (`LaneKeys` rows are 64-byte aligned); `p[l]` points at 64
            // bytes of lane `l` for this iteration, readable and writable
            // (the kernel's contract), and `16 k < 64`.
            unsafe {
                let key = _mm_load_si128(row.as_ptr().cast());
                let at = self.p[l].add(16 * k);
                if i == 0 {
                    let m = _mm_loadu_si128(at.cast());
                    self.x[l] = _mm_xor_si128(_mm_xor_si128(m, self.x[l]), key);
                } else if i + 1 < N {
                    self.x[l] = _mm_aesenc_si128(self.x[l], key);
                } else {
                    self.x[l] = _mm_aesenclast_si128(self.x[l], key);
                    _mm_storeu_si128(at.cast(), self.x[l]);
                }
            }
        }
    }
}

impl<const N: usize, const L: usize> RoundHook for Chains<'_, N, L> {
    #[inline(always)]
    fn after_round(&mut self, t: usize, rounds: usize) {
        self.spread(t, rounds);
    }
}

#[cfg(test)]
mod tests {
    use super::super::super::aes::AesNiKey;
    use super::super::super::test_rng::SplitMix64;
    use super::*;
    use crate::combination::Cipher;

    /// Every lane count, AES-128 and AES-256, distinct keys, IVs and data
    /// per lane, several block counts: each lane equals the one-record
    /// AES-NI CBC encryption of the same bytes, and its IV out is its last
    /// ciphertext block.
    #[test]
    fn lanes_match_one_record_cbc() {
        let Some(t) = AesNi::detect() else {
            eprintln!("SKIPPED: cbc_aesni_x8 against one-record CBC (CPU lacks AES-NI)");
            return;
        };
        let mut rng = SplitMix64(0xcbc8_0001);
        for cipher in [Cipher::Aes128Cbc, Cipher::Aes256Cbc] {
            for lanes in 1..=LANES {
                for blocks in [1usize, 2, 7, 64] {
                    let keys: Vec<AesNiKey> = (0..lanes)
                        .map(|_| {
                            let mut k = [0u8; 32];
                            rng.fill(&mut k);
                            AesNiKey::new(t, cipher, &k[..cipher.key_len()])
                        })
                        .collect();
                    let mut ivs = vec![[0u8; 16]; lanes];
                    let mut data: Vec<Vec<u8>> = (0..lanes)
                        .map(|i| {
                            // Some lanes longer than the blocks run.
                            let mut v = vec![0u8; 16 * blocks + 16 * (i % 2)];
                            rng.fill(&mut v);
                            v
                        })
                        .collect();
                    for iv in &mut ivs {
                        rng.fill(iv);
                    }
                    let mut expect = data.clone();
                    let mut expect_ivs = ivs.clone();
                    for ((k, e), iv) in keys.iter().zip(&mut expect).zip(&mut expect_ivs) {
                        let (whole, _) = e.as_chunks_mut::<16>();
                        k.encrypt_cbc(iv, &mut whole[..blocks]);
                    }
                    let mut views: Vec<&mut [u8]> = data.iter_mut().map(|v| &mut v[..]).collect();
                    match cipher {
                        Cipher::Aes128Cbc => {
                            let ks: Vec<&Schedule<11>> = keys
                                .iter()
                                .map(|k| match k {
                                    AesNiKey::Aes128(s, _) => &s.enc,
                                    AesNiKey::Aes256(..) => unreachable!("AES-128 keys"),
                                })
                                .collect();
                            cbc_encrypt_x8(t, &ks, &mut ivs, &mut views, blocks);
                        }
                        Cipher::Aes256Cbc => {
                            let ks: Vec<&Schedule<15>> = keys
                                .iter()
                                .map(|k| match k {
                                    AesNiKey::Aes256(s, _) => &s.enc,
                                    AesNiKey::Aes128(..) => unreachable!("AES-256 keys"),
                                })
                                .collect();
                            cbc_encrypt_x8(t, &ks, &mut ivs, &mut views, blocks);
                        }
                    }
                    assert_eq!(data, expect, "{cipher:?}, {lanes} lanes, {blocks} blocks");
                    assert_eq!(
                        ivs, expect_ivs,
                        "{cipher:?}, {lanes} lanes, {blocks} blocks"
                    );
                }
            }
        }
    }
}
