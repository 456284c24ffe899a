//! VAES: CBC decryption sixteen blocks at a time, four per zmm register
//! with AVX-512, two per ymm register without it. (CBC encryption is one
//! serial chain, so it stays on the AES-NI kernel.)

use core::arch::x86_64::*;

use super::aes::{AesNiKey, Schedule, load_keys};
use super::{Vaes256, Vaes512, load, store};

/// An AES-NI key whose CBC decryption runs on a VAES kernel: `T` is the
/// proof of the CPU features it needs ([`Vaes512`] or [`Vaes256`]).
#[derive(Clone)]
pub(crate) struct VaesKey<T> {
    pub(crate) key: AesNiKey,
    token: T,
}

/// A key whose CBC decryption runs on zmm registers.
pub(crate) type Vaes512Key = VaesKey<Vaes512>;

/// A key whose CBC decryption runs on ymm registers.
pub(crate) type Vaes256Key = VaesKey<Vaes256>;

impl<T: Copy> VaesKey<T> {
    pub(crate) fn new(token: T, key: AesNiKey) -> Self {
        VaesKey { key, token }
    }

    /// The proof of the CPU features the key was built with.
    pub(crate) fn token(&self) -> T {
        self.token
    }
}

impl Vaes512Key {
    pub(crate) fn decrypt_cbc(&self, iv: &mut [u8; 16], blocks: &mut [[u8; 16]]) {
        let _ = self.token;
        let data = blocks.as_flattened_mut();
        match &self.key {
            // SAFETY: `self.token` proves the CPU has AVX-512 F/BW/VL, VAES
            // and AES-NI, and the OS saves zmm state.
            AesNiKey::Aes128(s, _) => unsafe { decrypt_cbc(&s.dec, iv, data) },
            // SAFETY: as above.
            AesNiKey::Aes256(s, _) => unsafe { decrypt_cbc(&s.dec, iv, data) },
        }
    }
}

impl Vaes256Key {
    pub(crate) fn decrypt_cbc(&self, iv: &mut [u8; 16], blocks: &mut [[u8; 16]]) {
        let data = blocks.as_flattened_mut();
        match &self.key {
            // SAFETY: `self.token` proves the CPU has AVX2, VAES and AES-NI,
            // and the OS saves ymm state.
            AesNiKey::Aes128(s, _) => unsafe { decrypt_cbc_ymm(&s.dec, iv, data) },
            // SAFETY: as above.
            AesNiKey::Aes256(s, _) => unsafe { decrypt_cbc_ymm(&s.dec, iv, data) },
        }
    }
}

#[target_feature(enable = "avx512f,avx512bw,avx512vl,vaes,aes,sse2,sse4.1")]
fn decrypt_cbc<const N: usize>(s: &Schedule<N>, iv: &mut [u8; 16], data: &mut [u8]) {
    let prev = load(iv);
    let prev = decrypt_run(s, prev, data);
    store(iv, prev);
}

/// CBC-decrypts `data` in place chaining from `prev`; returns the last
/// ciphertext block. Sixteen blocks per step; the rest on AES-NI.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,vaes,aes,sse2,sse4.1")]
pub(crate) fn decrypt_run<const N: usize>(
    s: &Schedule<N>,
    prev: __m128i,
    data: &mut [u8],
) -> __m128i {
    let k: [__m512i; N] = core::array::from_fn(|i| _mm512_broadcast_i32x4(load(&s.0[i])));
    let (chunks, rest) = data.as_chunks_mut::<256>();
    // The previous ciphertext block sits in the top lane.
    let mut prev_z = _mm512_broadcast_i32x4(prev);
    for chunk in chunks {
        let c: [__m512i; 4] = core::array::from_fn(|i| {
            // SAFETY: `chunk` is 256 bytes, so `64 i..64 i + 64` is in
            // bounds; `loadu` needs no alignment.
            unsafe { _mm512_loadu_si512(chunk.as_ptr().add(64 * i).cast()) }
        });
        let mut x: [__m512i; 4] = core::array::from_fn(|i| _mm512_xor_si512(c[i], k[0]));
        for key in &k[1..N - 1] {
            for v in &mut x {
                *v = _mm512_aesdec_epi128(*v, *key);
            }
        }
        for i in 0..4 {
            // Each lane's previous ciphertext block: the register shifted
            // up one lane, the top lane of the one before filling in.
            let before = if i == 0 { prev_z } else { c[i - 1] };
            let p = _mm512_alignr_epi64::<6>(c[i], before);
            let out = _mm512_aesdeclast_epi128(x[i], _mm512_xor_si512(k[N - 1], p));
            // SAFETY: in bounds as for the load; `storeu` needs no
            // alignment.
            unsafe { _mm512_storeu_si512(chunk.as_mut_ptr().add(64 * i).cast(), out) };
        }
        prev_z = c[3];
    }
    let prev = _mm512_extracti32x4_epi32::<3>(prev_z);
    if rest.is_empty() {
        return prev;
    }
    let k = load_keys(s);
    super::aes::decrypt_run(&k, prev, rest)
}

#[target_feature(enable = "avx2,vaes,aes,sse2,sse4.1")]
fn decrypt_cbc_ymm<const N: usize>(s: &Schedule<N>, iv: &mut [u8; 16], data: &mut [u8]) {
    let prev = decrypt_run_ymm(s, load(iv), data);
    store(iv, prev);
}

/// CBC-decrypts `data` in place chaining from `prev`; returns the last
/// ciphertext block. Sixteen blocks per step, two per ymm register (eight
/// `vaesdec` in flight: enough for two AES units of four cycles' latency);
/// the round keys come from memory, as they do not fit beside the states;
/// the rest on AES-NI.
#[inline]
#[target_feature(enable = "avx2,vaes,aes,sse2,sse4.1")]
fn decrypt_run_ymm<const N: usize>(s: &Schedule<N>, mut prev: __m128i, data: &mut [u8]) -> __m128i {
    let k: [__m256i; N] = core::array::from_fn(|i| _mm256_broadcastsi128_si256(load(&s.0[i])));
    let (chunks, rest) = data.as_chunks_mut::<256>();
    for chunk in chunks {
        let p = chunk.as_mut_ptr();
        let mut x: [__m256i; 8] = core::array::from_fn(|i| {
            // SAFETY: `chunk` is 256 bytes, so `32 i..32 i + 32` is in
            // bounds; `loadu` needs no alignment.
            _mm256_xor_si256(unsafe { _mm256_loadu_si256(p.add(32 * i).cast()) }, k[0])
        });
        for key in &k[1..N - 1] {
            for v in &mut x {
                *v = _mm256_aesdec_epi128(*v, *key);
            }
        }
        // Each register's previous ciphertext blocks: the 32 bytes that
        // start one block earlier (the first pair takes `prev` below).
        let before: [__m256i; 8] = core::array::from_fn(|i| {
            if i == 0 {
                // SAFETY: the first block of `chunk` is in bounds.
                let first = unsafe { _mm_loadu_si128(p.cast()) };
                _mm256_inserti128_si256::<1>(_mm256_castsi128_si256(prev), first)
            } else {
                // SAFETY: `32 i - 16..32 i + 16` lies inside `chunk`.
                unsafe { _mm256_loadu_si256(p.add(32 * i - 16).cast()) }
            }
        });
        // SAFETY: the last block of `chunk` is in bounds.
        prev = unsafe { _mm_loadu_si128(p.add(240).cast()) };
        for i in 0..8 {
            let out = _mm256_aesdeclast_epi128(x[i], _mm256_xor_si256(k[N - 1], before[i]));
            // SAFETY: in bounds as for the load; `storeu` needs no
            // alignment.
            unsafe { _mm256_storeu_si256(p.add(32 * i).cast(), out) };
        }
    }
    if rest.is_empty() {
        return prev;
    }
    let k = load_keys(s);
    super::aes::decrypt_run(&k, prev, rest)
}

#[cfg(test)]
mod tests {
    use super::super::test_rng::SplitMix64;
    use crate::Backend;
    use crate::backends::AesKey;
    use crate::combination::Cipher;

    /// Every VAES key this CPU can build decrypts as the portable path
    /// does, at lengths on both sides of the sixteen-block step, and hands
    /// on the same chaining block.
    #[test]
    fn matches_the_portable_path() {
        let mut rng = SplitMix64(57);
        let mut tried = 0;
        for backend in [
            Backend::Vaes512ShaNi,
            Backend::AesNiShaNi,
            Backend::AesNiAvx2,
        ] {
            for cipher in [Cipher::Aes128Cbc, Cipher::Aes256Cbc] {
                let mut raw = vec![0u8; cipher.key_len()];
                rng.fill(&mut raw);
                if !backend.is_available() {
                    continue;
                }
                let key = AesKey::new(backend, cipher, &raw);
                if !matches!(key, AesKey::Vaes512(_) | AesKey::Vaes256(_)) {
                    continue;
                }
                tried += 1;
                let portable = AesKey::new(Backend::Portable, cipher, &raw);
                for blocks in (0..=50).chain([255, 256, 257, 1024, 1031]) {
                    let data = rng.blocks::<16>(blocks);
                    let mut iv = [0u8; 16];
                    rng.fill(&mut iv);
                    let (mut got, mut want) = (data.clone(), data);
                    let (mut got_iv, mut want_iv) = (iv, iv);
                    key.decrypt_cbc(&mut got_iv, &mut got);
                    portable.decrypt_cbc(&mut want_iv, &mut want);
                    assert!(got == want, "{backend} {cipher:?}, {blocks} blocks");
                    assert_eq!(got_iv, want_iv, "{backend} {cipher:?}, {blocks} blocks");
                }
            }
        }
        if tried == 0 {
            eprintln!("SKIPPED: VAES CBC decryption (CPU lacks VAES, or the override masks it)");
        }
    }
}
