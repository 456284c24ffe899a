//! SHA-512 compression (for SHA-384) in scalar code, cut into groups of
//! rounds so that the stitched seal can place AES rounds between them.
//!
//! SHA-512's 64-bit rounds run on the integer units and the AES rounds on
//! the vector units, so the two chains share almost nothing but the
//! front end: the stitched AES-256-CBC + HMAC-SHA384 seal costs about what
//! the hash alone does.

use super::sha::HashKernel;
use crate::primitives::hash::Sha384;

/// SHA-384/512 round constants (FIPS 180-4 4.2.3).
static K512: [u64; 80] = [
    0x428a2f98d728ae22,
    0x7137449123ef65cd,
    0xb5c0fbcfec4d3b2f,
    0xe9b5dba58189dbbc,
    0x3956c25bf348b538,
    0x59f111f1b605d019,
    0x923f82a4af194f9b,
    0xab1c5ed5da6d8118,
    0xd807aa98a3030242,
    0x12835b0145706fbe,
    0x243185be4ee4b28c,
    0x550c7dc3d5ffb4e2,
    0x72be5d74f27b896f,
    0x80deb1fe3b1696b1,
    0x9bdc06a725c71235,
    0xc19bf174cf692694,
    0xe49b69c19ef14ad2,
    0xefbe4786384f25e3,
    0x0fc19dc68b8cd5b5,
    0x240ca1cc77ac9c65,
    0x2de92c6f592b0275,
    0x4a7484aa6ea6e483,
    0x5cb0a9dcbd41fbd4,
    0x76f988da831153b5,
    0x983e5152ee66dfab,
    0xa831c66d2db43210,
    0xb00327c898fb213f,
    0xbf597fc7beef0ee4,
    0xc6e00bf33da88fc2,
    0xd5a79147930aa725,
    0x06ca6351e003826f,
    0x142929670a0e6e70,
    0x27b70a8546d22ffc,
    0x2e1b21385c26c926,
    0x4d2c6dfc5ac42aed,
    0x53380d139d95b3df,
    0x650a73548baf63de,
    0x766a0abb3c77b2a8,
    0x81c2c92e47edaee6,
    0x92722c851482353b,
    0xa2bfe8a14cf10364,
    0xa81a664bbc423001,
    0xc24b8b70d0f89791,
    0xc76c51a30654be30,
    0xd192e819d6ef5218,
    0xd69906245565a910,
    0xf40e35855771202a,
    0x106aa07032bbd1b8,
    0x19a4c116b8d2d0c8,
    0x1e376c085141ab53,
    0x2748774cdf8eeb99,
    0x34b0bcb5e19b48a8,
    0x391c0cb3c5c95a63,
    0x4ed8aa4ae3418acb,
    0x5b9cca4f7763e373,
    0x682e6ff3d6b2b8a3,
    0x748f82ee5defb2fc,
    0x78a5636f43172f60,
    0x84c87814a1f0ab72,
    0x8cc702081a6439ec,
    0x90befffa23631e28,
    0xa4506cebde82bde9,
    0xbef9a3f7b2c67915,
    0xc67178f2e372532b,
    0xca273eceea26619c,
    0xd186b8c721c0c207,
    0xeada7dd6cde0eb1e,
    0xf57d4f7fee6ed178,
    0x06f067aa72176fba,
    0x0a637dc5a2c898a6,
    0x113f9804bef90dae,
    0x1b710b35131c471b,
    0x28db77f523047d84,
    0x32caab7b40c72493,
    0x3c9ebe0a15c9bebc,
    0x431d67c49c100d4c,
    0x4cc5d4becb3e42b6,
    0x597f299cfc657e2a,
    0x5fcb6fab3ad6faec,
    0x6c44198c4a475817,
];

/// SHA-512's compression for SHA-384 (the state type is the same), in
/// plain integer code compiled for feature set `I` (with the AVX2 set's
/// BMI2 the rotations become `rorx`).
pub(crate) struct Sha384Scalar<I>(core::marker::PhantomData<I>);

#[inline(always)]
fn big_sigma0(x: u64) -> u64 {
    x.rotate_right(28) ^ x.rotate_right(34) ^ x.rotate_right(39)
}

#[inline(always)]
fn big_sigma1(x: u64) -> u64 {
    x.rotate_right(14) ^ x.rotate_right(18) ^ x.rotate_right(41)
}

#[inline(always)]
fn small_sigma0(x: u64) -> u64 {
    x.rotate_right(1) ^ x.rotate_right(8) ^ (x >> 7)
}

#[inline(always)]
fn small_sigma1(x: u64) -> u64 {
    x.rotate_right(19) ^ x.rotate_right(61) ^ (x >> 6)
}

/// 80 rounds over the message words `w`, calling `slot(g)` after each
/// group `g` of four rounds.
#[inline(always)]
fn rounds<F: FnMut(usize)>(state: [u64; 8], mut w: [u64; 16], mut slot: F) -> [u64; 8] {
    let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut h] = state;
    macro_rules! round {
        ($t:expr) => {
            let t: usize = $t;
            if t >= 16 {
                // W[t] = s1(W[t-2]) + W[t-7] + s0(W[t-15]) + W[t-16], in a
                // ring of sixteen words.
                w[t % 16] = w[t % 16]
                    .wrapping_add(small_sigma0(w[(t + 1) % 16]))
                    .wrapping_add(w[(t + 9) % 16])
                    .wrapping_add(small_sigma1(w[(t + 14) % 16]));
            }
            let t1 = h
                .wrapping_add(big_sigma1(e))
                .wrapping_add((e & f) ^ (!e & g))
                .wrapping_add(K512[t])
                .wrapping_add(w[t % 16]);
            let t2 = big_sigma0(a).wrapping_add((a & b) ^ (a & c) ^ (b & c));
            h = g;
            g = f;
            f = e;
            e = d.wrapping_add(t1);
            d = c;
            c = b;
            b = a;
            a = t1.wrapping_add(t2);
        };
    }
    macro_rules! group {
        ($($g:literal)*) => {
            $(
                round!(4 * $g);
                round!(4 * $g + 1);
                round!(4 * $g + 2);
                round!(4 * $g + 3);
                // Keep the slot's AES rounds here, between this group and
                // the next (see `pin_xmm`).
                super::pin_u64(&mut a);
                super::pin_u64(&mut e);
                slot($g);
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
        f.wrapping_add(state[5]),
        g.wrapping_add(state[6]),
        h.wrapping_add(state[7]),
    ]
}

impl<I: super::stitch::Isa> HashKernel for Sha384Scalar<I> {
    type H = Sha384;
    type Regs = [u64; 8];
    type Msg = [u64; 16];
    const BLOCK: usize = 128;
    type Isa = I;
    const GROUPS: usize = 20;

    #[inline(always)]
    unsafe fn load_state(state: &[u64; 8]) -> [u64; 8] {
        *state
    }

    #[inline(always)]
    unsafe fn store_state(regs: [u64; 8]) -> [u64; 8] {
        regs
    }

    #[inline(always)]
    unsafe fn load_msg(data: &[u8]) -> [u64; 16] {
        let data = &data[..128];
        core::array::from_fn(|i| u64::from_be_bytes(data[8 * i..8 * i + 8].try_into().expect("8")))
    }

    #[inline(always)]
    unsafe fn rounds<F: FnMut(usize)>(regs: [u64; 8], msg: [u64; 16], slot: F) -> [u64; 8] {
        rounds(regs, msg, slot)
    }

    #[inline(always)]
    unsafe fn outer_msg(inner: [u64; 8]) -> [u64; 16] {
        // The 48-byte SHA-384 digest, 0x80, zeros, and the 128-bit bit
        // length of the key block and the digest.
        let mut m = [0u64; 16];
        m[..6].copy_from_slice(&inner[..6]);
        m[6] = 0x8000_0000_0000_0000;
        m[15] = (128 + 48) * 8;
        m
    }

    #[inline(always)]
    unsafe fn write_digest(regs: [u64; 8], out: &mut [u8]) {
        for (chunk, word) in out[..48].chunks_exact_mut(8).zip(regs) {
            chunk.copy_from_slice(&word.to_be_bytes());
        }
    }
}
