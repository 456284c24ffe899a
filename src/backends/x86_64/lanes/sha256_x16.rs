//! SHA-256 in sixteen lanes (stand-in: one lane after another).
use crate::backends::x86_64::Vaes512;

/// SHA-256 compression in sixteen independent lanes: lane `i` runs
/// `blocks` 64-byte blocks from `data[i]` (at least `64 * blocks` bytes)
/// into `states[i]`.
pub(crate) fn compress_x16(
    _t: Vaes512,
    states: &mut [[u32; 8]; 16],
    data: &[&[u8]; 16],
    blocks: usize,
) {
    for (s, d) in states.iter_mut().zip(data) {
        sha2::block_api::compress256(s, d[..64 * blocks].as_chunks().0);
    }
}
