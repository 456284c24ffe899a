//! The TLS pseudo-random functions: `P_hash` (RFC 5246 section 5) and the
//! TLS 1.0/1.1 PRF, `P_MD5` xor `P_SHA1` over the two halves of the secret
//! (RFC 2246 section 5, RFC 4346 section 5).
//!
//! Each `P_hash` call keys its HMAC once ([`HmacKey`] precomputes the inner
//! and outer states) and then runs two HMACs per output block on copies of
//! those states. Nothing allocates; the chaining value `A(i)` lives in a
//! fixed-size array on the stack and is wiped when the call returns.

use md5::Digest;
use zeroize::Zeroize;

use crate::backends::Backend;
use crate::combination::{Combination, MacAlgorithm};
use crate::error::Error;
use crate::primitives::hmac::HmacKey;
use crate::record::ProtocolVersion;

/// Largest HMAC output the PRFs use (SHA-384).
const MAX_HASH_LEN: usize = 48;

/// A TLS pseudo-random function.
///
/// ```
/// use cbc_hmac::key_schedule::Prf;
///
/// // The TLS 1.2 P_SHA256 vector from the IETF TLS list (first 16 bytes).
/// let secret = [0x9b, 0xbe, 0x43, 0x6b, 0xa9, 0x40, 0xf0, 0x17,
///               0xb1, 0x76, 0x52, 0x84, 0x9a, 0x71, 0xdb, 0x35];
/// let seed = [0xa0, 0xba, 0x9f, 0x93, 0x6c, 0xda, 0x31, 0x18,
///             0x27, 0xa6, 0xf7, 0x96, 0xff, 0xd5, 0x19, 0x8c];
/// let mut out = [0u8; 16];
/// Prf::Sha256.derive(&secret, b"test label", &[&seed], &mut out)?;
/// assert_eq!(out, [0xe3, 0xf2, 0x29, 0xba, 0x72, 0x7b, 0xe1, 0x7b,
///                  0x8d, 0x12, 0x26, 0x20, 0x55, 0x7c, 0xd4, 0x53]);
/// # Ok::<(), cbc_hmac::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Prf {
    /// The PRF of TLS 1.0 and 1.1 (and DTLS 1.0): `P_MD5(S1, label + seed)
    /// xor P_SHA1(S2, label + seed)`, where `S1` and `S2` are the first and
    /// last halves of the secret (sharing a byte if its length is odd).
    Tls10,
    /// The TLS 1.2 (and DTLS 1.2) PRF of every suite here except the
    /// SHA-384 ones: `P_SHA256`.
    Sha256,
    /// The TLS 1.2 PRF of the SHA-384 suites (RFC 5289): `P_SHA384`.
    Sha384,
}

impl Prf {
    /// The PRF a connection of `version` with `combination` uses: the
    /// TLS 1.0 PRF for TLS 1.0, TLS 1.1 and DTLS 1.0; for TLS 1.2 and DTLS
    /// 1.2, `P_SHA384` for the SHA-384 combination and `P_SHA256` for every
    /// other.
    pub const fn for_connection(combination: Combination, version: ProtocolVersion) -> Prf {
        match version {
            ProtocolVersion::Tls10 | ProtocolVersion::Tls11 | ProtocolVersion::Dtls10 => Prf::Tls10,
            ProtocolVersion::Tls12 | ProtocolVersion::Dtls12 => match combination.mac() {
                MacAlgorithm::HmacSha384 => Prf::Sha384,
                _ => Prf::Sha256,
            },
        }
    }

    /// The length of the handshake hash that goes with this PRF (in the
    /// Finished messages and the extended master secret): 36 bytes
    /// (`MD5 || SHA-1`) for the TLS 1.0 PRF, else the hash's output.
    pub const fn handshake_hash_len(self) -> usize {
        match self {
            Prf::Tls10 => 36,
            Prf::Sha256 => 32,
            Prf::Sha384 => 48,
        }
    }

    /// Fills `out` with `PRF(secret, label, seed)`, where the seed is the
    /// concatenation of the `seed` parts. Runs on the best available
    /// backend.
    pub fn derive(
        self,
        secret: &[u8],
        label: &[u8],
        seed: &[&[u8]],
        out: &mut [u8],
    ) -> Result<(), Error> {
        self.derive_with_backend(secret, label, seed, out, Backend::detect())
    }

    /// Like [`Prf::derive`] with the HMACs on a chosen backend; fails with
    /// [`Error::BackendUnavailable`] if it cannot run here.
    pub fn derive_with_backend(
        self,
        secret: &[u8],
        label: &[u8],
        seed: &[&[u8]],
        out: &mut [u8],
        backend: Backend,
    ) -> Result<(), Error> {
        match self {
            Prf::Sha256 => {
                let key = HmacKey::with_backend(MacAlgorithm::HmacSha256, secret, backend)?;
                p_hash(&key, label, seed, out, Combine::Write);
            }
            Prf::Sha384 => {
                let key = HmacKey::with_backend(MacAlgorithm::HmacSha384, secret, backend)?;
                p_hash(&key, label, seed, out, Combine::Write);
            }
            Prf::Tls10 => {
                // RFC 2246 section 5: L_S1 = L_S2 = ceil(L_S / 2).
                let half = secret.len().div_ceil(2);
                let s1 = &secret[..half];
                let s2 = &secret[secret.len() - half..];
                let sha1 = HmacKey::with_backend(MacAlgorithm::HmacSha1, s2, backend)?;
                p_md5(s1, label, seed, out);
                p_hash(&sha1, label, seed, out, Combine::Xor);
            }
        }
        Ok(())
    }
}

/// Whether a `P_hash` writes its output or xors it into `out`.
#[derive(Clone, Copy)]
enum Combine {
    Write,
    Xor,
}

impl Combine {
    #[inline]
    fn apply(self, out: &mut [u8], block: &[u8]) {
        match self {
            Combine::Write => out.copy_from_slice(&block[..out.len()]),
            Combine::Xor => {
                for (o, b) in out.iter_mut().zip(block) {
                    *o ^= b;
                }
            }
        }
    }
}

/// `P_hash(secret, label + seed)` into `out`, with HMAC keyed once.
///
/// `A(0) = label + seed`, `A(i) = HMAC(A(i-1))`, output block `i` is
/// `HMAC(A(i) + label + seed)`.
fn p_hash(key: &HmacKey, label: &[u8], seed: &[&[u8]], out: &mut [u8], combine: Combine) {
    let n = key.output_len();
    let mut a = [0u8; MAX_HASH_LEN];
    let mut block = [0u8; MAX_HASH_LEN];

    let mut ctx = key.context();
    ctx.update(label);
    for part in seed {
        ctx.update(part);
    }
    a[..n].copy_from_slice(ctx.finish().as_bytes());

    let mut chunks = out.chunks_mut(n).peekable();
    while let Some(chunk) = chunks.next() {
        let mut ctx = key.context();
        ctx.update(&a[..n]);
        ctx.update(label);
        for part in seed {
            ctx.update(part);
        }
        block[..n].copy_from_slice(ctx.finish().as_bytes());
        combine.apply(chunk, &block[..n]);
        if chunks.peek().is_some() {
            let next = key.sign(&a[..n]);
            a[..n].copy_from_slice(next.as_bytes());
        }
    }
    a.zeroize();
    block.zeroize();
}

/// HMAC-MD5 (RFC 2104) with the inner and outer states absorbed once, for
/// the MD5 half of the TLS 1.0 PRF. The `md-5` states wipe themselves on
/// drop.
struct HmacMd5 {
    inner: md5::Md5,
    outer: md5::Md5,
}

impl HmacMd5 {
    const BLOCK_LEN: usize = 64;

    fn new(key: &[u8]) -> Self {
        let mut k = [0u8; Self::BLOCK_LEN];
        if key.len() > Self::BLOCK_LEN {
            let mut h = md5::Md5::new();
            h.update(key);
            let mut digest = [0u8; 16];
            h.finalize_into((&mut digest).into());
            k[..16].copy_from_slice(&digest);
            digest.zeroize();
        } else {
            k[..key.len()].copy_from_slice(key);
        }
        let mut pad = [0u8; Self::BLOCK_LEN];
        for (p, b) in pad.iter_mut().zip(&k) {
            *p = b ^ 0x36;
        }
        let mut inner = md5::Md5::new();
        inner.update(pad);
        for (p, b) in pad.iter_mut().zip(&k) {
            *p = b ^ 0x5c;
        }
        let mut outer = md5::Md5::new();
        outer.update(pad);
        k.zeroize();
        pad.zeroize();
        HmacMd5 { inner, outer }
    }

    /// The HMAC of the concatenation of `parts` into `out`.
    fn mac(&self, parts: &[&[u8]], seed: &[&[u8]], out: &mut [u8; 16]) {
        let mut h = self.inner.clone();
        for part in parts.iter().chain(seed) {
            h.update(part);
        }
        h.finalize_into(out.into());
        let mut h = self.outer.clone();
        h.update(&out[..]);
        h.finalize_into(out.into());
    }
}

/// `P_MD5(secret, label + seed)` written to `out`.
fn p_md5(secret: &[u8], label: &[u8], seed: &[&[u8]], out: &mut [u8]) {
    let key = HmacMd5::new(secret);
    let mut a = [0u8; 16];
    let mut block = [0u8; 16];
    key.mac(&[label], seed, &mut a);
    let mut chunks = out.chunks_mut(16).peekable();
    while let Some(chunk) = chunks.next() {
        key.mac(&[&a, label], seed, &mut block);
        Combine::Write.apply(chunk, &block);
        if chunks.peek().is_some() {
            key.mac(&[&a], &[], &mut block);
            a = block;
        }
    }
    a.zeroize();
    block.zeroize();
}
