//! SHA-512 compression in four independent lanes with AVX2 alone: word
//! `j` of every lane's state (and message schedule) in one ymm register,
//! lane `i` in 64-bit lane `i`, for HMAC-SHA384 over many records on CPUs
//! without AVX-512.
//!
//! The rounds are `words64`'s over ymm words; each lane's 128-byte block
//! is loaded as four rows of four words, the rows of the four lanes
//! transposed (4x4 words) and byte-swapped. On AMD family 0x17 model 0x31
//! (Zen 2), 16 KiB a lane, four lanes take 121.3 ns per block of each
//! lane against 186.8 ns for the single-stream kernel one lane after
//! another (the `timing_against_single_stream` test prints the figures on
//! any CPU).

use core::arch::x86_64::*;

use super::super::Avx2;
use super::words64;

/// SHA-512 compression in four independent lanes: lane `i` runs `blocks`
/// 128-byte blocks from `data[i]` (at least `128 * blocks` bytes) into
/// `states[i]`.
///
/// # Panics
/// If a lane is shorter than `128 * blocks` bytes: the batch layer sizes
/// them (public lengths), so a panic here is a bug there.
pub(crate) fn compress_x4(t: Avx2, states: &mut [[u64; 8]; 4], data: &[&[u8]; 4], blocks: usize) {
    let _ = t;
    let lanes: [&[[u8; 128]]; 4] = core::array::from_fn(|i| {
        let (whole, _) = data[i].as_chunks::<128>();
        assert!(whole.len() >= blocks, "a lane shorter than its blocks");
        &whole[..blocks]
    });
    if blocks == 0 {
        return;
    }
    // SAFETY: `t` proves the CPU has AVX2, all the kernel enables.
    unsafe { compress(states, &lanes) }
}

/// Unaligned load of the 32 bytes at `bytes[at..at + 32]`.
#[inline]
#[target_feature(enable = "avx2")]
fn load32(bytes: &[u8], at: usize) -> __m256i {
    let bytes: &[u8; 32] = bytes[at..at + 32].try_into().expect("32 bytes");
    // SAFETY: `bytes` is 32 readable bytes; `loadu` needs no alignment.
    unsafe { _mm256_loadu_si256(bytes.as_ptr().cast()) }
}

/// Transposes four rows of four 64-bit words: word `j` of row `i` becomes
/// word `i` of row `j` (pairs of rows interleaved word by word, then the
/// 128-bit halves exchanged). Its own inverse.
#[inline]
#[target_feature(enable = "avx2")]
fn transpose(r: [__m256i; 4]) -> [__m256i; 4] {
    // Words 0 and 2 (lo) or 1 and 3 (hi) of rows 0-1 and of rows 2-3.
    let lo01 = _mm256_unpacklo_epi64(r[0], r[1]);
    let hi01 = _mm256_unpackhi_epi64(r[0], r[1]);
    let lo23 = _mm256_unpacklo_epi64(r[2], r[3]);
    let hi23 = _mm256_unpackhi_epi64(r[2], r[3]);
    [
        _mm256_permute2x128_si256::<0x20>(lo01, lo23),
        _mm256_permute2x128_si256::<0x20>(hi01, hi23),
        _mm256_permute2x128_si256::<0x31>(lo01, lo23),
        _mm256_permute2x128_si256::<0x31>(hi01, hi23),
    ]
}

/// Big-endian words: the bytes of each 64-bit lane reversed.
#[inline]
#[target_feature(enable = "avx2")]
fn bswap64(x: __m256i) -> __m256i {
    let m = _mm256_set_epi64x(
        0x0809_0a0b_0c0d_0e0f,
        0x0001_0203_0405_0607,
        0x0809_0a0b_0c0d_0e0f,
        0x0001_0203_0405_0607,
    );
    _mm256_shuffle_epi8(x, m)
}

#[target_feature(enable = "avx2")]
fn compress(states: &mut [[u64; 8]; 4], lanes: &[&[[u8; 128]]; 4]) {
    // Words 0-3 and 4-7 of the four states, transposed.
    let half = |h: usize| -> [__m256i; 4] {
        transpose(core::array::from_fn(|i| {
            // SAFETY: `states[i][4 h..]` is 32 readable bytes; `loadu` needs
            // no alignment.
            unsafe { _mm256_loadu_si256(states[i][4 * h..].as_ptr().cast()) }
        }))
    };
    let (lo, hi) = (half(0), half(1));
    let mut s: [__m256i; 8] = core::array::from_fn(|j| if j < 4 { lo[j] } else { hi[j - 4] });
    // `b` indexes the blocks of every lane at once.
    #[allow(clippy::needless_range_loop)]
    for b in 0..lanes[0].len() {
        // Four words of every lane at a time, transposed and byte-swapped.
        let mut w = [_mm256_setzero_si256(); 16];
        for q in 0..4 {
            let rows = transpose(core::array::from_fn(|i| load32(&lanes[i][b], 32 * q)));
            for (j, row) in rows.into_iter().enumerate() {
                w[4 * q + j] = bswap64(row);
            }
        }
        let out = words64::rounds(s, w);
        s = core::array::from_fn(|j| _mm256_add_epi64(s[j], out[j]));
    }
    for h in 0..2 {
        let rows = transpose(core::array::from_fn(|j| s[4 * h + j]));
        for (state, row) in states.iter_mut().zip(rows) {
            // SAFETY: `state[4 h..]` is 32 writable bytes; `storeu` needs no
            // alignment.
            unsafe { _mm256_storeu_si256(state[4 * h..].as_mut_ptr().cast(), row) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::super::sha512::Sha512Kernel;
    use super::super::super::test_rng::SplitMix64;
    use super::super::sha512_x8::tests::{
        edge_words_against_sha2, fips_abc_against_published, random_lanes_against_sha2,
    };
    use super::*;
    use crate::primitives::hash::{HashFunction, Sha384};

    fn token(what: &str) -> Option<Avx2> {
        let t = Avx2::detect();
        if t.is_none() {
            eprintln!("SKIPPED: {what} (CPU lacks AVX2)");
        }
        t
    }

    #[test]
    fn transpose_moves_word_j_of_row_i_to_word_i_of_row_j() {
        if token("sha512_avx2_x4 transpose").is_none() {
            return;
        }
        let rows: [[u64; 4]; 4] =
            core::array::from_fn(|i| core::array::from_fn(|j| (10 * i + j) as u64));
        let mut out = [[0u64; 4]; 4];
        // SAFETY: the CPU has AVX2 (checked above); each row is 32 bytes,
        // read and written unaligned.
        unsafe {
            let y = core::array::from_fn(|i| _mm256_loadu_si256(rows[i].as_ptr().cast()));
            for (o, y) in out.iter_mut().zip(transpose(y)) {
                _mm256_storeu_si256(o.as_mut_ptr().cast(), y);
            }
        }
        for (j, row) in out.iter().enumerate() {
            for (i, &w) in row.iter().enumerate() {
                assert_eq!(w, (10 * i + j) as u64, "row {j}, word {i}");
            }
        }
    }

    #[test]
    fn random_lanes_match_sha2() {
        let Some(t) = token("sha512_avx2_x4 against the sha2 crate") else {
            return;
        };
        random_lanes_against_sha2::<4>("x4", &mut |s, d, n| compress_x4(t, s, d, n));
    }

    #[test]
    fn edge_words_match_sha2() {
        let Some(t) = token("sha512_avx2_x4 edge words") else {
            return;
        };
        edge_words_against_sha2::<4>("x4", &mut |s, d, n| compress_x4(t, s, d, n));
    }

    #[test]
    fn fips_abc_in_every_lane() {
        let Some(t) = token("sha512_avx2_x4 FIPS 180-4 \"abc\"") else {
            return;
        };
        fips_abc_against_published::<4>("x4", &mut |s, d, n| compress_x4(t, s, d, n));
    }

    /// Timing, printed only (`cargo test --release --lib sha512_avx2_x4 --
    /// --nocapture`): four lanes of 16 KiB in one call against the same
    /// lanes one after another on the single-stream kernel the CPU picks,
    /// in alternating rounds. Asserts only that both agree.
    #[test]
    fn timing_against_single_stream() {
        use std::time::Instant;
        let Some(t) = token("sha512_avx2_x4 timing") else {
            return;
        };
        if cfg!(debug_assertions) {
            eprintln!("SKIPPED: sha512_avx2_x4 timing (debug build; run with --release)");
            return;
        }
        const LEN: usize = 16384;
        const ROUNDS: usize = 201;
        let single = Sha512Kernel::new(crate::backends::cpu::enabled());
        let mut rng = SplitMix64(0x7151);
        let bufs: Vec<Vec<u8>> = (0..4)
            .map(|_| {
                let mut b = vec![0u8; LEN];
                rng.fill(&mut b);
                b
            })
            .collect();
        let data: [&[u8]; 4] = core::array::from_fn(|i| &bufs[i][..]);
        let (mut x4, mut one) = ([Sha384::INITIAL_STATE; 4], [Sha384::INITIAL_STATE; 4]);
        let mut ns: [Vec<f64>; 2] = Default::default();
        for round in 0..ROUNDS {
            for k in 0..2 {
                let k = (k + round) % 2;
                let start = Instant::now();
                if k == 0 {
                    compress_x4(t, std::hint::black_box(&mut x4), &data, LEN / 128);
                } else {
                    for (state, lane) in one.iter_mut().zip(&data) {
                        single.compress(std::hint::black_box(state), lane.as_chunks::<128>().0);
                    }
                }
                ns[k].push(start.elapsed().as_nanos() as f64 / (4 * LEN / 128) as f64);
            }
        }
        assert_eq!(x4, one, "the kernels disagree");
        let mut ratio: Vec<f64> = ns[1].iter().zip(&ns[0]).map(|(a, b)| a / b).collect();
        let [x4_ns, one_ns] = &mut ns;
        for v in [x4_ns, one_ns, &mut ratio] {
            v.sort_by(f64::total_cmp);
        }
        println!(
            "SHA-512, 4 lanes x {LEN} B, per block of each lane (medians of {ROUNDS} \
             alternating rounds): four AVX2 lanes {:.1} ns, single stream {single:?} \
             {:.1} ns, ratio {:.2}",
            ns[0][ROUNDS / 2],
            ns[1][ROUNDS / 2],
            ratio[ROUNDS / 2]
        );
    }
}
