//! SHA-1 compression in eight independent lanes with AVX2 alone: the
//! round code of `sha1_x16` over [`Avx2Words`], with `sha_x8`'s
//! transposes, for CPUs without AVX-512.
//!
//! Without `vprold` and `vpternlogd` a round takes about twice the
//! instructions, yet where SHA-NI is slow it still wins: on AMD family
//! 0x17 model 0x31 (Zen 2), 16 KiB per lane, 18.9-19.6 ns per block of
//! each lane against 24.4-25.3 ns for two SHA-NI streams at a time (the
//! `timing_against_sha_ni_pairs` test prints it). SHA-256's rounds take
//! 2.2 times as long as two SHA-NI streams there, and are not offered.

use super::super::Avx2;
use super::sha_x8::{by8, load_words, transpose_in, transpose_out};
use super::sha1_x16::{self, by_index, lane_blocks};
use super::words::Avx2Words;

/// SHA-1 compression in eight independent lanes: lane `i` runs `blocks`
/// 64-byte blocks from `data[i]` (at least `64 * blocks` bytes) into
/// `states[i]`.
pub(crate) fn sha1_x8(t: Avx2, states: &mut [[u32; 5]; 8], data: &[&[u8]; 8], blocks: usize) {
    let _ = t;
    let lanes = lane_blocks(data, blocks);
    // SAFETY: `t` proves the CPU has AVX2, all the kernel enables.
    unsafe { kernel(states, &lanes) }
}

#[target_feature(enable = "avx2")]
fn kernel(states: &mut [[u32; 5]; 8], lanes: &[&[[u8; 64]]; 8]) {
    let blocks = lanes[0].len();
    let mut s = transpose_in(states).map(Avx2Words);
    // `b` indexes the blocks of every lane at once.
    #[allow(clippy::needless_range_loop)]
    for b in 0..blocks {
        let w = load_words(by8!(|i| &lanes[i][b])).map(Avx2Words);
        s = sha1_x16::rounds(s, w, &mut ());
    }
    transpose_out(s.map(|w| w.0), states);
}

#[cfg(test)]
mod tests {
    use super::super::super::ShaNi;
    use super::super::super::test_rng::SplitMix64;
    use super::super::sha_ni_x2;
    use super::super::sha_x8::tests::against_portable;
    use super::super::sha1_x16::tests::{
        ABC_SHA1, ROUNDS, abc_block, alternate, cpu_name, random_lanes,
    };
    use super::*;
    use crate::primitives::hash::{HashFunction, Sha1};

    fn token(what: &str) -> Option<Avx2> {
        let t = Avx2::detect();
        if t.is_none() {
            eprintln!("SKIPPED: {what} (CPU lacks AVX2)");
        }
        t
    }

    /// Each lane against the portable compression (`sha_x8`'s check).
    #[test]
    fn matches_portable() {
        let Some(t) = token("sha1_avx2_x8 against the portable compression") else {
            return;
        };
        against_portable::<Sha1, 5>("SHA-1 on AVX2", |s, d, n| sha1_x8(t, s, d, n));
    }

    /// FIPS 180-4's "abc" in the first, a middle and the last lane.
    #[test]
    fn abc_in_one_lane() {
        let Some(t) = token("sha1_avx2_x8 FIPS 180-4 \"abc\"") else {
            return;
        };
        let padded = abc_block();
        let mut rng = SplitMix64(0xabc2);
        let lanes = random_lanes(&mut rng, 1);
        for lane in [0, 4, 7] {
            let mut data: [&[u8]; 8] = core::array::from_fn(|i| lanes[i].as_slice());
            data[lane] = &padded;
            let mut states = [<Sha1 as HashFunction>::INITIAL_STATE; 8];
            sha1_x8(t, &mut states, &data, 1);
            let mut digest = [0u8; 20];
            Sha1::write_output(&states[lane], &mut digest);
            assert_eq!(digest, ABC_SHA1, "lane {lane}");
        }
    }

    /// Eight lanes of 16 KiB in one call against the same lanes hashed as
    /// four pairs of SHA-NI streams, on this CPU: the comparison
    /// `Tuning::avx2_sha1_lanes` rests on. Prints it; asserts only that
    /// both agree.
    #[test]
    fn timing_against_sha_ni_pairs() {
        let what = "sha1_avx2_x8 timing against SHA-NI pairs";
        let Some(t) = token(what) else {
            return;
        };
        let Some(ni) = ShaNi::detect() else {
            eprintln!("SKIPPED: {what} (CPU lacks SHA-NI)");
            return;
        };
        const BLOCKS: usize = 256;
        let mut rng = SplitMix64(0x71e_a2a8);
        let lanes = random_lanes(&mut rng, BLOCKS);
        let data: [&[u8]; 8] = core::array::from_fn(|i| lanes[i].as_slice());
        let (mut x8, mut pairs) = ([[0u32; 5]; 8], [[0u32; 5]; 8]);
        let m = alternate(&mut [
            &mut || sha1_x8(t, std::hint::black_box(&mut x8), &data, BLOCKS),
            &mut || {
                for (s, d) in pairs.chunks_exact_mut(2).zip(data.chunks_exact(2)) {
                    let s: &mut [[u32; 5]; 2] = s.try_into().expect("two states");
                    let d: &[&[u8]; 2] = d.try_into().expect("two lanes");
                    sha_ni_x2::compress_x2::<Sha1>(ni, std::hint::black_box(s), d, BLOCKS);
                }
            },
        ]);
        assert_eq!(x8, pairs, "the kernels disagree");
        let ns = |secs: f64| secs / (8 * BLOCKS) as f64 * 1e9;
        println!(
            "SHA-1, 8 lanes x 16 KiB on {}, per block of each lane (medians of {ROUNDS} \
             alternating rounds): eight AVX2 lanes {:.1} ns, two SHA-NI streams at a time \
             {:.1} ns, ratio {:.2}",
            cpu_name(),
            ns(m[0].median),
            ns(m[1].median),
            m[1].ratio
        );
    }
}
