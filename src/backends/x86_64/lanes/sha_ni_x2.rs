//! SHA-1 and SHA-256 compression of two independent streams with SHA-NI,
//! their round groups interleaved in one loop: for when only a few lanes
//! are busy, where sixteen AVX-512 lanes would hash mostly idle lanes.
//!
//! One stream's rounds are a chain of dependent `sha1rnds4` or
//! `sha256rnds2` instructions, each waiting for the last; a second stream's
//! chain beside it fills the gaps. The state layouts are those of
//! [`super::super::sha`]'s kernels (A..D and E for SHA-1, ABEF and CDGH for
//! SHA-256).
//!
//! Measured with 16 KiB per lane (the `crossover_table` test prints it):
//! two streams hash 1.2x as fast as one on an Intel Xeon (family 6, model
//! 0xCF), 1.8x (SHA-1) and 1.5x (SHA-256) on an AMD EPYC (family 0x1A,
//! model 2), and 1.8x and 1.6x on an AMD EPYC of family 0x19 model 1 (Zen
//! 3, no AVX-512: `two_streams_against_one` prints it); on the first two,
//! sixteen AVX-512 lanes beat two-stream SHA-NI from 5 busy lanes for
//! SHA-1 and from 9 for SHA-256. The batch engine pairs the
//! lanes left below that crossover, and on CPUs where two streams nearly
//! double the speed gives small batches lanes (`cpu::Tuning`).

use core::arch::x86_64::*;

use super::super::{ShaNi, block, load, pin_xmm};
use super::sha1_x16::lane_blocks;
use super::sha256_x16::K;
use super::words::RoundHook;
use crate::primitives::hash::{HashFunction, Sha1, Sha256};

/// Compression of two independent streams of the hash `H`: stream `i`
/// runs `blocks` 64-byte blocks from `data[i]` (at least `64 * blocks`
/// bytes) into `states[i]`.
pub(crate) fn compress_x2<H: NiPair>(
    t: ShaNi,
    states: &mut [H::State; 2],
    data: &[&[u8]; 2],
    blocks: usize,
) {
    let _ = t;
    let streams = lane_blocks(data, blocks);
    // SAFETY: `t` proves the CPU has SHA-NI, SSE2, SSSE3 and SSE4.1, all
    // the kernel enables.
    unsafe { kernel::<H>(states, &streams) }
}

#[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
fn kernel<H: NiPair>(states: &mut [H::State; 2], streams: &[&[[u8; 64]]; 2]) {
    let (mut x, mut y) = H::pair_in(states);
    // `b` indexes the blocks of every lane at once.
    #[allow(clippy::needless_range_loop)]
    for b in 0..streams[0].len() {
        let w: [[__m128i; 4]; 2] =
            core::array::from_fn(|i| core::array::from_fn(|q| load(block(&streams[i][b], 16 * q))));
        H::pair_block(&mut x, &mut y, H::words(w), &mut ());
    }
    H::pair_out(x, y, states);
}

/// A hash with two-stream SHA-NI rounds that take a round hook, for
/// [`compress_x2`] and `ni_cbc`: its state in two registers per stream,
/// the message words, and one block of both streams. Each method is
/// inlined into `#[target_feature]` kernels, whose features its
/// intrinsics need (SHA-NI, SSSE3, SSE4.1).
pub(crate) trait NiPair: HashFunction {
    /// The state of both streams in registers.
    fn pair_in(states: &[Self::State; 2]) -> ([__m128i; 2], [__m128i; 2]);
    /// The inverse of [`NiPair::pair_in`].
    fn pair_out(x: [__m128i; 2], y: [__m128i; 2], states: &mut [Self::State; 2]);
    /// Loaded bytes as message words.
    fn words(w: [[__m128i; 4]; 2]) -> [[__m128i; 4]; 2];
    /// One block of both streams, `hook` after each group of rounds.
    fn pair_block(
        x: &mut [__m128i; 2],
        y: &mut [__m128i; 2],
        w: [[__m128i; 4]; 2],
        hook: &mut impl RoundHook,
    );
}

impl NiPair for Sha1 {
    /// Two SHA-1 states as the SHA-NI rounds hold them: A..D with A in lane 3
    /// of one register, E in lane 3 of another, per stream.
    ///
    /// Inlined into `#[target_feature]` kernels with SSE4.1, as
    /// [`NiPair::pair_out`].
    #[inline(always)]
    fn pair_in(states: &[[u32; 5]; 2]) -> ([__m128i; 2], [__m128i; 2]) {
        let s = states.map(|s| s.map(|x| x as i32));
        // SAFETY: SSE2, part of x86_64.
        unsafe {
            (
                core::array::from_fn(|i| _mm_set_epi32(s[i][0], s[i][1], s[i][2], s[i][3])),
                core::array::from_fn(|i| _mm_set_epi32(s[i][4], 0, 0, 0)),
            )
        }
    }

    /// The inverse of [`NiPair::pair_in`], into `states`.
    #[inline(always)]
    fn pair_out(abcd: [__m128i; 2], e: [__m128i; 2], states: &mut [[u32; 5]; 2]) {
        for (state, (x, e)) in states.iter_mut().zip(abcd.into_iter().zip(e)) {
            // SAFETY: the caller's feature context has SSE4.1.
            *state = unsafe {
                [
                    _mm_extract_epi32::<3>(x) as u32,
                    _mm_extract_epi32::<2>(x) as u32,
                    _mm_extract_epi32::<1>(x) as u32,
                    _mm_extract_epi32::<0>(x) as u32,
                    _mm_extract_epi32::<3>(e) as u32,
                ]
            };
        }
    }

    /// Two streams' blocks (16 bytes a register) as SHA-1 message words:
    /// big-endian, `W[0]` in lane 3.
    ///
    /// Inlined into `#[target_feature]` kernels with SSSE3.
    #[inline(always)]
    fn words(w: [[__m128i; 4]; 2]) -> [[__m128i; 4]; 2] {
        // SAFETY: the caller's feature context has SSSE3; SSE2 is part of
        // x86_64.
        unsafe {
            // Reverses all 16 bytes.
            let reverse = _mm_set_epi64x(0x0001_0203_0405_0607, 0x0809_0a0b_0c0d_0e0f);
            w.map(|w| w.map(|v| _mm_shuffle_epi8(v, reverse)))
        }
    }

    /// One SHA-1 block of two streams (`w` from [`NiPair::words`]), their twenty
    /// groups of four rounds interleaved; `hook` runs after each group (`t`
    /// from 0 to 19 of 20), where `ni_cbc` places its AES rounds.
    ///
    /// Inlined into `#[target_feature]` kernels with SHA-NI and SSE2, whose
    /// feature context its intrinsics need.
    #[inline(always)]
    fn pair_block(
        abcd: &mut [__m128i; 2],
        e: &mut [__m128i; 2],
        mut w: [[__m128i; 4]; 2],
        hook: &mut impl RoundHook,
    ) {
        // SAFETY: the caller's feature context has SHA-NI and SSE2.
        unsafe {
            let (abcd0, e0) = (*abcd, *e);
            // The state before the previous group: its A gives the next
            // group's E (`sha1nexte`).
            let mut before = *abcd;
            for i in 0..2 {
                abcd[i] = _mm_sha1rnds4_epu32::<0>(abcd[i], _mm_add_epi32(e[i], w[i][0]));
            }
            hook.after_round(0, 20);
            macro_rules! group {
                ($($g:literal $f:literal)*) => {$({
                    const G: usize = $g;
                    for i in 0..2 {
                        let w = &mut w[i];
                        if G >= 4 {
                            // W[4g..4g+4] from the previous sixteen words.
                            w[G % 4] = _mm_sha1msg2_epu32(
                                _mm_xor_si128(
                                    _mm_sha1msg1_epu32(w[G % 4], w[(G + 1) % 4]),
                                    w[(G + 2) % 4],
                                ),
                                w[(G + 3) % 4],
                            );
                        }
                        let next_e = _mm_sha1nexte_epu32(before[i], w[G % 4]);
                        before[i] = abcd[i];
                        abcd[i] = _mm_sha1rnds4_epu32::<$f>(abcd[i], next_e);
                        // Keeps the two chains interleaved group by group.
                        pin_xmm(&mut abcd[i]);
                    }
                    hook.after_round(G, 20);
                })*};
            }
            group!(1 0 2 0 3 0 4 0 5 1 6 1 7 1 8 1 9 1);
            group!(10 2 11 2 12 2 13 2 14 2 15 3 16 3 17 3 18 3 19 3);
            for i in 0..2 {
                abcd[i] = _mm_add_epi32(abcd[i], abcd0[i]);
                e[i] = _mm_sha1nexte_epu32(before[i], e0[i]);
            }
        }
    }
}

impl NiPair for Sha256 {
    /// Two SHA-256 states as the SHA-NI rounds hold them: A B E F and C D G H
    /// in lanes 3..0 of two registers per stream.
    ///
    /// Inlined into `#[target_feature]` kernels with SSE4.1, as
    /// [`NiPair::pair_out`].
    #[inline(always)]
    fn pair_in(states: &[[u32; 8]; 2]) -> ([__m128i; 2], [__m128i; 2]) {
        let lanes = |i: usize, [a, b, c, d]: [usize; 4]| {
            let s = states[i].map(|x| x as i32);
            // SAFETY: SSE2, part of x86_64.
            unsafe { _mm_set_epi32(s[a], s[b], s[c], s[d]) }
        };
        (
            core::array::from_fn(|i| lanes(i, [0, 1, 4, 5])),
            core::array::from_fn(|i| lanes(i, [2, 3, 6, 7])),
        )
    }

    /// The inverse of [`NiPair::pair_in`], into `states`.
    #[inline(always)]
    fn pair_out(abef: [__m128i; 2], cdgh: [__m128i; 2], states: &mut [[u32; 8]; 2]) {
        for (state, (x, y)) in states.iter_mut().zip(abef.into_iter().zip(cdgh)) {
            // SAFETY: the caller's feature context has SSE4.1.
            *state = unsafe {
                [
                    _mm_extract_epi32::<3>(x) as u32,
                    _mm_extract_epi32::<2>(x) as u32,
                    _mm_extract_epi32::<3>(y) as u32,
                    _mm_extract_epi32::<2>(y) as u32,
                    _mm_extract_epi32::<1>(x) as u32,
                    _mm_extract_epi32::<0>(x) as u32,
                    _mm_extract_epi32::<1>(y) as u32,
                    _mm_extract_epi32::<0>(y) as u32,
                ]
            };
        }
    }

    /// Two streams' blocks (16 bytes a register) as SHA-256 message words:
    /// each 32-bit word byte-swapped, `W[0]` in lane 0.
    ///
    /// Inlined into `#[target_feature]` kernels with SSSE3.
    #[inline(always)]
    fn words(w: [[__m128i; 4]; 2]) -> [[__m128i; 4]; 2] {
        // SAFETY: the caller's feature context has SSSE3; SSE2 is part of
        // x86_64.
        unsafe {
            let bswap = _mm_set_epi64x(0x0c0d_0e0f_0809_0a0b, 0x0405_0607_0001_0203);
            w.map(|w| w.map(|v| _mm_shuffle_epi8(v, bswap)))
        }
    }

    /// One SHA-256 block of two streams (`w`: each stream's message words,
    /// big-endian words already swapped, `W[0]` in lane 0), their sixteen
    /// groups of four rounds interleaved; `hook` runs after each group (`t`
    /// from 0 to 15 of 16), where `ni_cbc` places its AES rounds.
    ///
    /// Inlined into `#[target_feature]` kernels with SHA-NI and SSSE3, whose
    /// feature context its intrinsics need.
    #[inline(always)]
    fn pair_block(
        abef: &mut [__m128i; 2],
        cdgh: &mut [__m128i; 2],
        mut w: [[__m128i; 4]; 2],
        hook: &mut impl RoundHook,
    ) {
        // SAFETY: the caller's feature context has SHA-NI and SSSE3.
        unsafe {
            let (abef0, cdgh0) = (*abef, *cdgh);
            macro_rules! group {
                ($($g:literal)*) => {$({
                    const G: usize = $g;
                    let k = _mm_set_epi32(
                        K[4 * G + 3] as i32,
                        K[4 * G + 2] as i32,
                        K[4 * G + 1] as i32,
                        K[4 * G] as i32,
                    );
                    for i in 0..2 {
                        let w = &mut w[i];
                        if G >= 4 {
                            // W[t] = s1(W[t-2]) + W[t-7] + s0(W[t-15]) + W[t-16].
                            let w7 = _mm_alignr_epi8::<4>(w[(G + 3) % 4], w[(G + 2) % 4]);
                            w[G % 4] = _mm_sha256msg2_epu32(
                                _mm_add_epi32(_mm_sha256msg1_epu32(w[G % 4], w[(G + 1) % 4]), w7),
                                w[(G + 3) % 4],
                            );
                        }
                        let m = _mm_add_epi32(w[G % 4], k);
                        cdgh[i] = _mm_sha256rnds2_epu32(cdgh[i], abef[i], m);
                        abef[i] = _mm_sha256rnds2_epu32(abef[i], cdgh[i], _mm_shuffle_epi32::<0x0e>(m));
                        // Keeps the two chains interleaved group by group.
                        pin_xmm(&mut abef[i]);
                    }
                    hook.after_round(G, 16);
                })*};
            }
            group!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15);
            for i in 0..2 {
                abef[i] = _mm_add_epi32(abef[i], abef0[i]);
                cdgh[i] = _mm_add_epi32(cdgh[i], cdgh0[i]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::super::test_rng::SplitMix64;
    use super::super::sha1_x16::tests::{
        ABC_SHA1, ABC_SHA256, ROUNDS, abc_block, alternate, cpu_name, random_lanes, sha_ni, token,
    };
    use super::*;
    use crate::backends::portable::CrateCompress;
    use crate::primitives::hash::{Compress, HashFunction, Sha1, Sha256};

    fn shani(what: &str) -> Option<ShaNi> {
        let t = ShaNi::detect();
        if t.is_none() {
            eprintln!("SKIPPED: {what} (CPU lacks SHA-NI)");
        }
        t
    }

    fn random_streams(rng: &mut SplitMix64, blocks: usize) -> [Vec<u8>; 2] {
        core::array::from_fn(|i| {
            let mut v = vec![0u8; 64 * blocks + i * 5];
            rng.fill(&mut v);
            v
        })
    }

    #[test]
    fn sha1_matches_portable() {
        let Some(t) = shani("sha_ni_x2 SHA-1 against the portable compression") else {
            return;
        };
        let mut rng = SplitMix64(0x5a1_0002);
        for blocks in [0, 1, 2, 3, 17] {
            for _ in 0..8 {
                let streams = random_streams(&mut rng, blocks);
                let start: [[u32; 5]; 2] =
                    core::array::from_fn(|_| core::array::from_fn(|_| rng.next() as u32));
                let mut ours = start;
                compress_x2::<Sha1>(t, &mut ours, &[&streams[0], &streams[1]], blocks);
                for i in 0..2 {
                    let mut theirs = start[i];
                    let blocks = &streams[i].as_chunks::<64>().0[..blocks];
                    Compress::<Sha1>::compress(&CrateCompress, &mut theirs, blocks);
                    assert_eq!(ours[i], theirs, "stream {i}, {} blocks", blocks.len());
                }
            }
        }
    }

    #[test]
    fn sha256_matches_portable() {
        let Some(t) = shani("sha_ni_x2 SHA-256 against the portable compression") else {
            return;
        };
        let mut rng = SplitMix64(0x5a2_0002);
        for blocks in [0, 1, 2, 3, 17] {
            for _ in 0..8 {
                let streams = random_streams(&mut rng, blocks);
                let start: [[u32; 8]; 2] =
                    core::array::from_fn(|_| core::array::from_fn(|_| rng.next() as u32));
                let mut ours = start;
                compress_x2::<Sha256>(t, &mut ours, &[&streams[0], &streams[1]], blocks);
                for i in 0..2 {
                    let mut theirs = start[i];
                    let blocks = &streams[i].as_chunks::<64>().0[..blocks];
                    Compress::<Sha256>::compress(&CrateCompress, &mut theirs, blocks);
                    assert_eq!(ours[i], theirs, "stream {i}, {} blocks", blocks.len());
                }
            }
        }
    }

    #[test]
    fn abc_in_each_stream() {
        let Some(t) = shani("sha_ni_x2 FIPS 180-4 \"abc\"") else {
            return;
        };
        let padded = abc_block();
        let other = [0x5au8; 64];
        for lane in 0..2 {
            let mut data: [&[u8]; 2] = [&other, &other];
            data[lane] = &padded;
            let mut s1 = [<Sha1 as HashFunction>::INITIAL_STATE; 2];
            compress_x2::<Sha1>(t, &mut s1, &data, 1);
            let mut d1 = [0u8; 20];
            Sha1::write_output(&s1[lane], &mut d1);
            assert_eq!(d1, ABC_SHA1, "SHA-1 stream {lane}");
            let mut s2 = [<Sha256 as HashFunction>::INITIAL_STATE; 2];
            compress_x2::<Sha256>(t, &mut s2, &data, 1);
            let mut d2 = [0u8; 32];
            Sha256::write_output(&s2[lane], &mut d2);
            assert_eq!(d2, ABC_SHA256, "SHA-256 stream {lane}");
        }
    }

    /// Two streams of 16 KiB through the two-stream kernel against the
    /// same two one after the other on the single-stream kernel, on any
    /// CPU with SHA-NI (the sixteen-lane table below needs AVX-512): the
    /// gain `cpu::Tuning` weighs. Prints it; asserts only that both agree.
    #[test]
    fn two_streams_against_one() {
        let what = "sha_ni_x2 against one stream at a time";
        let (Some(t), Some(ni)) = (shani(what), sha_ni(what)) else {
            return;
        };
        const BLOCKS: usize = 256;
        let mut rng = SplitMix64(0xc055_0002);
        let lanes = random_lanes(&mut rng, BLOCKS);
        let data = [&lanes[0][..], &lanes[1][..]];
        fn one(d: &[u8]) -> &[[u8; 64]] {
            &d.as_chunks::<64>().0[..BLOCKS]
        }
        let mut s1 = [<Sha1 as HashFunction>::INITIAL_STATE; 2];
        let mut r1 = s1;
        let m1 = alternate(&mut [
            &mut || compress_x2::<Sha1>(t, std::hint::black_box(&mut s1), &data, BLOCKS),
            &mut || {
                for (st, d) in r1.iter_mut().zip(data) {
                    Compress::<Sha1>::compress(&ni, std::hint::black_box(st), one(d));
                }
            },
        ]);
        assert_eq!(s1, r1, "SHA-1: two streams and one at a time disagree");
        let mut s2 = [<Sha256 as HashFunction>::INITIAL_STATE; 2];
        let mut r2 = s2;
        let m2 = alternate(&mut [
            &mut || compress_x2::<Sha256>(t, std::hint::black_box(&mut s2), &data, BLOCKS),
            &mut || {
                for (st, d) in r2.iter_mut().zip(data) {
                    Compress::<Sha256>::compress(&ni, std::hint::black_box(st), one(d));
                }
            },
        ]);
        assert_eq!(s2, r2, "SHA-256: two streams and one at a time disagree");
        let per = |x: f64| x / (2 * BLOCKS) as f64 * 1e9;
        for (name, m) in [("SHA-1", m1), ("SHA-256", m2)] {
            println!(
                "{name} on {}: two streams {:.1} ns per block, one at a time {:.1}: \
                 {:.2}x as fast (median of {ROUNDS} alternating rounds)",
                cpu_name(),
                per(m[0].median),
                per(m[1].median),
                m[1].ratio
            );
        }
    }

    /// With `k` busy lanes of 16 KiB, the time per lane-block of one
    /// sixteen-lane AVX-512 call, of `k / 2` two-stream SHA-NI calls (and
    /// one single-stream call for an odd lane), and of `k` single-stream
    /// SHA-NI calls. Prints a table; asserts only that the three agree.
    fn crossover<const N: usize>(
        name: &str,
        x16: impl Fn(&mut [[u32; N]; 16], &[&[u8]; 16], usize),
        x2: impl Fn(&mut [[u32; N]; 2], &[&[u8]; 2], usize),
        one: impl Fn(&mut [u32; N], &[[u8; 64]]),
        initial: [u32; N],
    ) {
        const BLOCKS: usize = 256;
        let mut rng = SplitMix64(0xc055_0001);
        let lanes = random_lanes(&mut rng, BLOCKS);
        let idle = vec![0u8; 64 * BLOCKS];
        println!(
            "{name} crossover on {}, {BLOCKS} blocks per lane, \
             ns per busy lane-block, median of {ROUNDS} rounds (best):",
            cpu_name()
        );
        println!("  k |       x16       |       x2        |       x1        | best");
        for k in 1..=16 {
            // Idle lanes still run in the sixteen-lane call: give them
            // blocks (the batch layer parks them on a dummy block).
            let data: [&[u8]; 16] =
                core::array::from_fn(|i| if i < k { &lanes[i][..] } else { &idle[..] });
            let (mut a, mut b, mut c) = ([initial; 16], [initial; 16], [initial; 16]);
            let m = alternate(&mut [
                &mut || x16(std::hint::black_box(&mut a), &data, BLOCKS),
                &mut || {
                    for p in 0..k / 2 {
                        let mut pair = [b[2 * p], b[2 * p + 1]];
                        x2(
                            std::hint::black_box(&mut pair),
                            &[data[2 * p], data[2 * p + 1]],
                            BLOCKS,
                        );
                        [b[2 * p], b[2 * p + 1]] = pair;
                    }
                    if k % 2 == 1 {
                        one(&mut b[k - 1], &data[k - 1].as_chunks().0[..BLOCKS]);
                    }
                },
                &mut || {
                    for i in 0..k {
                        one(
                            std::hint::black_box(&mut c[i]),
                            &data[i].as_chunks().0[..BLOCKS],
                        );
                    }
                },
            ]);
            assert_eq!(a[..k], b[..k], "x16 and x2 disagree, k = {k}");
            assert_eq!(a[..k], c[..k], "x16 and x1 disagree, k = {k}");
            let per = |t: f64| t / (k * BLOCKS) as f64 * 1e9;
            let (t16, t2, t1) = (per(m[0].median), per(m[1].median), per(m[2].median));
            let (b16, b2, b1) = (per(m[0].least), per(m[1].least), per(m[2].least));
            let best = if t16 <= t2.min(t1) {
                "x16"
            } else if t2 <= t1 {
                "x2"
            } else {
                "x1"
            };
            println!(
                "{k:3} | {t16:7.1} ({b16:5.1}) | {t2:7.1} ({b2:5.1}) | {t1:7.1} ({b1:5.1}) | {best}"
            );
        }
    }

    #[test]
    fn crossover_table() {
        let what = "sha_ni_x2 crossover against sha*_x16";
        let (Some(v), Some(t), Some(ni)) = (token(what), shani(what), sha_ni(what)) else {
            return;
        };
        crossover::<5>(
            "SHA-1",
            |s, d, n| super::super::sha1_x16::compress_x16(v, s, d, n),
            |s, d, n| compress_x2::<Sha1>(t, s, d, n),
            |s, b| Compress::<Sha1>::compress(&ni, s, b),
            <Sha1 as HashFunction>::INITIAL_STATE,
        );
        crossover::<8>(
            "SHA-256",
            |s, d, n| super::super::sha256_x16::compress_x16(v, s, d, n),
            |s, d, n| compress_x2::<Sha256>(t, s, d, n),
            |s, b| Compress::<Sha256>::compress(&ni, s, b),
            <Sha256 as HashFunction>::INITIAL_STATE,
        );
    }
}
