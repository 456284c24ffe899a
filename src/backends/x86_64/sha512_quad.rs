//! SHA-512 compression of many blocks, four at a time, with AVX-512: the
//! message schedules of four blocks run together in zmm registers, one
//! block per 128-bit lane, beside the rounds of block one; blocks two to
//! four run their rounds from the stored sums `W[t] + K[t]` alone. The
//! two-block loop of `sha512_pair` does the same with ymm registers; here
//! a schedule instruction serves four blocks instead of two, so a block's
//! share of the schedule halves again, and the rounds, which share the
//! execution ports with the schedule on Intel cores, get those slots. On
//! Intel Xeon family 6 model 0xCF, 2-5% faster per block than the rolled
//! two-block loop on a quiet host, 12% on a busy one (see
//! `Tuning::sha512_quads` for where it runs). The rounds are the two-block
//! loop's ([`rounds16_with`]), over sums 64 bytes apart instead of 32, in
//! either of its forms (`Tuning::sha512_pairs_four_step`): on model 0xA7
//! the four-step rounds took 6% less time a block than the five-step ones.

use core::arch::x86_64::*;

use super::sha512::K512;
use super::sha512_pair::{NoSched, Sched, Working, rounds16_with};

/// The sums `W[t] + K[t]` of four blocks, in the schedule's layout: entry
/// `p` holds words `2 p` and `2 p + 1` of block one, then those of blocks
/// two, three and four (one zmm store per entry). Aligned to 16 bytes
/// only, as the two-block loop's `PairSums` is: a 64-byte alignment makes
/// the loop realign the stack, and measured no faster for the stores that
/// no longer straddle cache lines.
#[repr(C, align(16))]
pub(crate) struct QuadSums([[u64; 8]; 40]);

impl QuadSums {
    /// A zeroed buffer, once per call, as the rolled two-block loop zeroes
    /// its own (every entry is stored before the rounds read it).
    pub(crate) fn new() -> QuadSums {
        QuadSums([[0u64; 8]; 40])
    }
}

/// Bytes between the sums of consecutive pairs of words of one block.
const STRIDE: usize = 64;

/// `K512[2 p]` and `K512[2 p + 1]` in all four lanes.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,bmi1,bmi2,ssse3,sse4.1")]
fn k_quad(p: usize) -> __m512i {
    let k: &[u64; 2] = K512[2 * p..2 * p + 2].try_into().expect("2 words");
    // SAFETY: `k` is 16 readable bytes; `loadu` needs no alignment.
    _mm512_broadcast_i32x4(unsafe { _mm_loadu_si128(k.as_ptr().cast()) })
}

/// Words `2 p` and `2 p + 1` (`p >= 8`) of all four blocks from the ring
/// `x` of the last sixteen, where `r = p % 8`: pair `p - 8` is in `x[r]`,
/// which the new pair replaces.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,bmi1,bmi2,ssse3,sse4.1")]
fn next(x: &mut [__m512i; 8], r: usize) -> __m512i {
    let w15 = _mm512_alignr_epi8::<8>(x[(r + 1) % 8], x[r]);
    let w7 = _mm512_alignr_epi8::<8>(x[(r + 5) % 8], x[(r + 4) % 8]);
    let w2 = x[(r + 7) % 8];
    let s0 = _mm512_ternarylogic_epi64::<0x96>(
        _mm512_ror_epi64::<1>(w15),
        _mm512_ror_epi64::<8>(w15),
        _mm512_srli_epi64::<7>(w15),
    );
    let s1 = _mm512_ternarylogic_epi64::<0x96>(
        _mm512_ror_epi64::<19>(w2),
        _mm512_ror_epi64::<61>(w2),
        _mm512_srli_epi64::<6>(w2),
    );
    let s = _mm512_add_epi64(_mm512_add_epi64(x[r], s0), w7);
    x[r] = _mm512_add_epi64(s, s1);
    x[r]
}

/// Four blocks' compressions into `state`, with `sums` as scratch, on the
/// four-step rounds with `FOUR` (else the five-step ones).
///
/// # Safety
/// The CPU must have AVX-512 F, BW and VL, AVX2, BMI1 and BMI2; always
/// inlined, into functions that enable them.
#[inline(always)]
unsafe fn compress_quad<const FOUR: bool>(
    state: [u64; 8],
    blocks: &[[u8; 128]],
    sums: &mut QuadSums,
) -> [u64; 8] {
    debug_assert_eq!(blocks.len(), 4);
    // SAFETY: the caller guarantees the features (for all of this
    // function's intrinsics).
    let bswap = unsafe {
        _mm512_broadcast_i32x4(_mm_set_epi64x(0x0809_0a0b_0c0d_0e0f, 0x0001_0203_0405_0607))
    };
    let mut x: [__m512i; 8] = core::array::from_fn(|i| {
        let lane = |b: usize| super::load(super::block(&blocks[b], 16 * i));
        // SAFETY: the caller guarantees the features.
        unsafe {
            let v = _mm512_castsi128_si512(lane(0));
            let v = _mm512_inserti32x4::<1>(v, lane(1));
            let v = _mm512_inserti32x4::<2>(v, lane(2));
            let v = _mm512_inserti32x4::<3>(v, lane(3));
            _mm512_shuffle_epi8(v, bswap)
        }
    });
    let base = (&raw mut *sums).cast::<u8>();
    for (p, &v) in x.iter().enumerate() {
        // SAFETY: the caller guarantees the features.
        unsafe { store(base, p, _mm512_add_epi64(v, k_quad(p))) };
    }
    let read = base.cast_const();
    // Block one, with the schedule of all four beside its first 64 rounds.
    let mut w = Working::start::<FOUR>(state);
    for i in 0..4 {
        let mut sched = QuadSched { x: &mut x, base, i };
        // SAFETY: runs of sixteen rounds read 8 entries from `read + 512
        // i`, inside `sums`, which only `sched` writes meanwhile (entries
        // it does not read); the caller guarantees the features.
        unsafe {
            rounds16_with::<STRIDE, FOUR>(&mut w, read.add(512 * i), &mut sched, &mut |_| {})
        };
    }
    // SAFETY: as above.
    unsafe { rounds16_with::<STRIDE, FOUR>(&mut w, read.add(2048), &mut NoSched, &mut |_| {}) };
    let mut regs = w.finish::<FOUR>(state);
    for blk in 1..4 {
        let mut w = Working::start::<FOUR>(regs);
        let lane = read.wrapping_add(16 * blk);
        for i in 0..5 {
            // SAFETY: as above, block `blk`'s lane of the same entries.
            unsafe {
                rounds16_with::<STRIDE, FOUR>(&mut w, lane.add(512 * i), &mut NoSched, &mut |_| {})
            };
        }
        regs = w.finish::<FOUR>(regs);
    }
    regs
}

/// Stores `v` as entry `p` (< 40) of the [`QuadSums`] at `base`.
///
/// # Safety
/// `base` must point to a live `QuadSums`; the CPU must have AVX-512F.
#[inline(always)]
unsafe fn store(base: *mut u8, p: usize, v: __m512i) {
    // SAFETY: entry `p` is 64 writable bytes; `storeu` needs no
    // alignment; the caller guarantees AVX-512F.
    unsafe { _mm512_storeu_si512(base.add(p * STRIDE).cast(), v) }
}

/// The schedule of run `i` of block one's rounds: before group `g`, pairs
/// `8 i + 2 g + 8` and the next of all four blocks, into the sums.
struct QuadSched<'a> {
    x: &'a mut [__m512i; 8],
    base: *mut u8,
    i: usize,
}

impl Sched for QuadSched<'_> {
    /// # Safety
    /// The CPU must have the features of [`compress_quad`]; `base` must
    /// point to a live [`QuadSums`].
    #[inline(always)]
    unsafe fn group(&mut self, g: usize) {
        let p = 8 * self.i + 2 * g + 8;
        for (q, r) in [(p, 2 * g), (p + 1, 2 * g + 1)] {
            // SAFETY: the caller guarantees the features and `base`.
            unsafe { store(self.base, q, _mm512_add_epi64(next(self.x, r), k_quad(q))) };
        }
    }
}

/// Compresses `blocks` into `state`, four at a time, on the four-step
/// rounds with `FOUR` (else the five-step ones); the last one to three go
/// through the one-block AVX-512VL kernel.
///
/// # Safety
/// The CPU must have AVX-512 F, BW and VL, AVX2, BMI1, BMI2, SSSE3 and
/// SSE4.1.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,bmi1,bmi2,ssse3,sse4.1")]
pub(crate) unsafe fn compress_quads<const FOUR: bool>(state: &mut [u64; 8], blocks: &[[u8; 128]]) {
    let mut regs = *state;
    let mut sums = QuadSums::new();
    let mut quads = blocks.chunks_exact(4);
    for quad in &mut quads {
        // SAFETY: this function enables the features.
        regs = unsafe { compress_quad::<FOUR>(regs, quad, &mut sums) };
    }
    *state = regs;
    super::sha512::compress_blocks_avx512(state, quads.remainder());
}
