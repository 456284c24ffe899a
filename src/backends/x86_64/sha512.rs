//! SHA-512 compression (for SHA-384 and SHA-512), cut into groups of rounds so that the
//! stitched seal can place AES rounds between them: in portable scalar code
//! ([`Sha384Scalar`]); with BMI2 for the rounds and AVX2 for the message
//! schedule ([`Sha384Avx2`]); and with AVX-512VL for the schedule and for
//! half of each round, the rest on BMI2 ([`Sha384Avx512`]). The kernels
//! are named after SHA-384, their first user; [`Sha512Of`] runs any of them
//! as SHA-512, which differs only in the initial value and the digest
//! length.
//!
//! SHA-512's 64-bit rounds run mostly on the integer units and the AES
//! rounds on the vector units, so the two chains share little but the
//! front end: the stitched AES-256-CBC + HMAC-SHA384 seal costs about what
//! the hash alone does.

use core::arch::x86_64::*;

use super::sha::HashKernel;
use crate::primitives::hash::{Sha384, Sha512};

/// SHA-384/512 round constants (FIPS 180-4 4.2.3).
pub(crate) static K512: [u64; 80] = [
    0x428a2f98d728ae22,
    0x7137449123ef65cd,
    0xb5c0fbcfec4d3b2f,
    0xe9b5dba58189dbbc,
    0x3956c25bf348b538,
    0x59f111f1b605d019,
    0x923f82a4af194f9b,
    0xab1c5ed5da6d8118,
    0xd807aa98a3030242,
    0x12835b0145706fbe,
    0x243185be4ee4b28c,
    0x550c7dc3d5ffb4e2,
    0x72be5d74f27b896f,
    0x80deb1fe3b1696b1,
    0x9bdc06a725c71235,
    0xc19bf174cf692694,
    0xe49b69c19ef14ad2,
    0xefbe4786384f25e3,
    0x0fc19dc68b8cd5b5,
    0x240ca1cc77ac9c65,
    0x2de92c6f592b0275,
    0x4a7484aa6ea6e483,
    0x5cb0a9dcbd41fbd4,
    0x76f988da831153b5,
    0x983e5152ee66dfab,
    0xa831c66d2db43210,
    0xb00327c898fb213f,
    0xbf597fc7beef0ee4,
    0xc6e00bf33da88fc2,
    0xd5a79147930aa725,
    0x06ca6351e003826f,
    0x142929670a0e6e70,
    0x27b70a8546d22ffc,
    0x2e1b21385c26c926,
    0x4d2c6dfc5ac42aed,
    0x53380d139d95b3df,
    0x650a73548baf63de,
    0x766a0abb3c77b2a8,
    0x81c2c92e47edaee6,
    0x92722c851482353b,
    0xa2bfe8a14cf10364,
    0xa81a664bbc423001,
    0xc24b8b70d0f89791,
    0xc76c51a30654be30,
    0xd192e819d6ef5218,
    0xd69906245565a910,
    0xf40e35855771202a,
    0x106aa07032bbd1b8,
    0x19a4c116b8d2d0c8,
    0x1e376c085141ab53,
    0x2748774cdf8eeb99,
    0x34b0bcb5e19b48a8,
    0x391c0cb3c5c95a63,
    0x4ed8aa4ae3418acb,
    0x5b9cca4f7763e373,
    0x682e6ff3d6b2b8a3,
    0x748f82ee5defb2fc,
    0x78a5636f43172f60,
    0x84c87814a1f0ab72,
    0x8cc702081a6439ec,
    0x90befffa23631e28,
    0xa4506cebde82bde9,
    0xbef9a3f7b2c67915,
    0xc67178f2e372532b,
    0xca273eceea26619c,
    0xd186b8c721c0c207,
    0xeada7dd6cde0eb1e,
    0xf57d4f7fee6ed178,
    0x06f067aa72176fba,
    0x0a637dc5a2c898a6,
    0x113f9804bef90dae,
    0x1b710b35131c471b,
    0x28db77f523047d84,
    0x32caab7b40c72493,
    0x3c9ebe0a15c9bebc,
    0x431d67c49c100d4c,
    0x4cc5d4becb3e42b6,
    0x597f299cfc657e2a,
    0x5fcb6fab3ad6faec,
    0x6c44198c4a475817,
];

/// SHA-512's compression for SHA-384 (the state type is the same), in
/// plain integer code compiled for feature set `I` (with the AVX2 set's
/// BMI2 the rotations become `rorx`).
pub(crate) struct Sha384Scalar<I>(core::marker::PhantomData<I>);

#[inline(always)]
fn big_sigma0(x: u64) -> u64 {
    x.rotate_right(28) ^ x.rotate_right(34) ^ x.rotate_right(39)
}

#[inline(always)]
fn big_sigma1(x: u64) -> u64 {
    x.rotate_right(14) ^ x.rotate_right(18) ^ x.rotate_right(41)
}

#[inline(always)]
fn small_sigma0(x: u64) -> u64 {
    x.rotate_right(1) ^ x.rotate_right(8) ^ (x >> 7)
}

#[inline(always)]
fn small_sigma1(x: u64) -> u64 {
    x.rotate_right(19) ^ x.rotate_right(61) ^ (x >> 6)
}

/// The feed-forward at the end of a compression: `state + working`, word
/// by word.
#[inline(always)]
fn feed_forward(state: [u64; 8], working: [u64; 8]) -> [u64; 8] {
    core::array::from_fn(|i| state[i].wrapping_add(working[i]))
}

/// 80 rounds over the message words `w`, calling `slot(g)` after each
/// group `g` of four rounds.
#[inline(always)]
fn rounds<F: FnMut(usize)>(state: [u64; 8], mut w: [u64; 16], mut slot: F) -> [u64; 8] {
    let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut h] = state;
    macro_rules! round {
        ($t:expr) => {
            let t: usize = $t;
            if t >= 16 {
                // W[t] = s1(W[t-2]) + W[t-7] + s0(W[t-15]) + W[t-16], in a
                // ring of sixteen words.
                w[t % 16] = w[t % 16]
                    .wrapping_add(small_sigma0(w[(t + 1) % 16]))
                    .wrapping_add(w[(t + 9) % 16])
                    .wrapping_add(small_sigma1(w[(t + 14) % 16]));
            }
            let t1 = h
                .wrapping_add(big_sigma1(e))
                .wrapping_add((e & f) ^ (!e & g))
                .wrapping_add(K512[t])
                .wrapping_add(w[t % 16]);
            let t2 = big_sigma0(a).wrapping_add((a & b) ^ (a & c) ^ (b & c));
            h = g;
            g = f;
            f = e;
            e = d.wrapping_add(t1);
            d = c;
            c = b;
            b = a;
            a = t1.wrapping_add(t2);
        };
    }
    macro_rules! group {
        ($($g:literal)*) => {
            $(
                round!(4 * $g);
                round!(4 * $g + 1);
                round!(4 * $g + 2);
                round!(4 * $g + 3);
                // Keep the slot's AES rounds here, between this group and
                // the next (see `pin_xmm`).
                super::pin_u64(&mut a);
                super::pin_u64(&mut e);
                slot($g);
            )*
        };
    }
    group!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19);
    feed_forward(state, [a, b, c, d, e, f, g, h])
}

impl<I: super::stitch::Isa> HashKernel for Sha384Scalar<I> {
    type H = Sha384;
    type Regs = [u64; 8];
    type Msg = [u64; 16];
    const BLOCK: usize = 128;
    type Isa = I;
    const GROUPS: usize = 20;

    #[inline(always)]
    unsafe fn load_state(state: &[u64; 8]) -> [u64; 8] {
        *state
    }

    #[inline(always)]
    unsafe fn store_state(regs: [u64; 8]) -> [u64; 8] {
        regs
    }

    #[inline(always)]
    unsafe fn load_msg(data: &[u8]) -> [u64; 16] {
        let data = &data[..128];
        core::array::from_fn(|i| u64::from_be_bytes(data[8 * i..8 * i + 8].try_into().expect("8")))
    }

    #[inline(always)]
    unsafe fn rounds<F: FnMut(usize)>(regs: [u64; 8], msg: [u64; 16], slot: F) -> [u64; 8] {
        rounds(regs, msg, slot)
    }

    #[inline(always)]
    unsafe fn outer_msg(inner: [u64; 8]) -> [u64; 16] {
        // The 48-byte SHA-384 digest, 0x80, zeros, and the 128-bit bit
        // length of the key block and the digest.
        let mut m = [0u64; 16];
        m[..6].copy_from_slice(&inner[..6]);
        m[6] = 0x8000_0000_0000_0000;
        m[15] = (128 + 48) * 8;
        m
    }

    #[inline(always)]
    unsafe fn write_digest(regs: [u64; 8], out: &mut [u8]) {
        for (chunk, word) in out[..48].chunks_exact_mut(8).zip(regs) {
            chunk.copy_from_slice(&word.to_be_bytes());
        }
    }
}

/// SHA-512's compression for SHA-384 with AVX2 and BMI1/2: the message
/// schedule in xmm registers, two words at a time, the round constants
/// added there too, and the rounds in scalar assembly (`rorx`, `andn`).
///
/// The schedule of group `g + 4` is computed alongside the rounds of group
/// `g`: the vector units work on it while the integer units run the
/// rounds, and the rounds read the sums `W[t] + K[t]` from a small ring in
/// memory.
#[cfg_attr(not(test), allow(dead_code))] // wired into the backends separately
pub(crate) struct Sha384Avx2;

/// [`Sha384Avx2`] with the message schedule in AVX-512VL, and the a half
/// of each round too (see [`rounds_split`]). In the schedule, `vprorq` and
/// `vpternlogq` take the sigmas from 16 instructions per pair of words to
/// 8, which the front end, shared with the rounds, feels (about 7% faster
/// on AMD Zen 4); the split rounds gain about 5% more. Needs the
/// [`super::Avx512Bmi`] token (AVX2, BMI1, BMI2 and AVX-512 F/BW/VL).
pub(crate) struct Sha384Avx512;

/// Reverses the bytes of each 64-bit lane.
#[inline]
#[target_feature(enable = "avx2,bmi1,bmi2,ssse3,sse4.1")]
fn bswap64x2(x: __m128i) -> __m128i {
    let mask = _mm_set_epi64x(0x0809_0a0b_0c0d_0e0f, 0x0001_0203_0405_0607);
    _mm_shuffle_epi8(x, mask)
}

/// `small_sigma0` on both lanes.
#[inline]
#[target_feature(enable = "avx2,bmi1,bmi2,ssse3,sse4.1")]
fn small_sigma0x2(x: __m128i) -> __m128i {
    // A rotation by 8 is a byte shuffle within each lane.
    let ror8 = _mm_set_epi64x(0x080f_0e0d_0c0b_0a09, 0x0007_0605_0403_0201);
    let r1 = _mm_xor_si128(_mm_srli_epi64::<1>(x), _mm_slli_epi64::<63>(x));
    let r8 = _mm_xor_si128(_mm_shuffle_epi8(x, ror8), _mm_srli_epi64::<7>(x));
    _mm_xor_si128(r1, r8)
}

/// `small_sigma1` on both lanes.
#[inline]
#[target_feature(enable = "avx2,bmi1,bmi2,ssse3,sse4.1")]
fn small_sigma1x2(x: __m128i) -> __m128i {
    let r19 = _mm_xor_si128(_mm_srli_epi64::<19>(x), _mm_slli_epi64::<45>(x));
    let r61 = _mm_xor_si128(_mm_srli_epi64::<61>(x), _mm_slli_epi64::<3>(x));
    _mm_xor_si128(_mm_xor_si128(r19, r61), _mm_srli_epi64::<6>(x))
}

/// `small_sigma0` on both lanes, with AVX-512VL.
#[inline]
#[target_feature(enable = "avx512f,avx512vl,avx2,bmi1,bmi2,ssse3,sse4.1")]
fn small_sigma0x2_vl(x: __m128i) -> __m128i {
    let (r1, r8) = (_mm_ror_epi64::<1>(x), _mm_ror_epi64::<8>(x));
    _mm_ternarylogic_epi64::<0x96>(r1, r8, _mm_srli_epi64::<7>(x))
}

/// `small_sigma1` on both lanes, with AVX-512VL.
#[inline]
#[target_feature(enable = "avx512f,avx512vl,avx2,bmi1,bmi2,ssse3,sse4.1")]
fn small_sigma1x2_vl(x: __m128i) -> __m128i {
    let (r19, r61) = (_mm_ror_epi64::<19>(x), _mm_ror_epi64::<61>(x));
    _mm_ternarylogic_epi64::<0x96>(r19, r61, _mm_srli_epi64::<6>(x))
}

/// The message schedule two words at a time, one implementation per
/// instruction set.
trait Schedule {
    /// Words `2 p` and `2 p + 1` (`p >= 8`): `W[t] = s1(W[t-2]) + W[t-7] +
    /// s0(W[t-15]) + W[t-16]`, from the ring `x` of the last sixteen words
    /// (pair `p - 8` in `x[p % 8]`, which the new pair replaces). Returns
    /// the new pair plus its round constants.
    ///
    /// # Safety
    /// The CPU must have the features the implementation enables.
    unsafe fn next_pair(x: &mut [__m128i; 8], p: usize) -> __m128i;
}

/// The schedule with AVX2 shifts and shuffles.
struct Avx2Schedule;

/// The schedule with AVX-512VL rotations and three-way xors.
struct Avx512Schedule;

impl Schedule for Avx2Schedule {
    #[inline]
    #[target_feature(enable = "avx2,bmi1,bmi2,ssse3,sse4.1")]
    unsafe fn next_pair(x: &mut [__m128i; 8], p: usize) -> __m128i {
        let w15 = _mm_alignr_epi8::<8>(x[(p + 1) % 8], x[p % 8]);
        let w7 = _mm_alignr_epi8::<8>(x[(p + 5) % 8], x[(p + 4) % 8]);
        let s = _mm_add_epi64(_mm_add_epi64(x[p % 8], small_sigma0x2(w15)), w7);
        x[p % 8] = _mm_add_epi64(s, small_sigma1x2(x[(p + 7) % 8]));
        _mm_add_epi64(x[p % 8], k512x2(p))
    }
}

impl Schedule for Avx512Schedule {
    #[inline]
    #[target_feature(enable = "avx512f,avx512vl,avx2,bmi1,bmi2,ssse3,sse4.1")]
    unsafe fn next_pair(x: &mut [__m128i; 8], p: usize) -> __m128i {
        let w15 = _mm_alignr_epi8::<8>(x[(p + 1) % 8], x[p % 8]);
        let w7 = _mm_alignr_epi8::<8>(x[(p + 5) % 8], x[(p + 4) % 8]);
        let s = _mm_add_epi64(_mm_add_epi64(x[p % 8], small_sigma0x2_vl(w15)), w7);
        x[p % 8] = _mm_add_epi64(s, small_sigma1x2_vl(x[(p + 7) % 8]));
        _mm_add_epi64(x[p % 8], k512x2(p))
    }
}

/// `K512[2 i]` and `K512[2 i + 1]`.
#[inline(always)]
fn k512x2(i: usize) -> __m128i {
    let k: &[u64; 2] = K512[2 * i..2 * i + 2].try_into().expect("2 words");
    // SAFETY: `k` is 16 readable bytes; `loadu` needs no alignment.
    unsafe { _mm_loadu_si128(k.as_ptr().cast()) }
}

/// The sums `W[t] + K[t]` for the rounds, in pairs (16-byte aligned, so a
/// pair never straddles a cache line).
#[repr(align(16))]
struct Wk([[u64; 2]; 16]);

/// Stores `x` in `out` (lane 0 first).
#[inline(always)]
fn store2(out: &mut [u64; 2], x: __m128i) {
    // SAFETY: `out` is 16 writable bytes; `storeu` needs no alignment.
    unsafe { _mm_storeu_si128(out.as_mut_ptr().cast(), x) }
}

/// The a half of a round on the integer units: `t1 += Sigma0(a) + Maj(a,
/// b, c)`, with Maj = ((a ^ b) & (b ^ c)) ^ b from `bc` = b ^ c; `ab`
/// receives a ^ b (the next round's `bc`). For the five-step rounds of the
/// two-block loop of `sha512_pair`, which every CPU but AMD Zen 5 runs
/// (see `Tuning::sha512_pairs_four_step`): on Intel family 6 model 0xCF,
/// [`a_part`] and [`e_half4`] there ran 11-17% slower (three more
/// instructions a round, where the loop is bound by throughput, not by the
/// e chain's latency; medians of 3 runs of 401 alternating rounds), on AMD
/// Zen 3 (family 0x19 model 1) 5% slower in the rolled loop.
macro_rules! a_part_t1 {
    ($a:expr, $b:expr, $bc:expr, $t1:expr, $ab:expr) => {
        // SAFETY: registers only.
        unsafe {
            core::arch::asm!(
                "rorx {s0}, {a}, 28",
                "mov {ab}, {a}",
                "rorx {s}, {a}, 34",
                "xor {ab}, {b}",
                "xor {s0}, {s}",
                "rorx {s}, {a}, 39",
                "and {bc}, {ab}",
                "xor {s0}, {s}",
                "xor {bc}, {b}",
                "add {t1}, {s0}",
                "add {t1}, {bc}",
                a = in(reg) $a,
                b = in(reg) $b,
                bc = inout(reg) $bc => _,
                t1 = inout(reg) $t1,
                ab = out(reg) $ab,
                s0 = out(reg) _,
                s = out(reg) _,
                options(nomem, nostack),
            );
        }
    };
}
pub(super) use a_part_t1;

/// The a half of a round on the integer units, after [`e_half4`]: from
/// `z` = (b & c) - d and the round's new e (`ne` = d + T1), the new a =
/// T1 + Sigma0(a) + Maj(a, b, c) in `z`, with Maj = (a & (b ^ c)) + (b &
/// c) (the two terms have no bit in common, so + is |) from `bc` = b ^ c;
/// `ab` receives a ^ b (the next round's `bc`). Four dependent operations
/// after a: the and, an add, then Sigma0's rotations and xors beside it,
/// and the last add. For `rounds_with`; expands to the `asm!` alone, in
/// the caller's `unsafe`.
macro_rules! a_part {
    ($a:expr, $b:expr, $bc:expr, $ne:expr, $z:expr, $ab:expr) => {
        core::arch::asm!(
            "add {z}, {ne}",
            "and {bc}, {a}",
            "rorx {s0}, {a}, 28",
            "add {z}, {bc}",
            "rorx {s}, {a}, 34",
            "xor {s0}, {s}",
            "rorx {s}, {a}, 39",
            "xor {s0}, {s}",
            "mov {ab}, {a}",
            "add {z}, {s0}",
            "xor {ab}, {b}",
            a = in(reg) $a,
            b = in(reg) $b,
            bc = inout(reg) $bc => _,
            ne = in(reg) $ne,
            z = inout(reg) $z,
            ab = out(reg) $ab,
            s0 = out(reg) _,
            s = out(reg) _,
            options(nomem, nostack),
        )
    };
}
pub(super) use a_part;

/// The e half of a round on the integer units, for [`a_part`]: the new e
/// in `d`, as ((d + h + W[t] + K[t]) + (e & f)) + (!e & g)) + Sigma1(e)
/// (Ch's two terms have no bit in common, so + is ^): four dependent
/// operations after e, where h += Ch, += Sigma1, then d += h took five
/// (with [`a_part`]'s four, 6% faster per block than the five-step rounds
/// on AMD Zen 5, family 0x1A model 2: 110 against 118 ns in the pair
/// loop, 120 against 127 alone, best of 3000 timings). T1 is
/// not formed: `z` receives (b & c) - d, which `a_part` turns into T1 +
/// (b & c) by adding the new e. Reads `W[t] + K[t]` at `$base + $off`;
/// `h` is clobbered. Expands to the `asm!` alone, in the caller's `unsafe`.
macro_rules! e_half4 {
    ($base:expr, $off:expr, $e:expr, $f:expr, $g:expr, $h:expr, $d:expr, $b:expr, $c:expr, $z:expr) => {
        core::arch::asm!(
            "add {h}, qword ptr [{base} + {off}]",
            "mov {z}, {b}",
            "rorx {s}, {e}, 14",
            "and {z}, {c}",
            "sub {z}, {d}",
            "add {d}, {h}",
            "mov {h}, {f}",
            "and {h}, {e}",
            "add {d}, {h}",
            "rorx {h}, {e}, 18",
            "xor {s}, {h}",
            "andn {h}, {e}, {g}",
            "add {d}, {h}",
            "rorx {h}, {e}, 41",
            "xor {s}, {h}",
            "add {d}, {s}",
            base = in(reg) $base,
            off = const $off,
            e = in(reg) $e,
            f = in(reg) $f,
            g = in(reg) $g,
            h = inout(reg) $h => _,
            d = inout(reg) $d,
            b = in(reg) $b,
            c = in(reg) $c,
            z = out(reg) $z,
            s = out(reg) _,
            options(readonly, nostack),
        )
    };
}
pub(super) use e_half4;

/// Half a round on the integer units: `h += W[t] + K[t] + Ch(e, f, g) +
/// Sigma1(e)` (now T1), then `d += h`, reading `W[t] + K[t]` at `$base +
/// $off`: five dependent operations after e. For [`rounds_split`], whose
/// vector a half needs T1 itself, and the five-step rounds of
/// `sha512_pair`; the one-block integer rounds use [`e_half4`]. Expands to
/// the `asm!` alone, in the caller's `unsafe`.
macro_rules! e_half {
    ($base:expr, $off:expr, $e:expr, $f:expr, $g:expr, $h:expr, $d:expr) => {
        core::arch::asm!(
            "rorx {t1}, {e}, 14",
            "rorx {t2}, {e}, 18",
            "add {h}, qword ptr [{base} + {off}]",
            "mov {t0}, {f}",
            "and {t0}, {e}",
            "xor {t1}, {t2}",
            "rorx {t2}, {e}, 41",
            "add {h}, {t0}",
            "andn {t0}, {e}, {g}",
            "xor {t1}, {t2}",
            "add {h}, {t0}",
            "add {h}, {t1}",
            "add {d}, {h}",
            base = in(reg) $base,
            off = const $off,
            e = in(reg) $e,
            f = in(reg) $f,
            g = in(reg) $g,
            h = inout(reg) $h,
            d = inout(reg) $d,
            t0 = out(reg) _,
            t1 = out(reg) _,
            t2 = out(reg) _,
            options(readonly, nostack),
        )
    };
}
pub(super) use e_half;

/// The ring of sums `W[t] + K[t]` the rounds read, filled for rounds 0 to
/// 15 from the message words `msg` (in pairs, lane 0 first).
#[inline(always)]
fn first_sums(msg: [__m128i; 8]) -> Wk {
    let mut wk = Wk([[0u64; 2]; 16]);
    for (i, &m) in msg.iter().enumerate() {
        // SAFETY: SSE2 is part of the x86-64 baseline.
        store2(&mut wk.0[i], unsafe { _mm_add_epi64(m, k512x2(i)) });
    }
    wk
}

/// 80 rounds over the message `msg` (words `2 i` and `2 i + 1` in
/// `msg[i]`, lane 0 first), calling `slot(g)` after each group `g` of four
/// rounds, with schedule `S`.
///
/// # Safety
/// The CPU must have BMI1, BMI2 and the features of `S`; always inlined,
/// into functions that enable them.
#[inline(always)]
unsafe fn rounds_with<S: Schedule, F: FnMut(usize)>(
    state: [u64; 8],
    msg: [__m128i; 8],
    mut slot: F,
) -> [u64; 8] {
    // The message words in pairs, a ring of the last sixteen words.
    let mut x = msg;
    // W[t] + K[t] at `wk[t % 32]`: the schedule writes sixteen words ahead
    // of the rounds, so a ring of 32 keeps it clear of the words in use.
    let mut wk = first_sums(msg);
    let [a, b, c, d, e, f, g, h] = state;
    // The rounds in assembly, each in two halves: the e half computes the
    // new e (d + T1) and (b & c) - d, the a half from those the new a (T1 +
    // Sigma0(a) + Maj(a, b, c)); see `e_half4` and `a_part`. Written as
    // Rust, the compiler reassociates the sums to add the W + K load last,
    // after Sigma1(e) (a cycle more on the e chain each round), and reads
    // W + K out of the vector registers with `pextrq`.
    //
    // Round t's a half follows round t + 1's e half, so that the e chain,
    // the critical path, is older in the schedulers than the a work beside
    // it and goes first onto the two ALUs that run `rorx` (six per round)
    // on Intel. On AMD Zen 5 (family 0x1A model 2) the a half first, with
    // the next round's (b & c) - d moved into it, measured 3% slower.
    //
    // With A[t] and E[t] the a and e of round t (A[0] = a, A[-1] = b, ...,
    // E[-3] = h), before round t the variables hold A[t-1], A[t-2],
    // A[t-3], A[t-2] ^ A[t-3] (for Maj), (A[t-2] & A[t-3]) - A[t-4] (round
    // t - 1's `z`), and E[t] .. E[t-3].
    let (mut p1, mut p2, mut p3, mut bcp) = (b, c, d, c ^ d);
    let mut zp = 0u64;
    // A[80], from round 79's a half.
    let mut a80 = 0u64;
    let (mut e0, mut e1, mut e2, mut e3) = (e, f, g, h);
    macro_rules! schedule {
        ($p:expr) => {
            // SAFETY: the caller guarantees the features of `S`.
            let pair = unsafe { S::next_pair(&mut x, $p) };
            store2(&mut wk.0[$p % 16], pair);
        };
    }
    macro_rules! round {
        ($t:expr) => {
            let t: usize = $t;
            let mut ne = p3;
            let z: u64;
            let wkp = wk.0.as_ptr();
            // SAFETY: reads the 8 bytes of `wk` at offset 8 (t % 32),
            // inside the 256-byte array; registers only otherwise.
            unsafe { e_half4!(wkp, ($t % 32) * 8, e0, e1, e2, e3, ne, p1, p2, z) };
            let (na, ab): (u64, u64);
            // Round t - 1's a half (A[0] is the state's a).
            if t == 0 {
                (na, ab) = (a, b ^ c);
            } else {
                let mut x = zp;
                let y: u64;
                // SAFETY: registers only.
                unsafe { a_part!(p1, p2, bcp, e0, x, y) };
                (na, ab) = (x, y);
            }
            p3 = p2;
            p2 = p1;
            p1 = na;
            bcp = ab;
            zp = z;
            e3 = e2;
            e2 = e1;
            e1 = e0;
            e0 = ne;
        };
    }
    macro_rules! group {
        ($($g:literal)*) => {
            $(
                if $g < 16 {
                    // Group g + 4's words, ahead of the rounds that use them.
                    schedule!(2 * $g + 8);
                    schedule!(2 * $g + 9);
                }
                round!(4 * $g);
                round!(4 * $g + 1);
                round!(4 * $g + 2);
                round!(4 * $g + 3);
                // Keep the slot's AES rounds here, between this group and
                // the next (see `pin_xmm`).
                if $g == 19 {
                    // Round 79's deferred half.
                    let mut x = zp;
                    let y: u64;
                    // SAFETY: registers only.
                    unsafe { a_part!(p1, p2, bcp, e0, x, y) };
                    debug_assert_eq!(y, p1 ^ p2);
                    a80 = x;
                }
                super::pin_u64(&mut p1);
                super::pin_u64(&mut e0);
                slot($g);
            )*
        };
    }
    group!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19);
    feed_forward(state, [a80, p1, p2, p3, e0, e1, e2, e3])
}

/// The a half of a round on the vector units, in lane 0: `T1 + Maj(a, b,
/// c) + Sigma0(a)` from `a`, `b`, `c` and the e half's T1.
///
/// `vprorq` has two cycles of latency where `rorx` has one, but the a
/// chain is not the critical path: moving its ten operations off the
/// integer units leaves those to the e chain.
#[inline]
#[target_feature(enable = "avx512f,avx512vl")]
fn a_half_vl(a: __m128i, b: __m128i, c: __m128i, t1: u64) -> __m128i {
    let maj = _mm_ternarylogic_epi64::<0xe8>(a, b, c);
    let (r28, r34, r39) = (
        _mm_ror_epi64::<28>(a),
        _mm_ror_epi64::<34>(a),
        _mm_ror_epi64::<39>(a),
    );
    let sigma0 = _mm_ternarylogic_epi64::<0x96>(r28, r34, r39);
    // T1 arrives last (from the integer units, a few cycles late): add it
    // to Maj, which is ready early, and Sigma0 after, so that the new a
    // waits for one addition after each of them, not two.
    let mut t1_maj = _mm_add_epi64(maj, _mm_cvtsi64_si128(t1 as i64));
    super::pin_xmm(&mut t1_maj);
    _mm_add_epi64(t1_maj, sigma0)
}

/// 80 rounds as [`rounds_with`], with each round split across the two
/// kinds of execution unit: the e half (the critical path) in integer
/// assembly, the a half in xmm lane 0 with AVX-512VL. T1 goes over to the
/// vector side and each new a comes back, as the d of the e half three
/// rounds later, by `vmovq`; the three cycles each way are off the e chain.
/// With the AVX-512 schedule, about 5% faster than [`rounds_with`] on AMD
/// Zen 4, whose integer units the scalar rounds saturate.
///
/// # Safety
/// The CPU must have BMI1, BMI2 and AVX-512 F and VL and the features of
/// `S`; always inlined, into functions that enable them.
#[inline(always)]
unsafe fn rounds_split<S: Schedule, F: FnMut(usize)>(
    state: [u64; 8],
    msg: [__m128i; 8],
    mut slot: F,
) -> [u64; 8] {
    let mut x = msg;
    let mut wk = first_sums(msg);
    let [a, b, c, d, e, f, g, h] = state;
    // SAFETY: SSE2 is part of the x86-64 baseline.
    let lane0 = |w: u64| unsafe { _mm_cvtsi64_si128(w as i64) };
    // SAFETY: as above.
    let word = |v: __m128i| unsafe { _mm_cvtsi128_si64(v) as u64 };
    // Before round t, with A[t] and E[t] the a and e of round t (A[0] = a,
    // A[-1] = b, ..., E[-3] = h): A[t], A[t-1], A[t-2] in the vector
    // registers, A[t-3] .. A[t] in the integer ones (the d of rounds t ..
    // t + 3), and E[t] .. E[t-3].
    let (mut va1, mut va2, mut va3) = (lane0(a), lane0(b), lane0(c));
    let (mut d0, mut d1, mut d2, mut d3) = (d, c, b, a);
    let (mut e0, mut e1, mut e2, mut e3) = (e, f, g, h);
    macro_rules! round {
        ($t:expr) => {
            let (mut t1, mut ne) = (e3, d0);
            let wkp = wk.0.as_ptr();
            // SAFETY: reads the 8 bytes of `wk` at offset 8 (t % 32),
            // inside the 256-byte array; registers only otherwise.
            unsafe { e_half!(wkp, ($t % 32) * 8, e0, e1, e2, t1, ne) };
            // SAFETY: the caller guarantees AVX-512 F and VL.
            let na = unsafe { a_half_vl(va1, va2, va3, t1) };
            (va3, va2, va1) = (va2, va1, na);
            (d0, d1, d2, d3) = (d1, d2, d3, word(na));
            (e3, e2, e1, e0) = (e2, e1, e0, ne);
        };
    }
    macro_rules! group {
        ($($g:literal)*) => {
            $(
                if $g < 16 {
                    // Group g + 4's words, ahead of the rounds that use them.
                    for p in [2 * $g + 8, 2 * $g + 9] {
                        // SAFETY: the caller guarantees the features of `S`.
                        store2(&mut wk.0[p % 16], unsafe { S::next_pair(&mut x, p) });
                    }
                }
                round!(4 * $g);
                round!(4 * $g + 1);
                round!(4 * $g + 2);
                round!(4 * $g + 3);
                // Keep the slot's AES rounds here, between this group and
                // the next (see `pin_xmm`).
                super::pin_xmm(&mut va1);
                super::pin_u64(&mut e0);
                slot($g);
            )*
        };
    }
    group!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19);
    // The last rounds' copies of the new a go unread.
    let _ = (d1, d2, d3);
    feed_forward(state, [word(va1), word(va2), word(va3), d0, e0, e1, e2, e3])
}

/// The [`HashKernel`] implementation of `$kernel` with round function
/// `$rounds` and schedule `$schedule`, and `$blocks`, a compression loop
/// over blocks.
macro_rules! sha512_kernel {
    ($kernel:ident, $rounds:ident, $schedule:ty, $blocks:ident, $isa:ty, $features:literal) => {
        impl HashKernel for $kernel {
            type H = Sha384;
            type Regs = [u64; 8];
            type Msg = [__m128i; 8];
            const BLOCK: usize = 128;
            type Isa = $isa;
            const GROUPS: usize = 20;

            #[inline]
            #[target_feature(enable = $features)]
            unsafe fn load_state(state: &[u64; 8]) -> [u64; 8] {
                *state
            }

            #[inline]
            #[target_feature(enable = $features)]
            unsafe fn store_state(regs: [u64; 8]) -> [u64; 8] {
                regs
            }

            #[inline]
            #[target_feature(enable = $features)]
            unsafe fn load_msg(data: &[u8]) -> [__m128i; 8] {
                core::array::from_fn(|i| bswap64x2(super::load(super::block(data, 16 * i))))
            }

            #[inline]
            #[target_feature(enable = $features)]
            unsafe fn rounds<F: FnMut(usize)>(
                regs: [u64; 8],
                msg: [__m128i; 8],
                slot: F,
            ) -> [u64; 8] {
                // SAFETY: this function enables the features of BMI and of the
                // schedule.
                unsafe { $rounds::<$schedule, F>(regs, msg, slot) }
            }

            #[inline]
            #[target_feature(enable = $features)]
            unsafe fn outer_msg(inner: [u64; 8]) -> [__m128i; 8] {
                // As `Sha384Scalar::outer_msg`, in pairs (word 2 i in lane 0).
                let pair = |lo: u64, hi: u64| _mm_set_epi64x(hi as i64, lo as i64);
                [
                    pair(inner[0], inner[1]),
                    pair(inner[2], inner[3]),
                    pair(inner[4], inner[5]),
                    pair(0x8000_0000_0000_0000, 0),
                    _mm_setzero_si128(),
                    _mm_setzero_si128(),
                    _mm_setzero_si128(),
                    pair(0, (128 + 48) * 8),
                ]
            }

            #[inline]
            #[target_feature(enable = $features)]
            unsafe fn write_digest(regs: [u64; 8], out: &mut [u8]) {
                for (chunk, word) in out[..48].chunks_exact_mut(8).zip(regs) {
                    chunk.copy_from_slice(&word.to_be_bytes());
                }
            }
        }

        /// The compression of `blocks`, one at a time (see
        /// [`PAIRS_FROM`] for when the pair loop takes over).
        #[target_feature(enable = $features)]
        pub(super) fn $blocks(state: &mut [u64; 8], blocks: &[[u8; 128]]) {
            let mut regs = *state;
            for b in blocks {
                // SAFETY: this function enables the kernel's features.
                regs = unsafe { $kernel::compress(regs, b) };
            }
            *state = regs;
        }
    };
}

sha512_kernel!(
    Sha384Avx2,
    rounds_with,
    Avx2Schedule,
    compress_blocks_avx2,
    super::Avx2,
    "avx2,bmi1,bmi2,ssse3,sse4.1"
);
sha512_kernel!(
    Sha384Avx512,
    rounds_split,
    Avx512Schedule,
    compress_blocks_avx512,
    super::Avx512Bmi,
    "avx512f,avx512vl,avx2,bmi1,bmi2,ssse3,sse4.1"
);

/// The number of blocks from which the bulk compressions go through the
/// two-block loop of `sha512_pair`: below it, its setup costs more than it
/// saves (measured on Intel Xeon family 6 model 0xCF: 4-7% faster at 128
/// blocks, about even at 8, slower at 2 and 3).
const PAIRS_FROM: usize = 8;

/// [`PAIRS_FROM`] on the CPUs whose `Tuning` asks for short pairs
/// (`sha512_short_pairs`): on AMD family 0x19 model 1 (Zen 3) the rolled
/// pair loop took 20% less time a block than the one-block AVX2 kernel at
/// two blocks as at eight (medians of 301 alternating rounds).
const SHORT_PAIRS_FROM: usize = 2;

/// The number of blocks from which the bulk compressions go through the
/// four-block loop of `sha512_quad`, on the CPUs whose `Tuning` asks for
/// it: on Intel Xeon family 6 model 0xCF it is 4-8% faster than the
/// one-block AVX-512VL kernel at 4 and 5 blocks (medians of 2001 timings),
/// and 2-6% faster than the pair loop from 8 blocks on.
const QUADS_FROM: usize = 4;

/// [`Sha512Kernel::name`] of the AVX2 kernel, by the pair loop's layout
/// (unrolled, rolled, rolled on the four-step rounds), then by where short
/// runs go: runs of two blocks or more through the loop
/// (`sha512_short_pairs`, bit 0), single blocks on the rolled loop's code
/// (`sha512_single_rolled`, bit 1). Named so that reports tell apart rows
/// of the per-CPU table that differ only there.
const AVX2_NAMES: [[&str; 4]; 3] = [
    [
        "AVX2 schedule, BMI2 rounds",
        "AVX2 schedule, BMI2 rounds, two-block loop from two blocks",
        "AVX2 schedule, BMI2 rounds, single blocks on the rolled loop's code",
        "AVX2 schedule, BMI2 rounds, two-block loop from two blocks, single blocks on the rolled loop's code",
    ],
    [
        "AVX2 schedule, BMI2 rounds, rolled two-block loop",
        "AVX2 schedule, BMI2 rounds, rolled two-block loop from two blocks",
        "AVX2 schedule, BMI2 rounds, rolled two-block loop, single blocks on its code",
        "AVX2 schedule, BMI2 rounds, rolled two-block loop from two blocks, single blocks on its code",
    ],
    [
        "AVX2 schedule, BMI2 rounds, rolled two-block loop, four-step rounds",
        "AVX2 schedule, BMI2 rounds, rolled two-block loop from two blocks, four-step rounds",
        "AVX2 schedule, BMI2 rounds, rolled two-block loop, single blocks on its code, four-step rounds",
        "AVX2 schedule, BMI2 rounds, rolled two-block loop from two blocks, single blocks on its code, four-step rounds",
    ],
];

/// The code layout of the pair loop on this CPU.
pub(super) fn pair_layout() -> super::sha512_pair::Layout {
    use super::sha512_pair::Layout;
    let t = crate::backends::cpu::Tuning::get();
    match (t.sha512_pairs_rolled, t.sha512_pairs_four_step) {
        (true, true) => Layout::RolledFourStep,
        (true, false) => Layout::Rolled,
        (false, _) => Layout::Unrolled,
    }
}

/// The shortest run the pair loop takes on this CPU.
fn pairs_from(tuning: crate::backends::cpu::Tuning) -> usize {
    if tuning.sha512_short_pairs {
        SHORT_PAIRS_FROM
    } else {
        PAIRS_FROM
    }
}

/// SHA-512's compression of `blocks` into `state` with [`Sha384Avx2`] (the
/// two-block loop for long runs, on the CPUs whose `Tuning` asks for it).
pub(crate) fn compress512_avx2(token: super::Avx2, state: &mut [u64; 8], blocks: &[[u8; 128]]) {
    let _ = token;
    let tuning = crate::backends::cpu::Tuning::get();
    if blocks.len() >= pairs_from(tuning) && tuning.sha512_pairs_avx2 {
        // SAFETY: `token` proves the CPU has AVX2, BMI1, BMI2, SSSE3 and
        // SSE4.1, the features the loop enables.
        unsafe { super::sha512_pair::compress_pairs(pair_layout(), state, blocks) }
    } else if tuning.sha512_single_rolled {
        // SAFETY: as above.
        unsafe { super::sha512_pair::compress_one(state, blocks) }
    } else {
        // SAFETY: as above, the features the kernel enables.
        unsafe { compress_blocks_avx2(state, blocks) }
    }
}

/// SHA-512's compression of `blocks` into `state` with [`Sha384Avx512`].
pub(crate) fn compress512_avx512(
    token: super::Avx512Bmi,
    state: &mut [u64; 8],
    blocks: &[[u8; 128]],
) {
    let _ = token;
    let tuning = crate::backends::cpu::Tuning::get();
    if blocks.len() >= QUADS_FROM && tuning.sha512_quads {
        // SAFETY: `token` proves the CPU has AVX-512 F, BW and VL, AVX2,
        // BMI1, BMI2, SSSE3 and SSE4.1, the features the loop enables.
        unsafe {
            if tuning.sha512_pairs_four_step {
                super::sha512_quad::compress_quads::<true>(state, blocks)
            } else {
                super::sha512_quad::compress_quads::<false>(state, blocks)
            }
        }
    } else if blocks.len() >= pairs_from(tuning) && tuning.sha512_pairs_avx512 {
        // Long runs in pairs, with the AVX2 schedule (compiled without
        // AVX-512: on Intel Xeon family 6 model 0xCF the AVX-512VL schedule,
        // or AVX-512 enabled for the AVX2 one, measured 5-10% slower in
        // the pair loop); an odd last block with the split rounds.
        let (pairs, odd) = blocks.split_at(blocks.len() & !1);
        // SAFETY: `token` proves the CPU has AVX2, BMI1, BMI2, SSSE3 and
        // SSE4.1 (with AVX-512 F and VL), the features the loop enables.
        unsafe { super::sha512_pair::compress_pairs(pair_layout(), state, pairs) };
        // SAFETY: `token` proves the CPU has AVX2, BMI1, BMI2, SSSE3,
        // SSE4.1 and AVX-512 F and VL: the features the kernel enables.
        unsafe { compress_blocks_avx512(state, odd) }
    } else {
        // SAFETY: as above.
        unsafe { compress_blocks_avx512(state, blocks) }
    }
}

/// The SHA-512 compression our compressors use for SHA-384 (SHA-NI has
/// none), chosen once with the compressor: the fastest one the CPU has and
/// `CBC_HMAC_CPUID_OVERRIDE` allows.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Sha512Kernel {
    /// The `sha2` crate's, which picks its own implementation (and, for the
    /// stitched seal and fused open, [`Sha384Scalar`]).
    Crate,
    /// [`Sha384Avx2`]: override bit `0x4`.
    Avx2(super::Avx2),
    /// [`Sha384Avx512`]: override bits `0x4 | 0x10`.
    Avx512(super::Avx512Bmi),
}

impl Sha512Kernel {
    /// The best kernel allowed by `enabled` (the override bits the CPU has).
    pub(crate) fn new(enabled: u32) -> Self {
        use crate::backends::cpu::{AVX2, VAES512};
        let avx2 = if enabled & AVX2 != 0 {
            super::Avx2::detect()
        } else {
            None
        };
        let vaes = if enabled & VAES512 != 0 {
            super::Vaes512::detect()
        } else {
            None
        };
        // Which of the two vector kernels is faster depends on the CPU
        // model: see the table in `backends/cpu.rs`.
        let avx512 = crate::backends::cpu::Tuning::get().sha512_avx512;
        match (avx2, vaes) {
            (Some(a), Some(v)) if avx512 => Sha512Kernel::Avx512(super::Avx512Bmi::new(a, v)),
            (Some(a), _) => Sha512Kernel::Avx2(a),
            _ => Sha512Kernel::Crate,
        }
    }

    /// What this kernel is, for reports.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Sha512Kernel::Crate => "the sha2 crate",
            Sha512Kernel::Avx2(_) => {
                use super::sha512_pair::Layout;
                let t = crate::backends::cpu::Tuning::get();
                let layout = match pair_layout() {
                    Layout::Unrolled => 0,
                    Layout::Rolled => 1,
                    Layout::RolledFourStep => 2,
                };
                let short =
                    usize::from(t.sha512_short_pairs) | usize::from(t.sha512_single_rolled) << 1;
                AVX2_NAMES[layout][short]
            }
            Sha512Kernel::Avx512(_) => {
                let t = crate::backends::cpu::Tuning::get();
                let short = t.sha512_short_pairs && t.sha512_pairs_avx512;
                if t.sha512_quads && t.sha512_pairs_four_step && short {
                    "AVX-512VL schedule and split rounds, four-block AVX-512 loop, \
                     rolled two-block loop for two and three blocks, four-step rounds"
                } else if t.sha512_quads && t.sha512_pairs_four_step {
                    "AVX-512VL schedule and split rounds, four-block AVX-512 loop, four-step rounds"
                } else if t.sha512_quads {
                    "AVX-512VL schedule and split rounds, four-block AVX-512 loop"
                } else if short && t.sha512_pairs_rolled {
                    "AVX-512VL schedule and split rounds, rolled two-block loop from two blocks"
                } else if t.sha512_pairs_avx512 && t.sha512_pairs_rolled {
                    "AVX-512VL schedule and split rounds, rolled two-block loop"
                } else {
                    "AVX-512VL schedule and split rounds"
                }
            }
        }
    }

    /// The token of the AVX2 kernel when the SHA-384 open runs on its
    /// pair loop with the decryption beside (`open_pairs`), on the CPUs
    /// whose `Tuning` asks for it; else `None`.
    pub(crate) fn pair_open(self) -> Option<super::Avx2> {
        let t = crate::backends::cpu::Tuning::get();
        match self {
            Sha512Kernel::Avx2(token) if t.sha384_open_pairs && t.sha512_pairs_avx2 => Some(token),
            _ => None,
        }
    }

    /// Compresses `one`, then `two`, into `state`, and returns the state
    /// between them: on the pair loop where runs of two blocks take it
    /// (`Tuning::sha512_short_pairs`), else a block at a time.
    #[inline]
    pub(crate) fn compress_two(
        self,
        state: &mut [u64; 8],
        one: &[u8; 128],
        two: &[u8; 128],
    ) -> [u64; 8] {
        let tuning = crate::backends::cpu::Tuning::get();
        let pairs = match self {
            Sha512Kernel::Avx2(_) => tuning.sha512_pairs_avx2,
            Sha512Kernel::Avx512(_) => tuning.sha512_pairs_avx512,
            Sha512Kernel::Crate => false,
        };
        match self {
            // Both vector kernels' tokens prove AVX2, BMI1, BMI2, SSSE3 and
            // SSE4.1, what the pair loop needs.
            Sha512Kernel::Avx2(_) | Sha512Kernel::Avx512(_)
                if tuning.sha512_short_pairs && pairs =>
            {
                use super::sha512_pair::{Layout, compress_two};
                match pair_layout() {
                    // SAFETY: the token proves AVX2, BMI1, BMI2, SSSE3 and
                    // SSE4.1, the features the loop enables.
                    Layout::Rolled => unsafe { compress_two::<true, false>(state, one, two) },
                    // SAFETY: as above.
                    Layout::RolledFourStep => unsafe {
                        compress_two::<true, true>(state, one, two)
                    },
                    // SAFETY: as above.
                    Layout::Unrolled => unsafe { compress_two::<false, false>(state, one, two) },
                }
            }
            _ => {
                self.compress(state, core::slice::from_ref(one));
                let mid = *state;
                self.compress(state, core::slice::from_ref(two));
                mid
            }
        }
    }

    /// Compresses `blocks` into `state`.
    #[inline]
    pub(crate) fn compress(self, state: &mut [u64; 8], blocks: &[[u8; 128]]) {
        match self {
            Sha512Kernel::Crate => sha2::block_api::compress512(state, blocks),
            Sha512Kernel::Avx2(t) => compress512_avx2(t, state, blocks),
            Sha512Kernel::Avx512(t) => compress512_avx512(t, state, blocks),
        }
    }
}

/// A SHA-384 kernel `K` run as SHA-512: the compression is the same (the
/// initial value comes with the HMAC states); only the HMAC outer block,
/// which carries the whole 64-byte inner digest, and the digest written
/// differ.
pub(crate) struct Sha512Of<K>(core::marker::PhantomData<K>);

impl<K: HashKernel<H = Sha384>> HashKernel for Sha512Of<K> {
    type H = Sha512;
    type Regs = K::Regs;
    type Msg = K::Msg;
    const BLOCK: usize = 128;
    type Isa = K::Isa;
    const GROUPS: usize = K::GROUPS;
    const MTE_TRAIL: usize = K::MTE_TRAIL;

    #[inline(always)]
    unsafe fn load_state(state: &[u64; 8]) -> K::Regs {
        // SAFETY: the caller guarantees `K`'s features.
        unsafe { K::load_state(state) }
    }

    #[inline(always)]
    unsafe fn store_state(regs: K::Regs) -> [u64; 8] {
        // SAFETY: as above.
        unsafe { K::store_state(regs) }
    }

    #[inline(always)]
    unsafe fn load_msg(data: &[u8]) -> K::Msg {
        // SAFETY: as above.
        unsafe { K::load_msg(data) }
    }

    #[inline(always)]
    unsafe fn rounds<F: FnMut(usize)>(regs: K::Regs, msg: K::Msg, slot: F) -> K::Regs {
        // SAFETY: as above.
        unsafe { K::rounds(regs, msg, slot) }
    }

    #[inline(always)]
    unsafe fn outer_msg(inner: K::Regs) -> K::Msg {
        // The 64-byte digest, 0x80, zeros, and the 128-bit bit length of
        // the key block and the digest; through memory, once per MAC.
        // SAFETY: as above.
        let digest = unsafe { K::store_state(inner) };
        let mut block = [0u8; 128];
        for (chunk, word) in block[..64].chunks_exact_mut(8).zip(digest) {
            chunk.copy_from_slice(&word.to_be_bytes());
        }
        block[64] = 0x80;
        block[112..].copy_from_slice(&((128u128 + 64) * 8).to_be_bytes());
        // SAFETY: as above.
        unsafe { K::load_msg(&block) }
    }

    #[inline(always)]
    unsafe fn write_digest(regs: K::Regs, out: &mut [u8]) {
        // SAFETY: as above.
        let state = unsafe { K::store_state(regs) };
        for (chunk, word) in out[..64].chunks_exact_mut(8).zip(state) {
            chunk.copy_from_slice(&word.to_be_bytes());
        }
    }

    #[inline(always)]
    unsafe fn msg_from_vecs(v: [__m128i; 4]) -> K::Msg {
        // SAFETY: as above.
        unsafe { K::msg_from_vecs(v) }
    }

    #[inline(always)]
    unsafe fn compress(regs: K::Regs, data: &[u8]) -> K::Regs {
        // SAFETY: as above.
        unsafe { K::compress(regs, data) }
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_rng::SplitMix64;
    use super::super::{Avx2, Vaes512};
    use super::*;
    use crate::primitives::hash::HashFunction;
    use hmac::{Hmac, KeyInit, Mac};

    fn avx2() -> Option<Avx2> {
        let token = Avx2::detect();
        if token.is_none() {
            eprintln!("SKIPPED: Sha384Avx2 tests (CPU lacks AVX2/BMI2)");
        }
        token
    }

    fn avx512() -> Option<(Avx2, Vaes512)> {
        let tokens = Avx2::detect().zip(Vaes512::detect());
        if tokens.is_none() {
            eprintln!("SKIPPED: Sha384Avx512 tests (CPU lacks AVX2/BMI2 or AVX-512F/BW/VL)");
        }
        tokens
    }

    type CompressFn = dyn Fn(&mut [u64; 8], &[[u8; 128]]);
    type Compress = Box<CompressFn>;

    /// The compression loops the CPU can run, by name.
    fn compressors() -> Vec<(&'static str, Compress)> {
        let mut list: Vec<(&'static str, Compress)> = Vec::new();
        if let Some(t) = avx2() {
            list.push(("avx2", Box::new(move |s, b| compress512_avx2(t, s, b))));
        }
        if let Some((t, v)) = avx512() {
            list.push((
                "avx512",
                Box::new(move |s, b| compress512_avx512(super::super::Avx512Bmi::new(t, v), s, b)),
            ));
        }
        list
    }

    fn reference(state: [u64; 8], blocks: &[[u8; 128]]) -> [u64; 8] {
        let mut s = state;
        sha2::block_api::compress512(&mut s, blocks);
        s
    }

    #[test]
    fn random_blocks_match_sha2() {
        for (name, compress) in compressors() {
            let mut rng = SplitMix64(1);
            for _ in 0..2000 {
                let state = core::array::from_fn(|_| rng.next());
                let blocks = rng.blocks(1);
                let mut ours = state;
                compress(&mut ours, &blocks);
                assert_eq!(ours, reference(state, &blocks), "{name}");
            }
        }
    }

    #[test]
    fn edge_words_match_sha2() {
        for (name, compress) in compressors() {
            edge_words(name, &*compress);
        }
    }

    fn edge_words(name: &str, compress: &CompressFn) {
        // All-zero and all-one states and blocks, and mixtures, exercise
        // carries and the extreme values of every lane.
        let mut rng = SplitMix64(2);
        for pattern in 0..64u64 {
            let state: [u64; 8] = core::array::from_fn(|i| match (pattern >> (i % 3)) & 3 {
                0 => 0,
                1 => u64::MAX,
                _ => rng.next(),
            });
            let mut block = [0u8; 128];
            for (i, byte) in block.iter_mut().enumerate() {
                *byte = match (pattern + i as u64 / 16) % 3 {
                    0 => 0,
                    1 => 0xff,
                    _ => rng.next() as u8,
                };
            }
            let mut ours = state;
            compress(&mut ours, &[block]);
            assert_eq!(
                ours,
                reference(state, &[block]),
                "{name}, pattern {pattern}"
            );
        }
    }

    #[test]
    fn multi_block_calls_match_sha2() {
        for (name, compress) in compressors() {
            let mut rng = SplitMix64(3);
            for n in 0..=20 {
                let state = core::array::from_fn(|_| rng.next());
                let blocks = rng.blocks(n);
                let mut ours = state;
                compress(&mut ours, &blocks);
                assert_eq!(ours, reference(state, &blocks), "{name}, {n} blocks");
                // The same blocks split over two calls.
                let mut split = state;
                let (first, rest) = blocks.split_at(n / 2);
                compress(&mut split, first);
                compress(&mut split, rest);
                assert_eq!(split, ours, "{name}, {n} blocks in two calls");
            }
        }
    }

    /// HMAC-SHA384 or HMAC-SHA512 (as `K::H`) of `msg` under `key` (at
    /// most one block), the inner hash's blocks and the outer hash through
    /// kernel `K`.
    ///
    /// # Safety
    /// The CPU must have the kernel's features.
    unsafe fn hmac_with<K: HashKernel<Regs = [u64; 8]>>(key: &[u8], msg: &[u8]) -> Vec<u8>
    where
        K::H: HashFunction<State = [u64; 8]>,
    {
        // A key of at most one block, padded with zeros.
        let mut block = [0u8; 128];
        block[..key.len()].copy_from_slice(key);
        let pad = |x: u8| block.map(|k| k ^ x);
        let mut inner = K::H::INITIAL_STATE;
        sha2::block_api::compress512(&mut inner, &[pad(0x36)]);
        let mut outer = K::H::INITIAL_STATE;
        sha2::block_api::compress512(&mut outer, &[pad(0x5c)]);
        // The inner hash over msg, padded (FIPS 180-4 5.1.2).
        let mut padded = msg.to_vec();
        padded.push(0x80);
        while padded.len() % 128 != 112 {
            padded.push(0);
        }
        padded.extend_from_slice(&((128 + msg.len() as u128) * 8).to_be_bytes());
        // SAFETY: the caller guarantees the kernel's features.
        let mut regs = unsafe { K::load_state(&inner) };
        for b in padded.chunks_exact(128) {
            // SAFETY: as above.
            regs = unsafe { K::compress(regs, b) };
        }
        // SAFETY: as above.
        let outer = unsafe { K::load_state(&outer) };
        // SAFETY: as above.
        let outer = unsafe { K::rounds(outer, K::outer_msg(regs), |_| {}) };
        let mut tag = vec![0u8; K::H::OUTPUT_LEN];
        // SAFETY: as above.
        unsafe { K::write_digest(outer, &mut tag) };
        tag
    }

    #[test]
    fn outer_msg_and_write_digest_give_hmac_sha384() {
        if avx2().is_some() {
            // SAFETY: the CPU has the kernel's features.
            unsafe { check_hmac::<Sha384Avx2>() };
        }
        if avx512().is_some() {
            // SAFETY: as above.
            unsafe { check_hmac::<Sha384Avx512>() };
        }
    }

    #[test]
    fn sha512_of_gives_hmac_sha512() {
        if super::super::ShaNi::detect().is_some() {
            // SAFETY: the scalar kernel compiled for SHA-NI's feature set,
            // which the CPU has: `ShaNi::detect` succeeded.
            unsafe { check_hmac_sha512::<Sha512Of<Sha384Scalar<super::super::ShaNi>>>() };
        } else {
            eprintln!("SKIPPED: Sha512Of<Sha384Scalar<ShaNi>> (CPU lacks SHA-NI)");
        }
        if avx2().is_some() {
            // SAFETY: the CPU has the kernel's features.
            unsafe { check_hmac_sha512::<Sha512Of<Sha384Avx2>>() };
        }
        if avx512().is_some() {
            // SAFETY: as above.
            unsafe { check_hmac_sha512::<Sha512Of<Sha384Avx512>>() };
        }
    }

    /// # Safety
    /// The CPU must have the kernel's features.
    unsafe fn check_hmac_sha512<K: HashKernel<H = Sha512, Regs = [u64; 8]>>() {
        let mut rng = SplitMix64(6);
        for len in (0..300).chain([1000, 4096, 16384]) {
            let mut key = vec![0u8; (rng.next() % 129) as usize];
            rng.fill(&mut key);
            let mut msg = vec![0u8; len];
            rng.fill(&mut msg);
            let mut mac = Hmac::<sha2::Sha512>::new_from_slice(&key).expect("any key length");
            mac.update(&msg);
            let expected = mac.finalize().into_bytes();
            // SAFETY: the caller guarantees the kernel's features.
            let tag = unsafe { hmac_with::<K>(&key, &msg) };
            assert_eq!(tag[..], expected[..], "message of {len} bytes");
        }
    }

    /// # Safety
    /// The CPU must have the kernel's features.
    unsafe fn check_hmac<K: HashKernel<H = Sha384, Regs = [u64; 8]>>() {
        let mut rng = SplitMix64(4);
        for len in (0..300).chain([1000, 4096, 16384]) {
            let mut key = vec![0u8; (rng.next() % 129) as usize];
            rng.fill(&mut key);
            let mut msg = vec![0u8; len];
            rng.fill(&mut msg);
            let mut mac = Hmac::<sha2::Sha384>::new_from_slice(&key).expect("any key length");
            mac.update(&msg);
            let expected = mac.finalize().into_bytes();
            // SAFETY: the caller guarantees the kernel's features.
            let tag = unsafe { hmac_with::<K>(&key, &msg) };
            assert_eq!(tag[..], expected[..], "message of {len} bytes");
        }
    }

    /// One compression through `K::rounds`, recording the slots.
    ///
    /// # Safety
    /// The CPU must have the kernel's features.
    unsafe fn rounds_with_slots<K: HashKernel<H = Sha384, Regs = [u64; 8]>>(
        state: [u64; 8],
        block: &[u8; 128],
        seen: &mut Vec<usize>,
    ) -> [u64; 8] {
        // SAFETY: the caller guarantees the kernel's features.
        let regs = unsafe { K::load_state(&state) };
        // SAFETY: as above.
        let msg = unsafe { K::load_msg(block) };
        // SAFETY: as above.
        let regs = unsafe { K::rounds(regs, msg, |g| seen.push(g)) };
        // SAFETY: as above.
        unsafe { K::store_state(regs) }
    }

    /// # Safety
    /// The CPU must have the kernel's features.
    unsafe fn check_slots<K: HashKernel<H = Sha384, Regs = [u64; 8]>>() {
        assert_eq!(K::GROUPS, 20);
        let mut rng = SplitMix64(5);
        for _ in 0..50 {
            let state = core::array::from_fn(|_| rng.next());
            let block = rng.blocks(1)[0];
            let mut seen = Vec::new();
            // SAFETY: the caller guarantees the kernel's features.
            let out = unsafe { rounds_with_slots::<K>(state, &block, &mut seen) };
            assert_eq!(seen, (0..K::GROUPS).collect::<Vec<_>>());
            assert_eq!(out, reference(state, &[block]));
        }
    }

    #[test]
    fn rounds_call_each_slot_once_in_order() {
        if avx2().is_some() {
            // SAFETY: the CPU has the kernel's features.
            unsafe { check_slots::<Sha384Avx2>() };
        }
        if avx512().is_some() {
            // SAFETY: as above.
            unsafe { check_slots::<Sha384Avx512>() };
        }
    }
}
