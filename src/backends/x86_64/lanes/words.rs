//! Vectors of 32-bit words, one word per lane, at two widths: the SHA-1
//! and SHA-256 round code is written once over [`Words`] and compiled for
//! sixteen lanes (zmm) and for eight (ymm), and, for CPUs without AVX-512,
//! SHA-1's for eight lanes with AVX2 alone ([`Avx2Words`]).
//!
//! Eight lanes in ymm registers are not half a sixteen-lane call: on Intel
//! family 6 model 0xA7, 256-bit AVX-512VL integer instructions issue on
//! three ports against two for 512-bit ones, so a call over eight lanes
//! takes 0.70 of a call over sixteen (SHA-256 rounds alone: 162-166 ns
//! against 232-236 ns per block), and with eight or fewer busy lanes the
//! eight-lane call wins.
//!
//! The methods are `#[inline(always)]`, which a `#[target_feature]`
//! function cannot be. They are reached only from the kernels,
//! `#[target_feature]` functions with AVX-512 F/BW/VL (AVX2 for
//! [`Avx2Words`]) into which they are inlined; that is the feature context
//! their intrinsics need.

use core::arch::x86_64::*;

/// Work run between the rounds of a block: the round code calls
/// [`RoundHook::after_round`] after each of its `rounds` rounds, with `t`
/// a constant once inlined, so a hook that does nothing costs nothing and
/// one that interleaves another computation (`sha_cbc_x8`'s CBC chains)
/// places its steps at compile time.
pub(crate) trait RoundHook {
    /// Called after round `t` of `rounds`.
    fn after_round(&mut self, t: usize, rounds: usize);
}

/// No work between rounds.
impl RoundHook for () {
    #[inline(always)]
    fn after_round(&mut self, _: usize, _: usize) {}
}

/// One 32-bit word of every lane: the operations the SHA-1 and SHA-256
/// rounds need, each one instruction.
pub(super) trait Words: Copy {
    /// Lane-wise wrapping addition.
    fn add(self, other: Self) -> Self;
    /// Lane-wise exclusive or.
    fn xor(self, other: Self) -> Self;
    /// Rotation left by `N` bits.
    fn rol<const N: i32>(self) -> Self;
    /// Rotation right by `N` bits.
    fn ror<const N: i32>(self) -> Self;
    /// Logical shift right by `N` bits.
    fn shr<const N: u32>(self) -> Self;
    /// `vpternlogd` with truth table `IMM` (`0x96` three-way xor, `0xCA`
    /// choice, `0xE8` majority).
    fn ternary<const IMM: i32>(self, b: Self, c: Self) -> Self;
    /// `x` in every lane.
    fn splat(x: u32) -> Self;
}

impl Words for __m512i {
    #[inline(always)]
    fn add(self, other: Self) -> Self {
        // SAFETY: AVX-512F as said above.
        unsafe { _mm512_add_epi32(self, other) }
    }
    #[inline(always)]
    fn xor(self, other: Self) -> Self {
        // SAFETY: AVX-512F as said above.
        unsafe { _mm512_xor_si512(self, other) }
    }
    #[inline(always)]
    fn rol<const N: i32>(self) -> Self {
        // SAFETY: AVX-512F as said above.
        unsafe { _mm512_rol_epi32::<N>(self) }
    }
    #[inline(always)]
    fn ror<const N: i32>(self) -> Self {
        // SAFETY: AVX-512F as said above.
        unsafe { _mm512_ror_epi32::<N>(self) }
    }
    #[inline(always)]
    fn shr<const N: u32>(self) -> Self {
        // SAFETY: AVX-512F as said above.
        unsafe { _mm512_srli_epi32::<N>(self) }
    }
    #[inline(always)]
    fn ternary<const IMM: i32>(self, b: Self, c: Self) -> Self {
        // SAFETY: AVX-512F as said above.
        unsafe { _mm512_ternarylogic_epi32::<IMM>(self, b, c) }
    }
    #[inline(always)]
    fn splat(x: u32) -> Self {
        // SAFETY: AVX-512F as said above.
        unsafe { _mm512_set1_epi32(x as i32) }
    }
}

impl Words for __m256i {
    #[inline(always)]
    fn add(self, other: Self) -> Self {
        // SAFETY: AVX2, part of the kernels' AVX-512 set, as said above.
        unsafe { _mm256_add_epi32(self, other) }
    }
    #[inline(always)]
    fn xor(self, other: Self) -> Self {
        // SAFETY: AVX2 as said above.
        unsafe { _mm256_xor_si256(self, other) }
    }
    #[inline(always)]
    fn rol<const N: i32>(self) -> Self {
        // SAFETY: AVX-512F/VL as said above.
        unsafe { _mm256_rol_epi32::<N>(self) }
    }
    #[inline(always)]
    fn ror<const N: i32>(self) -> Self {
        // SAFETY: AVX-512F/VL as said above.
        unsafe { _mm256_ror_epi32::<N>(self) }
    }
    #[inline(always)]
    fn shr<const N: u32>(self) -> Self {
        // `_mm256_srli_epi32` takes its count as an `i32`; `N` is below 32.
        // SAFETY: AVX2 as said above.
        unsafe { _mm256_srl_epi32(self, _mm_cvtsi32_si128(N as i32)) }
    }
    #[inline(always)]
    fn ternary<const IMM: i32>(self, b: Self, c: Self) -> Self {
        // SAFETY: AVX-512F/VL as said above.
        unsafe { _mm256_ternarylogic_epi32::<IMM>(self, b, c) }
    }
    #[inline(always)]
    fn splat(x: u32) -> Self {
        // SAFETY: AVX as said above.
        unsafe { _mm256_set1_epi32(x as i32) }
    }
}

/// Eight lanes in a ymm register with AVX2 alone (no AVX-512): a rotation
/// is two shifts and an or, and a three-input function two to four
/// instructions.
#[derive(Clone, Copy)]
#[repr(transparent)]
pub(super) struct Avx2Words(pub(super) __m256i);

impl Avx2Words {
    #[inline(always)]
    fn and(self, other: Self) -> Self {
        // SAFETY: AVX2 as said above.
        Avx2Words(unsafe { _mm256_and_si256(self.0, other.0) })
    }
    #[inline(always)]
    fn or(self, other: Self) -> Self {
        // SAFETY: AVX2 as said above.
        Avx2Words(unsafe { _mm256_or_si256(self.0, other.0) })
    }
}

impl Words for Avx2Words {
    #[inline(always)]
    fn add(self, other: Self) -> Self {
        // SAFETY: AVX2 as said above.
        Avx2Words(unsafe { _mm256_add_epi32(self.0, other.0) })
    }
    #[inline(always)]
    fn xor(self, other: Self) -> Self {
        // SAFETY: AVX2 as said above.
        Avx2Words(unsafe { _mm256_xor_si256(self.0, other.0) })
    }
    #[inline(always)]
    fn rol<const N: i32>(self) -> Self {
        // SAFETY: AVX2 as said above; constant counts below 32.
        unsafe {
            let l = _mm256_sll_epi32(self.0, _mm_cvtsi32_si128(N));
            let r = _mm256_srl_epi32(self.0, _mm_cvtsi32_si128(32 - N));
            Avx2Words(_mm256_or_si256(l, r))
        }
    }
    #[inline(always)]
    fn ror<const N: i32>(self) -> Self {
        // SAFETY: AVX2 as said above; constant counts below 32.
        unsafe {
            let r = _mm256_srl_epi32(self.0, _mm_cvtsi32_si128(N));
            let l = _mm256_sll_epi32(self.0, _mm_cvtsi32_si128(32 - N));
            Avx2Words(_mm256_or_si256(l, r))
        }
    }
    #[inline(always)]
    fn shr<const N: u32>(self) -> Self {
        // SAFETY: AVX2 as said above.
        Avx2Words(unsafe { _mm256_srl_epi32(self.0, _mm_cvtsi32_si128(N as i32)) })
    }
    #[inline(always)]
    fn ternary<const IMM: i32>(self, b: Self, c: Self) -> Self {
        match IMM {
            0x96 => self.xor(b).xor(c),
            // b where self is set, c elsewhere: ((b ^ c) & self) ^ c.
            0xCA => b.xor(c).and(self).xor(c),
            // The majority: (self & b) | ((self | b) & c).
            0xE8 => self.and(b).or(self.or(b).and(c)),
            _ => unreachable!("truth tables the rounds use"),
        }
    }
    #[inline(always)]
    fn splat(x: u32) -> Self {
        // SAFETY: AVX as said above.
        Avx2Words(unsafe { _mm256_set1_epi32(x as i32) })
    }
}
