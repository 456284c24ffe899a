//! Constant-time word masks.
//!
//! A mask is `usize::MAX` (true) or `0` (false). Comparisons compute masks
//! with arithmetic only, and [`barrier`] hides values from the optimiser so
//! it cannot turn a masked selection back into a branch. Secret data on the
//! open path flows only through these.

/// An optimisation barrier: the compiler must treat the result as unknown.
///
/// On x86-64 an empty `asm!` statement that takes and returns the value in
/// a register: free at run time. Elsewhere `black_box`, which costs a
/// store and a reload through the stack.
#[inline(always)]
pub(crate) fn barrier(x: usize) -> usize {
    #[cfg(target_arch = "x86_64")]
    {
        crate::backends::opaque(x)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        core::hint::black_box(x)
    }
}

/// [`barrier`] for sixteen bytes, in one vector register on x86-64: an
/// accumulator passed through it each iteration keeps a loop from being
/// vectorised across iterations.
#[inline(always)]
pub(crate) fn barrier16(x: [u8; 16]) -> [u8; 16] {
    #[cfg(target_arch = "x86_64")]
    {
        crate::backends::opaque16(x)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        core::hint::black_box(x)
    }
}

/// All ones if the top bit of `x` is set.
#[inline(always)]
fn msb_mask(x: usize) -> usize {
    0usize.wrapping_sub(x >> (usize::BITS - 1))
}

/// `a < b` as a mask, for any `a`, `b`.
#[inline(always)]
pub(crate) fn lt(a: usize, b: usize) -> usize {
    // The borrow out of `a - b`, computed without a comparison instruction
    // the compiler could branch on.
    msb_mask(a ^ ((a ^ b) | (a.wrapping_sub(b) ^ a)))
}

/// `a >= b` as a mask.
#[inline(always)]
pub(crate) fn ge(a: usize, b: usize) -> usize {
    !lt(a, b)
}

/// `x == 0` as a mask.
#[inline(always)]
pub(crate) fn is_zero(x: usize) -> usize {
    msb_mask(!x & x.wrapping_sub(1))
}

/// `a == b` as a mask.
#[inline(always)]
pub(crate) fn eq(a: usize, b: usize) -> usize {
    is_zero(a ^ b)
}

/// `a <= b` as a byte mask (`0xff` or `0`), on u8 lanes: the borrow out of
/// `b - a` by arithmetic, its sign spread by an arithmetic shift (which
/// vectorises to a compare against zero, not a branch).
#[inline(always)]
pub(crate) fn le_u8(a: u8, b: u8) -> u8 {
    let borrow = b ^ ((b ^ a) | (b.wrapping_sub(a) ^ b));
    !(((borrow as i8) >> 7) as u8)
}

/// `a < b` as a byte mask (`0xff` or `0`).
#[inline(always)]
pub(crate) fn lt_u8(a: u8, b: u8) -> u8 {
    let borrow = a ^ ((a ^ b) | (a.wrapping_sub(b) ^ a));
    ((borrow as i8) >> 7) as u8
}

/// `a == b` as a byte mask (`0xff` or `0`).
#[inline(always)]
pub(crate) fn eq_u8(a: u8, b: u8) -> u8 {
    let x = a ^ b;
    (((!x & x.wrapping_sub(1)) as i8) >> 7) as u8
}

/// `mask ? a : b`.
#[inline(always)]
pub(crate) fn select(mask: usize, a: usize, b: usize) -> usize {
    (mask & a) | (!mask & b)
}

/// `mask ? a : b` on 64-bit words, whatever the width of `usize`.
#[inline(always)]
pub(crate) fn select_u64(mask: u64, a: u64, b: u64) -> u64 {
    (mask & a) | (!mask & b)
}

/// `x == 0` as a mask, for a 64-bit `x` whatever the width of `usize`.
#[inline(always)]
pub(crate) fn is_zero_u64(x: u64) -> usize {
    let top = (!x & x.wrapping_sub(1)) >> 63;
    0usize.wrapping_sub(top as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_agree_with_comparisons() {
        let values = [
            0usize,
            1,
            2,
            15,
            16,
            255,
            256,
            1 << 31,
            (1 << 63) - 1,
            1 << 63,
            usize::MAX - 1,
            usize::MAX,
        ];
        for &a in &values {
            for &b in &values {
                assert_eq!(lt(a, b), if a < b { usize::MAX } else { 0 }, "lt {a} {b}");
                assert_eq!(ge(a, b), if a >= b { usize::MAX } else { 0 }, "ge {a} {b}");
                assert_eq!(eq(a, b), if a == b { usize::MAX } else { 0 }, "eq {a} {b}");
                assert_eq!(select(eq(a, b), 7, 9), if a == b { 7 } else { 9 });
            }
            assert_eq!(is_zero(a), if a == 0 { usize::MAX } else { 0 });
            let w = a as u64;
            assert_eq!(is_zero_u64(w), if w == 0 { usize::MAX } else { 0 });
            assert_eq!(select_u64(u64::MAX, w, 3), w);
            assert_eq!(select_u64(0, w, 3), 3);
        }
        assert_eq!(is_zero_u64(1 << 40), 0, "a high bit alone is not zero");
        assert_eq!(barrier(5), 5);
    }

    #[test]
    fn byte_masks_agree_with_comparisons() {
        for a in 0..=255u8 {
            for b in 0..=255u8 {
                assert_eq!(le_u8(a, b), if a <= b { 0xff } else { 0 }, "le {a} {b}");
                assert_eq!(lt_u8(a, b), if a < b { 0xff } else { 0 }, "lt {a} {b}");
                assert_eq!(eq_u8(a, b), if a == b { 0xff } else { 0 }, "eq {a} {b}");
            }
        }
    }
}
