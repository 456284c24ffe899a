//! VAES with AVX-512: CBC decryption sixteen blocks at a time, four per
//! zmm register. (CBC encryption is one serial chain, so it stays on the
//! AES-NI kernel.)

use core::arch::x86_64::*;

use super::aes::{AesNiKey, Schedule, load_keys};
use super::{Vaes512, load, store};

/// An AES-NI key whose CBC decryption runs on the VAES-512 kernel.
#[derive(Clone)]
pub(crate) struct Vaes512Key {
    pub(crate) key: AesNiKey,
    token: Vaes512,
}

impl Vaes512Key {
    pub(crate) fn new(token: Vaes512, key: AesNiKey) -> Self {
        Vaes512Key { key, token }
    }

    /// The proof of VAES-512 the key was built with.
    pub(crate) fn token(&self) -> Vaes512 {
        self.token
    }

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
