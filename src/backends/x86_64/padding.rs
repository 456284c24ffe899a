//! The byte comparison of the CBC padding check with AVX-512: the last
//! (up to) 256 bytes of a decrypted record in four zmm registers, each
//! byte compared with the padding value under a mask of the positions the
//! secret padding length covers (`record::ct_open::check_padding_by`).
//! The loads depend only on the public length; the padding value and the
//! first padding position are only ever operands.

use core::arch::x86_64::*;

use super::Vaes512;

/// Byte `j` is `j`: the positions of one register's bytes.
static POSITIONS: [u8; 64] = {
    let mut p = [0u8; 64];
    let mut j = 0;
    while j < 64 {
        p[j] = j as u8;
        j += 1;
    }
    p
};

/// Nonzero if a byte of `tail` (at most 256 bytes) at or after index
/// `first` is not `pad`, as `record::ct_open::padding_diff` computes it.
pub(crate) fn diff(t: Vaes512, tail: &[u8], first: u8, pad: u8) -> usize {
    let _ = t;
    assert!(tail.len() <= 256);
    // SAFETY: `t` proves the CPU has AVX-512 F/BW/VL, all the kernel
    // enables.
    unsafe { kernel(tail, first, pad) }
}

#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
fn kernel(tail: &[u8], first: u8, pad: u8) -> usize {
    let p = _mm512_set1_epi8(pad as i8);
    let from = _mm512_set1_epi8(first as i8);
    // SAFETY: `POSITIONS` is 64 readable bytes; `loadu` has no alignment
    // requirement.
    let mut at = unsafe { _mm512_loadu_si512(POSITIONS.as_ptr().cast()) };
    let mut differ = 0u64;
    for part in tail.chunks(64) {
        let valid = if part.len() == 64 {
            u64::MAX
        } else {
            (1u64 << part.len()) - 1
        };
        // SAFETY: the mask selects the bytes `part` has; masked-off bytes
        // are not read (nor can they fault).
        let bytes = unsafe { _mm512_maskz_loadu_epi8(valid, part.as_ptr().cast()) };
        let covered = _mm512_mask_cmpge_epu8_mask(valid, at, from);
        differ |= _mm512_mask_cmpneq_epi8_mask(covered, bytes, p);
        at = _mm512_add_epi8(at, _mm512_set1_epi8(64));
    }
    differ as usize
}

#[cfg(test)]
mod tests {
    use super::super::test_rng::SplitMix64;
    use super::*;

    /// Every first position and tail length, with the span right, wrong
    /// at its first or last byte, and wrong just before it (which must not
    /// count), against the plain comparison.
    #[test]
    fn agrees_with_portable() {
        let Some(t) = Vaes512::detect() else {
            eprintln!("SKIPPED: padding::diff against the plain comparison (CPU lacks AVX-512)");
            return;
        };
        let mut rng = SplitMix64(0x9ad_0001);
        for len in [16usize, 32, 48, 64, 80, 128, 192, 240, 256] {
            for first in 0..len {
                let pad = rng.next() as u8;
                let mut tail = vec![0u8; len];
                rng.fill(&mut tail);
                tail[first..].fill(pad);
                let mut cases = vec![(tail.clone(), false)];
                for (at, counts) in [
                    (first, true),
                    (len - 1, true),
                    (first.wrapping_sub(1), false),
                ] {
                    if at < len {
                        let mut bad = tail.clone();
                        bad[at] ^= 1 << (at % 8);
                        cases.push((bad, counts));
                    }
                }
                for (case, wrong) in cases {
                    let ours = diff(t, &case, first as u8, pad);
                    let plain = case[first..].iter().any(|&b| b != pad);
                    assert_eq!(plain, wrong, "{len} {first}: the case itself");
                    assert_eq!(ours != 0, wrong, "{len} {first}");
                }
            }
        }
    }
}
