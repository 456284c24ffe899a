//! SHA-1 and SHA-256 compression for CPUs with AVX2 and BMI2 but without
//! the SHA extensions.
//!
//! The message schedule runs in the vector unit, four words per xmm
//! register (VEX-encoded 128-bit operations), with the round constants
//! added there too; each group's four `W + K` words go to the scalar
//! rounds by lane extracts (which measured faster here than storing the
//! vector and reloading the words from the stack), and the rounds use
//! `rorx` (BMI2) for the rotations and `andn` (BMI1) for the choice
//! function. The schedule of a group is computed four groups ahead of the
//! rounds that consume it, so the two streams of work are independent in
//! the instruction window and the vector work hides behind the rounds'
//! dependency chain.
//!
//! The rounds are cut into groups of four like the SHA-NI kernels', so the
//! stitched loops can place AES rounds between them.

use core::arch::x86_64::*;

use super::sha::HashKernel;
use super::{block, load};
use crate::primitives::hash::{Compress, HashFunction, Sha1, Sha256, Sha384, Sha512};

/// SHA-1 with AVX2 (schedule) and BMI1/BMI2 (rounds).
// Wired into the backends separately.
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) struct Sha1Avx2;
/// SHA-256 with AVX2 (schedule) and BMI1/BMI2 (rounds).
// Wired into the backends separately.
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) struct Sha256Avx2;

/// Loads 16 message bytes as four big-endian words, `W[0]` in lane 0.
#[inline]
#[target_feature(enable = "avx2,bmi1,bmi2,ssse3,sse4.1")]
fn be_words(data: &[u8], at: usize) -> __m128i {
    // Byte-swaps each 32-bit lane.
    let mask = _mm_set_epi64x(0x0c0d_0e0f_0809_0a0b, 0x0405_0607_0001_0203);
    _mm_shuffle_epi8(load(block(data, at)), mask)
}

/// The four lanes of `v` as scalars, through two 64-bit moves (`vmovq`,
/// `vpextrq`) and two shifts: five uops where `vmovd` and three `vpextrd`
/// take seven. It measured faster for SHA-1; for SHA-256,
/// [`lanes_pextrd`] measured slightly faster.
#[inline]
#[target_feature(enable = "avx2,bmi1,bmi2,ssse3,sse4.1")]
fn lanes(v: __m128i) -> [u32; 4] {
    // Opaque, or the compiler turns the halves back into `vpextrd`s.
    let lo = super::opaque_u64(_mm_cvtsi128_si64(v) as u64);
    let hi = super::opaque_u64(_mm_extract_epi64::<1>(v) as u64);
    [lo as u32, (lo >> 32) as u32, hi as u32, (hi >> 32) as u32]
}

/// The four lanes of `v` as scalars, one `vmovd`/`vpextrd` each.
#[inline]
#[target_feature(enable = "avx2,bmi1,bmi2,ssse3,sse4.1")]
fn lanes_pextrd(v: __m128i) -> [u32; 4] {
    [
        _mm_cvtsi128_si32(v) as u32,
        _mm_extract_epi32::<1>(v) as u32,
        _mm_extract_epi32::<2>(v) as u32,
        _mm_extract_epi32::<3>(v) as u32,
    ]
}

/// Rotates each lane left by `L` (`R` = 32 - `L`).
#[inline]
#[target_feature(enable = "avx2,bmi1,bmi2,ssse3,sse4.1")]
fn rol_epi32<const L: i32, const R: i32>(x: __m128i) -> __m128i {
    _mm_or_si128(_mm_slli_epi32::<L>(x), _mm_srli_epi32::<R>(x))
}

/// Writes `words` big-endian to the front of `out`.
#[inline(always)]
fn write_be(words: &[u32], out: &mut [u8]) {
    for (chunk, w) in out[..4 * words.len()].chunks_exact_mut(4).zip(words) {
        chunk.copy_from_slice(&w.to_be_bytes());
    }
}

// ---------------------------------------------------------------- SHA-1

/// SHA-1 round constants, one per twenty rounds.
const K1: [u32; 4] = [0x5a82_7999, 0x6ed9_eba1, 0x8f1b_bcdc, 0xca62_c1d6];

/// SHA-1 message words `W[4g..4g + 4]` from the ring `x` of the previous
/// 32 words (`x[k % 8]` holds `W[4k..4k + 4]`), for `4 <= g < 20`.
#[inline]
#[target_feature(enable = "avx2,bmi1,bmi2,ssse3,sse4.1")]
fn sha1_schedule(x: &[__m128i; 8], g: usize) -> __m128i {
    let at = |k: usize| x[k % 8];
    if g < 8 {
        // W[t] = rol1(W[t-3] ^ W[t-8] ^ W[t-14] ^ W[t-16]). Lane 3's
        // W[t-3] is lane 0's result: leave it out, then add it in.
        let w3 = _mm_srli_si128::<4>(at(g + 7));
        let w14 = _mm_alignr_epi8::<8>(at(g + 5), at(g + 4));
        let t = _mm_xor_si128(_mm_xor_si128(w3, at(g + 6)), _mm_xor_si128(w14, at(g + 4)));
        let r = rol_epi32::<1, 31>(t);
        // Lane 3 lacks rol1(W[4g]) = rol1(r[0]).
        let fix = rol_epi32::<1, 31>(_mm_slli_si128::<12>(r));
        _mm_xor_si128(r, fix)
    } else {
        // For t >= 32, W[t] = rol2(W[t-6] ^ W[t-16] ^ W[t-28] ^ W[t-32])
        // (the recurrence applied to itself), with no dependency between
        // the four lanes.
        let w6 = _mm_alignr_epi8::<8>(at(g + 7), at(g + 6));
        let t = _mm_xor_si128(
            _mm_xor_si128(w6, at(g + 4)),
            _mm_xor_si128(at(g + 1), at(g)),
        );
        rol_epi32::<2, 30>(t)
    }
}

#[inline]
// The last groups' updates of the schedule ring are never read; the
// unrolled code simply drops them.
#[allow(unused_assignments)]
#[target_feature(enable = "avx2,bmi1,bmi2,ssse3,sse4.1")]
fn sha1_rounds<F: FnMut(usize)>(state: [u32; 5], msg: [__m128i; 4], mut slot: F) -> [u32; 5] {
    let mut x = [_mm_setzero_si128(); 8];
    x[..4].copy_from_slice(&msg);
    let mut wk = [_mm_setzero_si128(); 20];
    let k = |g: usize| _mm_set1_epi32(K1[g / 5] as i32);
    for (g, w) in msg.iter().enumerate() {
        wk[g] = _mm_add_epi32(*w, k(g));
    }
    let [mut a, mut b, mut c, mut d, mut e] = state;
    macro_rules! round {
        ($w:ident, $t:expr, $f:expr) => {
            let t: usize = $t;
            let f: u32 = $f;
            // The terms in order of readiness: e + W + K long before, then
            // f of the previous round's a, then rol5 of this round's.
            let ew = super::opaque_u32(e.wrapping_add($w[t % 4]));
            let temp = super::opaque_u32(ew.wrapping_add(f)).wrapping_add(a.rotate_left(5));
            e = d;
            d = c;
            c = b.rotate_left(30);
            b = a;
            a = temp;
        };
    }
    macro_rules! group {
        ($($g:literal)*) => {
            $(
                let g: usize = $g;
                if g + 4 < 20 {
                    // The schedule four groups ahead.
                    let w = sha1_schedule(&x, g + 4);
                    x[(g + 4) % 8] = w;
                    wk[g + 4] = _mm_add_epi32(w, k(g + 4));
                }
                let w4 = lanes(wk[g]);
                for t in 4 * g..4 * g + 4 {
                    match g / 5 {
                        // Ch: the two terms are disjoint, so they add.
                        0 => { round!(w4, t, (b & c).wrapping_add(!b & d)); }
                        // Maj, as two disjoint terms as well.
                        2 => { round!(w4, t, (b & c).wrapping_add(d & (b ^ c))); }
                        _ => { round!(w4, t, b ^ c ^ d); }
                    }
                }
                // Keep the slot's AES rounds here (see `pin_xmm`).
                super::pin_u32(&mut a);
                slot(g);
            )*
        };
    }
    group!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19);
    [
        a.wrapping_add(state[0]),
        b.wrapping_add(state[1]),
        c.wrapping_add(state[2]),
        d.wrapping_add(state[3]),
        e.wrapping_add(state[4]),
    ]
}

impl HashKernel for Sha1Avx2 {
    type H = Sha1;
    type Regs = [u32; 5];
    /// `W[0..16]`, four words a register, `W[4i]` in lane 0 of `[i]`.
    type Msg = [__m128i; 4];
    const BLOCK: usize = 64;
    type Isa = super::Avx2;
    const GROUPS: usize = 20;

    #[inline]
    #[target_feature(enable = "avx2,bmi1,bmi2,ssse3,sse4.1")]
    unsafe fn load_state(state: &[u32; 5]) -> [u32; 5] {
        *state
    }

    #[inline]
    #[target_feature(enable = "avx2,bmi1,bmi2,ssse3,sse4.1")]
    unsafe fn store_state(regs: [u32; 5]) -> [u32; 5] {
        regs
    }

    #[inline]
    #[target_feature(enable = "avx2,bmi1,bmi2,ssse3,sse4.1")]
    unsafe fn load_msg(data: &[u8]) -> [__m128i; 4] {
        core::array::from_fn(|i| be_words(data, 16 * i))
    }

    #[inline]
    #[target_feature(enable = "avx2,bmi1,bmi2,ssse3,sse4.1")]
    unsafe fn rounds<F: FnMut(usize)>(regs: [u32; 5], msg: [__m128i; 4], slot: F) -> [u32; 5] {
        sha1_rounds(regs, msg, slot)
    }

    #[inline]
    #[target_feature(enable = "avx2,bmi1,bmi2,ssse3,sse4.1")]
    unsafe fn outer_msg(inner: [u32; 5]) -> [__m128i; 4] {
        let w = |x: u32| x as i32;
        // The 20-byte digest, 0x80, zeros, and the bit length of the key
        // block and the digest.
        [
            _mm_set_epi32(w(inner[3]), w(inner[2]), w(inner[1]), w(inner[0])),
            _mm_set_epi32(0, 0, w(0x8000_0000), w(inner[4])),
            _mm_setzero_si128(),
            _mm_set_epi32((64 + 20) * 8, 0, 0, 0),
        ]
    }

    #[inline]
    #[target_feature(enable = "avx2,bmi1,bmi2,ssse3,sse4.1")]
    unsafe fn write_digest(regs: [u32; 5], out: &mut [u8]) {
        write_be(&regs, out);
    }
}

// -------------------------------------------------------------- SHA-256

/// SHA-256 round constants (FIPS 180-4 4.2.2), four per group.
static K256: [[u32; 4]; 16] = [
    [0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5],
    [0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5],
    [0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3],
    [0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174],
    [0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc],
    [0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da],
    [0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7],
    [0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967],
    [0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13],
    [0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85],
    [0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3],
    [0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070],
    [0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5],
    [0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3],
    [0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208],
    [0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2],
];

/// `W[4g..4g + 4] + K[4g..4g + 4]`.
#[inline]
#[target_feature(enable = "avx2,bmi1,bmi2,ssse3,sse4.1")]
fn sha256_plus_k(w: __m128i, g: usize) -> __m128i {
    // SAFETY: `K256[g]` is 16 readable bytes; `loadu` needs no alignment.
    let k = unsafe { _mm_loadu_si128(K256[g].as_ptr().cast()) };
    _mm_add_epi32(w, k)
}

/// The small sigma 1 of lanes 0 and 2 of `d` (lane 1 holding a copy of
/// lane 0 and lane 3 of lane 2), in the low dword of each 64-bit half.
#[inline]
#[target_feature(enable = "avx2,bmi1,bmi2,ssse3,sse4.1")]
fn sha256_sigma1_pairs(d: __m128i) -> __m128i {
    // With a word doubled in a 64-bit lane, a 64-bit shift right by n
    // leaves the word rotated right by n in the low half.
    _mm_xor_si128(
        _mm_xor_si128(_mm_srli_epi64::<17>(d), _mm_srli_epi64::<19>(d)),
        _mm_srli_epi32::<10>(d),
    )
}

/// SHA-256 message words `W[4g..4g + 4]` from the ring `x` of the previous
/// 16 words (`x[k % 4]` holds `W[4k..4k + 4]`), for `4 <= g < 16`.
#[inline]
#[target_feature(enable = "avx2,bmi1,bmi2,ssse3,sse4.1")]
fn sha256_schedule(x: &[__m128i; 4], g: usize) -> __m128i {
    let w16 = x[g % 4];
    let w15 = _mm_alignr_epi8::<4>(x[(g + 1) % 4], w16);
    let w7 = _mm_alignr_epi8::<4>(x[(g + 3) % 4], x[(g + 2) % 4]);
    let w2 = x[(g + 3) % 4];
    // s0 = ror7 ^ ror18 ^ shr3, each rotation as two shifts.
    let s0 = _mm_xor_si128(
        _mm_xor_si128(
            _mm_xor_si128(_mm_srli_epi32::<7>(w15), _mm_slli_epi32::<25>(w15)),
            _mm_xor_si128(_mm_srli_epi32::<18>(w15), _mm_slli_epi32::<14>(w15)),
        ),
        _mm_srli_epi32::<3>(w15),
    );
    // Every term but s1(W[t-2]).
    let base = _mm_add_epi32(_mm_add_epi32(w16, w7), s0);
    // Lanes 0 and 1 take s1 of W[4g-2] and W[4g-1] (lanes 2 and 3 of `w2`).
    let s1 = sha256_sigma1_pairs(_mm_shuffle_epi32::<0b11_11_10_10>(w2));
    let lo = _mm_add_epi32(base, _mm_shuffle_epi32::<0b11_11_10_00>(s1));
    // Lanes 2 and 3 take s1 of the new lanes 0 and 1.
    let s1 = sha256_sigma1_pairs(_mm_shuffle_epi32::<0b01_01_00_00>(lo));
    let hi = _mm_add_epi32(base, _mm_shuffle_epi32::<0b10_00_00_00>(s1));
    _mm_blend_epi32::<0b1100>(lo, hi)
}

#[inline(always)]
fn big_sigma0(x: u32) -> u32 {
    x.rotate_right(2) ^ x.rotate_right(13) ^ x.rotate_right(22)
}

#[inline(always)]
fn big_sigma1(x: u32) -> u32 {
    x.rotate_right(6) ^ x.rotate_right(11) ^ x.rotate_right(25)
}

#[inline]
// The last groups' updates of the schedule ring (and of `b ^ c`) are
// never read; the unrolled code simply drops them.
#[allow(unused_assignments)]
#[target_feature(enable = "avx2,bmi1,bmi2,ssse3,sse4.1")]
fn sha256_rounds<F: FnMut(usize)>(state: [u32; 8], msg: [__m128i; 4], mut slot: F) -> [u32; 8] {
    let mut x = msg;
    let mut wk = [_mm_setzero_si128(); 16];
    for (g, w) in msg.iter().enumerate() {
        wk[g] = sha256_plus_k(*w, g);
    }
    let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut h] = state;
    // b ^ c, for Maj: this round's a ^ b is the next round's b ^ c.
    let mut bc = b ^ c;
    macro_rules! round {
        ($w:ident, $t:expr) => {
            let t: usize = $t;
            // Ch's two terms are disjoint, so they add.
            let t1 = h
                .wrapping_add($w[t % 4])
                .wrapping_add(!e & g)
                .wrapping_add(e & f)
                .wrapping_add(big_sigma1(e));
            // Maj(a, b, c) = ((a ^ b) & (b ^ c)) ^ b.
            let ab = a ^ b;
            let maj = (ab & bc) ^ b;
            bc = ab;
            h = g;
            g = f;
            f = e;
            e = d.wrapping_add(t1);
            d = c;
            c = b;
            b = a;
            a = t1.wrapping_add(maj).wrapping_add(big_sigma0(a));
        };
    }
    macro_rules! group {
        ($($i:literal)*) => {
            $(
                let i: usize = $i;
                if i + 4 < 16 {
                    // The schedule four groups ahead, into the ring slot
                    // whose W + K is already computed.
                    let w = sha256_schedule(&x, i + 4);
                    x[i % 4] = w;
                    wk[i + 4] = sha256_plus_k(w, i + 4);
                }
                let w4 = lanes_pextrd(wk[i]);
                round!(w4, 4 * i);
                round!(w4, 4 * i + 1);
                round!(w4, 4 * i + 2);
                round!(w4, 4 * i + 3);
                // Keep the slot's AES rounds here (see `pin_xmm`).
                super::pin_u32(&mut a);
                super::pin_u32(&mut e);
                slot(i);
            )*
        };
    }
    group!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15);
    [
        a.wrapping_add(state[0]),
        b.wrapping_add(state[1]),
        c.wrapping_add(state[2]),
        d.wrapping_add(state[3]),
        e.wrapping_add(state[4]),
        f.wrapping_add(state[5]),
        g.wrapping_add(state[6]),
        h.wrapping_add(state[7]),
    ]
}

impl HashKernel for Sha256Avx2 {
    type H = Sha256;
    type Regs = [u32; 8];
    /// `W[0..16]`, four words a register, `W[4i]` in lane 0 of `[i]`.
    type Msg = [__m128i; 4];
    const BLOCK: usize = 64;
    type Isa = super::Avx2;
    const GROUPS: usize = 16;

    #[inline]
    #[target_feature(enable = "avx2,bmi1,bmi2,ssse3,sse4.1")]
    unsafe fn load_state(state: &[u32; 8]) -> [u32; 8] {
        *state
    }

    #[inline]
    #[target_feature(enable = "avx2,bmi1,bmi2,ssse3,sse4.1")]
    unsafe fn store_state(regs: [u32; 8]) -> [u32; 8] {
        regs
    }

    #[inline]
    #[target_feature(enable = "avx2,bmi1,bmi2,ssse3,sse4.1")]
    unsafe fn load_msg(data: &[u8]) -> [__m128i; 4] {
        core::array::from_fn(|i| be_words(data, 16 * i))
    }

    #[inline]
    #[target_feature(enable = "avx2,bmi1,bmi2,ssse3,sse4.1")]
    unsafe fn rounds<F: FnMut(usize)>(regs: [u32; 8], msg: [__m128i; 4], slot: F) -> [u32; 8] {
        sha256_rounds(regs, msg, slot)
    }

    #[inline]
    #[target_feature(enable = "avx2,bmi1,bmi2,ssse3,sse4.1")]
    unsafe fn outer_msg(inner: [u32; 8]) -> [__m128i; 4] {
        let w = |x: u32| x as i32;
        // The 32-byte digest, 0x80, zeros, and the bit length of the key
        // block and the digest.
        [
            _mm_set_epi32(w(inner[3]), w(inner[2]), w(inner[1]), w(inner[0])),
            _mm_set_epi32(w(inner[7]), w(inner[6]), w(inner[5]), w(inner[4])),
            _mm_set_epi32(0, 0, 0, w(0x8000_0000)),
            _mm_set_epi32((64 + 32) * 8, 0, 0, 0),
        ]
    }

    #[inline]
    #[target_feature(enable = "avx2,bmi1,bmi2,ssse3,sse4.1")]
    unsafe fn write_digest(regs: [u32; 8], out: &mut [u8]) {
        write_be(&regs, out);
    }
}

// ------------------------------------------------------ Compress impls

// Wired into the backends separately.
#[cfg_attr(not(test), allow(dead_code))]
#[target_feature(enable = "avx2,bmi1,bmi2,ssse3,sse4.1")]
fn compress_blocks<K: HashKernel>(
    state: &mut <K::H as HashFunction>::State,
    blocks: &[<K::H as HashFunction>::Block],
) {
    // SAFETY: this function enables the features the AVX2 kernels need.
    let mut r = unsafe { K::load_state(state) };
    for b in blocks {
        // SAFETY: as above.
        r = unsafe { K::compress(r, b.as_ref()) };
    }
    // SAFETY: as above.
    *state = unsafe { K::store_state(r) };
}

/// The compression functions of the AVX2 backends: SHA-1 and SHA-256
/// with the kernels above, SHA-384 with the `sha2` crate.
#[derive(Clone, Copy, Debug)]
// Wired into the backends separately.
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) struct Avx2Compress {
    pub(crate) avx2: super::Avx2,
    /// For SHA-384.
    pub(crate) sha512: super::sha512::Sha512Kernel,
}

impl Compress<Sha1> for Avx2Compress {
    #[inline]
    fn compress(&self, state: &mut [u32; 5], blocks: &[[u8; 64]]) {
        // SAFETY: `self.avx2` proves the CPU has AVX2, BMI1, BMI2, SSSE3 and
        // SSE4.1.
        unsafe { compress_blocks::<Sha1Avx2>(state, blocks) }
    }
}

impl Compress<Sha256> for Avx2Compress {
    #[inline]
    fn compress(&self, state: &mut [u32; 8], blocks: &[[u8; 64]]) {
        // SAFETY: `self.avx2` proves the CPU has AVX2, BMI1, BMI2, SSSE3 and
        // SSE4.1.
        unsafe { compress_blocks::<Sha256Avx2>(state, blocks) }
    }
}

impl Compress<Sha384> for Avx2Compress {
    #[inline]
    fn compress(&self, state: &mut [u64; 8], blocks: &[[u8; 128]]) {
        self.sha512.compress(state, blocks);
    }

    #[inline]
    fn compress_two(&self, state: &mut [u64; 8], one: &[u8; 128], two: &[u8; 128]) -> [u64; 8] {
        self.sha512.compress_two(state, one, two)
    }
}

impl Compress<Sha512> for Avx2Compress {
    #[inline]
    fn compress(&self, state: &mut [u64; 8], blocks: &[[u8; 128]]) {
        self.sha512.compress(state, blocks);
    }

    #[inline]
    fn compress_two(&self, state: &mut [u64; 8], one: &[u8; 128], two: &[u8; 128]) -> [u64; 8] {
        self.sha512.compress_two(state, one, two)
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::super::test_rng::SplitMix64;
    use super::*;
    use hmac::{Hmac, KeyInit, Mac};

    fn token(what: &str) -> Option<Avx2Compress> {
        let t = super::super::Avx2::detect().map(|avx2| Avx2Compress {
            avx2,
            sha512: super::super::sha512::Sha512Kernel::Crate,
        });
        if t.is_none() {
            eprintln!("SKIPPED: {what} (CPU lacks AVX2/BMI2)");
        }
        t
    }

    /// Some all-zero, all-one and patterned blocks next to the random ones.
    fn special_blocks() -> Vec<[u8; 64]> {
        let mut v = vec![[0u8; 64], [0xff; 64], [0x80; 64], [0x01; 64]];
        v.push(core::array::from_fn(|i| i as u8));
        v.push(core::array::from_fn(|i| 255 - i as u8));
        v
    }

    #[test]
    fn sha1_matches_crate() {
        let Some(c) = token("sha_avx2 SHA-1 compression") else {
            return;
        };
        let mut rng = SplitMix64(0x5a1_0001);
        let mut inputs = special_blocks();
        inputs.extend(rng.blocks(2000));
        sha1_against_crate(&c, &inputs, &mut rng);
    }

    /// `c`'s SHA-1 compression against the `sha1` crate's: each of
    /// `inputs` alone (from the initial state or a random one), then runs of
    /// random blocks up to 256 long.
    pub(in super::super) fn sha1_against_crate(
        c: &impl Compress<Sha1>,
        inputs: &[[u8; 64]],
        rng: &mut SplitMix64,
    ) {
        for (i, block) in inputs.iter().enumerate() {
            let state: [u32; 5] = if i % 3 == 0 {
                <Sha1 as HashFunction>::INITIAL_STATE
            } else {
                core::array::from_fn(|_| rng.next() as u32)
            };
            let (mut ours, mut theirs) = (state, state);
            c.compress(&mut ours, core::slice::from_ref(block));
            sha1::block_api::compress(&mut theirs, core::slice::from_ref(block));
            assert_eq!(ours, theirs, "block {i}, state {state:08x?}");
        }
        for n in [0, 1, 2, 3, 7, 16, 65, 256] {
            let blocks = rng.blocks(n);
            let state: [u32; 5] = core::array::from_fn(|_| rng.next() as u32);
            let (mut ours, mut theirs) = (state, state);
            c.compress(&mut ours, &blocks);
            sha1::block_api::compress(&mut theirs, &blocks);
            assert_eq!(ours, theirs, "{n} blocks");
        }
    }

    #[test]
    fn sha256_matches_crate() {
        let Some(c) = token("sha_avx2 SHA-256 compression") else {
            return;
        };
        let mut rng = SplitMix64(0x5a2_0256);
        let mut inputs = special_blocks();
        inputs.extend(rng.blocks(2000));
        for (i, block) in inputs.iter().enumerate() {
            let state: [u32; 8] = if i % 3 == 0 {
                <Sha256 as HashFunction>::INITIAL_STATE
            } else {
                core::array::from_fn(|_| rng.next() as u32)
            };
            let (mut ours, mut theirs) = (state, state);
            Compress::<Sha256>::compress(&c, &mut ours, core::slice::from_ref(block));
            sha2::block_api::compress256(&mut theirs, core::slice::from_ref(block));
            assert_eq!(ours, theirs, "block {i}, state {state:08x?}");
        }
        for n in [0, 1, 2, 3, 7, 16, 65] {
            let blocks = rng.blocks(n);
            let state: [u32; 8] = core::array::from_fn(|_| rng.next() as u32);
            let (mut ours, mut theirs) = (state, state);
            Compress::<Sha256>::compress(&c, &mut ours, &blocks);
            sha2::block_api::compress256(&mut theirs, &blocks);
            assert_eq!(ours, theirs, "{n} blocks");
        }
    }

    #[test]
    fn sha384_delegates() {
        let Some(c) = token("sha_avx2 SHA-384 compression") else {
            return;
        };
        let mut rng = SplitMix64(384);
        let blocks: Vec<[u8; 128]> = (0..5)
            .map(|_| {
                let mut b = [0u8; 128];
                rng.fill(&mut b);
                b
            })
            .collect();
        let state = <Sha384 as HashFunction>::INITIAL_STATE;
        let (mut ours, mut theirs) = (state, state);
        Compress::<Sha384>::compress(&c, &mut ours, &blocks);
        sha2::block_api::compress512(&mut theirs, &blocks);
        assert_eq!(ours, theirs);
    }

    /// HMAC over `msg` with the kernel `K` alone: the padded inner hash
    /// with `compress`, the outer block from `outer_msg`, the digest from
    /// `write_digest`.
    #[target_feature(enable = "avx2,bmi1,bmi2,ssse3,sse4.1")]
    fn hmac_with<K: HashKernel>(key: &[u8], msg: &[u8], out: &mut [u8])
    where
        K::H: HashFunction<Block = [u8; 64]>,
    {
        assert!(key.len() <= 64);
        let pad_key = |pad: u8| -> [u8; 64] {
            let mut b = [pad; 64];
            for (b, k) in b.iter_mut().zip(key) {
                *b ^= k;
            }
            b
        };
        let mut data = pad_key(0x36).to_vec();
        data.extend_from_slice(msg);
        let bits = 8 * data.len() as u64;
        data.push(0x80);
        while data.len() % 64 != 56 {
            data.push(0);
        }
        data.extend_from_slice(&bits.to_be_bytes());
        let init = <K::H as HashFunction>::INITIAL_STATE;
        // SAFETY: this function enables the AVX2 kernels' features.
        unsafe {
            let mut inner = K::load_state(&init);
            for block in data.chunks_exact(64) {
                inner = K::compress(inner, block);
            }
            let outer = K::compress(K::load_state(&init), &pad_key(0x5c));
            let outer = K::rounds(outer, K::outer_msg(inner), |_| {});
            K::write_digest(outer, out);
        }
    }

    #[test]
    fn hmac_outer_block() {
        let Some(_) = token("sha_avx2 HMAC outer block") else {
            return;
        };
        let mut rng = SplitMix64(0x4ac);
        for len in (0..200).chain([1000, 4096]) {
            let mut key = vec![0u8; (rng.next() % 65) as usize];
            rng.fill(&mut key);
            let mut msg = vec![0u8; len];
            rng.fill(&mut msg);

            let mut ours = [0u8; 20];
            // SAFETY: `token` found the CPU features.
            unsafe { hmac_with::<Sha1Avx2>(&key, &msg, &mut ours) };
            let mut mac = <Hmac<sha1::Sha1> as KeyInit>::new_from_slice(&key).unwrap();
            mac.update(&msg);
            assert_eq!(
                ours[..],
                mac.finalize().into_bytes()[..],
                "SHA-1, {len} bytes"
            );

            let mut ours = [0u8; 32];
            // SAFETY: as above.
            unsafe { hmac_with::<Sha256Avx2>(&key, &msg, &mut ours) };
            let mut mac = <Hmac<sha2::Sha256> as KeyInit>::new_from_slice(&key).unwrap();
            mac.update(&msg);
            assert_eq!(
                ours[..],
                mac.finalize().into_bytes()[..],
                "SHA-256, {len} bytes"
            );
        }
    }

    /// `rounds` through the slot path: every group's slot exactly once, in
    /// order, and the same result as the crates.
    #[target_feature(enable = "avx2,bmi1,bmi2,ssse3,sse4.1")]
    fn slots_of<K: HashKernel>(
        state: &<K::H as HashFunction>::State,
        block: &[u8],
    ) -> (<K::H as HashFunction>::State, Vec<usize>) {
        let mut seen = Vec::new();
        // SAFETY: this function enables the AVX2 kernels' features.
        let out = unsafe {
            let r = K::rounds(K::load_state(state), K::load_msg(block), |g| seen.push(g));
            K::store_state(r)
        };
        (out, seen)
    }

    #[test]
    fn rounds_call_each_slot_once() {
        let Some(_) = token("sha_avx2 slots") else {
            return;
        };
        let mut rng = SplitMix64(0x510);
        for block in rng.blocks(50) {
            let state: [u32; 5] = core::array::from_fn(|_| rng.next() as u32);
            // SAFETY: `token` found the CPU features.
            let (ours, seen) = unsafe { slots_of::<Sha1Avx2>(&state, &block) };
            assert_eq!(seen, (0..Sha1Avx2::GROUPS).collect::<Vec<_>>());
            assert_eq!(Sha1Avx2::GROUPS, 20);
            let mut theirs = state;
            sha1::block_api::compress(&mut theirs, &[block]);
            assert_eq!(ours, theirs);

            let state: [u32; 8] = core::array::from_fn(|_| rng.next() as u32);
            // SAFETY: as above.
            let (ours, seen) = unsafe { slots_of::<Sha256Avx2>(&state, &block) };
            assert_eq!(seen, (0..Sha256Avx2::GROUPS).collect::<Vec<_>>());
            assert_eq!(Sha256Avx2::GROUPS, 16);
            let mut theirs = state;
            sha2::block_api::compress256(&mut theirs, &[block]);
            assert_eq!(ours, theirs);
        }
    }
}
