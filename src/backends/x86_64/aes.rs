//! AES-NI: key expansion (encryption schedule, and the decryption schedule
//! for the equivalent inverse cipher via `aesimc`), CBC encryption (one
//! serial chain), CBC decryption eight blocks at a time, single blocks.
//!
//! Schedules are arrays of `N` round keys (11 for AES-128, 15 for
//! AES-256); the kernels are generic over `N`, so every round loop is
//! unrolled at compile time.

use core::arch::x86_64::*;

use zeroize::Zeroize;

use super::{AesNi, block, block_mut, load, store};
use crate::combination::Cipher;

/// Round keys, 16-byte aligned so that loading them is cheap.
#[derive(Clone)]
#[repr(C, align(16))]
pub(crate) struct Schedule<const N: usize>(pub(crate) [[u8; 16]; N]);

/// Encryption and decryption schedules of one key.
#[derive(Clone)]
pub(crate) struct Schedules<const N: usize> {
    pub(crate) enc: Schedule<N>,
    pub(crate) dec: Schedule<N>,
}

impl<const N: usize> Drop for Schedules<N> {
    fn drop(&mut self) {
        self.enc.0.zeroize();
        self.dec.0.zeroize();
    }
}

/// An AES key expanded for the AES-NI kernels, wiped on drop.
#[derive(Clone)]
pub(crate) enum AesNiKey {
    Aes128(Schedules<11>, AesNi),
    Aes256(Schedules<15>, AesNi),
}

impl AesNiKey {
    /// Expands `key` (its length already checked against `cipher`).
    pub(crate) fn new(token: AesNi, cipher: Cipher, key: &[u8]) -> Self {
        match cipher {
            Cipher::Aes128Cbc => {
                let key: &[u8; 16] = key.try_into().expect("checked length");
                // SAFETY: `token` proves the CPU has AES-NI and SSE4.1.
                AesNiKey::Aes128(unsafe { expand128(key) }, token)
            }
            Cipher::Aes256Cbc => {
                let key: &[u8; 32] = key.try_into().expect("checked length");
                // SAFETY: `token` proves the CPU has AES-NI and SSE4.1.
                AesNiKey::Aes256(unsafe { expand256(key) }, token)
            }
        }
    }

    pub(crate) fn encrypt_cbc(&self, iv: &mut [u8; 16], blocks: &mut [[u8; 16]]) {
        match self {
            // SAFETY: the token proves the CPU has AES-NI.
            AesNiKey::Aes128(s, _) => unsafe { encrypt_cbc(&s.enc, iv, blocks) },
            // SAFETY: the token proves the CPU has AES-NI.
            AesNiKey::Aes256(s, _) => unsafe { encrypt_cbc(&s.enc, iv, blocks) },
        }
    }

    pub(crate) fn decrypt_cbc(&self, iv: &mut [u8; 16], blocks: &mut [[u8; 16]]) {
        match self {
            // SAFETY: the token proves the CPU has AES-NI.
            AesNiKey::Aes128(s, _) => unsafe { decrypt_cbc(&s.dec, iv, blocks) },
            // SAFETY: the token proves the CPU has AES-NI.
            AesNiKey::Aes256(s, _) => unsafe { decrypt_cbc(&s.dec, iv, blocks) },
        }
    }

    pub(crate) fn encrypt_block(&self, b: &mut [u8; 16]) {
        match self {
            // SAFETY: the token proves the CPU has AES-NI.
            AesNiKey::Aes128(s, _) => unsafe { encrypt_one(&s.enc, b) },
            // SAFETY: the token proves the CPU has AES-NI.
            AesNiKey::Aes256(s, _) => unsafe { encrypt_one(&s.enc, b) },
        }
    }
}

/// Loads a schedule into registers (the compiler keeps what fits).
#[inline]
#[target_feature(enable = "aes,sse2")]
pub(crate) fn load_keys<const N: usize>(s: &Schedule<N>) -> [__m128i; N] {
    core::array::from_fn(|i| load(&s.0[i]))
}

/// One step of the key schedule: `prev` with each word xored into the next
/// (the running xor of FIPS 197 `KeyExpansion`), then xored with `t`.
#[inline]
#[target_feature(enable = "aes,sse2")]
fn mix(prev: __m128i, t: __m128i) -> __m128i {
    let mut x = prev;
    x = _mm_xor_si128(x, _mm_slli_si128::<4>(x));
    x = _mm_xor_si128(x, _mm_slli_si128::<4>(x));
    x = _mm_xor_si128(x, _mm_slli_si128::<4>(x));
    _mm_xor_si128(x, t)
}

/// The decryption schedule of the equivalent inverse cipher (FIPS 197
/// 5.3.5): encryption round keys in reverse, the inner ones through
/// InvMixColumns.
#[target_feature(enable = "aes,sse2")]
fn inverse<const N: usize>(enc: &[__m128i; N]) -> Schedule<N> {
    let mut dec = Schedule([[0u8; 16]; N]);
    for (i, d) in dec.0.iter_mut().enumerate() {
        let k = enc[N - 1 - i];
        let k = if i == 0 || i == N - 1 {
            k
        } else {
            _mm_aesimc_si128(k)
        };
        store(d, k);
    }
    dec
}

fn to_schedule<const N: usize>(k: &[__m128i; N]) -> Schedule<N> {
    let mut s = Schedule([[0u8; 16]; N]);
    for (d, k) in s.0.iter_mut().zip(k) {
        store(d, *k);
    }
    s
}

#[target_feature(enable = "aes,sse2")]
fn expand128(key: &[u8; 16]) -> Schedules<11> {
    let mut k = [_mm_setzero_si128(); 11];
    k[0] = load(key);
    macro_rules! round {
        ($i:literal, $rcon:literal) => {
            let t = _mm_shuffle_epi32::<0xff>(_mm_aeskeygenassist_si128::<$rcon>(k[$i - 1]));
            k[$i] = mix(k[$i - 1], t);
        };
    }
    round!(1, 0x01);
    round!(2, 0x02);
    round!(3, 0x04);
    round!(4, 0x08);
    round!(5, 0x10);
    round!(6, 0x20);
    round!(7, 0x40);
    round!(8, 0x80);
    round!(9, 0x1b);
    round!(10, 0x36);
    let s = Schedules {
        enc: to_schedule(&k),
        dec: inverse(&k),
    };
    k = [_mm_setzero_si128(); 11];
    core::hint::black_box(&k);
    s
}

#[target_feature(enable = "aes,sse2")]
fn expand256(key: &[u8; 32]) -> Schedules<15> {
    let mut k = [_mm_setzero_si128(); 15];
    k[0] = load(block(key, 0));
    k[1] = load(block(key, 16));
    // Round keys 2 i and 2 i + 1 from the two before each. The odd ones
    // apply SubWord without RotWord or a round constant (FIPS 197 5.2,
    // Nk = 8); round key 14 has no odd partner.
    macro_rules! even {
        ($i:literal, $rcon:literal) => {
            let t = _mm_shuffle_epi32::<0xff>(_mm_aeskeygenassist_si128::<$rcon>(k[$i - 1]));
            k[$i] = mix(k[$i - 2], t);
        };
    }
    macro_rules! odd {
        ($i:literal) => {
            let t = _mm_shuffle_epi32::<0xaa>(_mm_aeskeygenassist_si128::<0>(k[$i - 1]));
            k[$i] = mix(k[$i - 2], t);
        };
    }
    even!(2, 0x01);
    odd!(3);
    even!(4, 0x02);
    odd!(5);
    even!(6, 0x04);
    odd!(7);
    even!(8, 0x08);
    odd!(9);
    even!(10, 0x10);
    odd!(11);
    even!(12, 0x20);
    odd!(13);
    even!(14, 0x40);
    let s = Schedules {
        enc: to_schedule(&k),
        dec: inverse(&k),
    };
    k = [_mm_setzero_si128(); 15];
    core::hint::black_box(&k);
    s
}

/// Encrypts one block: `x` already xored with round key 0.
#[inline]
#[target_feature(enable = "aes,sse2")]
pub(crate) fn rounds<const N: usize>(k: &[__m128i; N], mut x: __m128i) -> __m128i {
    for key in &k[1..N - 1] {
        x = _mm_aesenc_si128(x, *key);
    }
    _mm_aesenclast_si128(x, k[N - 1])
}

/// CBC-encrypts the blocks `data[at + 16 * i..]` for `i < count`, chaining
/// from the ciphertext block `c`; returns the last ciphertext block.
///
/// The chain is AES latency: the xor of the next plaintext block and round
/// key 0 is folded into the last round's key (`aesenclast` ends with an
/// xor), so nothing but AES rounds sits on the dependency chain.
#[inline]
#[target_feature(enable = "aes,sse2")]
pub(crate) fn encrypt_run<const N: usize>(
    k: &[__m128i; N],
    mut c: __m128i,
    data: &mut [u8],
    at: usize,
    count: usize,
) -> __m128i {
    if count == 0 {
        return c;
    }
    let last = k[N - 1];
    // Round-0 input of the first block.
    let mut x = _mm_xor_si128(_mm_xor_si128(load(block(data, at)), k[0]), c);
    for i in 0..count {
        let mut s = x;
        for key in &k[1..N - 1] {
            s = _mm_aesenc_si128(s, *key);
        }
        let pos = at + 16 * i;
        if i + 1 < count {
            // next ^ k0, off the chain.
            let next = _mm_xor_si128(load(block(data, pos + 16)), k[0]);
            // aesenclast(s, last ^ next) = c_i ^ next: the next round-0 input.
            x = _mm_aesenclast_si128(s, _mm_xor_si128(last, next));
            c = _mm_xor_si128(x, next);
        } else {
            c = _mm_aesenclast_si128(s, last);
        }
        store(block_mut(data, pos), c);
    }
    c
}

#[target_feature(enable = "aes,sse2")]
fn encrypt_cbc<const N: usize>(s: &Schedule<N>, iv: &mut [u8; 16], blocks: &mut [[u8; 16]]) {
    let k = load_keys(s);
    let data = blocks.as_flattened_mut();
    let c = encrypt_run(&k, load(iv), data, 0, data.len() / 16);
    store(iv, c);
}

#[target_feature(enable = "aes,sse2")]
fn encrypt_one<const N: usize>(s: &Schedule<N>, b: &mut [u8; 16]) {
    let k = load_keys(s);
    store(b, rounds(&k, _mm_xor_si128(load(b), k[0])));
}

/// CBC-decrypts `data` (whole blocks) in place, chaining from `prev` (the
/// IV or the ciphertext block before `data`); returns the last ciphertext
/// block. Eight independent blocks at a time keep the AES units busy.
#[inline]
#[target_feature(enable = "aes,sse2")]
pub(crate) fn decrypt_run<const N: usize>(
    k: &[__m128i; N],
    mut prev: __m128i,
    data: &mut [u8],
) -> __m128i {
    let last = k[N - 1];
    let (chunks, rest) = data.as_chunks_mut::<128>();
    for chunk in chunks {
        let c: [__m128i; 8] = core::array::from_fn(|i| load(block(chunk, 16 * i)));
        let mut s: [__m128i; 8] = core::array::from_fn(|i| _mm_xor_si128(c[i], k[0]));
        for key in &k[1..N - 1] {
            for x in &mut s {
                *x = _mm_aesdec_si128(*x, *key);
            }
            // Round by round for all eight blocks: left alone, the
            // register allocator serialises the blocks into one or two
            // chains to save registers.
            for x in &mut s {
                super::pin_xmm(x);
            }
        }
        for i in 0..8 {
            // The CBC xor folded into the last round's key.
            let p = if i == 0 { prev } else { c[i - 1] };
            store(
                block_mut(chunk, 16 * i),
                _mm_aesdeclast_si128(s[i], _mm_xor_si128(last, p)),
            );
        }
        prev = c[7];
    }
    let (chunks, rest) = rest.as_chunks_mut::<16>();
    for b in chunks {
        let c = load(b);
        let mut x = _mm_xor_si128(c, k[0]);
        for key in &k[1..N - 1] {
            x = _mm_aesdec_si128(x, *key);
        }
        store(b, _mm_aesdeclast_si128(x, _mm_xor_si128(last, prev)));
        prev = c;
    }
    debug_assert!(rest.is_empty());
    prev
}

/// CBC decryption of four blocks at a time, one step a call, for loops
/// that spread the AES rounds over other work: step 0 loads the blocks
/// and xors the first round key, steps `1..N - 1` are the middle rounds,
/// step `N - 1` the last round (with the CBC xor folded into its key, as
/// in [`decrypt_run`]) and the stores. Four chains keep the AES units
/// busy when the other work leaves them free.
pub(crate) struct DecryptSteps<'k, const N: usize> {
    k: &'k [__m128i; N],
    /// The ciphertext block before the four in flight.
    prev: __m128i,
    /// The four ciphertext blocks in flight.
    c: [__m128i; 4],
    /// Their AES states.
    s: [__m128i; 4],
}

impl<'k, const N: usize> DecryptSteps<'k, N> {
    /// Starts the chain after ciphertext block `prev` (or the IV).
    #[inline(always)]
    pub(crate) fn new(k: &'k [__m128i; N], prev: __m128i) -> Self {
        // SAFETY: SSE2 is part of the x86-64 baseline.
        let zero = unsafe { _mm_setzero_si128() };
        DecryptSteps {
            k,
            prev,
            c: [zero; 4],
            s: [zero; 4],
        }
    }

    /// Step `t` of the four blocks at `data[64 at..64 at + 64]`; steps
    /// from `N` on do nothing. The same `at` for the steps of one four.
    ///
    /// # Safety
    /// The CPU must have AES-NI; always inlined, into functions that
    /// enable it.
    #[inline(always)]
    pub(crate) unsafe fn step(&mut self, t: usize, data: &mut [u8], at: usize) {
        let k = self.k;
        // SAFETY: the caller guarantees AES-NI; SSE2 is baseline.
        unsafe {
            if t == 0 {
                let four = &data[64 * at..64 * at + 64];
                self.c = core::array::from_fn(|i| load(block(four, 16 * i)));
                self.s = self.c.map(|c| _mm_xor_si128(c, k[0]));
            } else if t < N - 1 {
                self.s = self.s.map(|x| _mm_aesdec_si128(x, k[t]));
            }
            if t < N - 1 {
                // Each step where it was placed, the four blocks side by
                // side: left alone, the compiler runs one block's rounds
                // at once, a chain the other work waits behind.
                for x in &mut self.s {
                    super::pin_xmm(x);
                }
            } else if t == N - 1 {
                let four = &mut data[64 * at..64 * at + 64];
                for i in 0..4 {
                    let p = if i == 0 { self.prev } else { self.c[i - 1] };
                    let plain = _mm_aesdeclast_si128(self.s[i], _mm_xor_si128(k[N - 1], p));
                    store(block_mut(four, 16 * i), plain);
                }
                self.prev = self.c[3];
            }
        }
    }

    /// The last ciphertext block decrypted, to chain from.
    pub(crate) fn prev(&self) -> __m128i {
        self.prev
    }
}

#[target_feature(enable = "aes,sse2")]
fn decrypt_cbc<const N: usize>(s: &Schedule<N>, iv: &mut [u8; 16], blocks: &mut [[u8; 16]]) {
    let k = load_keys(s);
    let prev = decrypt_run(&k, load(iv), blocks.as_flattened_mut());
    store(iv, prev);
}
