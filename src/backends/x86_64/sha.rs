//! SHA-1 and SHA-256 compression with the SHA extensions (SHA-NI).
//!
//! Each kernel keeps the chaining state in xmm registers in the layout the
//! instructions want (`sha1rnds4`: A..D in one register with A in the top
//! lane, E in the top lane of another; `sha256rnds2`: ABEF and CDGH), so the
//! stitched loops can carry it across blocks without converting. SHA-NI has
//! no SHA-512: SHA-384 uses the kernels of `sha512`.

use core::arch::x86_64::*;
use core::marker::PhantomData;

use super::{ShaNi, block, load};
use crate::primitives::hash::{Compress, HashFunction, Sha1, Sha256, Sha384, Sha512};

/// A hash kernel in the form the stitched loops drive: the chaining state
/// and a message block in registers, and the rounds cut into groups.
///
/// The methods are `unsafe` only because they are `#[target_feature]`
/// functions in a trait: callers must run on a CPU with the features
/// those enable (guaranteed inside the stitched kernels, which
/// enable those features and are reached only with a token proving them:
/// [`ShaNi`] or [`super::Avx2`]).
pub(crate) trait HashKernel {
    type H: HashFunction;
    /// The chaining state in registers.
    type Regs: Copy;
    /// One message block in registers.
    type Msg: Copy;
    /// The block length in bytes (64 or 128).
    const BLOCK: usize;
    /// The feature set the methods need, named by its token.
    type Isa: super::stitch::Isa;

    /// # Safety
    /// The CPU must have the features the kernel's methods enable.
    unsafe fn load_state(state: &<Self::H as HashFunction>::State) -> Self::Regs;
    /// # Safety
    /// As [`HashKernel::load_state`].
    unsafe fn store_state(regs: Self::Regs) -> <Self::H as HashFunction>::State;
    /// The compression is cut into `GROUPS` groups of rounds (of four
    /// rounds each), with a `slot` call after each.
    const GROUPS: usize;
    /// AES blocks the encryption of a MAC-then-encrypt seal trails the
    /// hash by (at least 1, which the in-place order needs). A kernel much
    /// faster than the AES blocks beside it can run further ahead, so that
    /// the end of the MAC (last block, padding block, outer hash) overlaps
    /// the encryption of the last plaintext blocks instead of holding up
    /// the blocks that carry the MAC. Under `BLOCK / 16` or a multiple of
    /// it (checked at compile time). Measured per kernel.
    const MTE_TRAIL: usize = 1;

    /// Loads the message block `data[..BLOCK]` into registers
    /// (byte-swapped as the rounds want it).
    ///
    /// # Safety
    /// As [`HashKernel::load_state`].
    unsafe fn load_msg(data: &[u8]) -> Self::Msg;

    /// One compression of the loaded block `msg`, calling `slot(g)` after
    /// each group `g` of rounds: the stitched loops put AES rounds there,
    /// so that the two dependency chains sit side by side in the
    /// instruction stream.
    ///
    /// # Safety
    /// As [`HashKernel::load_state`].
    unsafe fn rounds<F: FnMut(usize)>(regs: Self::Regs, msg: Self::Msg, slot: F) -> Self::Regs;

    /// The HMAC outer hash's only message block, from the inner digest in
    /// registers: `digest || 0x80 || zeros || bit length of (64 + digest)`.
    ///
    /// # Safety
    /// As [`HashKernel::load_state`].
    unsafe fn outer_msg(inner: Self::Regs) -> Self::Msg;

    /// Writes the digest (`OUTPUT_LEN` big-endian bytes) to `out`.
    ///
    /// # Safety
    /// As [`HashKernel::load_state`].
    unsafe fn write_digest(regs: Self::Regs, out: &mut [u8]);

    /// A message block from its bytes in vectors, in memory order
    /// (`BLOCK / 16` of them; the rest ignored). The default goes through
    /// memory; the SHA-NI kernels shuffle in registers.
    ///
    /// # Safety
    /// As [`HashKernel::load_state`].
    #[inline(always)]
    unsafe fn msg_from_vecs(v: [__m128i; 4]) -> Self::Msg {
        let mut bytes = [0u8; 128];
        for (i, x) in v.into_iter().enumerate() {
            super::store(super::block_mut(&mut bytes, 16 * i), x);
        }
        // SAFETY: the caller guarantees the kernel's features.
        unsafe { Self::load_msg(&bytes) }
    }

    /// One compression of `data[..BLOCK]`.
    ///
    /// # Safety
    /// As [`HashKernel::load_state`].
    #[inline(always)]
    unsafe fn compress(regs: Self::Regs, data: &[u8]) -> Self::Regs {
        // SAFETY: the caller guarantees the kernel's features.
        unsafe { Self::rounds(regs, Self::load_msg(data), |_| {}) }
    }
}

/// SHA-1 with SHA-NI, in the stitched loops of feature set `I` (SHA-NI
/// alone, or with AVX).
pub(crate) struct Sha1Ni<I = ShaNi>(PhantomData<I>);
/// SHA-256 with SHA-NI, as [`Sha1Ni`].
pub(crate) struct Sha256Ni<I = ShaNi>(PhantomData<I>);

/// The feature sets that include SHA-NI, SSSE3 and SSE4.1.
pub(crate) trait WithShaNi: super::stitch::Isa {}
impl WithShaNi for ShaNi {}
impl WithShaNi for super::ShaNiAvx {}

/// SHA-1 state: A..D (A in lane 3) and E (in lane 3).
#[derive(Clone, Copy)]
pub(crate) struct Sha1Regs {
    abcd: __m128i,
    e: __m128i,
}

/// SHA-256 state: ABEF and CDGH.
#[derive(Clone, Copy)]
pub(crate) struct Sha256Regs {
    abef: __m128i,
    cdgh: __m128i,
}

impl<I: WithShaNi> HashKernel for Sha1Ni<I> {
    type H = Sha1;
    type Regs = Sha1Regs;
    type Msg = [__m128i; 4];
    const BLOCK: usize = 64;
    type Isa = I;
    // A SHA-NI SHA-1 block takes well under the time of the four AES
    // blocks beside it: two hash blocks ahead, the MAC is finished while
    // the last eight plaintext blocks are encrypted.
    const MTE_TRAIL: usize = 8;

    #[inline]
    #[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
    unsafe fn load_state(state: &[u32; 5]) -> Sha1Regs {
        Sha1Regs {
            abcd: _mm_set_epi32(
                state[0] as i32,
                state[1] as i32,
                state[2] as i32,
                state[3] as i32,
            ),
            e: _mm_set_epi32(state[4] as i32, 0, 0, 0),
        }
    }

    #[inline]
    #[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
    unsafe fn store_state(r: Sha1Regs) -> [u32; 5] {
        [
            _mm_extract_epi32::<3>(r.abcd) as u32,
            _mm_extract_epi32::<2>(r.abcd) as u32,
            _mm_extract_epi32::<1>(r.abcd) as u32,
            _mm_extract_epi32::<0>(r.abcd) as u32,
            _mm_extract_epi32::<3>(r.e) as u32,
        ]
    }

    const GROUPS: usize = 20;

    #[inline]
    #[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
    unsafe fn load_msg(data: &[u8]) -> [__m128i; 4] {
        core::array::from_fn(|i| sha1_word(data, 16 * i))
    }

    #[inline]
    #[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
    unsafe fn msg_from_vecs(v: [__m128i; 4]) -> [__m128i; 4] {
        // As `sha1_word`: all 16 bytes reversed.
        let mask = _mm_set_epi64x(0x0001_0203_0405_0607, 0x0809_0a0b_0c0d_0e0f);
        v.map(|x| _mm_shuffle_epi8(x, mask))
    }

    #[inline]
    #[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
    unsafe fn rounds<F: FnMut(usize)>(r: Sha1Regs, msg: [__m128i; 4], slot: F) -> Sha1Regs {
        sha1_rounds(r, msg, slot)
    }

    #[inline]
    #[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
    unsafe fn outer_msg(r: Sha1Regs) -> [__m128i; 4] {
        // Words W0..W3 = A..D are the A..D register as it is (W0 in lane
        // 3); E's register has zeros below lane 3.
        [
            r.abcd,
            _mm_or_si128(r.e, _mm_set_epi32(0, 0x8000_0000u32 as i32, 0, 0)),
            _mm_setzero_si128(),
            _mm_set_epi32(0, 0, 0, (64 + 20) * 8),
        ]
    }

    #[inline]
    #[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
    unsafe fn write_digest(r: Sha1Regs, out: &mut [u8]) {
        let reverse = _mm_set_epi64x(0x0001_0203_0405_0607, 0x0809_0a0b_0c0d_0e0f);
        let (abcd, e) = out.split_at_mut(16);
        super::store(
            abcd.try_into().expect("20 bytes"),
            _mm_shuffle_epi8(r.abcd, reverse),
        );
        e.copy_from_slice(&(_mm_extract_epi32::<3>(r.e) as u32).to_be_bytes());
    }
}

/// SHA-1 with SHA-NI rounds and the schedule's `sha1msg2` and `sha1nexte`
/// on AVX-512VL ([`VlSchedule`]), where the per-CPU table chooses it.
pub(crate) struct Sha1NiVl;

/// [`Sha1Ni`] compiled with AVX, whose state and message handling
/// [`Sha1NiVl`] shares.
type Sha1Vex = Sha1Ni<super::ShaNiAvx>;

impl HashKernel for Sha1NiVl {
    type H = Sha1;
    type Regs = Sha1Regs;
    type Msg = [__m128i; 4];
    const BLOCK: usize = 64;
    type Isa = super::ShaNiAvx512;
    const MTE_TRAIL: usize = Sha1Vex::MTE_TRAIL;
    const GROUPS: usize = Sha1Vex::GROUPS;

    #[inline]
    #[target_feature(enable = "sha,sse2,ssse3,sse4.1,avx,avx512f,avx512vl")]
    unsafe fn load_state(state: &[u32; 5]) -> Sha1Regs {
        // SAFETY: this function enables a superset of the features.
        unsafe { Sha1Vex::load_state(state) }
    }

    #[inline]
    #[target_feature(enable = "sha,sse2,ssse3,sse4.1,avx,avx512f,avx512vl")]
    unsafe fn store_state(r: Sha1Regs) -> [u32; 5] {
        // SAFETY: as above.
        unsafe { Sha1Vex::store_state(r) }
    }

    #[inline]
    #[target_feature(enable = "sha,sse2,ssse3,sse4.1,avx,avx512f,avx512vl")]
    unsafe fn load_msg(data: &[u8]) -> [__m128i; 4] {
        // SAFETY: as above.
        unsafe { Sha1Vex::load_msg(data) }
    }

    #[inline]
    #[target_feature(enable = "sha,sse2,ssse3,sse4.1,avx,avx512f,avx512vl")]
    unsafe fn msg_from_vecs(v: [__m128i; 4]) -> [__m128i; 4] {
        // SAFETY: as above.
        unsafe { Sha1Vex::msg_from_vecs(v) }
    }

    // Not a `target_feature` function, so that it is always inlined (the
    // callers enable the features): too large for the compiler's choice, it
    // was left out of line, with the loop around it and the AES slots of
    // the stitched loops on the far side of a call.
    #[inline(always)]
    unsafe fn rounds<F: FnMut(usize)>(r: Sha1Regs, msg: [__m128i; 4], slot: F) -> Sha1Regs {
        // SAFETY: the caller guarantees SHA-NI, AVX and AVX-512F/VL.
        unsafe {
            // SHA-NI has only legacy SSE encodings, and the compiler, free
            // to use wider registers around them, does not clear their
            // upper halves first: a dirty upper state made the seal on
            // Intel model 0xCF about a hundred times slower. Once a block,
            // wherever the block is hashed.
            _mm256_zeroupper();
            sha1_rounds_with::<VlSchedule, F>(r, msg, slot)
        }
    }

    #[inline]
    #[target_feature(enable = "sha,sse2,ssse3,sse4.1,avx,avx512f,avx512vl")]
    unsafe fn outer_msg(r: Sha1Regs) -> [__m128i; 4] {
        // SAFETY: as above.
        unsafe { Sha1Vex::outer_msg(r) }
    }

    #[inline]
    #[target_feature(enable = "sha,sse2,ssse3,sse4.1,avx,avx512f,avx512vl")]
    unsafe fn write_digest(r: Sha1Regs, out: &mut [u8]) {
        // SAFETY: as above.
        unsafe { Sha1Vex::write_digest(r, out) }
    }
}

impl<I: WithShaNi> HashKernel for Sha256Ni<I> {
    type H = Sha256;
    type Regs = Sha256Regs;
    type Msg = [__m128i; 4];
    const BLOCK: usize = 64;
    type Isa = I;

    #[inline]
    #[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
    unsafe fn load_state(s: &[u32; 8]) -> Sha256Regs {
        let w = |x: u32| x as i32;
        Sha256Regs {
            // Lanes 3..0: A B E F and C D G H.
            abef: _mm_set_epi32(w(s[0]), w(s[1]), w(s[4]), w(s[5])),
            cdgh: _mm_set_epi32(w(s[2]), w(s[3]), w(s[6]), w(s[7])),
        }
    }

    #[inline]
    #[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
    unsafe fn store_state(r: Sha256Regs) -> [u32; 8] {
        let x = |v: __m128i, lane: i32| -> u32 {
            match lane {
                3 => _mm_extract_epi32::<3>(v) as u32,
                2 => _mm_extract_epi32::<2>(v) as u32,
                1 => _mm_extract_epi32::<1>(v) as u32,
                _ => _mm_extract_epi32::<0>(v) as u32,
            }
        };
        [
            x(r.abef, 3),
            x(r.abef, 2),
            x(r.cdgh, 3),
            x(r.cdgh, 2),
            x(r.abef, 1),
            x(r.abef, 0),
            x(r.cdgh, 1),
            x(r.cdgh, 0),
        ]
    }

    const GROUPS: usize = 16;

    #[inline]
    #[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
    unsafe fn load_msg(data: &[u8]) -> [__m128i; 4] {
        core::array::from_fn(|i| sha256_word(data, 16 * i))
    }

    #[inline]
    #[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
    unsafe fn msg_from_vecs(v: [__m128i; 4]) -> [__m128i; 4] {
        // As `sha256_word`: each 32-bit word byte-swapped.
        let mask = _mm_set_epi64x(0x0c0d_0e0f_0809_0a0b, 0x0405_0607_0001_0203);
        v.map(|x| _mm_shuffle_epi8(x, mask))
    }

    #[inline]
    #[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
    unsafe fn rounds<F: FnMut(usize)>(r: Sha256Regs, msg: [__m128i; 4], slot: F) -> Sha256Regs {
        sha256_rounds(r, msg, slot)
    }

    #[inline]
    #[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
    unsafe fn outer_msg(r: Sha256Regs) -> [__m128i; 4] {
        let (abcd, efgh) = sha256_words(r);
        [
            abcd,
            efgh,
            _mm_set_epi32(0, 0, 0, 0x8000_0000u32 as i32),
            _mm_set_epi32((64 + 32) * 8, 0, 0, 0),
        ]
    }

    #[inline]
    #[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
    unsafe fn write_digest(r: Sha256Regs, out: &mut [u8]) {
        let bswap = _mm_set_epi64x(0x0c0d_0e0f_0809_0a0b, 0x0405_0607_0001_0203);
        let (abcd, efgh) = sha256_words(r);
        super::store(super::block_mut(out, 0), _mm_shuffle_epi8(abcd, bswap));
        super::store(super::block_mut(out, 16), _mm_shuffle_epi8(efgh, bswap));
    }
}

/// Loads 16 message bytes as four big-endian words, `W[0]` in lane 3.
#[inline]
#[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
fn sha1_word(data: &[u8], at: usize) -> __m128i {
    // Reverses all 16 bytes.
    let mask = _mm_set_epi64x(0x0001_0203_0405_0607, 0x0809_0a0b_0c0d_0e0f);
    _mm_shuffle_epi8(load(block(data, at)), mask)
}

/// How the SHA-1 rounds get their message words: the last step of the
/// schedule, and the `E` term added to each group's words.
trait Sha1Schedule {
    /// `W[4i..4i+4]` from `x = W[4i-16..] ^ W[4i-14..] ^ W[4i-8..]` (the
    /// first two from `sha1msg1`) and `prev = W[4i-4..4i]` (`sha1msg2`).
    ///
    /// # Safety
    /// The CPU has the features of the function this is inlined into.
    unsafe fn words(x: __m128i, prev: __m128i) -> __m128i;
    /// The group's words plus `E`, from the state two groups back
    /// (`sha1nexte`).
    ///
    /// # Safety
    /// As [`Sha1Schedule::words`].
    unsafe fn plus_e(before: __m128i, w: __m128i) -> __m128i;
}

/// The SHA-NI instructions throughout.
struct NiSchedule;

impl Sha1Schedule for NiSchedule {
    #[inline(always)]
    unsafe fn words(x: __m128i, prev: __m128i) -> __m128i {
        // SAFETY: the caller guarantees SHA-NI.
        unsafe { _mm_sha1msg2_epu32(x, prev) }
    }

    #[inline(always)]
    unsafe fn plus_e(before: __m128i, w: __m128i) -> __m128i {
        // SAFETY: as above.
        unsafe { _mm_sha1nexte_epu32(before, w) }
    }
}

/// `sha1msg2` and `sha1nexte` done with AVX-512VL rotates. On Intel family
/// 6 model 0xCF `sha1msg2` issues once every 4-5 cycles and its chain
/// through the schedule, not the rounds, bounds the hash; `sha1nexte`
/// competes with `sha1rnds4` for its unit. The vector ALUs do both jobs in
/// single-cycle instructions (see the table in `backends/cpu.rs`).
struct VlSchedule;

impl Sha1Schedule for VlSchedule {
    #[inline(always)]
    unsafe fn words(x: __m128i, prev: __m128i) -> __m128i {
        // W[t] = rol1(x[t] ^ W[t-3]) with W[4i] in lane 3: the previous
        // words shifted up a lane give W[t-3] for the top three lanes; the
        // bottom one, W[4i+3], needs W[4i] itself, rol1(y[3]), whose rol1
        // is rol2 of y's top lane.
        // SAFETY: the caller guarantees AVX-512F/VL (SSE2 is baseline).
        unsafe {
            let y = _mm_xor_si128(x, _mm_bslli_si128::<4>(prev));
            _mm_xor_si128(
                _mm_rol_epi32::<1>(y),
                _mm_rol_epi32::<2>(_mm_bsrli_si128::<12>(y)),
            )
        }
    }

    #[inline(always)]
    unsafe fn plus_e(before: __m128i, w: __m128i) -> __m128i {
        // E is rol30 of A (lane 3) two groups back, added to lane 3 only.
        // SAFETY: as above.
        unsafe { _mm_mask_add_epi32(w, 0b1000, w, _mm_rol_epi32::<30>(before)) }
    }
}

#[inline]
#[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
fn sha1_rounds<F: FnMut(usize)>(r: Sha1Regs, msg: [__m128i; 4], slot: F) -> Sha1Regs {
    // SAFETY: this function enables SHA-NI.
    unsafe { sha1_rounds_with::<NiSchedule, F>(r, msg, slot) }
}

/// The SHA-1 compression, with the schedule's last steps from `S`.
///
/// # Safety
/// The CPU has SHA-NI, SSSE3, SSE4.1 and what `S` needs; inlined into a
/// function that enables them.
#[inline(always)]
unsafe fn sha1_rounds_with<S: Sha1Schedule, F: FnMut(usize)>(
    r: Sha1Regs,
    msg: [__m128i; 4],
    mut slot: F,
) -> Sha1Regs {
    // SAFETY: the caller guarantees the features.
    unsafe {
        let mut w = msg;
        let mut abcd = r.abcd;
        // State before the previous group of four rounds: its A gives the
        // next group's E.
        let mut before = abcd;
        abcd = _mm_sha1rnds4_epu32::<0>(abcd, _mm_add_epi32(r.e, w[0]));
        slot(0);
        macro_rules! group {
            ($i:literal, $f:literal) => {
                if $i >= 4 {
                    // W[4i..4i+4] from the previous sixteen words.
                    w[$i % 4] = S::words(
                        _mm_xor_si128(
                            _mm_sha1msg1_epu32(w[$i % 4], w[($i + 1) % 4]),
                            w[($i + 2) % 4],
                        ),
                        w[($i + 3) % 4],
                    );
                }
                let e = S::plus_e(before, w[$i % 4]);
                before = abcd;
                abcd = _mm_sha1rnds4_epu32::<$f>(abcd, e);
                // Keep the slot's AES rounds here (see `pin_xmm`).
                super::pin_xmm(&mut abcd);
                slot($i);
            };
        }
        group!(1, 0);
        group!(2, 0);
        group!(3, 0);
        group!(4, 0);
        group!(5, 1);
        group!(6, 1);
        group!(7, 1);
        group!(8, 1);
        group!(9, 1);
        group!(10, 2);
        group!(11, 2);
        group!(12, 2);
        group!(13, 2);
        group!(14, 2);
        group!(15, 3);
        group!(16, 3);
        group!(17, 3);
        group!(18, 3);
        group!(19, 3);
        Sha1Regs {
            abcd: _mm_add_epi32(abcd, r.abcd),
            e: S::plus_e(before, r.e),
        }
    }
}

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

#[inline]
#[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
fn k256(i: usize) -> __m128i {
    // SAFETY: `K256[i]` is 16 readable bytes; `loadu` needs no alignment.
    unsafe { _mm_loadu_si128(K256[i].as_ptr().cast()) }
}

/// The state as words A..D and E..H, each in lanes 0..3.
#[inline]
#[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
fn sha256_words(r: Sha256Regs) -> (__m128i, __m128i) {
    // ABEF holds F, E, B, A in lanes 0..3 and CDGH H, G, D, C: the high
    // halves give B, A, D, C and the low ones F, E, H, G; swapping each
    // pair of lanes puts them in order.
    let abcd = _mm_shuffle_epi32::<0xb1>(_mm_unpackhi_epi64(r.abef, r.cdgh));
    let efgh = _mm_shuffle_epi32::<0xb1>(_mm_unpacklo_epi64(r.abef, r.cdgh));
    (abcd, efgh)
}

/// Loads 16 message bytes as four big-endian words, `W[0]` in lane 0.
#[inline]
#[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
fn sha256_word(data: &[u8], at: usize) -> __m128i {
    // Byte-swaps each 32-bit word.
    let mask = _mm_set_epi64x(0x0c0d_0e0f_0809_0a0b, 0x0405_0607_0001_0203);
    _mm_shuffle_epi8(load(block(data, at)), mask)
}

#[inline]
#[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
fn sha256_rounds<F: FnMut(usize)>(r: Sha256Regs, msg: [__m128i; 4], mut slot: F) -> Sha256Regs {
    let mut w = msg;
    let mut abef = r.abef;
    let mut cdgh = r.cdgh;
    // The feed-forward copy, a value apart from the one the rounds start
    // from: a register allocator short of registers keeps it on the stack
    // (a store now, a load at the end, both off the hash chain) instead of
    // the state itself (a store at the end and a reload at the start of
    // the next block, on the chain).
    let mut save = r;
    super::pin_xmm(&mut save.abef);
    super::pin_xmm(&mut save.cdgh);
    macro_rules! group {
        ($i:literal) => {
            if $i >= 4 {
                // W[t] = s1(W[t-2]) + W[t-7] + s0(W[t-15]) + W[t-16].
                let w7 = _mm_alignr_epi8::<4>(w[($i + 3) % 4], w[($i + 2) % 4]);
                w[$i % 4] = _mm_sha256msg2_epu32(
                    _mm_add_epi32(_mm_sha256msg1_epu32(w[$i % 4], w[($i + 1) % 4]), w7),
                    w[($i + 3) % 4],
                );
            }
            let m = _mm_add_epi32(w[$i % 4], k256($i));
            cdgh = _mm_sha256rnds2_epu32(cdgh, abef, m);
            abef = _mm_sha256rnds2_epu32(abef, cdgh, _mm_shuffle_epi32::<0x0e>(m));
            // Keep the slot's AES rounds here (see `pin_xmm`).
            super::pin_xmm(&mut abef);
            slot($i);
        };
    }
    group!(0);
    group!(1);
    group!(2);
    group!(3);
    group!(4);
    group!(5);
    group!(6);
    group!(7);
    group!(8);
    group!(9);
    group!(10);
    group!(11);
    group!(12);
    group!(13);
    group!(14);
    group!(15);
    Sha256Regs {
        abef: _mm_add_epi32(abef, save.abef),
        cdgh: _mm_add_epi32(cdgh, save.cdgh),
    }
}

#[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
fn compress_blocks<K: HashKernel>(
    state: &mut <K::H as HashFunction>::State,
    blocks: &[<K::H as HashFunction>::Block],
) {
    // SAFETY: this function enables the features the kernel needs.
    unsafe { compress_run::<K>(state, blocks) }
}

#[target_feature(enable = "sha,sse2,ssse3,sse4.1,avx,avx512f,avx512vl")]
fn compress_blocks_vl(state: &mut [u32; 5], blocks: &[[u8; 64]]) {
    // SAFETY: this function enables the features `Sha1NiVl` needs.
    unsafe { compress_run::<Sha1NiVl>(state, blocks) }
}

/// `blocks` compressed into `state` with kernel `K`.
///
/// # Safety
/// The CPU has `K`'s features; inlined into a function that enables them.
#[inline(always)]
unsafe fn compress_run<K: HashKernel>(
    state: &mut <K::H as HashFunction>::State,
    blocks: &[<K::H as HashFunction>::Block],
) {
    // SAFETY: the caller guarantees the kernel's features.
    unsafe {
        let mut r = K::load_state(state);
        for b in blocks {
            r = K::compress(r, b.as_ref());
        }
        *state = K::store_state(r);
    }
}

/// The compression functions of the SHA-NI backends: SHA-1 and SHA-256
/// with SHA-NI; SHA-384 (which SHA-NI does not cover) with the best
/// SHA-512 kernel allowed.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ShaNiCompress {
    pub(crate) sha: ShaNi,
    /// Present when the CPU has AVX: the stitched loops then use VEX
    /// encodings.
    pub(crate) avx: Option<super::ShaNiAvx>,
    /// For SHA-384.
    pub(crate) sha512: super::sha512::Sha512Kernel,
    /// Present when the per-CPU table takes SHA-1's schedule to AVX-512VL
    /// ([`Sha1NiVl`]) and AVX-512 is allowed.
    pub(crate) sha1_vl: Option<super::ShaNiAvx512>,
}

impl ShaNiCompress {
    /// The SHA-NI compressor with the kernels the CPU and the per-CPU
    /// table choose; `avx` and `vaes` are present where the override
    /// allows them.
    pub(crate) fn new(
        sha: ShaNi,
        avx: Option<super::ShaNiAvx>,
        vaes: Option<super::Vaes512>,
        sha512: super::sha512::Sha512Kernel,
    ) -> Self {
        let sha1_vl = match (avx, vaes) {
            (Some(a), Some(v)) if crate::backends::cpu::Tuning::get().sha1_avx512_schedule => {
                Some(super::ShaNiAvx512::new(a, v))
            }
            _ => None,
        };
        ShaNiCompress {
            sha,
            avx,
            sha512,
            sha1_vl,
        }
    }

    /// The SHA-1 kernel, for reports.
    pub(crate) fn sha1_name(&self) -> &'static str {
        match self.sha1_vl {
            Some(_) => "SHA-NI rounds, AVX-512VL schedule",
            None => "SHA-NI",
        }
    }
}

impl Compress<Sha1> for ShaNiCompress {
    #[inline]
    fn compress(&self, state: &mut [u32; 5], blocks: &[[u8; 64]]) {
        match self.sha1_vl {
            // SAFETY: the token proves SHA-NI, AVX and AVX-512F/VL.
            Some(_) => unsafe { compress_blocks_vl(state, blocks) },
            // SAFETY: `self.sha` proves the CPU has SHA-NI, SSSE3 and SSE4.1.
            None => unsafe { compress_blocks::<Sha1Ni>(state, blocks) },
        }
    }
}

impl Compress<Sha256> for ShaNiCompress {
    #[inline]
    fn compress(&self, state: &mut [u32; 8], blocks: &[[u8; 64]]) {
        // SAFETY: `self.sha` proves the CPU has SHA-NI, SSSE3 and SSE4.1.
        unsafe { compress_blocks::<Sha256Ni>(state, blocks) }
    }
}

impl Compress<Sha384> for ShaNiCompress {
    #[inline]
    fn compress(&self, state: &mut [u64; 8], blocks: &[[u8; 128]]) {
        self.sha512.compress(state, blocks);
    }

    #[inline]
    fn compress_two(&self, state: &mut [u64; 8], one: &[u8; 128], two: &[u8; 128]) -> [u64; 8] {
        self.sha512.compress_two(state, one, two)
    }
}

impl Compress<Sha512> for ShaNiCompress {
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
mod tests {
    use super::super::test_rng::SplitMix64;
    use super::*;

    /// The SHA-NI compressor with SHA-1's AVX-512VL schedule on, whatever
    /// the per-CPU table chooses here; `None` (with a message) where the
    /// CPU lacks it.
    fn with_vl_schedule(what: &str) -> Option<ShaNiCompress> {
        let sha = ShaNi::detect();
        let avx = super::super::ShaNiAvx::detect();
        let vaes = super::super::Vaes512::detect();
        let (Some(sha), Some(avx), Some(vaes)) = (sha, avx, vaes) else {
            eprintln!("SKIPPED: {what} (CPU lacks SHA-NI, AVX or AVX-512F/BW/VL)");
            return None;
        };
        Some(ShaNiCompress {
            sha,
            avx: Some(avx),
            sha512: super::super::sha512::Sha512Kernel::Crate,
            sha1_vl: Some(super::super::ShaNiAvx512::new(avx, vaes)),
        })
    }

    /// SHA-1 on the AVX-512VL schedule against the `sha1` crate: every
    /// word of the schedule feeds the state, so a wrong lane of
    /// `VlSchedule::words` (the fourth word, from the first) or a wrong E
    /// changes the result.
    #[test]
    fn sha1_avx512_schedule_matches_crate() {
        let Some(c) = with_vl_schedule("SHA-1 on the AVX-512VL schedule") else {
            return;
        };
        assert!(c.sha1_name().contains("AVX-512VL"));
        let mut rng = SplitMix64(0x5a1_0512);
        let mut inputs = vec![[0u8; 64], [0xff; 64], [0x80; 64], [0x01; 64]];
        inputs.push(core::array::from_fn(|i| i as u8));
        // One bit in each word in turn: each schedule lane on its own.
        for bit in 0..64 * 8 {
            let mut b = [0u8; 64];
            b[bit / 8] = 1 << (bit % 8);
            inputs.push(b);
        }
        inputs.extend(rng.blocks(2000));
        super::super::sha_avx2::tests::sha1_against_crate(&c, &inputs, &mut rng);
    }
}
