//! The secret-length finish of sixteen (zmm) or eight (ymm) SHA-1 or
//! SHA-256 messages at once: the last blocks of as many MAC-then-encrypt
//! opens' inner hashes.
//!
//! Each lane's message ends at a secret length. As in the single-stream
//! finish (`primitives::ct_digest`), every block the message could end in
//! is compressed, built with masks from public positions: the bytes past
//! the end zeroed, `0x80` after the last byte, the bit length in the last
//! eight bytes of the real last block; the state after that block is kept
//! by a mask. Here the masks are applied to the transposed, byte-swapped
//! message words (vector `j` holds word `j` of every lane), a few vector
//! instructions per word for all lanes, and the kept states stay
//! transposed until the end: the block loop has no per-lane work at all.
//!
//! What a lane's masks depend on is secret (the end, the last block, the
//! length), and is only ever an operand: the instructions and the memory
//! touched depend on the block count alone.

use core::arch::x86_64::*;

use super::super::Vaes512;
use super::sha_x8::{self, by8};
use super::sha1_x16::{self, by_index, by16, lane_blocks};
use super::sha256_x16;
use super::words::Words;

/// Where each lane's message ends, in its staged stream of blocks: the
/// masks' operands. All secret. The eight-lane kernels read the first
/// eight lanes.
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

/// The kernels, each a function like [`sha1_x16`]: for each lane,
/// compresses its `blocks` blocks from `data[i]` (unmasked: the stream
/// `buffer || data`, zeros after), each masked by [`Ends`], starting from
/// `states[i]`, and keeps the state after the lane's real last block: the
/// inner hash of an HMAC. Then the outer block, that digest and its
/// padding, built from the kept words where they are, without leaving the
/// registers, is compressed from `outer[i]`, and `states[i]` ends as the
/// lane's outer hash state (its digest is the MAC).
macro_rules! tail_kernels {
    ($($name:ident, $kernel:ident, $lanes:literal, $words:literal, $v:ty, $by:ident,
       $rounds:path, $module:ident;)*) => {$(
        pub(crate) fn $name(
            t: Vaes512,
            states: &mut [[u32; $words]; $lanes],
            outer: &[[u32; $words]; $lanes],
            data: &[&[u8]; $lanes],
            blocks: usize,
            ends: &Ends,
        ) {
            let _ = t;
            let lanes = lane_blocks(data, blocks);
            // SAFETY: `t` proves the CPU has AVX-512 F/BW/VL, all the
            // kernel enables.
            unsafe { $kernel(states, outer, &lanes, ends) }
        }

        #[target_feature(enable = "avx512f,avx512bw,avx512vl")]
        fn $kernel(
            states: &mut [[u32; $words]; $lanes],
            outer: &[[u32; $words]; $lanes],
            lanes: &[&[[u8; 64]]; $lanes],
            ends: &Ends,
        ) {
            let masks = Masks::<$v>::new(ends);
            let mut s = $module::transpose_in(states);
            let mut kept = s;
            #[allow(clippy::needless_range_loop)]
            for b in 0..lanes[0].len() {
                let w = masks.apply($module::load_words($by!(|i| &lanes[i][b])), b);
                s = $rounds(s, w, &mut ());
                masks.keep_last(&mut kept, &s, b);
            }
            let s = $rounds($module::transpose_in(outer), outer_block(kept), &mut ());
            $module::transpose_out(s, states);
        }
    )*};
}

tail_kernels! {
    sha1_x16, sha1_x16_kernel, 16, 5, __m512i, by16, sha1_x16::rounds, sha1_x16;
    sha256_x16, sha256_x16_kernel, 16, 8, __m512i, by16, sha256_x16::rounds, sha1_x16;
    sha1_x8, sha1_x8_kernel, 8, 5, __m256i, by8, sha1_x16::rounds, sha_x8;
    sha256_x8, sha256_x8_kernel, 8, 8, __m256i, by8, sha256_x16::rounds, sha_x8;
}

/// The outer block of an HMAC whose inner digest is `digest` (word `j`
/// of every lane in vector `j`, as the state holds it): the digest, the
/// `0x80` byte, zeros and the bit length of key block and digest.
#[inline(always)]
fn outer_block<V: Words, const N: usize>(digest: [V; N]) -> [V; 16] {
    let mut w = [V::splat(0); 16];
    w[..N].copy_from_slice(&digest);
    w[N] = V::splat(0x80 << 24);
    w[15] = V::splat((8 * (64 + 4 * N)) as u32);
    w
}

/// What the masks need beyond [`Words`], at both widths. Like those, the
/// methods are reached only from the kernels, inlined into their AVX-512
/// F/BW/VL context.
trait MaskWords: Words {
    /// A lane mask.
    type Mask: Copy;
    /// The first lanes' words of `x`.
    fn lanes(x: &[u32; 16]) -> Self;
    /// Lane-wise wrapping subtraction.
    fn sub(self, other: Self) -> Self;
    /// Each lane, as a signed word, clamped to `0..`.
    fn max0(self) -> Self;
    /// Each lane shifted left by 3 (bytes to bits).
    fn bits(self) -> Self;
    /// Each lane shifted right by the count in `counts`' lane (32 or more
    /// gives 0).
    fn shr_by(self, counts: Self) -> Self;
    /// The lanes equal to `x`.
    fn lanes_eq(self, x: u32) -> Self::Mask;
    /// `self | x` in the lanes of `m`, `self` in the others.
    fn or_where(self, m: Self::Mask, x: Self) -> Self;
    /// `x` in the lanes of `m`, `self` in the others.
    fn take_where(self, m: Self::Mask, x: Self) -> Self;
}

impl MaskWords for __m512i {
    type Mask = __mmask16;
    #[inline(always)]
    fn lanes(x: &[u32; 16]) -> Self {
        // SAFETY: `x` is 64 readable bytes and `loadu` has no alignment
        // requirement; AVX-512F as said above.
        unsafe { _mm512_loadu_si512(x.as_ptr().cast()) }
    }
    #[inline(always)]
    fn sub(self, other: Self) -> Self {
        // SAFETY: AVX-512F as said above.
        unsafe { _mm512_sub_epi32(self, other) }
    }
    #[inline(always)]
    fn max0(self) -> Self {
        // SAFETY: AVX-512F as said above.
        unsafe { _mm512_max_epi32(self, _mm512_setzero_si512()) }
    }
    #[inline(always)]
    fn bits(self) -> Self {
        // SAFETY: AVX-512F as said above.
        unsafe { _mm512_slli_epi32::<3>(self) }
    }
    #[inline(always)]
    fn shr_by(self, counts: Self) -> Self {
        // SAFETY: AVX-512F as said above.
        unsafe { _mm512_srlv_epi32(self, counts) }
    }
    #[inline(always)]
    fn lanes_eq(self, x: u32) -> Self::Mask {
        // SAFETY: AVX-512F as said above.
        unsafe { _mm512_cmpeq_epi32_mask(self, _mm512_set1_epi32(x as i32)) }
    }
    #[inline(always)]
    fn or_where(self, m: Self::Mask, x: Self) -> Self {
        // SAFETY: AVX-512F as said above.
        unsafe { _mm512_mask_or_epi32(self, m, self, x) }
    }
    #[inline(always)]
    fn take_where(self, m: Self::Mask, x: Self) -> Self {
        // SAFETY: AVX-512F as said above.
        unsafe { _mm512_mask_mov_epi32(self, m, x) }
    }
}

impl MaskWords for __m256i {
    type Mask = __mmask8;
    #[inline(always)]
    fn lanes(x: &[u32; 16]) -> Self {
        // SAFETY: `x` holds 32 readable bytes at its start and `loadu` has
        // no alignment requirement; AVX as said above.
        unsafe { _mm256_loadu_si256(x.as_ptr().cast()) }
    }
    #[inline(always)]
    fn sub(self, other: Self) -> Self {
        // SAFETY: AVX2 as said above.
        unsafe { _mm256_sub_epi32(self, other) }
    }
    #[inline(always)]
    fn max0(self) -> Self {
        // SAFETY: AVX2 as said above.
        unsafe { _mm256_max_epi32(self, _mm256_setzero_si256()) }
    }
    #[inline(always)]
    fn bits(self) -> Self {
        // SAFETY: AVX2 as said above.
        unsafe { _mm256_slli_epi32::<3>(self) }
    }
    #[inline(always)]
    fn shr_by(self, counts: Self) -> Self {
        // SAFETY: AVX2 as said above.
        unsafe { _mm256_srlv_epi32(self, counts) }
    }
    #[inline(always)]
    fn lanes_eq(self, x: u32) -> Self::Mask {
        // SAFETY: AVX-512F/VL as said above.
        unsafe { _mm256_cmpeq_epi32_mask(self, _mm256_set1_epi32(x as i32)) }
    }
    #[inline(always)]
    fn or_where(self, m: Self::Mask, x: Self) -> Self {
        // SAFETY: AVX-512F/VL as said above.
        unsafe { _mm256_mask_or_epi32(self, m, self, x) }
    }
    #[inline(always)]
    fn take_where(self, m: Self::Mask, x: Self) -> Self {
        // SAFETY: AVX-512F/VL as said above.
        unsafe { _mm256_mask_mov_epi32(self, m, x) }
    }
}

/// [`Ends`] in vectors, lane `i` in element `i`; the end in bits.
struct Masks<V> {
    end_bits: V,
    last_block: V,
    bits_hi: V,
    bits_lo: V,
}

impl<V: MaskWords> Masks<V> {
    #[inline(always)]
    fn new(ends: &Ends) -> Self {
        let hi: [u32; 16] = core::array::from_fn(|i| (ends.bits[i] >> 32) as u32);
        let lo: [u32; 16] = core::array::from_fn(|i| ends.bits[i] as u32);
        Masks {
            end_bits: V::lanes(&ends.end).bits(),
            last_block: V::lanes(&ends.last_block),
            bits_hi: V::lanes(&hi),
            bits_lo: V::lanes(&lo),
        }
    }

    /// Block `b`'s big-endian words `w` of every lane, masked: byte `k` of
    /// word `j` (the `k`-th most significant) is kept if it lies before
    /// the lane's end, is `0x80` at the end and zero after; the real last
    /// block gets the bit length in words 14 and 15.
    #[inline(always)]
    fn apply(&self, mut w: [V; 16], b: usize) -> [V; 16] {
        let ones = V::splat(u32::MAX);
        let top = V::splat(0x80 << 24);
        // Bits of the lane's message before this block's word 0, as
        // signed: negative once the end lies before this block.
        let from = self.end_bits.sub(V::splat((512 * b) as u32));
        for (j, word) in w.iter_mut().enumerate() {
            // `e`: message bits in this word, below 0 or 32 and above when
            // none or all.
            let e = from.sub(V::splat(32 * j as u32));
            // Shift counts of 32 and more give zero: `gone` (the bytes
            // past the end) is empty for 32 bits kept and more; no 0x80
            // for `e` outside 0..32 (a negative `e` is a huge unsigned
            // count).
            let gone = ones.shr_by(e.max0());
            let marker = top.shr_by(e);
            // `word & !gone | marker`.
            *word = word.ternary::<0xBA>(gone, marker);
        }
        let last = self.last_block.lanes_eq(b as u32);
        w[14] = w[14].or_where(last, self.bits_hi);
        w[15] = w[15].or_where(last, self.bits_lo);
        w
    }

    /// Takes the state after block `b` into `kept` in the lanes whose real
    /// last block it is (a blend under a mask, not a branch).
    #[inline(always)]
    fn keep_last<const N: usize>(&self, kept: &mut [V; N], s: &[V; N], b: usize) {
        let last = self.last_block.lanes_eq(b as u32);
        for (k, &x) in kept.iter_mut().zip(s) {
            *k = k.take_where(last, x);
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

    /// The outer hash of an HMAC from state `outer` over `inner`'s digest,
    /// one stream.
    fn outer_hash<H: HashFunction<State = [u32; N]>, const N: usize>(
        outer: [u32; N],
        inner: &[u32; N],
    ) -> [u32; N]
    where
        CrateCompress: Compress<H>,
    {
        let mut e = Engine::<H>::resume(outer, H::BLOCK_LEN as u64);
        let mut digest = vec![0u8; H::OUTPUT_LEN];
        H::write_output(inner, &mut digest);
        e.update(&CrateCompress, &digest);
        e.finish(&CrateCompress)
    }

    /// Sixteen lanes of random engines (0-63 bytes buffered), public data
    /// lengths up to 256 and secret lengths at both ends and between,
    /// through the kernel, against the single-stream finish and outer
    /// hash.
    fn check<H: HashFunction<State = [u32; N]>, const N: usize>(
        rng: &mut SplitMix64,
        kernel: impl Fn(&mut [[u32; N]; 16], &[[u32; N]; 16], &[&[u8]; 16], usize, &Ends),
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
            let outer: [[u32; N]; 16] =
                core::array::from_fn(|_| core::array::from_fn(|_| rng.next() as u32));
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
            kernel(&mut states, &outer, &data, blocks, &ends);
            for i in 0..16 {
                let inner = finish_with_secret_len(&CrateCompress, &engines[i], &datas[i], lens[i]);
                let want = outer_hash::<H, N>(outer[i], &inner);
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

    /// An eight-lane kernel on lanes 0-7, then on lanes 8-15.
    fn eight<const N: usize>(
        states: &mut [[u32; N]; 16],
        outer: &[[u32; N]; 16],
        data: &[&[u8]; 16],
        ends: &Ends,
        kernel: impl Fn(&mut [[u32; N]; 8], &[[u32; N]; 8], &[&[u8]; 8], &Ends),
    ) {
        for half in [0, 8] {
            let mut s: [[u32; N]; 8] = core::array::from_fn(|i| states[half + i]);
            let o: [[u32; N]; 8] = core::array::from_fn(|i| outer[half + i]);
            let d: [&[u8]; 8] = core::array::from_fn(|i| data[half + i]);
            let mut e = Ends::default();
            for i in 0..8 {
                e.end[i] = ends.end[half + i];
                e.last_block[i] = ends.last_block[half + i];
                e.bits[i] = ends.bits[half + i];
            }
            kernel(&mut s, &o, &d, &e);
            states[half..half + 8].copy_from_slice(&s);
        }
    }

    #[test]
    fn sha1_matches_single_stream_finish() {
        let Some(t) = token("secret_tail SHA-1 against the single-stream finish") else {
            return;
        };
        let mut rng = SplitMix64(0x5ec4_e7a1_0001);
        check::<Sha1, 5>(&mut rng, |s, o, d, n, e| sha1_x16(t, s, o, d, n, e));
        check::<Sha1, 5>(&mut rng, |s, o, d, n, e| {
            eight(s, o, d, e, |s8, o8, d8, e8| sha1_x8(t, s8, o8, d8, n, e8))
        });
    }

    #[test]
    fn sha256_matches_single_stream_finish() {
        let Some(t) = token("secret_tail SHA-256 against the single-stream finish") else {
            return;
        };
        let mut rng = SplitMix64(0x5ec4_e7a1_0256);
        check::<Sha256, 8>(&mut rng, |s, o, d, n, e| sha256_x16(t, s, o, d, n, e));
        check::<Sha256, 8>(&mut rng, |s, o, d, n, e| {
            eight(s, o, d, e, |s8, o8, d8, e8| sha256_x8(t, s8, o8, d8, n, e8))
        });
    }
}
