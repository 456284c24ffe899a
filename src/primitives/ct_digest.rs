//! Hashing a message whose length is secret.
//!
//! After CBC decryption of a MAC-then-encrypt record the split between
//! plaintext and MAC depends on the padding length, which is secret until the
//! record is authenticated. Hashing just the plaintext would make the number
//! of compression calls depend on it (Lucky Thirteen, CVE-2013-0169). Merely
//! equalising that number is not enough either: which blocks are touched and
//! when the result is taken still leak through the cache (later cache-timing
//! attacks on such "dummy compression" fixes). So [`finish_with_secret_len`]
//! runs the compression function over every block the message *could* end
//! in, builds each block from public positions with masks (the `0x80` byte
//! and the length field land where the secret length puts them), and keeps
//! the chaining value of the real last block by a masked OR. The work and the
//! memory touched depend only on public lengths.

use super::ct;
use super::hash::{Compress, Engine, HashFunction};

/// Distance added to signed block offsets so they stay non-negative.
const BIAS: usize = 1 << 24;

/// Finishes `engine` as if it had absorbed `data[..len]` and returns the
/// final chaining state, in time independent of `len`.
///
/// `data.len()` (the largest possible `len`) and the engine's position are
/// public; `len <= data.len()` is secret. `data.len()` must stay below 2^20
/// (records are at most 2^14 + 2048 bytes).
pub(crate) fn finish_with_secret_len<H: HashFunction, C: Compress<H>>(
    c: &C,
    engine: &Engine<H>,
    data: &[u8],
    len: usize,
) -> H::State {
    let plan = SecretLenPlan::new(engine, data, len);
    let mut state = engine.state;
    let mut result = H::ZERO_STATE;
    let (mut one, mut two) = (H::ZERO_BLOCK, H::ZERO_BLOCK);
    // Two blocks a call, for the kernels that hash a pair faster than two
    // single blocks; the number of pairs is public.
    let pairs = plan.max_blocks / 2;
    for p in 0..pairs {
        let last_one = plan.block(engine, data, len, 2 * p, &mut one);
        let last_two = plan.block(engine, data, len, 2 * p + 1, &mut two);
        let mid = c.compress_two(&mut state, &one, &two);
        H::or_masked(&mut result, &mid, last_one as u64);
        H::or_masked(&mut result, &state, last_two as u64);
    }
    if plan.max_blocks % 2 == 1 {
        let is_last = plan.block(engine, data, len, plan.max_blocks - 1, &mut one);
        c.compress(&mut state, core::slice::from_ref(&one));
        H::or_masked(&mut result, &state, is_last as u64);
    }
    result
}

/// What [`finish_with_secret_len`] computes once and then uses for each
/// block: shared with the lane-parallel finish of the batch open, which
/// runs the same blocks of many messages through one multi-lane kernel.
pub(crate) struct SecretLenPlan<H: HashFunction> {
    /// Blocks when `len` is at its maximum: the loop count, public.
    pub(crate) max_blocks: usize,
    /// Index of the real last block: secret.
    pub(crate) last_block: usize,
    /// Offset of the `0x80` byte in the stream `buffer || data`: secret.
    pub(crate) end: usize,
    /// The message length in bits, for the length field: secret.
    pub(crate) bits: u64,
    /// The length field in place at the end of a block.
    field: H::Block,
}

impl<H: HashFunction> SecretLenPlan<H> {
    /// The plan for finishing `engine` over `data[..len]` (`len` secret,
    /// `data.len()` public and below 2^20).
    pub(crate) fn new(engine: &Engine<H>, data: &[u8], len: usize) -> Self {
        debug_assert!(data.len() < 1 << 20);
        let block_len = H::BLOCK_LEN;
        let buffered = engine.buffered;
        let tail = 1 + H::LENGTH_FIELD_LEN;
        let max_blocks = (buffered + data.len() + tail).div_ceil(block_len);
        // Secret, so a shift (`block_len` is a power of two) rather than
        // `div_ceil`, whose remainder test may branch.
        let last_block =
            ((buffered + len + tail + block_len - 1) >> block_len.trailing_zeros()) - 1;
        let bit_len = (engine.total.wrapping_add(len as u64)).wrapping_mul(8);
        // ORed (under the last-block mask) into every block in the same
        // pass as the masking.
        let mut field = H::ZERO_BLOCK;
        field.as_mut()[block_len - 8..].copy_from_slice(&bit_len.to_be_bytes());
        SecretLenPlan {
            max_blocks,
            last_block,
            end: buffered + len,
            bits: bit_len,
            field,
        }
    }

    /// Writes the stream `buffer || data` of `engine`, then zeros, into
    /// `stage` (at least `buffered + data.len()` bytes): every block
    /// unmasked, for a kernel that masks them itself. Public lengths only.
    pub(crate) fn stage(engine: &Engine<H>, data: &[u8], stage: &mut [u8]) {
        let buffered = engine.buffered;
        let (head, rest) = stage.split_at_mut(buffered);
        head.copy_from_slice(&engine.buffer.as_ref()[..buffered]);
        let (body, zeros) = rest.split_at_mut(data.len());
        body.copy_from_slice(data);
        zeros.fill(0);
    }

    /// Writes block `i` (`< max_blocks`) of the padded message into
    /// `block` and returns whether it is the real last one, as a mask. The
    /// work and the memory touched depend only on public lengths.
    #[inline(always)]
    pub(crate) fn block(
        &self,
        engine: &Engine<H>,
        data: &[u8],
        len: usize,
        i: usize,
        block: &mut H::Block,
    ) -> usize {
        let block_len = H::BLOCK_LEN;
        let buffered = engine.buffered;
        let start = i * block_len; // position of this block in buffer || data
        let b = block.as_mut();
        // Public copy: whatever the stream (buffer || data) holds at these
        // positions, as if `len` were maximal; bytes past `data` are zero.
        // Only public lengths choose the ranges.
        let end = start + block_len;
        if start >= buffered && end <= buffered + data.len() {
            // Entirely inside `data`: one copy of a whole block.
            b.copy_from_slice(&data[start - buffered..end - buffered]);
        } else {
            b.fill(0);
            if start < buffered {
                b[..buffered - start].copy_from_slice(&engine.buffer.as_ref()[start..buffered]);
            }
            let from = start.max(buffered);
            let to = end.min(buffered + data.len());
            if from < to {
                b[from - start..to - start].copy_from_slice(&data[from - buffered..to - buffered]);
            }
        }
        // Secret: where the message ends inside this block, clamped to
        // [-1, block_len] so that it fits a small lane. `t` is the offset of
        // the 0x80 byte relative to the block start.
        let t = ct::barrier(len + buffered + BIAS - start);
        let lo = BIAS - 1;
        let hi = BIAS + block_len;
        // The clamp masks through the barrier too, or the selects become
        // `cmov`s (or, with a later compiler, branches) in the loop.
        let t = ct::select(ct::barrier(ct::lt(t, lo)), lo, t);
        let t = ct::select(ct::barrier(ct::lt(hi, t)), hi, t);
        // Offsets by 256 so every lane value is a small positive u16.
        let t = (t + 256 - BIAS) as u16;
        // Through the barrier: a mask known to be 0 or all ones may become
        // a branch on the secret last block.
        let is_last = ct::barrier(ct::eq(i, self.last_block));
        mask_block(b, t, self.field.as_ref(), is_last as u8);
        is_last
    }
}

/// Keeps the bytes before offset `t - 256`, writes 0x80 at it, zeroes the
/// rest, and ORs in `field & last` (the length field, in the last block
/// only). `t` is in `[255, 256 + block_len]`. Written on u8 lanes
/// (`block_len <= 128`) without branches so the compiler vectorises it 16
/// bytes wide.
#[inline(always)]
fn mask_block(block: &mut [u8], t: u16, field: &[u8], last: u8) {
    debug_assert!(block.len() <= 128 && field.len() == block.len());
    // Both shifted by one so they are in [0, block_len + 1].
    let t = (t - 255) as u8;
    for (j, (byte, &f)) in block.iter_mut().zip(field).enumerate() {
        let jj = j as u8 + 1;
        let keep = ct::lt_u8(jj, t);
        let at = ct::eq_u8(jj, t);
        *byte = (*byte & keep) | (0x80 & at) | (f & last);
    }
}
