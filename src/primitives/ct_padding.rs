//! Constant-time checks of the paddings that follow a CBC decryption:
//! PKCS#7 (RFC 5652 section 6.3: `n` bytes of value `n`, 1 to 16) and
//! ESP's (RFC 4303 section 2.4: bytes `1, 2, 3, ...`, then the pad length
//! and the next-header byte).
//!
//! Like `record::ct_open::check_padding` for TLS, each scans a span fixed
//! by public lengths on u8 lanes and returns a mask, never a branch, so
//! the caller declassifies exactly one value. Even where a tag was checked
//! first (ESP, JWE), this keeps a bad padding from costing less time than
//! a good one.

use super::ct;

/// Checks the PKCS#7 padding at the end of `last`, the last decrypted
/// block. Returns `(good, pad_len)`: `good` is a mask and `pad_len` (1 to
/// 16) is meaningful only when it is set.
#[inline]
pub(crate) fn check_pkcs7(last: &[u8; 16]) -> (usize, usize) {
    let p = ct::barrier(last[15] as usize);
    let in_range = ct::ge(p, 1) & ct::ge(16, p);
    // First padding index; any value will do when the length is wrong.
    let first = ct::select(in_range, 16usize.wrapping_sub(p), 0) as u8;
    let pb = p as u8;
    let mut diff = 0u8;
    for (k, &b) in last.iter().enumerate() {
        let in_pad = ct::le_u8(first, k as u8);
        diff |= in_pad & (b ^ pb);
    }
    // Behind a barrier: else the compiler tests `in_range` and `diff`
    // apart when the caller branches on `good`, and a length byte out of
    // range is refused sooner than a wrong padding byte.
    let good = ct::barrier(in_range & ct::is_zero(diff as usize));
    (good, good & p)
}

/// Checks ESP padding at the end of the decrypted `body` (`payload ||
/// padding || pad length || next header`, `body.len() >= 2` public).
/// Returns `(good, pad_len)`: `good` is a mask; `pad_len` (0 to 255) is
/// meaningful only when it is set.
#[inline]
pub(crate) fn check_esp_padding(body: &[u8]) -> (usize, usize) {
    debug_assert!(body.len() >= 2);
    let room = body.len() - 2;
    let p = ct::barrier(body[room] as usize);
    let fits = ct::ge(room, p);
    // The bytes before the pad length, last first: `r` from the end holds
    // `p - r` when `r < p`.
    let window = room.min(255);
    let pb = p as u8;
    let mut diff = 0u8;
    for (r, &b) in body[room - window..room].iter().rev().enumerate() {
        let r = r as u8;
        let in_pad = ct::lt_u8(r, pb);
        diff |= in_pad & (b ^ pb.wrapping_sub(r));
    }
    // Behind a barrier, as in `check_pkcs7`: one test of one mask.
    let good = ct::barrier(fits & ct::is_zero(diff as usize));
    (good, good & p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pkcs7_every_length_and_every_wrong_byte() {
        for p in 1..=16u8 {
            let mut block = [0xa5u8; 16];
            block[16 - p as usize..].fill(p);
            assert_eq!(check_pkcs7(&block), (usize::MAX, p as usize), "pad {p}");
            for k in 16 - p as usize..16 {
                let mut bad = block;
                bad[k] ^= 0x40;
                assert_eq!(check_pkcs7(&bad).0, 0, "pad {p} byte {k}");
            }
        }
        for last in [0u8, 17, 32, 128, 255] {
            let block = [last; 16];
            assert_eq!(check_pkcs7(&block), (0, 0), "length byte {last}");
        }
    }

    #[test]
    fn esp_every_length_and_every_wrong_byte() {
        for len in [2usize, 3, 16, 40, 255, 256, 257, 300] {
            for p in 0..=255usize {
                let mut body = [0x33u8; 300];
                let body = &mut body[..len];
                let room = len - 2;
                body[room] = p as u8;
                body[room + 1] = 4;
                if p > room {
                    assert_eq!(check_esp_padding(body).0, 0, "{len} {p} does not fit");
                    continue;
                }
                for i in 0..p {
                    body[room - p + i] = i as u8 + 1;
                }
                assert_eq!(check_esp_padding(body), (usize::MAX, p), "{len} {p}");
                for i in 0..p {
                    let mut bad = [0u8; 300];
                    bad[..len].copy_from_slice(body);
                    bad[room - p + i] ^= 1;
                    assert_eq!(check_esp_padding(&bad[..len]).0, 0, "{len} {p} byte {i}");
                }
                // The payload byte before the padding does not matter.
                if room > p {
                    body[room - p - 1] ^= 0xff;
                    assert_eq!(check_esp_padding(body).0, usize::MAX, "{len} {p}");
                }
            }
        }
    }
}
