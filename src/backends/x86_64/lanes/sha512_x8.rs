//! SHA-512 in eight lanes (stand-in: one lane after another).
use crate::backends::x86_64::Vaes512;

/// SHA-512 compression in eight independent lanes: lane `i` runs `blocks`
/// 128-byte blocks from `data[i]` (at least `128 * blocks` bytes) into
/// `states[i]`.
pub(crate) fn compress_x8(
    _t: Vaes512,
    states: &mut [[u64; 8]; 8],
    data: &[&[u8]; 8],
    blocks: usize,
) {
    for (s, d) in states.iter_mut().zip(data) {
        sha2::block_api::compress512(s, d[..128 * blocks].as_chunks().0);
    }
}
