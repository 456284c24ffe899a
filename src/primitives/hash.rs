//! The four hash functions, described by what HMAC and the constant-time
//! digest need: the state, the block, the initial value, how the length is
//! encoded in the final block, and how the state becomes the output.
//!
//! The compression function itself is not here: it is a [`Compress`]
//! implementation supplied by the chosen backend, so that the same HMAC and
//! constant-time code runs over every kernel.

use zeroize::Zeroize;

/// A Merkle-Damgard hash function of the SHA family.
pub(crate) trait HashFunction: 'static {
    /// The chaining state (five or eight words).
    type State: Copy + Zeroize + PartialEq + core::fmt::Debug;
    /// One input block, `[u8; BLOCK_LEN]`.
    type Block: Copy + AsRef<[u8]> + AsMut<[u8]>;

    /// Block length in bytes.
    const BLOCK_LEN: usize;
    /// Digest length in bytes.
    const OUTPUT_LEN: usize;
    /// Bytes of the big-endian bit-length field ending the last block.
    const LENGTH_FIELD_LEN: usize;
    /// The initial chaining value.
    const INITIAL_STATE: Self::State;
    /// An all-zero state.
    const ZERO_STATE: Self::State;
    /// An all-zero block.
    const ZERO_BLOCK: Self::Block;

    /// Splits `data` into whole blocks and the remainder, without copying.
    fn split_blocks(data: &[u8]) -> (&[Self::Block], &[u8]);

    /// Writes the first `out.len()` bytes (at most `OUTPUT_LEN`) of the
    /// big-endian serialisation of `state`.
    fn write_output(state: &Self::State, out: &mut [u8]);

    /// Bitwise-or of `mask & other` into `acc`, word by word: the selection
    /// step of the constant-time digest (`mask` is all ones or all zeros).
    fn or_masked(acc: &mut Self::State, other: &Self::State, mask: u64);
}

/// A compression function for hash `H`: the piece a backend provides.
pub(crate) trait Compress<H: HashFunction> {
    /// Runs the compression function over `blocks` in order.
    fn compress(&self, state: &mut H::State, blocks: &[H::Block]);

    /// Runs it over `one`, then `two`, and returns the state between them
    /// (the secret-length finish keeps either). Kernels that hash two
    /// blocks faster together than one at a time override it.
    #[inline]
    fn compress_two(&self, state: &mut H::State, one: &H::Block, two: &H::Block) -> H::State {
        self.compress(state, core::slice::from_ref(one));
        let mid = *state;
        self.compress(state, core::slice::from_ref(two));
        mid
    }
}

/// SHA-1 (FIPS 180-4).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Sha1;
/// SHA-256 (FIPS 180-4).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Sha256;
/// SHA-384 (FIPS 180-4): SHA-512's compression, its own IV, 48-byte output.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Sha384;
/// SHA-512 (FIPS 180-4). Its compression, state and block are SHA-384's, so
/// every SHA-384 kernel serves it too.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Sha512;

// Whole words as fixed-size stores; only a truncated output's last word
// takes a variable-length copy (which compiles to a `memcpy` call: one
// per word, when every word went that way).
fn write_words_u32(words: &[u32], out: &mut [u8]) {
    let (whole, rest) = out.as_chunks_mut::<4>();
    for (chunk, word) in whole.iter_mut().zip(words) {
        *chunk = word.to_be_bytes();
    }
    if let Some(word) = words.get(whole.len()) {
        rest.copy_from_slice(&word.to_be_bytes()[..rest.len()]);
    }
}

fn write_words_u64(words: &[u64], out: &mut [u8]) {
    let (whole, rest) = out.as_chunks_mut::<8>();
    for (chunk, word) in whole.iter_mut().zip(words) {
        *chunk = word.to_be_bytes();
    }
    if let Some(word) = words.get(whole.len()) {
        rest.copy_from_slice(&word.to_be_bytes()[..rest.len()]);
    }
}

impl HashFunction for Sha1 {
    type State = [u32; 5];
    type Block = [u8; 64];
    const BLOCK_LEN: usize = 64;
    const OUTPUT_LEN: usize = 20;
    const LENGTH_FIELD_LEN: usize = 8;
    const INITIAL_STATE: [u32; 5] = [0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0];
    const ZERO_STATE: Self::State = [0; 5];
    const ZERO_BLOCK: [u8; 64] = [0; 64];

    fn split_blocks(data: &[u8]) -> (&[[u8; 64]], &[u8]) {
        data.as_chunks()
    }

    fn write_output(state: &[u32; 5], out: &mut [u8]) {
        write_words_u32(state, out);
    }

    fn or_masked(acc: &mut [u32; 5], other: &[u32; 5], mask: u64) {
        for (a, o) in acc.iter_mut().zip(other) {
            *a |= o & mask as u32;
        }
    }
}

impl HashFunction for Sha256 {
    type State = [u32; 8];
    type Block = [u8; 64];
    const BLOCK_LEN: usize = 64;
    const OUTPUT_LEN: usize = 32;
    const LENGTH_FIELD_LEN: usize = 8;
    const INITIAL_STATE: [u32; 8] = [
        0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab,
        0x5be0cd19,
    ];
    const ZERO_STATE: Self::State = [0; 8];
    const ZERO_BLOCK: [u8; 64] = [0; 64];

    fn split_blocks(data: &[u8]) -> (&[[u8; 64]], &[u8]) {
        data.as_chunks()
    }

    fn write_output(state: &[u32; 8], out: &mut [u8]) {
        write_words_u32(state, out);
    }

    fn or_masked(acc: &mut [u32; 8], other: &[u32; 8], mask: u64) {
        for (a, o) in acc.iter_mut().zip(other) {
            *a |= o & mask as u32;
        }
    }
}

impl HashFunction for Sha384 {
    type State = [u64; 8];
    type Block = [u8; 128];
    const BLOCK_LEN: usize = 128;
    const OUTPUT_LEN: usize = 48;
    const LENGTH_FIELD_LEN: usize = 16;
    const INITIAL_STATE: [u64; 8] = [
        0xcbbb9d5dc1059ed8,
        0x629a292a367cd507,
        0x9159015a3070dd17,
        0x152fecd8f70e5939,
        0x67332667ffc00b31,
        0x8eb44a8768581511,
        0xdb0c2e0d64f98fa7,
        0x47b5481dbefa4fa4,
    ];
    const ZERO_STATE: [u64; 8] = [0; 8];
    const ZERO_BLOCK: [u8; 128] = [0; 128];

    fn split_blocks(data: &[u8]) -> (&[[u8; 128]], &[u8]) {
        data.as_chunks()
    }

    fn write_output(state: &[u64; 8], out: &mut [u8]) {
        write_words_u64(&state[..6], out);
    }

    fn or_masked(acc: &mut [u64; 8], other: &[u64; 8], mask: u64) {
        for (a, o) in acc.iter_mut().zip(other) {
            *a |= o & mask;
        }
    }
}

impl HashFunction for Sha512 {
    type State = [u64; 8];
    type Block = [u8; 128];
    const BLOCK_LEN: usize = 128;
    const OUTPUT_LEN: usize = 64;
    const LENGTH_FIELD_LEN: usize = 16;
    const INITIAL_STATE: [u64; 8] = [
        0x6a09e667f3bcc908,
        0xbb67ae8584caa73b,
        0x3c6ef372fe94f82b,
        0xa54ff53a5f1d36f1,
        0x510e527fade682d1,
        0x9b05688c2b3e6c1f,
        0x1f83d9abfb41bd6b,
        0x5be0cd19137e2179,
    ];
    const ZERO_STATE: [u64; 8] = [0; 8];
    const ZERO_BLOCK: [u8; 128] = [0; 128];

    fn split_blocks(data: &[u8]) -> (&[[u8; 128]], &[u8]) {
        data.as_chunks()
    }

    fn write_output(state: &[u64; 8], out: &mut [u8]) {
        write_words_u64(state, out);
    }

    fn or_masked(acc: &mut [u64; 8], other: &[u64; 8], mask: u64) {
        for (a, o) in acc.iter_mut().zip(other) {
            *a |= o & mask;
        }
    }
}

/// A streaming hash over a compression function: the state, a partial block,
/// and the byte count. Lives on the stack; copying it forks the hash.
#[derive(Clone, Copy)]
pub(crate) struct Engine<H: HashFunction> {
    pub(crate) state: H::State,
    pub(crate) buffer: H::Block,
    /// Bytes in `buffer` (always < `BLOCK_LEN`).
    pub(crate) buffered: usize,
    /// Bytes absorbed so far, including those compressed into `state`.
    pub(crate) total: u64,
}

impl<H: HashFunction> Engine<H> {
    /// An engine resuming from `state` after `total` bytes (a multiple of
    /// the block length).
    pub(crate) fn resume(state: H::State, total: u64) -> Self {
        Engine {
            state,
            buffer: H::ZERO_BLOCK,
            buffered: 0,
            total,
        }
    }

    /// A fresh hash.
    pub(crate) fn new() -> Self {
        Self::resume(H::INITIAL_STATE, 0)
    }

    /// Absorbs `data`.
    pub(crate) fn update<C: Compress<H>>(&mut self, c: &C, mut data: &[u8]) {
        self.total += data.len() as u64;
        if self.buffered > 0 {
            let take = (H::BLOCK_LEN - self.buffered).min(data.len());
            self.buffer.as_mut()[self.buffered..self.buffered + take]
                .copy_from_slice(&data[..take]);
            self.buffered += take;
            data = &data[take..];
            if self.buffered < H::BLOCK_LEN {
                return;
            }
            c.compress(&mut self.state, core::slice::from_ref(&self.buffer));
            self.buffered = 0;
        }
        let (blocks, rest) = H::split_blocks(data);
        if !blocks.is_empty() {
            c.compress(&mut self.state, blocks);
        }
        self.buffer.as_mut()[..rest.len()].copy_from_slice(rest);
        self.buffered = rest.len();
    }

    /// Applies the final padding and returns the chaining state holding the
    /// digest.
    pub(crate) fn finish<C: Compress<H>>(self, c: &C) -> H::State {
        // Per-message copies on the stack are not wiped: the key material
        // itself is wiped once, when the key object drops.
        pad_and_compress(
            c,
            self.state,
            &self.buffer.as_ref()[..self.buffered],
            self.total,
        )
    }

    /// [`Engine::update`] with `data`, then [`Engine::finish`], for an
    /// engine with nothing buffered (fresh or resumed): the tail goes
    /// straight into the padded last block, without the engine's buffer.
    pub(crate) fn finish_with<C: Compress<H>>(self, c: &C, data: &[u8]) -> H::State {
        debug_assert_eq!(self.buffered, 0);
        let mut state = self.state;
        let (blocks, rest) = H::split_blocks(data);
        if !blocks.is_empty() {
            c.compress(&mut state, blocks);
        }
        pad_and_compress(c, state, rest, self.total + data.len() as u64)
    }
}

/// Compresses `tail`, the last `tail.len() < BLOCK_LEN` bytes of a message
/// of `total` bytes, with the final padding into `state`.
#[inline]
fn pad_and_compress<H: HashFunction, C: Compress<H>>(
    c: &C,
    mut state: H::State,
    tail: &[u8],
    total: u64,
) -> H::State {
    let bits = total.wrapping_mul(8).to_be_bytes();
    if tail.len() + 1 + H::LENGTH_FIELD_LEN > H::BLOCK_LEN {
        return pad_two(c, state, tail, bits);
    }
    let mut last = H::ZERO_BLOCK;
    let b = last.as_mut();
    b[..tail.len()].copy_from_slice(tail);
    b[tail.len()] = 0x80;
    b[H::BLOCK_LEN - 8..].copy_from_slice(&bits);
    c.compress(&mut state, core::slice::from_ref(&last));
    state
}

/// [`pad_and_compress`] where the length spills into a second block: both
/// in one call, so that a kernel faster on runs of two than on single
/// blocks (the SHA-512 pair loop) takes them together. Kept out of line:
/// inlined into `finish`, it slowed one-block SHA-384 digests by 6%
/// against OpenSSL on Intel family 6 model 0xA7 (medians of 6 alternating
/// runs).
#[inline(never)]
fn pad_two<H: HashFunction, C: Compress<H>>(
    c: &C,
    mut state: H::State,
    tail: &[u8],
    bits: [u8; 8],
) -> H::State {
    let mut two = [H::ZERO_BLOCK; 2];
    two[0].as_mut()[..tail.len()].copy_from_slice(tail);
    two[0].as_mut()[tail.len()] = 0x80;
    two[1].as_mut()[H::BLOCK_LEN - 8..].copy_from_slice(&bits);
    c.compress(&mut state, &two);
    state
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_written_big_endian_and_truncated() {
        let w32 = [0x0102_0304u32, 0x0506_0708, 0x090a_0b0c];
        let w64 = [0x0102_0304_0506_0708u64, 0x090a_0b0c_0d0e_0f10];
        let be32: Vec<u8> = w32.iter().flat_map(|w| w.to_be_bytes()).collect();
        let be64: Vec<u8> = w64.iter().flat_map(|w| w.to_be_bytes()).collect();
        for len in 0..=20 {
            // Bytes past the words' 12 or 16 are left as they were.
            let mut out = [0xeeu8; 20];
            write_words_u32(&w32, &mut out[..len]);
            let n = len.min(12);
            assert_eq!(out[..n], be32[..n], "u32, {len} bytes");
            assert!(out[n..].iter().all(|&b| b == 0xee), "u32, {len} bytes");
            let mut out = [0xeeu8; 20];
            write_words_u64(&w64, &mut out[..len]);
            let n = len.min(16);
            assert_eq!(out[..n], be64[..n], "u64, {len} bytes");
            assert!(out[n..].iter().all(|&b| b == 0xee), "u64, {len} bytes");
        }
    }

    /// `finish_with` pads its own tail; it must agree with the buffered
    /// path (and so with the `sha2` crate's hashes, which the vector tests
    /// check) at every length around one and two blocks, fresh and resumed.
    fn finish_with_matches_update_and_finish<H: HashFunction>()
    where
        crate::backends::portable::CrateCompress: Compress<H>,
    {
        let c = crate::backends::portable::CrateCompress;
        let data: Vec<u8> = (0..3 * H::BLOCK_LEN + 1)
            .map(|i| (i * 7 + 3) as u8)
            .collect();
        for len in 0..data.len() {
            let m = &data[..len];
            let mut e = Engine::<H>::new();
            e.update(&c, m);
            assert_eq!(Engine::<H>::new().finish_with(&c, m), e.finish(&c), "{len}");
            // Resumed after one block, as HMAC's inner and outer hashes.
            let mut e = Engine::<H>::resume(H::INITIAL_STATE, H::BLOCK_LEN as u64);
            e.update(&c, m);
            let resumed = Engine::<H>::resume(H::INITIAL_STATE, H::BLOCK_LEN as u64);
            assert_eq!(resumed.finish_with(&c, m), e.finish(&c), "{len}, resumed");
        }
    }

    #[test]
    fn finish_with_matches_the_buffered_path() {
        finish_with_matches_update_and_finish::<Sha1>();
        finish_with_matches_update_and_finish::<Sha256>();
        finish_with_matches_update_and_finish::<Sha384>();
        finish_with_matches_update_and_finish::<Sha512>();
    }
}
