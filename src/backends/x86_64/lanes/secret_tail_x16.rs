//! The secret-length finish of sixteen SHA-1 or SHA-256 messages at once:
//! the last blocks of sixteen MAC-then-encrypt opens' inner hashes.
//!
//! Each lane's message ends at a secret length. As in the single-stream
//! finish (`primitives::ct_digest`), every block the message could end in
//! is compressed, built with masks from public positions: the bytes past
//! the end zeroed, `0x80` after the last byte, the bit length in the last
//! eight bytes of the real last block; the state after that block is kept
//! by a mask. Here the masks are applied to the transposed, byte-swapped
//! message words (vector `j` holds word `j` of every lane), a few vector
//! instructions per word for all sixteen lanes, and the kept states stay
//! transposed until the end: the block loop has no per-lane work at all.
//!
//! What a lane's masks depend on is secret (the end, the last block, the
//! length), and is only ever an operand: the instructions and the memory
//! touched depend on the block count alone.

use core::arch::x86_64::*;

use super::super::Vaes512;
use super::sha1_x16::{by_index, by16, lane_blocks, load_words, transpose_in, transpose_out};
use super::{sha1_x16, sha256_x16};

/// Where each lane's message ends, in its staged stream of blocks: the
/// masks' operands. All secret.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Ends {
    /// Offset of the `0x80` byte from the start of the lane's first block.
    pub(crate) end: [u32; 16],
    /// Index of the lane's real last block.
    pub(crate) last_block: [u32; 16],
    /// The message length in bits (the whole message, key block included),
    /// for the last block's length field.
    pub(crate) bits: [u64; 16],
}

/// SHA-1: for each lane, compresses its `blocks` blocks from `data[i]`
/// (unmasked: the stream `buffer || data`, zeros after), each masked by
/// [`Ends`], starting from `states[i]`, and leaves in `states[i]` the
/// state after the lane's real last block.
pub(crate) fn sha1(
    t: Vaes512,
    states: &mut [[u32; 5]; 16],
    data: &[&[u8]; 16],
    blocks: usize,
    ends: &Ends,
) {
    let _ = t;
    let lanes = lane_blocks(data, blocks);
    // SAFETY: `t` proves the CPU has AVX-512 F/BW/VL, all the kernel
    // enables.
    unsafe { sha1_kernel(states, &lanes, ends) }
}

/// [`sha1`] for SHA-256.
pub(crate) fn sha256(
    t: Vaes512,
    states: &mut [[u32; 8]; 16],
    data: &[&[u8]; 16],
    blocks: usize,
    ends: &Ends,
) {
    let _ = t;
    let lanes = lane_blocks(data, blocks);
    // SAFETY: as in `sha1`.
    unsafe { sha256_kernel(states, &lanes, ends) }
}

#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
fn sha1_kernel(states: &mut [[u32; 5]; 16], lanes: &[&[[u8; 64]]; 16], ends: &Ends) {
    let masks = Masks::new(ends);
    let mut s = transpose_in(states);
    let mut kept = s;
    #[allow(clippy::needless_range_loop)]
    for b in 0..lanes[0].len() {
        let w = masks.apply(load_words(by16!(|i| &lanes[i][b])), b);
        s = sha1_x16::rounds(s, w, &mut ());
        masks.keep_last(&mut kept, &s, b);
    }
    transpose_out(kept, states);
}

#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
fn sha256_kernel(states: &mut [[u32; 8]; 16], lanes: &[&[[u8; 64]]; 16], ends: &Ends) {
    let masks = Masks::new(ends);
    let mut s = transpose_in(states);
    let mut kept = s;
    #[allow(clippy::needless_range_loop)]
    for b in 0..lanes[0].len() {
        let w = masks.apply(load_words(by16!(|i| &lanes[i][b])), b);
        s = sha256_x16::rounds(s, w, &mut ());
        masks.keep_last(&mut kept, &s, b);
    }
    transpose_out(kept, states);
}

/// Sixteen words as a vector, element `i` from `x[i]`.
#[inline(always)]
fn load(x: &[u32; 16]) -> __m512i {
    // SAFETY: `x` is 64 readable bytes and `loadu` has no alignment
    // requirement; AVX-512F (the kernels').
    unsafe { _mm512_loadu_si512(x.as_ptr().cast()) }
}

/// [`Ends`] in vectors, lane `i` in element `i`.
struct Masks {
    end: __m512i,
    last_block: __m512i,
    bits_hi: __m512i,
    bits_lo: __m512i,
}

impl Masks {
    #[inline(always)]
    fn new(ends: &Ends) -> Self {
        let hi: [u32; 16] = core::array::from_fn(|i| (ends.bits[i] >> 32) as u32);
        let lo: [u32; 16] = core::array::from_fn(|i| ends.bits[i] as u32);
        Masks {
            end: load(&ends.end),
            last_block: load(&ends.last_block),
            bits_hi: load(&hi),
            bits_lo: load(&lo),
        }
    }

    /// Block `b`'s big-endian words `w` of every lane, masked: byte `k` of
    /// word `j` (the `k`-th most significant) is kept if it lies before
    /// the lane's end, is `0x80` at the end and zero after; the real last
    /// block gets the bit length in words 14 and 15.
    #[inline(always)]
    fn apply(&self, mut w: [__m512i; 16], b: usize) -> [__m512i; 16] {
        // SAFETY: AVX-512 F/BW (the kernels').
        unsafe {
            let ones = _mm512_set1_epi32(-1);
            let top = _mm512_set1_epi32(0x80 << 24);
            // Bytes of the lane's message before this block's word 0, as
            // signed: negative once the end lies before this block.
            let from = _mm512_sub_epi32(self.end, _mm512_set1_epi32((64 * b) as i32));
            for (j, word) in w.iter_mut().enumerate() {
                // `d`: message bytes in this word, below 0 or above 3 when
                // none or all.
                let d = _mm512_sub_epi32(from, _mm512_set1_epi32(4 * j as i32));
                let kept = _mm512_min_epi32(
                    _mm512_max_epi32(d, _mm512_setzero_si512()),
                    _mm512_set1_epi32(4),
                );
                // Shift counts of 32 and more give zero: all bytes kept
                // for `kept == 4`; no 0x80 for `d` outside 0..=3 (a
                // negative `d` is a huge unsigned count).
                let keep = _mm512_andnot_si512(
                    _mm512_srlv_epi32(ones, _mm512_slli_epi32::<3>(kept)),
                    ones,
                );
                let marker = _mm512_srlv_epi32(top, _mm512_slli_epi32::<3>(d));
                *word = _mm512_ternarylogic_epi32::<0xEA>(*word, keep, marker);
            }
            let last = _mm512_cmpeq_epi32_mask(self.last_block, _mm512_set1_epi32(b as i32));
            w[14] = _mm512_mask_or_epi32(w[14], last, w[14], self.bits_hi);
            w[15] = _mm512_mask_or_epi32(w[15], last, w[15], self.bits_lo);
            w
        }
    }

    /// Takes the state after block `b` into `kept` in the lanes whose real
    /// last block it is (a blend under a mask, not a branch).
    #[inline(always)]
    fn keep_last<const N: usize>(&self, kept: &mut [__m512i; N], s: &[__m512i; N], b: usize) {
        // SAFETY: AVX-512F (the kernels').
        unsafe {
            let last = _mm512_cmpeq_epi32_mask(self.last_block, _mm512_set1_epi32(b as i32));
            for (k, &x) in kept.iter_mut().zip(s) {
                *k = _mm512_mask_mov_epi32(*k, last, x);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::super::test_rng::SplitMix64;
    use super::super::sha1_x16::tests::token;
    use super::*;
    use crate::backends::portable::CrateCompress;
    use crate::primitives::ct_digest::{SecretLenPlan, finish_with_secret_len};
    use crate::primitives::hash::{Compress, Engine, HashFunction, Sha1, Sha256};

    /// Sixteen lanes of random engines (0-63 bytes buffered), public data
    /// lengths up to 256 and secret lengths at both ends and between,
    /// through the kernel, against the single-stream finish.
    fn check<H: HashFunction<State = [u32; N]>, const N: usize>(
        rng: &mut SplitMix64,
        kernel: impl Fn(&mut [[u32; N]; 16], &[&[u8]; 16], usize, &Ends),
    ) where
        CrateCompress: Compress<H>,
    {
        for round in 0..24 {
            let mut engines = Vec::new();
            let mut datas = Vec::new();
            let mut lens = Vec::new();
            for i in 0..16 {
                let mut e = Engine::<H>::new();
                let mut head = vec![0u8; 64 * (rng.next() as usize % 3) + rng.next() as usize % 64];
                rng.fill(&mut head);
                e.update(&CrateCompress, &head);
                let mut data = vec![0u8; rng.next() as usize % 257];
                rng.fill(&mut data);
                let len = match (round + i) % 4 {
                    0 => 0,
                    1 => data.len(),
                    _ => rng.next() as usize % (data.len() + 1),
                };
                engines.push(e);
                datas.push(data);
                lens.push(len);
            }
            let plans: Vec<SecretLenPlan<H>> = (0..16)
                .map(|i| SecretLenPlan::new(&engines[i], &datas[i], lens[i]))
                .collect();
            let blocks = plans.iter().map(|p| p.max_blocks).max().unwrap_or(0);
            let mut stage = vec![vec![0u8; 64 * blocks]; 16];
            let mut ends = Ends::default();
            let mut states = [[0u32; N]; 16];
            for i in 0..16 {
                // Junk past the stream: the kernel must mask it away.
                rng.fill(&mut stage[i]);
                SecretLenPlan::stage(&engines[i], &datas[i], &mut stage[i]);
                ends.end[i] = plans[i].end as u32;
                ends.last_block[i] = plans[i].last_block as u32;
                ends.bits[i] = plans[i].bits;
                states[i] = engines[i].state;
            }
            let data: [&[u8]; 16] = core::array::from_fn(|i| stage[i].as_slice());
            kernel(&mut states, &data, blocks, &ends);
            for i in 0..16 {
                let want = finish_with_secret_len(&CrateCompress, &engines[i], &datas[i], lens[i]);
                assert_eq!(
                    states[i],
                    want,
                    "round {round} lane {i}: {} buffered, {} of {} bytes",
                    engines[i].buffered,
                    lens[i],
                    datas[i].len()
                );
            }
        }
    }

    #[test]
    fn sha1_matches_single_stream_finish() {
        let Some(t) = token("secret_tail_x16 SHA-1 against the single-stream finish") else {
            return;
        };
        let mut rng = SplitMix64(0x5ec4_e7a1_0001);
        check::<Sha1, 5>(&mut rng, |s, d, n, e| sha1(t, s, d, n, e));
    }

    #[test]
    fn sha256_matches_single_stream_finish() {
        let Some(t) = token("secret_tail_x16 SHA-256 against the single-stream finish") else {
            return;
        };
        let mut rng = SplitMix64(0x5ec4_e7a1_0256);
        check::<Sha256, 8>(&mut rng, |s, d, n, e| sha256(t, s, d, n, e));
    }
}
