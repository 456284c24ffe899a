//! SHA-256 compression in sixteen independent lanes with AVX-512.
//!
//! The layout is [`super::sha1_x16`]'s: register `j` holds word `j` of all
//! sixteen lanes, the message words come from the same transpose, and
//! every step of a round is one instruction for all lanes: `vprord` for
//! the rotations, `vpternlogd` for choice (`0xCA`), majority (`0xE8`) and
//! the three-way xors of the sigma functions (`0x96`), the round constants
//! as broadcast operands. The rounds are written over [`Words`], so
//! `sha_x8` compiles the same code for eight lanes in ymm registers.

use super::super::Vaes512;
use super::sha1_x16::{by_index, by16, lane_blocks, load_words, transpose_in, transpose_out};
use super::words::{RoundHook, Words};

/// SHA-256 round constants (FIPS 180-4 4.2.2).
pub(super) static K: [u32; 64] = [
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
];

/// SHA-256 compression in sixteen independent lanes: lane `i` runs `blocks`
/// 64-byte blocks from `data[i]` (which holds at least `64 * blocks` bytes)
/// into `states[i]`.
pub(crate) fn compress_x16(
    t: Vaes512,
    states: &mut [[u32; 8]; 16],
    data: &[&[u8]; 16],
    blocks: usize,
) {
    let _ = t;
    let lanes = lane_blocks(data, blocks);
    // SAFETY: `t` proves the CPU has AVX-512 F/BW/VL, all the kernel
    // enables.
    unsafe { kernel(states, &lanes) }
}

#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
fn kernel(states: &mut [[u32; 8]; 16], lanes: &[&[[u8; 64]]; 16]) {
    let blocks = lanes[0].len();
    let mut s = transpose_in(states);
    // `b` indexes the blocks of every lane at once.
    #[allow(clippy::needless_range_loop)]
    for b in 0..blocks {
        s = rounds(s, load_words(by16!(|i| &lanes[i][b])), &mut ());
    }
    transpose_out(s, states);
}

/// `ror(x, A) ^ ror(x, B) ^ ror(x, C)`.
#[inline(always)]
fn big_sigma<V: Words, const A: i32, const B: i32, const C: i32>(x: V) -> V {
    x.ror::<A>().ternary::<0x96>(x.ror::<B>(), x.ror::<C>())
}

/// The 64 rounds over one block of every lane, with the feed-forward;
/// for sixteen lanes (zmm) here and eight (ymm) in `sha_x8`.
#[inline(always)]
pub(super) fn rounds<V: Words>(s: [V; 8], mut w: [V; 16], hook: &mut impl RoundHook) -> [V; 8] {
    let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut h] = s;
    macro_rules! round {
        ($($t:literal)*) => {$({
            const T: usize = $t;
            if T >= 16 {
                // W[t] = s1(W[t-2]) + W[t-7] + s0(W[t-15]) + W[t-16].
                let x2 = w[(T + 14) % 16];
                let x15 = w[(T + 1) % 16];
                let s1 = x2.ror::<17>().ternary::<0x96>(x2.ror::<19>(), x2.shr::<10>());
                let s0 = x15.ror::<7>().ternary::<0x96>(x15.ror::<18>(), x15.shr::<3>());
                w[T % 16] = w[T % 16].add(w[(T + 9) % 16]).add(s0.add(s1));
            }
            // H + K + W is ready early; E's terms come last.
            let hkw = h.add(V::splat(K[T])).add(w[T % 16]);
            let ch = e.ternary::<0xCA>(f, g);
            let t1 = hkw.add(ch).add(big_sigma::<V, 6, 11, 25>(e));
            let maj = a.ternary::<0xE8>(b, c);
            let t2 = maj.add(big_sigma::<V, 2, 13, 22>(a));
            h = g;
            g = f;
            f = e;
            e = d.add(t1);
            d = c;
            c = b;
            b = a;
            a = t1.add(t2);
            hook.after_round(T, 64);
        })*};
    }
    round!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15);
    round!(16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31);
    round!(32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47);
    round!(48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63);
    let out = [a, b, c, d, e, f, g, h];
    core::array::from_fn(|j| out[j].add(s[j]))
}

#[cfg(test)]
mod tests {
    use super::super::super::test_rng::SplitMix64;
    use super::super::sha1_x16::tests::{
        ABC_SHA256, abc_block, random_lanes, refs, sha_ni, time_x16, token,
    };
    use super::*;
    use crate::backends::portable::CrateCompress;
    use crate::primitives::hash::{Compress, HashFunction, Sha256};

    #[test]
    fn matches_portable() {
        let Some(t) = token("sha256_x16 against the portable compression") else {
            return;
        };
        let mut rng = SplitMix64(0x2560_5a10_0016);
        for blocks in [0, 1, 2, 3, 17] {
            for _ in 0..4 {
                let lanes = random_lanes(&mut rng, blocks);
                let start: [[u32; 8]; 16] =
                    core::array::from_fn(|_| core::array::from_fn(|_| rng.next() as u32));
                let mut ours = start;
                compress_x16(t, &mut ours, &refs(&lanes), blocks);
                for i in 0..16 {
                    let mut theirs = start[i];
                    let (whole, _) = lanes[i].as_chunks::<64>();
                    Compress::<Sha256>::compress(&CrateCompress, &mut theirs, &whole[..blocks]);
                    assert_eq!(ours[i], theirs, "lane {i}, {blocks} blocks");
                }
                if blocks > 0 {
                    assert_ne!(ours, start, "{blocks} blocks left the states alone");
                }
            }
        }
    }

    #[test]
    fn abc_in_one_lane() {
        let Some(t) = token("sha256_x16 FIPS 180-4 \"abc\"") else {
            return;
        };
        let padded = abc_block();
        let mut rng = SplitMix64(0xabc2);
        let lanes = random_lanes(&mut rng, 1);
        for lane in [0, 7, 15] {
            let mut data = refs(&lanes);
            data[lane] = &padded;
            let mut states = [<Sha256 as HashFunction>::INITIAL_STATE; 16];
            compress_x16(t, &mut states, &data, 1);
            let mut digest = [0u8; 32];
            Sha256::write_output(&states[lane], &mut digest);
            assert_eq!(digest, ABC_SHA256, "lane {lane}");
        }
    }
    #[test]
    fn timing_against_sha_ni() {
        let what = "sha256_x16 timing against SHA-NI";
        let (Some(t), Some(ni)) = (token(what), sha_ni(what)) else {
            return;
        };
        time_x16(
            "sha256",
            <Sha256 as HashFunction>::INITIAL_STATE,
            |s, d, n| compress_x16(t, s, d, n),
            |s, b| Compress::<Sha256>::compress(&ni, s, b),
        );
    }
}
