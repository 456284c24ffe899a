//! SHA-1 and SHA-256 compression in eight independent lanes, one 32-bit
//! word of every lane per ymm register: the round code of `sha1_x16` and
//! `sha256_x16` (written over [`super::words::Words`]) at half the width.
//!
//! For when eight or fewer lanes are busy: such a call costs about 0.7 of
//! a sixteen-lane one on Intel (three vector ports for 256-bit
//! instructions, two for 512-bit ones), and half of one where a 512-bit
//! instruction is two 256-bit halves (AMD Zen 4). The layout and the
//! transposes follow `sha1_x16`'s: lane `i` in element `i`, rows of four
//! words spread over the two 128-bit halves and transposed inside each.

use core::arch::x86_64::*;

use super::super::{Vaes512, block, load};
use super::sha1_x16::{self, by_index, lane_blocks};
use super::sha256_x16;

// The helpers below are `#[inline(always)]` and reached only from the
// kernels, `#[target_feature]` functions with AVX-512 F/BW/VL (see
// `sha1_x16`) or, for the transposes and `load_words`, which need no more,
// with AVX2 (`sha1_avx2_x8`).

/// [`sha1_x16`]'s `by_index` over the eight lanes.
macro_rules! by8 {
    (|$i:ident| $e:expr) => {
        by_index!(0 1 2 3 4 5 6 7; |$i| $e)
    };
}

pub(super) use by8;

/// Transposes the 4x4 matrix of words in each 128-bit half of four
/// vectors (its own inverse).
#[inline(always)]
fn transpose4(r: [__m256i; 4]) -> [__m256i; 4] {
    // SAFETY: AVX2 as said above.
    unsafe {
        let t0 = _mm256_unpacklo_epi32(r[0], r[1]);
        let t1 = _mm256_unpackhi_epi32(r[0], r[1]);
        let t2 = _mm256_unpacklo_epi32(r[2], r[3]);
        let t3 = _mm256_unpackhi_epi32(r[2], r[3]);
        [
            _mm256_unpacklo_epi64(t0, t2),
            _mm256_unpackhi_epi64(t0, t2),
            _mm256_unpacklo_epi64(t1, t3),
            _mm256_unpackhi_epi64(t1, t3),
        ]
    }
}

/// Eight rows of four words (`rows[i]`, one per lane) as four vectors,
/// vector `k` holding word `k` of row `i` in element `i`: vector `q` gets
/// rows `q` and `q + 4` in its halves, then each half is transposed.
#[inline(always)]
fn rows_to_words(rows: [__m128i; 8]) -> [__m256i; 4] {
    // SAFETY: AVX2 as said above.
    unsafe {
        let spread =
            |q: usize| _mm256_inserti128_si256::<1>(_mm256_castsi128_si256(rows[q]), rows[q + 4]);
        transpose4([spread(0), spread(1), spread(2), spread(3)])
    }
}

/// The inverse of [`rows_to_words`].
#[inline(always)]
fn words_to_rows(words: [__m256i; 4]) -> [__m128i; 8] {
    // SAFETY: AVX2 as said above.
    unsafe {
        let r = transpose4(words);
        let low = |q: usize| _mm256_castsi256_si128(r[q]);
        let high = |q: usize| _mm256_extracti128_si256::<1>(r[q]);
        [
            low(0),
            low(1),
            low(2),
            low(3),
            high(0),
            high(1),
            high(2),
            high(3),
        ]
    }
}

/// Four words of a state, unaligned.
#[inline(always)]
fn load4(words: &[u32]) -> __m128i {
    let words: &[u32; 4] = words.try_into().expect("four words");
    // SAFETY: 16 readable bytes; `loadu` has no alignment requirement and
    // SSE2 is part of the x86-64 baseline.
    unsafe { _mm_loadu_si128(words.as_ptr().cast()) }
}

/// Four words of a state, unaligned.
#[inline(always)]
fn store4(words: &mut [u32], v: __m128i) {
    let words: &mut [u32; 4] = words.try_into().expect("four words");
    // SAFETY: 16 writable bytes; `storeu` has no alignment requirement and
    // SSE2 is part of the x86-64 baseline.
    unsafe { _mm_storeu_si128(words.as_mut_ptr().cast(), v) }
}

/// The states of eight lanes as `N` vectors, vector `j` holding word `j`
/// of every lane; whole groups of four words through [`rows_to_words`],
/// the rest (SHA-1's E) element by element.
#[inline(always)]
pub(super) fn transpose_in<const N: usize>(states: &[[u32; N]; 8]) -> [__m256i; N] {
    // SAFETY: AVX as said above.
    let mut v = [unsafe { _mm256_setzero_si256() }; N];
    for c in 0..N / 4 {
        let rows = by8!(|i| load4(&states[i][4 * c..4 * c + 4]));
        v[4 * c..4 * c + 4].copy_from_slice(&rows_to_words(rows));
    }
    for (j, x) in v.iter_mut().enumerate().skip(N / 4 * 4) {
        let col = by8!(|i| states[i][j]);
        // SAFETY: `col` is 32 readable bytes; `loadu` has no alignment
        // requirement. AVX as said above.
        *x = unsafe { _mm256_loadu_si256(col.as_ptr().cast()) };
    }
    v
}

/// The inverse of [`transpose_in`].
#[inline(always)]
pub(super) fn transpose_out<const N: usize>(v: [__m256i; N], states: &mut [[u32; N]; 8]) {
    for c in 0..N / 4 {
        let rows = words_to_rows(v[4 * c..4 * c + 4].try_into().expect("four vectors"));
        for (state, row) in states.iter_mut().zip(rows) {
            store4(&mut state[4 * c..4 * c + 4], row);
        }
    }
    for (j, &x) in v.iter().enumerate().skip(N / 4 * 4) {
        let mut col = [0u32; 8];
        // SAFETY: `col` is 32 writable bytes; `storeu` has no alignment
        // requirement. AVX as said above.
        unsafe { _mm256_storeu_si256(col.as_mut_ptr().cast(), x) };
        for (state, word) in states.iter_mut().zip(col) {
            state[j] = word;
        }
    }
}

/// The message block of each of eight lanes as sixteen vectors of
/// big-endian words, vector `j` holding word `j` of every lane.
#[inline(always)]
pub(super) fn load_words(blocks: [&[u8; 64]; 8]) -> [__m256i; 16] {
    // SAFETY: AVX2 as said above.
    unsafe {
        // Byte-swaps each 32-bit element (the shuffle works per half).
        let bswap = _mm256_set_epi32(
            0x0c0d_0e0f,
            0x0809_0a0b,
            0x0405_0607,
            0x0001_0203,
            0x0c0d_0e0f,
            0x0809_0a0b,
            0x0405_0607,
            0x0001_0203,
        );
        let mut w = [_mm256_setzero_si256(); 16];
        for c in 0..4 {
            let quarter = rows_to_words(by8!(|i| load(block(blocks[i], 16 * c))));
            for k in 0..4 {
                w[4 * c + k] = _mm256_shuffle_epi8(quarter[k], bswap);
            }
        }
        w
    }
}

/// SHA-1 compression in eight independent lanes: lane `i` runs `blocks`
/// 64-byte blocks from `data[i]` (at least `64 * blocks` bytes) into
/// `states[i]`.
pub(crate) fn sha1_x8(t: Vaes512, states: &mut [[u32; 5]; 8], data: &[&[u8]; 8], blocks: usize) {
    let _ = t;
    let lanes = lane_blocks(data, blocks);
    // SAFETY: `t` proves the CPU has AVX-512 F/BW/VL, all the kernel
    // enables.
    unsafe { sha1_kernel(states, &lanes) }
}

/// SHA-256 compression in eight independent lanes, as [`sha1_x8`].
pub(crate) fn sha256_x8(t: Vaes512, states: &mut [[u32; 8]; 8], data: &[&[u8]; 8], blocks: usize) {
    let _ = t;
    let lanes = lane_blocks(data, blocks);
    // SAFETY: as in `sha1_x8`.
    unsafe { sha256_kernel(states, &lanes) }
}

#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
fn sha1_kernel(states: &mut [[u32; 5]; 8], lanes: &[&[[u8; 64]]; 8]) {
    let blocks = lanes[0].len();
    let mut s = transpose_in(states);
    // `b` indexes the blocks of every lane at once.
    #[allow(clippy::needless_range_loop)]
    for b in 0..blocks {
        s = sha1_x16::rounds(s, load_words(by8!(|i| &lanes[i][b])), &mut ());
    }
    transpose_out(s, states);
}

#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
fn sha256_kernel(states: &mut [[u32; 8]; 8], lanes: &[&[[u8; 64]]; 8]) {
    let blocks = lanes[0].len();
    let mut s = transpose_in(states);
    #[allow(clippy::needless_range_loop)]
    for b in 0..blocks {
        s = sha256_x16::rounds(s, load_words(by8!(|i| &lanes[i][b])), &mut ());
    }
    transpose_out(s, states);
}

#[cfg(test)]
pub(super) mod tests {
    use super::super::super::test_rng::SplitMix64;
    use super::super::sha1_x16::tests::{
        ABC_SHA1, ABC_SHA256, ROUNDS, abc_block, alternate, cpu_name, random_lanes, token,
    };
    use super::*;
    use crate::backends::portable::CrateCompress;
    use crate::primitives::hash::{Compress, HashFunction, Sha1, Sha256};

    /// Each lane against the portable compression, from random states,
    /// over 0 to 17 blocks: lanes that differ in data and state, so a lane
    /// mix-up or a transpose error shows.
    pub(in super::super) fn against_portable<
        H: HashFunction<State = [u32; N], Block = [u8; 64]>,
        const N: usize,
    >(
        name: &str,
        x8: impl Fn(&mut [[u32; N]; 8], &[&[u8]; 8], usize),
    ) where
        CrateCompress: Compress<H>,
    {
        let mut rng = SplitMix64(0x5a8_0008 + N as u64);
        for blocks in [0, 1, 2, 3, 17] {
            for _ in 0..4 {
                let lanes = random_lanes(&mut rng, blocks);
                let data: [&[u8]; 8] = core::array::from_fn(|i| lanes[i].as_slice());
                let start: [[u32; N]; 8] =
                    core::array::from_fn(|_| core::array::from_fn(|_| rng.next() as u32));
                let mut ours = start;
                x8(&mut ours, &data, blocks);
                for i in 0..8 {
                    let mut theirs = start[i];
                    let (whole, _) = lanes[i].as_chunks::<64>();
                    Compress::<H>::compress(&CrateCompress, &mut theirs, &whole[..blocks]);
                    assert_eq!(ours[i], theirs, "{name}: lane {i}, {blocks} blocks");
                }
                if blocks > 0 {
                    assert_ne!(ours, start, "{name}: {blocks} blocks left the states alone");
                }
            }
        }
    }

    #[test]
    fn sha1_matches_portable() {
        let Some(t) = token("sha1_x8 against the portable compression") else {
            return;
        };
        against_portable::<Sha1, 5>("SHA-1", |s, d, n| sha1_x8(t, s, d, n));
    }

    #[test]
    fn sha256_matches_portable() {
        let Some(t) = token("sha256_x8 against the portable compression") else {
            return;
        };
        against_portable::<Sha256, 8>("SHA-256", |s, d, n| sha256_x8(t, s, d, n));
    }

    /// FIPS 180-4's "abc" in one lane among random ones, in the first,
    /// a middle and the last lane.
    #[test]
    fn abc_in_one_lane() {
        let Some(t) = token("sha_x8 FIPS 180-4 \"abc\"") else {
            return;
        };
        let padded = abc_block();
        let mut rng = SplitMix64(0xabc8);
        let lanes = random_lanes(&mut rng, 1);
        for lane in [0, 3, 7] {
            let mut data: [&[u8]; 8] = core::array::from_fn(|i| lanes[i].as_slice());
            data[lane] = &padded;
            let mut s1 = [<Sha1 as HashFunction>::INITIAL_STATE; 8];
            sha1_x8(t, &mut s1, &data, 1);
            let mut d1 = [0u8; 20];
            Sha1::write_output(&s1[lane], &mut d1);
            assert_eq!(d1, ABC_SHA1, "SHA-1, lane {lane}");
            let mut s2 = [<Sha256 as HashFunction>::INITIAL_STATE; 8];
            sha256_x8(t, &mut s2, &data, 1);
            let mut d2 = [0u8; 32];
            Sha256::write_output(&s2[lane], &mut d2);
            assert_eq!(d2, ABC_SHA256, "SHA-256, lane {lane}");
        }
    }

    /// One eight-lane call against one sixteen-lane call over 16 KiB per
    /// lane, on this CPU: the cost ratio `LaneHash`'s thresholds rest on.
    /// Prints it; asserts only that the lanes both run agree.
    #[test]
    fn eight_lanes_against_sixteen() {
        let Some(t) = token("sha_x8 against sha*_x16") else {
            return;
        };
        const BLOCKS: usize = 256;
        let mut rng = SplitMix64(0x0816);
        let lanes = random_lanes(&mut rng, BLOCKS);
        let d16: [&[u8]; 16] = core::array::from_fn(|i| lanes[i].as_slice());
        let d8: [&[u8]; 8] = core::array::from_fn(|i| lanes[i].as_slice());
        let (mut a1, mut b1) = ([[0u32; 5]; 16], [[0u32; 5]; 8]);
        let m1 = alternate(&mut [
            &mut || sha1_x16::compress_x16(t, std::hint::black_box(&mut a1), &d16, BLOCKS),
            &mut || sha1_x8(t, std::hint::black_box(&mut b1), &d8, BLOCKS),
        ]);
        assert_eq!(a1[..8], b1[..], "SHA-1: eight and sixteen lanes disagree");
        let (mut a2, mut b2) = ([[0u32; 8]; 16], [[0u32; 8]; 8]);
        let m2 = alternate(&mut [
            &mut || sha256_x16::compress_x16(t, std::hint::black_box(&mut a2), &d16, BLOCKS),
            &mut || sha256_x8(t, std::hint::black_box(&mut b2), &d8, BLOCKS),
        ]);
        assert_eq!(a2[..8], b2[..], "SHA-256: eight and sixteen lanes disagree");
        for (name, m) in [("SHA-1", m1), ("SHA-256", m2)] {
            println!(
                "{name} on {}: per block of every lane, sixteen lanes {:.1} ns, eight {:.1} ns: \
                 an eight-lane call costs {:.2} of a sixteen-lane one (median of {ROUNDS} \
                 alternating rounds)",
                cpu_name(),
                m[0].median / BLOCKS as f64 * 1e9,
                m[1].median / BLOCKS as f64 * 1e9,
                m[1].ratio
            );
        }
    }
}
