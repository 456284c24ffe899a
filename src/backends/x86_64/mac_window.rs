//! The MAC comparison of a MAC-then-encrypt open with AVX-512: the
//! received MAC lies at a secret offset of the record's last bytes, and a
//! logarithmic shifter brings it to the front.
//!
//! It is the shifter of `record::ct_open::mac_matches`, on 512-bit
//! registers instead of 64-bit words: the window (at most 48 + 256 bytes)
//! is five registers, loaded at public offsets. Stage `k` moves them down
//! by `2^k` bytes (whole registers, then `valignq`/`valignd` across
//! register pairs, then byte shifts inside 64-bit elements) and keeps the
//! moved or the unmoved bytes by a mask made from bit `k` of the secret
//! offset: a blend, never a branch, and the same registers whatever the
//! offset. A stage only updates the registers the later stages can still
//! bring to the front.

use core::arch::x86_64::*;

use super::Vaes512;

/// Registers in the largest window: a 48-byte tag and the padding span.
const REGS: usize = 5;

/// Whether `window[d..d + expected.len()]` equals `expected`, as a mask
/// (all ones or 0), for a secret `d <= window.len() - expected.len()`.
/// `window` is at most `64 * REGS` bytes (the caller's window of tag and
/// padding span) and `expected` at most 64. Memory accesses depend only
/// on `window.len()` and `expected.len()`.
pub(crate) fn matches(t: Vaes512, window: &[u8], d: usize, expected: &[u8]) -> usize {
    let _ = t;
    assert!(window.len() <= 64 * REGS && expected.len() <= 64.min(window.len()));
    // The TLS tag lengths get their own copies, so that the registers
    // each stage updates are a constant count and stay in registers.
    // SAFETY: `t` proves the CPU has AVX-512 F/BW/VL, all the kernel
    // enables; the lengths are checked above.
    unsafe {
        match expected.len() {
            0..=20 => kernel::<20>(window, d, expected),
            21..=32 => kernel::<32>(window, d, expected),
            33..=48 => kernel::<48>(window, d, expected),
            _ => kernel::<64>(window, d, expected),
        }
    }
}

/// `bytes`, zero-extended to a register: a masked load of only the bytes
/// the slice has (at most 64).
#[inline(always)]
fn load_partial(bytes: &[u8]) -> __m512i {
    let n = bytes.len().min(64);
    let mask = if n == 64 { u64::MAX } else { (1u64 << n) - 1 };
    // SAFETY: the mask selects the first `n` bytes, all inside `bytes`;
    // masked-off bytes are not read (nor can they fault). AVX-512BW (the
    // kernel's).
    unsafe { _mm512_maskz_loadu_epi8(mask, bytes.as_ptr().cast()) }
}

/// The shifter for tags of at most `M` bytes.
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
fn kernel<const M: usize>(window: &[u8], d: usize, expected: &[u8]) -> usize {
    let m = expected.len();
    let mut r = [_mm512_setzero_si512(); REGS + 1];
    for (k, reg) in r.iter_mut().take(REGS).enumerate() {
        if 64 * k < window.len() {
            *reg = load_partial(&window[64 * k..]);
        }
    }
    // Registers that stages of `2^k` bytes and smaller can still bring to
    // the first `M` bytes.
    let live = |k: u32| (M + (1 << k) - 1).div_ceil(64).min(REGS);
    // Bit `k` of the secret offset as a blend mask: through the barrier
    // first, so that it stays data and never becomes a branch.
    let take = |k: u32| -> __mmask8 { (super::super::opaque((d >> k) & 1) as u8).wrapping_neg() };
    // Whole registers: 256, 128 and 64 bytes.
    for k in [8u32, 7, 6] {
        let q = 1usize << (k - 6);
        let tk = take(k);
        for i in 0..live(k) {
            let moved = if i + q <= REGS {
                r[i + q]
            } else {
                _mm512_setzero_si512()
            };
            r[i] = _mm512_mask_mov_epi64(r[i], tk, moved);
        }
    }
    // 32, 16 and 8 bytes: whole 64-bit elements across a register pair.
    macro_rules! qwords {
        ($k:literal, $n:literal) => {{
            let tk = take($k);
            for i in 0..live($k) {
                let moved = _mm512_alignr_epi64::<$n>(r[i + 1], r[i]);
                r[i] = _mm512_mask_mov_epi64(r[i], tk, moved);
            }
        }};
    }
    qwords!(5, 4);
    qwords!(4, 2);
    qwords!(3, 1);
    // 4 bytes: one 32-bit element.
    {
        let tk = take(2) as __mmask16 * 0x0101;
        for i in 0..live(2) {
            let moved = _mm512_alignr_epi32::<1>(r[i + 1], r[i]);
            r[i] = _mm512_mask_mov_epi32(r[i], tk, moved);
        }
    }
    // 2 and 1 bytes: inside each 64-bit element, the bytes from the next
    // element shifted in.
    macro_rules! bytes {
        ($k:literal, $bits:literal) => {{
            let tk = take($k);
            for i in 0..live($k) {
                let next = _mm512_alignr_epi64::<1>(r[i + 1], r[i]);
                let moved = _mm512_or_si512(
                    _mm512_srli_epi64::<$bits>(r[i]),
                    _mm512_slli_epi64::<{ 64 - $bits }>(next),
                );
                r[i] = _mm512_mask_mov_epi64(r[i], tk, moved);
            }
        }};
    }
    bytes!(1, 16);
    bytes!(0, 8);
    let want = load_partial(expected);
    let first = if m == 64 { u64::MAX } else { (1u64 << m) - 1 };
    let differ = _mm512_mask_cmpneq_epi8_mask(first, r[0], want);
    crate::primitives::ct::is_zero_u64(differ)
}

#[cfg(test)]
mod tests {
    use super::super::test_rng::SplitMix64;
    use super::*;

    /// Every offset of tags of each TLS length in windows of every shape
    /// the opens make (short records too), matching and with one byte
    /// wrong at each end, against the plain comparison.
    #[test]
    fn matches_plain_comparison() {
        let Some(t) = Vaes512::detect() else {
            eprintln!("SKIPPED: mac_window against the plain comparison (CPU lacks AVX-512)");
            return;
        };
        let mut rng = SplitMix64(0x3ac_0001);
        for m in [20usize, 32, 48] {
            for len in [m, m + 1, m + 63, m + 64, m + 200, m + 255, m + 256] {
                let mut window = vec![0u8; len];
                rng.fill(&mut window);
                for d in 0..=len - m {
                    let mut tag = window[d..d + m].to_vec();
                    assert_eq!(matches(t, &window, d, &tag), usize::MAX, "{m} {len} {d}");
                    for at in [0, m - 1] {
                        tag[at] ^= 0x20;
                        assert_eq!(matches(t, &window, d, &tag), 0, "{m} {len} {d} {at}");
                        tag[at] ^= 0x20;
                    }
                }
            }
        }
    }
}
