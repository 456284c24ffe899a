//! Stitched seal: AES-CBC encryption and the HMAC's compression (SHA-NI,
//! or the AVX2/BMI2 kernels) in one pass over the record; and the fused
//! open, CBC decryption with the hashing of what it decrypted.
//!
//! CBC encryption of one record is a serial chain of AES rounds, each
//! waiting for the previous one's result (about 4 cycles), so the AES units
//! idle most of the time; the hash rounds of the MAC are a separate chain
//! on other execution resources. Issued together, block for block, the out
//! of order core runs both chains at once and the MAC costs little more
//! than the encryption alone (the idea of OpenSSL's `aesni-sha1` and
//! `aesni-sha256` "stitched" ciphers). The loops below spread the AES
//! rounds of four blocks (eight for SHA-384's 128-byte blocks) evenly
//! between the groups of rounds of one hash block, so that both chains are
//! always inside the core's window and neither waits for the other.
//!
//! The hash input is offset by the 13-byte MAC header from the AES blocks,
//! so each hash block straddles two AES blocks; the loops order reads and
//! writes so that a byte is hashed as plaintext before it is encrypted in
//! place (MAC-then-encrypt), or as ciphertext after (encrypt-then-MAC).

use core::arch::x86_64::*;

use super::aes::{AesNiKey, Schedule, encrypt_run, load_keys};
use super::sha::{HashKernel, Sha1Ni, Sha1NiVl, Sha256Ni, ShaNiCompress};
use super::sha_avx2::{Avx2Compress, Sha1Avx2, Sha256Avx2};
use super::sha512::{Sha384Avx2, Sha384Avx512, Sha384Scalar, Sha512Kernel, Sha512Of};
use super::{Avx2, Avx512Bmi, ShaNi, ShaNiAvx, ShaNiAvx512, block, block_mut, load, store};
use crate::backends::{AesKey, DecryptAbsorb, EtmJob, decrypt_then_absorb, pad};
use crate::primitives::hash::{Compress, Engine, HashFunction, Sha1, Sha256, Sha384, Sha512};
use crate::primitives::hmac::HmacStates;

/// A feature set the kernels below are compiled for, named by the token
/// that proves it. The loops are written once, as `#[inline(always)]`
/// bodies; each feature set's `#[target_feature]` entry points inline them,
/// so every copy is compiled with exactly the instructions its token
/// guarantees. A [`HashKernel`] names the set its methods need.
///
/// The methods are `unsafe`: the caller must hold a value of `Self` and
/// an AES-NI token (and for `fused_vaes` a [`super::Vaes512`] token).
pub(crate) trait Isa: Copy {
    /// # Safety
    /// The CPU has AES-NI and `Self`'s features.
    unsafe fn mte<K: HashKernel, const N: usize>(
        keys: &Schedule<N>,
        states: &HmacStates<K::H>,
        header: &[u8; 13],
        iv: &mut [u8; 16],
        body: &mut [u8],
        plaintext_len: usize,
    );

    /// # Safety
    /// As [`Isa::mte`].
    #[allow(clippy::too_many_arguments)]
    unsafe fn etm<K: HashKernel, const N: usize>(
        keys: &Schedule<N>,
        states: &HmacStates<K::H>,
        job: EtmJob<'_>,
    );

    /// # Safety
    /// As [`Isa::mte`].
    unsafe fn fused<K: HashKernel, const N: usize>(
        dec: &Schedule<N>,
        iv: &[u8; 16],
        region: &mut [u8],
        state: &<K::H as HashFunction>::State,
        header: &[u8; 13],
        hash_len: usize,
    ) -> <K::H as HashFunction>::State;

    /// # Safety
    /// As [`Isa::mte`], and the CPU has AVX-512 F/BW/VL and VAES.
    unsafe fn fused_vaes<K: HashKernel, const N: usize>(
        dec: &Schedule<N>,
        iv: &[u8; 16],
        region: &mut [u8],
        state: &<K::H as HashFunction>::State,
        header: &[u8; 13],
        hash_len: usize,
    ) -> <K::H as HashFunction>::State;
}

/// Implements [`Isa`] for a token: `$features` are AES-NI's and the
/// token's, `$vaes` the same with AVX-512 and VAES.
macro_rules! isa {
    ($token:ty, $features:literal, $vaes:literal) => {
        impl Isa for $token {
            #[target_feature(enable = $features)]
            unsafe fn mte<K: HashKernel, const N: usize>(
                keys: &Schedule<N>,
                states: &HmacStates<K::H>,
                header: &[u8; 13],
                iv: &mut [u8; 16],
                body: &mut [u8],
                plaintext_len: usize,
            ) {
                // SAFETY: the caller guarantees the features, which this
                // function enables.
                unsafe { mte::<K, N>(keys, states, header, iv, body, plaintext_len) }
            }

            #[target_feature(enable = $features)]
            unsafe fn etm<K: HashKernel, const N: usize>(
                keys: &Schedule<N>,
                states: &HmacStates<K::H>,
                job: EtmJob<'_>,
            ) {
                // SAFETY: as in `mte`.
                unsafe { etm::<K, N>(keys, states, job) }
            }

            #[target_feature(enable = $features)]
            unsafe fn fused<K: HashKernel, const N: usize>(
                dec: &Schedule<N>,
                iv: &[u8; 16],
                region: &mut [u8],
                state: &<K::H as HashFunction>::State,
                header: &[u8; 13],
                hash_len: usize,
            ) -> <K::H as HashFunction>::State {
                // SAFETY: as in `mte`.
                unsafe { fused::<K, N>(dec, iv, region, state, header, hash_len) }
            }

            #[target_feature(enable = $vaes)]
            unsafe fn fused_vaes<K: HashKernel, const N: usize>(
                dec: &Schedule<N>,
                iv: &[u8; 16],
                region: &mut [u8],
                state: &<K::H as HashFunction>::State,
                header: &[u8; 13],
                hash_len: usize,
            ) -> <K::H as HashFunction>::State {
                // SAFETY: as in `mte`, and the caller guarantees VAES.
                unsafe { fused_vaes::<K, N>(dec, iv, region, state, header, hash_len) }
            }
        }
    };
}

isa!(
    ShaNi,
    "aes,sha,sse2,ssse3,sse4.1",
    "avx512f,avx512bw,avx512vl,vaes,aes,sha,sse2,ssse3,sse4.1"
);
isa!(
    ShaNiAvx,
    "aes,sha,avx,sse2,ssse3,sse4.1",
    "avx512f,avx512bw,avx512vl,vaes,aes,sha,avx,sse2,ssse3,sse4.1"
);
isa!(
    ShaNiAvx512,
    "aes,sha,avx,avx512f,avx512vl,sse2,ssse3,sse4.1",
    "avx512f,avx512bw,avx512vl,vaes,aes,sha,avx,sse2,ssse3,sse4.1"
);
isa!(
    Avx512Bmi,
    "aes,avx,avx2,bmi1,bmi2,avx512f,avx512bw,avx512vl,sse2,ssse3,sse4.1",
    "avx512f,avx512bw,avx512vl,vaes,aes,avx,avx2,bmi1,bmi2,sse2,ssse3,sse4.1"
);
isa!(
    Avx2,
    "aes,avx,avx2,bmi1,bmi2,sse2,ssse3,sse4.1",
    "avx512f,avx512bw,avx512vl,vaes,aes,avx,avx2,bmi1,bmi2,sse2,ssse3,sse4.1"
);

/// Steps (of four AES blocks) an encrypt-then-MAC hash block waits behind
/// the encryption, so that its (misaligned) loads read stored ciphertext
/// instead of stalling on store forwarding from AES stores still in flight.
const ETM_LAG: usize = 1;

/// Consecutive CBC blocks (as many as one hash block spans: four or
/// eight), encrypted one AES operation at a time so that the operations can
/// be spread among the hash rounds: `blocks * N` operations, operation `j`
/// being round `j % N` of block `j / N`. All indices are constants once the
/// hash kernel's group loop is unrolled.
struct Run<'a, const N: usize> {
    k: &'a [__m128i; N],
    data: &'a mut [u8],
    blocks: usize,
    /// The last ciphertext block.
    c: __m128i,
    /// The state of the block in progress.
    x: __m128i,
}

impl<'a, const N: usize> Run<'a, N> {
    #[inline]
    #[target_feature(enable = "aes,sse2")]
    fn new(k: &'a [__m128i; N], data: &'a mut [u8], c: __m128i) -> Self {
        let blocks = data.len() / 16;
        Run {
            k,
            data,
            blocks,
            c,
            x: c,
        }
    }

    #[inline]
    #[target_feature(enable = "aes,sse2")]
    fn op(&mut self, j: usize) {
        let (b, r) = (j / N, j % N);
        let k = self.k;
        if r == 0 {
            if b == 0 {
                let p = load(block(self.data, 0));
                self.x = _mm_xor_si128(_mm_xor_si128(p, k[0]), self.c);
            }
            // Later blocks' round 0 is folded into the previous block's
            // last round.
        } else if r < N - 1 {
            self.x = _mm_aesenc_si128(self.x, k[r]);
        } else {
            if b + 1 < self.blocks {
                // aesenclast(x, last ^ next ^ k0) = c ^ next ^ k0: the next
                // block's round-0 state, with no xor on the chain.
                let next = _mm_xor_si128(load(block(self.data, 16 * b + 16)), k[0]);
                self.x = _mm_aesenclast_si128(self.x, _mm_xor_si128(k[N - 1], next));
                self.c = _mm_xor_si128(self.x, next);
            } else {
                self.c = _mm_aesenclast_si128(self.x, k[N - 1]);
            }
            store(block_mut(self.data, 16 * b), self.c);
        }
    }

    /// The operations of slot `g` out of `groups`, spread evenly.
    #[inline]
    #[target_feature(enable = "aes,sse2")]
    fn slot(&mut self, g: usize, groups: usize) {
        let total = self.blocks * N;
        for j in g * total / groups..(g + 1) * total / groups {
            self.op(j);
        }
        super::pin_xmm(&mut self.x);
    }
}

/// The first hash block of a record, `header || data[..BLOCK - p]` for a
/// header of `p < BLOCK` bytes, in the first `K::BLOCK` bytes of the
/// result.
#[inline(always)]
pub(super) fn first_block<K: HashKernel>(header: &[u8], data: &[u8]) -> [u8; 128] {
    let p = header.len();
    let mut b = [0u8; 128];
    b[..p].copy_from_slice(header);
    b[p..K::BLOCK].copy_from_slice(&data[..K::BLOCK - p]);
    b
}

/// Hash block `i >= 1` of `header || data` for a `p`-byte header:
/// `data[BLOCK i - p..][..BLOCK]`.
#[inline(always)]
fn later_block<K: HashKernel>(data: &[u8], i: usize, p: usize) -> &[u8] {
    &data[K::BLOCK * i - p..K::BLOCK * (i + 1) - p]
}

/// MAC-then-encrypt seal (see `backends::seal_mac_then_encrypt`);
/// `_isa` proves the features of `K`'s feature set.
pub(crate) fn seal_mac_then_encrypt<K: HashKernel>(
    aes: &AesNiKey,
    _isa: K::Isa,
    states: &HmacStates<K::H>,
    header: &[u8; 13],
    iv: &mut [u8; 16],
    body: &mut [u8],
    plaintext_len: usize,
) {
    let (h, b, p) = (header, body, plaintext_len);
    match aes {
        // SAFETY: the AES-NI token in the key and `_isa` prove the CPU has
        // every feature the kernel enables.
        AesNiKey::Aes128(s, _) => unsafe { K::Isa::mte::<K, 11>(&s.enc, states, h, iv, b, p) },
        // SAFETY: as above.
        AesNiKey::Aes256(s, _) => unsafe { K::Isa::mte::<K, 15>(&s.enc, states, h, iv, b, p) },
    }
}

/// Encrypt-then-MAC seal of one job (see `backends::EtmJob`); `_isa`
/// proves the features of `K`'s feature set.
pub(crate) fn seal_encrypt_then_mac<K: HashKernel>(
    aes: &AesNiKey,
    _isa: K::Isa,
    states: &HmacStates<K::H>,
    job: EtmJob<'_>,
) {
    match aes {
        // SAFETY: the AES-NI token in the key and `_isa` prove the CPU has
        // every feature the kernel enables.
        AesNiKey::Aes128(s, _) => unsafe { K::Isa::etm::<K, 11>(&s.enc, states, job) },
        // SAFETY: as above.
        AesNiKey::Aes256(s, _) => unsafe { K::Isa::etm::<K, 15>(&s.enc, states, job) },
    }
}

/// The SHA-384 MAC-then-encrypt seal: on the SHA-512 kernel `sha512`
/// names, or on [`Sha384Scalar`] compiled for `isa`'s feature set.
#[allow(clippy::too_many_arguments)]
pub(crate) fn seal_mac_then_encrypt_sha384<I: Isa>(
    aes: &AesNiKey,
    isa: I,
    sha512: Sha512Kernel,
    states: &HmacStates<Sha384>,
    header: &[u8; 13],
    iv: &mut [u8; 16],
    body: &mut [u8],
    plaintext_len: usize,
) {
    let (s, h, b, p) = (states, header, body, plaintext_len);
    match sha512 {
        Sha512Kernel::Avx512(t) => seal_mac_then_encrypt::<Sha384Avx512>(aes, t, s, h, iv, b, p),
        Sha512Kernel::Avx2(t) => seal_mac_then_encrypt::<Sha384Avx2>(aes, t, s, h, iv, b, p),
        Sha512Kernel::Crate => seal_mac_then_encrypt::<Sha384Scalar<I>>(aes, isa, s, h, iv, b, p),
    }
}

/// The SHA-384 encrypt-then-MAC seal, as
/// [`seal_mac_then_encrypt_sha384`].
pub(crate) fn seal_encrypt_then_mac_sha384<I: Isa>(
    aes: &AesNiKey,
    isa: I,
    sha512: Sha512Kernel,
    states: &HmacStates<Sha384>,
    job: EtmJob<'_>,
) {
    let s = states;
    match sha512 {
        Sha512Kernel::Avx512(t) => seal_encrypt_then_mac::<Sha384Avx512>(aes, t, s, job),
        Sha512Kernel::Avx2(t) => seal_encrypt_then_mac::<Sha384Avx2>(aes, t, s, job),
        Sha512Kernel::Crate => seal_encrypt_then_mac::<Sha384Scalar<I>>(aes, isa, s, job),
    }
}

/// The SHA-512 encrypt-then-MAC seal (ESP's HMAC-SHA-512-256, JWE's
/// `A256CBC-HS512`): the SHA-384 kernels run as SHA-512 by [`Sha512Of`].
pub(crate) fn seal_encrypt_then_mac_sha512<I: Isa>(
    aes: &AesNiKey,
    isa: I,
    sha512: Sha512Kernel,
    states: &HmacStates<Sha512>,
    job: EtmJob<'_>,
) {
    let s = states;
    match sha512 {
        Sha512Kernel::Avx512(t) => seal_encrypt_then_mac::<Sha512Of<Sha384Avx512>>(aes, t, s, job),
        Sha512Kernel::Avx2(t) => seal_encrypt_then_mac::<Sha512Of<Sha384Avx2>>(aes, t, s, job),
        Sha512Kernel::Crate => seal_encrypt_then_mac::<Sha512Of<Sha384Scalar<I>>>(aes, isa, s, job),
    }
}

/// The padded last block(s) of an inner hash, built from the bytes not yet
/// hashed (FIPS 180-4 5.1: `0x80`, zeros, the big-endian bit length).
struct Tail {
    buf: [u8; 256],
    blocks: usize,
}

impl Tail {
    /// `parts` (under one block and an 8-byte suffix in all) end a message
    /// of `total` bytes.
    #[inline(always)]
    fn new<K: HashKernel>(parts: &[&[u8]], total: u64) -> Self {
        let mut buf = [0u8; 256];
        let mut n = 0;
        for part in parts {
            buf[n..n + part.len()].copy_from_slice(part);
            n += part.len();
        }
        buf[n] = 0x80;
        let b = K::BLOCK;
        let blocks = if n + 1 + K::H::LENGTH_FIELD_LEN > b {
            2
        } else {
            1
        };
        // The length field's high bytes (SHA-384's is 16 bytes) stay zero.
        buf[b * blocks - 8..b * blocks].copy_from_slice(&(total * 8).to_be_bytes());
        Tail { buf, blocks }
    }
}

/// Finishes the HMAC in registers: the inner hash from `regs` over `tail`,
/// then the outer hash; writes the tag to `out`.
///
/// # Safety
/// The CPU has the kernel's features.
#[inline(always)]
unsafe fn finish<K: HashKernel>(
    states: &HmacStates<K::H>,
    regs: K::Regs,
    tail: &Tail,
    out: &mut [u8],
) {
    let b = K::BLOCK;
    // SAFETY: the caller guarantees the kernel's features.
    unsafe {
        let mut regs = K::compress(regs, &tail.buf[..b]);
        if tail.blocks == 2 {
            regs = K::compress(regs, &tail.buf[b..2 * b]);
        }
        let outer = K::load_state(&states.outer);
        let outer = K::rounds(outer, K::outer_msg(regs), |_| {});
        K::write_digest(outer, &mut out[..K::H::OUTPUT_LEN]);
    }
}

/// The one padded inner block of a short MAC-then-encrypt record, `header
/// || plaintext || 0x80 || zeros || bit length of the inner message`, in
/// four vectors in memory byte order, for `13 + p + 9 <= 64`. The
/// plaintext is read from `body` (whole vectors within it; bytes past `p`
/// are masked off), the header in the pieces it was most likely written
/// in.
///
/// # Safety
/// The CPU has SSSE3.
#[inline(always)]
unsafe fn short_block(header: &[u8; 13], body: &[u8], p: usize, total: u64) -> [__m128i; 4] {
    debug_assert!(13 + p + 9 <= 64 && body.len() >= p + 16 && body.len().is_multiple_of(16));
    let h0 = u64::from_le_bytes(header[..8].try_into().expect("8 bytes"));
    let h1 = u32::from_le_bytes(header[8..12].try_into().expect("4 bytes")) as u64
        | (header[12] as u64) << 32;
    // SAFETY: the caller guarantees SSSE3 (SSE2 is baseline).
    unsafe {
        let zero = _mm_setzero_si128();
        let vectors = body.len() / 16;
        let pt: [__m128i; 3] = core::array::from_fn(|i| {
            if i < vectors {
                load(block(body, 16 * i))
            } else {
                zero
            }
        });
        // Stream byte 13 + i is plaintext byte i.
        let mut v = [
            _mm_or_si128(
                _mm_set_epi64x(h1 as i64, h0 as i64),
                _mm_slli_si128::<13>(pt[0]),
            ),
            _mm_alignr_epi8::<3>(pt[1], pt[0]),
            _mm_alignr_epi8::<3>(pt[2], pt[1]),
            _mm_alignr_epi8::<3>(zero, pt[2]),
        ];
        let end = _mm_set1_epi8((13 + p) as i8);
        let iota = _mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
        for (k, x) in v.iter_mut().enumerate() {
            let pos = _mm_add_epi8(iota, _mm_set1_epi8(16 * k as i8));
            let keep = _mm_and_si128(*x, _mm_cmplt_epi8(pos, end));
            let marker = _mm_and_si128(_mm_cmpeq_epi8(pos, end), _mm_set1_epi8(i8::MIN));
            *x = _mm_or_si128(keep, marker);
        }
        v[3] = _mm_or_si128(v[3], _mm_set_epi64x((total * 8).swap_bytes() as i64, 0));
        v
    }
}

/// The MAC-then-encrypt loop.
///
/// # Safety
/// The CPU has AES-NI and the kernel's features.
#[inline(always)]
unsafe fn mte<K: HashKernel, const N: usize>(
    keys: &Schedule<N>,
    states: &HmacStates<K::H>,
    header: &[u8; 13],
    iv: &mut [u8; 16],
    body: &mut [u8],
    plaintext_len: usize,
) {
    // SAFETY: the caller guarantees AES-NI and the kernel's features.
    unsafe {
        let k = load_keys(keys);
        let m = K::H::OUTPUT_LEN;
        let bl = K::BLOCK;
        let (regs, mut chain, done, full) =
            hash_ahead::<K, N, 0>(&k, states, header, load(iv), body, plaintext_len);
        // The rest of the hash input is under one block: copied out, after
        // which the plaintext blocks may be encrypted while the MAC is
        // finished.
        let total = (bl + 13 + plaintext_len) as u64;
        let plain_blocks = plaintext_len / 16;
        if full == 0 && bl == 64 && 13 + plaintext_len + 9 <= 64 {
            // A short record: its whole inner message is one block, built
            // in registers. Copied into a buffer, its loads would wait for
            // the narrower stores to reach the cache, at the head of the
            // record's critical path.
            let msg = K::msg_from_vecs(short_block(header, body, plaintext_len, total));
            chain = encrypt_run(&k, chain, body, 16 * done, plain_blocks - done);
            let inner = K::rounds(regs, msg, |_| {});
            let outer = K::rounds(K::load_state(&states.outer), K::outer_msg(inner), |_| {});
            K::write_digest(outer, &mut body[plaintext_len..plaintext_len + m]);
        } else {
            let tail = if full == 0 {
                Tail::new::<K>(&[header, &body[..plaintext_len]], total)
            } else {
                Tail::new::<K>(&[&body[bl * full - 13..plaintext_len]], total)
            };
            chain = encrypt_run(&k, chain, body, 16 * done, plain_blocks - done);
            finish::<K>(
                states,
                regs,
                &tail,
                &mut body[plaintext_len..plaintext_len + m],
            );
        }
        pad(body, plaintext_len + m);
        let blocks = body.len() / 16;
        chain = encrypt_run(&k, chain, body, 16 * plain_blocks, blocks - plain_blocks);
        store(iv, chain);
    }
}

/// The stitched front of a seal that hashes `header || body[..hash_len]`
/// before encrypting it (MAC-then-encrypt, SSH's encrypt-and-MAC): every
/// full hash block of it, with the AES blocks already read for hashing
/// encrypted beside. Returns the inner hash registers, the CBC chain, the
/// AES blocks encrypted and the full hash blocks; what is left of the hash
/// input (under one block, from `bl full - header.len()`) is still
/// plaintext.
///
/// `SITE` tells the callers' copies apart: each then has its own closure
/// types, so the hash rounds and the AES slots, each called once per
/// instance, are inlined into the loop (one instance shared by two callers
/// leaves them out of line, which costs the stitching its overlap).
///
/// # Safety
/// As [`mte`].
#[inline(always)]
unsafe fn hash_ahead<K: HashKernel, const N: usize, const SITE: u8>(
    k: &[__m128i; N],
    states: &HmacStates<K::H>,
    header: &[u8],
    mut chain: __m128i,
    body: &mut [u8],
    hash_len: usize,
) -> (K::Regs, __m128i, usize, usize) {
    // SAFETY: the caller guarantees AES-NI and the kernel's features.
    unsafe {
        let bl = K::BLOCK;
        let h = header.len();
        // The stores of step i end 16 T bytes before its hash block does, so
        // they never reach bytes a later block still has to load.
        debug_assert!(h <= 16 * K::MTE_TRAIL && h < bl);
        // AES blocks per hash block.
        let per = bl / 16;
        // Full hash blocks of `header || body[..hash_len]`.
        let full = (h + hash_len) / bl;
        let mut regs = K::load_state(&states.inner);
        // AES blocks encrypted so far.
        let mut done = 0;
        if full > 0 {
            // Hash block i covers the body up to byte bl (i + 1) - h, so
            // once its message is loaded the AES blocks before per (i + 1) -
            // 1 may be overwritten. Step i hashes block i with the AES
            // rounds of the `per` blocks from per i - T spread among its
            // rounds, T = `K::MTE_TRAIL` being under `per` or whole hash
            // blocks: step 0 encrypts what exists of its range after its
            // hash, and steps whose range does not exist yet hash alone.
            // After the loop about T blocks of the body are left to encrypt
            // beside the end of the MAC.
            const {
                assert!(K::MTE_TRAIL >= 1);
                assert!(K::MTE_TRAIL < K::BLOCK / 16 || K::MTE_TRAIL.is_multiple_of(K::BLOCK / 16));
            }
            regs = K::compress(regs, &first_block::<K>(header, body));
            done = per.saturating_sub(K::MTE_TRAIL);
            if done > 0 {
                chain = encrypt_run(k, chain, body, 0, done);
            }
            for i in 1..full {
                // Block i's message is in registers before the step's stores
                // overwrite its first bytes.
                let msg = K::load_msg(later_block::<K>(body, i, h));
                if per * i >= K::MTE_TRAIL {
                    let mut run = Run::new(k, &mut body[16 * done..16 * done + bl], chain);
                    regs = K::rounds(regs, msg, |g| run.slot(g, K::GROUPS));
                    chain = run.c;
                    done += per;
                } else {
                    // Nothing of this step's range exists yet (the trail is
                    // whole hash blocks).
                    regs = K::rounds(regs, msg, |_| {});
                }
            }
        }
        (regs, chain, done, full)
    }
}

/// The encrypt-and-MAC loop (SSH without EtM): `HMAC(prefix || body)` to
/// `tag` while all of `body` (whole blocks) is CBC-encrypted in place.
///
/// # Safety
/// As [`mte`].
#[inline(always)]
unsafe fn eam<K: HashKernel, const N: usize>(
    keys: &Schedule<N>,
    states: &HmacStates<K::H>,
    prefix: &[u8],
    iv: &mut [u8; 16],
    body: &mut [u8],
    tag: &mut [u8],
) {
    // SAFETY: the caller guarantees AES-NI and the kernel's features.
    unsafe {
        let k = load_keys(keys);
        let bl = K::BLOCK;
        let len = body.len();
        let (regs, chain, done, full) =
            hash_ahead::<K, N, 1>(&k, states, prefix, load(iv), body, len);
        // The unhashed rest is copied out before it is encrypted.
        let p = prefix.len();
        let total = (bl + p + len) as u64;
        let tail = if full == 0 {
            Tail::new::<K>(&[prefix, body], total)
        } else {
            Tail::new::<K>(&[&body[bl * full - p..]], total)
        };
        let chain = encrypt_run(&k, chain, body, 16 * done, len / 16 - done);
        finish::<K>(states, regs, &tail, tag);
        store(iv, chain);
    }
}

/// The encrypt-then-MAC loop.
///
/// # Safety
/// As [`mte`].
#[inline(always)]
unsafe fn etm<K: HashKernel, const N: usize>(
    keys: &Schedule<N>,
    states: &HmacStates<K::H>,
    job: EtmJob<'_>,
) {
    let EtmJob {
        head,
        prefix,
        iv,
        authenticated: fragment,
        body_start,
        suffix,
        tag,
        mac_plaintext,
    } = job;
    if mac_plaintext {
        debug_assert!(head.is_empty() && suffix.is_empty() && body_start == 0);
        // SAFETY: as this function's.
        return unsafe { eam::<K, N>(keys, states, prefix, iv, fragment, tag) };
    }
    // SAFETY: the caller guarantees AES-NI and the kernel's features.
    unsafe {
        let k = load_keys(keys);
        let bl = K::BLOCK;
        let per = bl / 16;
        let end = fragment.len();
        let blocks = (end - body_start) / 16;
        let mut regs = K::load_state(&states.inner);
        // The head and the prefix's whole blocks go first; what is left of
        // the prefix (under one block) leads the fragment's hash blocks.
        debug_assert!(head.len().is_multiple_of(bl));
        let whole = prefix.len() - prefix.len() % bl;
        for b in head
            .chunks_exact(bl)
            .chain(prefix[..whole].chunks_exact(bl))
        {
            regs = K::compress(regs, b);
        }
        let absorbed = head.len() + whole;
        let prefix = &prefix[whole..];
        let p = prefix.len();
        // Full hash blocks of `prefix || fragment` (the suffix goes into
        // the tail).
        let full = (p + end) / bl;
        let mut chain = load(iv);
        // Step s encrypts blocks per s ..= per s + per - 1 with hash block
        // s - ETM_LAG (whose bytes were all written by earlier steps: it
        // ends at bl (s - ETM_LAG + 1) - p <= body_start + bl s) spread
        // among them.
        let steps = blocks / per;
        let mut hashed = 0;
        for s in 0..steps {
            let at = body_start + bl * s;
            if s >= ETM_LAG && s - ETM_LAG < full {
                let h = s - ETM_LAG;
                let msg = {
                    if h == 0 {
                        K::load_msg(&first_block::<K>(prefix, fragment))
                    } else {
                        K::load_msg(later_block::<K>(fragment, h, p))
                    }
                };
                let mut run = Run::new(&k, &mut fragment[at..at + bl], chain);
                regs = K::rounds(regs, msg, |g| run.slot(g, K::GROUPS));
                chain = run.c;
                hashed = h + 1;
            } else {
                chain = encrypt_run(&k, chain, fragment, at, per);
            }
        }
        chain = encrypt_run(
            &k,
            chain,
            fragment,
            body_start + bl * steps,
            blocks - per * steps,
        );
        store(iv, chain);
        while hashed < full {
            regs = if hashed == 0 {
                K::compress(regs, &first_block::<K>(prefix, fragment))
            } else {
                K::compress(regs, later_block::<K>(fragment, hashed, p))
            };
            hashed += 1;
        }
        let total = (bl + absorbed + p + end + suffix.len()) as u64;
        let tail = if full == 0 {
            Tail::new::<K>(&[prefix, fragment, suffix], total)
        } else {
            Tail::new::<K>(&[&fragment[bl * full - p..], suffix], total)
        };
        finish::<K>(states, regs, &tail, tag);
    }
}

/// Hash blocks of the open's prefix trail the decryption by this many
/// bytes, so that their (misaligned) loads find the plaintext stored.
const OPEN_LAG: usize = 64;

/// `DecryptAbsorb` for one of our compressors: `$kernel` is the hash
/// kernel to fuse and `$isa` the token proving its features.
macro_rules! decrypt_absorb_with {
    ($compress:ty, $hash:ty, |$c:ident| $kernel:ty, $isa:expr) => {
        impl DecryptAbsorb<$hash> for $compress {
            fn decrypt_absorb(
                &self,
                aes: &AesKey,
                iv: &[u8; 16],
                region: &mut [u8],
                engine: &mut Engine<$hash>,
                header: &[u8; 13],
                hash_len: usize,
            ) {
                let $c = self;
                let (r, e, h, n) = (region, engine, header, hash_len);
                decrypt_absorb::<$kernel, _>(self, $isa, aes, iv, r, e, h, n);
            }
        }
    };
}

/// `DecryptAbsorb` for the SHA-NI compressor: with VEX encodings where the
/// CPU has AVX, and for SHA-1 on [`Sha1NiVl`] where the CPU table says.
macro_rules! decrypt_absorb_sha_ni {
    ($hash:ty, $kernel:ident $(, $vl:ident)?) => {
        impl DecryptAbsorb<$hash> for ShaNiCompress {
            fn decrypt_absorb(
                &self,
                aes: &AesKey,
                iv: &[u8; 16],
                region: &mut [u8],
                engine: &mut Engine<$hash>,
                header: &[u8; 13],
                hash_len: usize,
            ) {
                let (r, e, h, n) = (region, engine, header, hash_len);
                $(
                    if let Some(t) = self.sha1_vl {
                        return decrypt_absorb::<$vl, _>(self, t, aes, iv, r, e, h, n);
                    }
                )?
                match self.avx {
                    Some(t) => decrypt_absorb::<$kernel<ShaNiAvx>, _>(self, t, aes, iv, r, e, h, n),
                    None => {
                        decrypt_absorb::<$kernel<ShaNi>, _>(self, self.sha, aes, iv, r, e, h, n)
                    }
                }
            }
        }
    };
}

decrypt_absorb_sha_ni!(Sha1, Sha1Ni, Sha1NiVl);
decrypt_absorb_sha_ni!(Sha256, Sha256Ni);
decrypt_absorb_with!(Avx2Compress, Sha1, |c| Sha1Avx2, c.avx2);
decrypt_absorb_with!(Avx2Compress, Sha256, |c| Sha256Avx2, c.avx2);

/// `DecryptAbsorb<Sha384>` for one of our compressors: the SHA-512
/// kernel it names, or the scalar one compiled for `$isa`'s set.
macro_rules! decrypt_absorb_sha384 {
    ($compress:ty, |$c:ident| $isa:expr) => {
        impl DecryptAbsorb<Sha384> for $compress {
            fn decrypt_absorb(
                &self,
                aes: &AesKey,
                iv: &[u8; 16],
                region: &mut [u8],
                engine: &mut Engine<Sha384>,
                header: &[u8; 13],
                hash_len: usize,
            ) {
                let $c = self;
                let isa = $isa;
                let (r, e, h, n) = (region, engine, header, hash_len);
                if let Some(t) = self.sha512.pair_open() {
                    // Where the pair loop is the faster kernel, the
                    // decryption beside its rounds.
                    let layout = super::sha512::pair_layout();
                    let s = e.state;
                    if let Some(regs) =
                        super::open_pairs::decrypt_hash(t, layout, aes, iv, r, &s, h, n)
                    {
                        return absorb_rest(self, e, regs, h, r, n);
                    }
                }
                if !crate::backends::cpu::Tuning::get().sha384_open_fused {
                    // Where the fusion is slower (`Tuning`), the whole
                    // prefix on the bulk kernels.
                    return decrypt_then_absorb(self, aes, iv, r, e, h, n);
                }
                match self.sha512 {
                    Sha512Kernel::Avx512(t) => {
                        decrypt_absorb::<Sha384Avx512, _>(self, t, aes, iv, r, e, h, n)
                    }
                    Sha512Kernel::Avx2(t) => {
                        decrypt_absorb::<Sha384Avx2, _>(self, t, aes, iv, r, e, h, n)
                    }
                    Sha512Kernel::Crate => {
                        decrypt_absorb::<Sha384Scalar<_>, _>(self, isa, aes, iv, r, e, h, n)
                    }
                }
            }
        }
    };
}

decrypt_absorb_sha384!(ShaNiCompress, |c| c.sha);
decrypt_absorb_sha384!(Avx2Compress, |c| c.avx2);

/// The fused open prefix: CBC decryption (eight blocks at a time on
/// AES-NI, sixteen on VAES-512) with the compression of the blocks
/// just decrypted, while they are in L1 and with the two kinds of work
/// overlapping in the core (decryption is throughput-bound on the AES
/// units, the hash latency-bound on its own chain).
#[allow(clippy::too_many_arguments)]
pub(crate) fn decrypt_absorb<K: HashKernel, C: Compress<K::H>>(
    c: &C,
    _isa: K::Isa,
    aes: &AesKey,
    iv: &[u8; 16],
    region: &mut [u8],
    engine: &mut Engine<K::H>,
    header: &[u8; 13],
    hash_len: usize,
) {
    debug_assert!(engine.buffered == 0 && hash_len <= region.len());
    let fuse_vaes = crate::backends::cpu::Tuning::get().vaes_sha_ni_fusion;
    let regs = match (aes, aes.aes_ni()) {
        (AesKey::Vaes512(v), _) if fuse_vaes => match &v.key {
            // SAFETY: the key's VAES token proves AVX-512 F/BW/VL, VAES and
            // AES-NI; `_isa` proves the kernel's features.
            AesNiKey::Aes128(s, _) => unsafe {
                K::Isa::fused_vaes::<K, 11>(&s.dec, iv, region, &engine.state, header, hash_len)
            },
            // SAFETY: as above.
            AesNiKey::Aes256(s, _) => unsafe {
                K::Isa::fused_vaes::<K, 15>(&s.dec, iv, region, &engine.state, header, hash_len)
            },
        },
        // Where VAES beside SHA-NI is slow (see `Tuning`), the AES-NI
        // fusion on the same round keys.
        (_, Some(key)) => match key {
            // SAFETY: the key's token proves AES-NI (a VAES key's proves it
            // too); `_isa` the kernel's features.
            AesNiKey::Aes128(s, _) => unsafe {
                K::Isa::fused::<K, 11>(&s.dec, iv, region, &engine.state, header, hash_len)
            },
            // SAFETY: as above.
            AesNiKey::Aes256(s, _) => unsafe {
                K::Isa::fused::<K, 15>(&s.dec, iv, region, &engine.state, header, hash_len)
            },
        },
        (_, None) => return decrypt_then_absorb(c, aes, iv, region, engine, header, hash_len),
    };
    absorb_rest(c, engine, regs, header, region, hash_len);
}

/// The end of an open prefix's hash: `regs` is the state after the full
/// hash blocks of `header || region[..hash_len]`; the rest (less than a
/// block) goes to the engine's buffer.
pub(super) fn absorb_rest<H: HashFunction, C: Compress<H>>(
    c: &C,
    engine: &mut Engine<H>,
    regs: H::State,
    header: &[u8; 13],
    region: &[u8],
    hash_len: usize,
) {
    let full = (13 + hash_len) / H::BLOCK_LEN;
    engine.state = regs;
    engine.total += (H::BLOCK_LEN * full) as u64;
    if full == 0 {
        engine.update(c, header);
        engine.update(c, &region[..hash_len]);
    } else {
        engine.update(c, &region[H::BLOCK_LEN * full - 13..hash_len]);
    }
}

/// The loop of the fused open prefix, given a kernel that CBC-decrypts one
/// chunk of `CHUNK` bytes in place (chaining from and returning the
/// previous ciphertext block). Returns the state after the full hash
/// blocks of `header || region[..hash_len]`.
///
/// # Safety
/// As [`mte`].
#[inline(always)]
unsafe fn fused_loop<K: HashKernel, const N: usize, const CHUNK: usize>(
    k: &[__m128i; N],
    iv: &[u8; 16],
    region: &mut [u8],
    state: &<K::H as HashFunction>::State,
    header: &[u8; 13],
    hash_len: usize,
    mut decrypt_chunk: impl FnMut(__m128i, &mut [u8; CHUNK]) -> __m128i,
) -> <K::H as HashFunction>::State {
    // SAFETY: the caller guarantees AES-NI and the kernel's features.
    unsafe {
        let full = (13 + hash_len) / K::BLOCK;
        let mut regs = K::load_state(state);
        let mut prev = load(iv);
        let mut hashed = 0;
        let chunks = region.len() / CHUNK;
        for i in 0..chunks {
            let chunk = (&mut region[CHUNK * i..CHUNK * (i + 1)])
                .try_into()
                .expect("chunk");
            prev = decrypt_chunk(prev, chunk);
            let ready = CHUNK * (i + 1);
            while hashed < full && K::BLOCK * (hashed + 1) - 13 + OPEN_LAG <= ready {
                regs = if hashed == 0 {
                    K::compress(regs, &first_block::<K>(header, region))
                } else {
                    K::compress(regs, later_block::<K>(region, hashed, 13))
                };
                hashed += 1;
            }
        }
        super::aes::decrypt_run(k, prev, &mut region[CHUNK * chunks..]);
        while hashed < full {
            regs = if hashed == 0 {
                K::compress(regs, &first_block::<K>(header, region))
            } else {
                K::compress(regs, later_block::<K>(region, hashed, 13))
            };
            hashed += 1;
        }
        K::store_state(regs)
    }
}

/// The fused open prefix on AES-NI.
///
/// # Safety
/// As [`mte`].
#[inline(always)]
unsafe fn fused<K: HashKernel, const N: usize>(
    dec: &Schedule<N>,
    iv: &[u8; 16],
    region: &mut [u8],
    state: &<K::H as HashFunction>::State,
    header: &[u8; 13],
    hash_len: usize,
) -> <K::H as HashFunction>::State {
    // SAFETY: the caller guarantees AES-NI and the kernel's features.
    unsafe {
        let k = load_keys(dec);
        fused_loop::<K, N, 128>(&k, iv, region, state, header, hash_len, |prev, chunk| {
            super::aes::decrypt_run(&k, prev, chunk)
        })
    }
}

/// The fused open prefix on VAES-512.
///
/// # Safety
/// As [`mte`], and the CPU has AVX-512 F/BW/VL and VAES.
#[inline(always)]
unsafe fn fused_vaes<K: HashKernel, const N: usize>(
    dec: &Schedule<N>,
    iv: &[u8; 16],
    region: &mut [u8],
    state: &<K::H as HashFunction>::State,
    header: &[u8; 13],
    hash_len: usize,
) -> <K::H as HashFunction>::State {
    // SAFETY: the caller guarantees AES-NI and the kernel's features.
    unsafe {
        let k = load_keys(dec);
        fused_loop::<K, N, 256>(&k, iv, region, state, header, hash_len, |prev, chunk| {
            super::vaes::decrypt_run(dec, prev, chunk)
        })
    }
}
