//! Vectors of 64-bit words, one word per lane: SHA-512's round code,
//! written once over [`Words64`] and compiled for eight lanes with
//! AVX-512 (zmm, `sha512_x8`) and for four with AVX2 alone (ymm,
//! `sha512_avx2_x4`).
//!
//! The two differ in how a round's functions are built. With AVX-512 each
//! rotation is one `vprorq`, and Ch, Maj and the sigmas' three-way xors
//! are one `vpternlogq` each. With AVX2 a rotation is two shifts and an
//! or (σ0's by a whole byte one byte shuffle), and Ch and Maj three
//! instructions each. On AMD Zen 2 the shifts are the largest part of the
//! AVX2 rounds' cost (`Tuning` has the figures).
//!
//! The methods are `#[inline(always)]`, which a `#[target_feature]`
//! function cannot be. They are reached only from the kernels,
//! `#[target_feature]` functions with AVX-512 F/BW/VL (for `__m512i`) or
//! AVX2 (for `__m256i`) into which they are inlined; that is the feature
//! context their intrinsics need.

use core::arch::x86_64::*;

use super::super::sha512::K512;

/// One 64-bit word of every lane: the functions SHA-512's rounds need.
pub(super) trait Words64: Copy {
    /// Lane-wise wrapping addition.
    fn add(self, other: Self) -> Self;
    /// `K512[t]` in every lane.
    fn k(t: usize) -> Self;
    /// Ch(e, f, g) with `self` as e.
    fn ch(self, f: Self, g: Self) -> Self;
    /// Maj(a, b, c) with `self` as a.
    fn maj(self, b: Self, c: Self) -> Self;
    /// Σ0: the rotations right by 28, 34 and 39.
    fn big_sigma0(self) -> Self;
    /// Σ1: the rotations right by 14, 18 and 41.
    fn big_sigma1(self) -> Self;
    /// σ0: the rotations right by 1 and 8, the shift by 7.
    fn small_sigma0(self) -> Self;
    /// σ1: the rotations right by 19 and 61, the shift by 6.
    fn small_sigma1(self) -> Self;
}

impl Words64 for __m512i {
    #[inline(always)]
    fn add(self, other: Self) -> Self {
        // SAFETY: AVX-512F as said above.
        unsafe { _mm512_add_epi64(self, other) }
    }
    #[inline(always)]
    fn k(t: usize) -> Self {
        // SAFETY: AVX-512F as said above.
        unsafe { _mm512_set1_epi64(K512[t] as i64) }
    }
    #[inline(always)]
    fn ch(self, f: Self, g: Self) -> Self {
        // SAFETY: AVX-512F as said above.
        unsafe { _mm512_ternarylogic_epi64::<0xca>(self, f, g) }
    }
    #[inline(always)]
    fn maj(self, b: Self, c: Self) -> Self {
        // SAFETY: AVX-512F as said above.
        unsafe { _mm512_ternarylogic_epi64::<0xe8>(self, b, c) }
    }
    #[inline(always)]
    fn big_sigma0(self) -> Self {
        // SAFETY: AVX-512F as said above.
        unsafe {
            let (a, b, c) = (
                _mm512_ror_epi64::<28>(self),
                _mm512_ror_epi64::<34>(self),
                _mm512_ror_epi64::<39>(self),
            );
            _mm512_ternarylogic_epi64::<0x96>(a, b, c)
        }
    }
    #[inline(always)]
    fn big_sigma1(self) -> Self {
        // SAFETY: AVX-512F as said above.
        unsafe {
            let (a, b, c) = (
                _mm512_ror_epi64::<14>(self),
                _mm512_ror_epi64::<18>(self),
                _mm512_ror_epi64::<41>(self),
            );
            _mm512_ternarylogic_epi64::<0x96>(a, b, c)
        }
    }
    #[inline(always)]
    fn small_sigma0(self) -> Self {
        // SAFETY: AVX-512F as said above.
        unsafe {
            let (a, b, c) = (
                _mm512_ror_epi64::<1>(self),
                _mm512_ror_epi64::<8>(self),
                _mm512_srli_epi64::<7>(self),
            );
            _mm512_ternarylogic_epi64::<0x96>(a, b, c)
        }
    }
    #[inline(always)]
    fn small_sigma1(self) -> Self {
        // SAFETY: AVX-512F as said above.
        unsafe {
            let (a, b, c) = (
                _mm512_ror_epi64::<19>(self),
                _mm512_ror_epi64::<61>(self),
                _mm512_srli_epi64::<6>(self),
            );
            _mm512_ternarylogic_epi64::<0x96>(a, b, c)
        }
    }
}

/// `a ^ b ^ c`.
#[inline(always)]
fn xor3(a: __m256i, b: __m256i, c: __m256i) -> __m256i {
    // SAFETY: AVX2 as said above.
    unsafe { _mm256_xor_si256(_mm256_xor_si256(a, b), c) }
}

/// `x` rotated right by `R`, with `L = 64 - R` (shift counts must be
/// literal, so the caller gives both): two shifts and an or.
#[inline(always)]
fn ror<const R: i32, const L: i32>(x: __m256i) -> __m256i {
    // SAFETY: AVX2 as said above.
    unsafe { _mm256_or_si256(_mm256_srli_epi64::<R>(x), _mm256_slli_epi64::<L>(x)) }
}

/// AVX2 alone (no AVX-512VL rotates or ternary logic).
impl Words64 for __m256i {
    #[inline(always)]
    fn add(self, other: Self) -> Self {
        // SAFETY: AVX2 as said above.
        unsafe { _mm256_add_epi64(self, other) }
    }
    #[inline(always)]
    fn k(t: usize) -> Self {
        // SAFETY: AVX as said above.
        unsafe { _mm256_set1_epi64x(K512[t] as i64) }
    }
    /// `((f ^ g) & e) ^ g`.
    #[inline(always)]
    fn ch(self, f: Self, g: Self) -> Self {
        // SAFETY: AVX2 as said above.
        unsafe { _mm256_xor_si256(_mm256_and_si256(_mm256_xor_si256(f, g), self), g) }
    }
    /// `((a ^ b) & (b ^ c)) ^ b`: this round's `a ^ b` is the next one's
    /// `b ^ c`, which the compiler reuses.
    #[inline(always)]
    fn maj(self, b: Self, c: Self) -> Self {
        // SAFETY: AVX2 as said above.
        unsafe {
            _mm256_xor_si256(
                _mm256_and_si256(_mm256_xor_si256(self, b), _mm256_xor_si256(b, c)),
                b,
            )
        }
    }
    #[inline(always)]
    fn big_sigma0(self) -> Self {
        xor3(
            ror::<28, 36>(self),
            ror::<34, 30>(self),
            ror::<39, 25>(self),
        )
    }
    #[inline(always)]
    fn big_sigma1(self) -> Self {
        xor3(
            ror::<14, 50>(self),
            ror::<18, 46>(self),
            ror::<41, 23>(self),
        )
    }
    /// The rotation by a whole byte is one byte shuffle instead of two
    /// shifts and an or: 7% less time a block on AMD Zen 2.
    #[inline(always)]
    fn small_sigma0(self) -> Self {
        // SAFETY: AVX2 as said above.
        unsafe {
            let ror8 = _mm256_set_epi64x(
                0x080f_0e0d_0c0b_0a09,
                0x0007_0605_0403_0201,
                0x080f_0e0d_0c0b_0a09,
                0x0007_0605_0403_0201,
            );
            xor3(
                ror::<1, 63>(self),
                _mm256_shuffle_epi8(self, ror8),
                _mm256_srli_epi64::<7>(self),
            )
        }
    }
    #[inline(always)]
    fn small_sigma1(self) -> Self {
        // SAFETY: AVX2 as said above.
        unsafe {
            xor3(
                ror::<19, 45>(self),
                ror::<61, 3>(self),
                _mm256_srli_epi64::<6>(self),
            )
        }
    }
}

/// The 80 rounds of one block over the schedule ring `w` (the block's
/// sixteen words on entry), on the working state `s`; the caller adds the
/// result to the state.
#[inline(always)]
pub(super) fn rounds<W: Words64>(s: [W; 8], mut w: [W; 16]) -> [W; 8] {
    let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut h] = s;
    // One round; the caller renames the variables instead of moving them.
    macro_rules! round {
        ($a:ident $b:ident $c:ident $d:ident $e:ident $f:ident $g:ident $h:ident, $t:expr, $i:literal) => {
            // h + K + W first: off the e chain.
            let t1 = $h.add(W::k($t)).add(w[$i]);
            let t1 = t1.add($e.ch($f, $g)).add($e.big_sigma1());
            let t2 = $a.big_sigma0().add($a.maj($b, $c));
            $d = $d.add(t1);
            $h = t1.add(t2);
        };
    }
    // W[t] = s1(W[t-2]) + W[t-7] + s0(W[t-15]) + W[t-16], in the ring.
    macro_rules! schedule {
        ($i:literal) => {
            w[$i] = w[$i]
                .add(w[($i + 1) % 16].small_sigma0())
                .add(w[($i + 9) % 16].add(w[($i + 14) % 16].small_sigma1()));
        };
    }
    // Sixteen rounds from round `16 j`: eight renamings bring the
    // variables back where they started.
    macro_rules! sixteen {
        ($j:expr, $sched:literal) => {
            let base: usize = 16 * $j;
            sixteen!(@ base $sched; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15);
        };
        (@ $base:ident $sched:literal; $($i:literal)*) => {
            $(
                if $sched {
                    schedule!($i);
                }
                match $i % 8 {
                    0 => { round!(a b c d e f g h, $base + $i, $i); }
                    1 => { round!(h a b c d e f g, $base + $i, $i); }
                    2 => { round!(g h a b c d e f, $base + $i, $i); }
                    3 => { round!(f g h a b c d e, $base + $i, $i); }
                    4 => { round!(e f g h a b c d, $base + $i, $i); }
                    5 => { round!(d e f g h a b c, $base + $i, $i); }
                    6 => { round!(c d e f g h a b, $base + $i, $i); }
                    _ => { round!(b c d e f g h a, $base + $i, $i); }
                }
            )*
        };
    }
    sixteen!(0, false);
    for j in 1..5 {
        sixteen!(j, true);
    }
    [a, b, c, d, e, f, g, h]
}
