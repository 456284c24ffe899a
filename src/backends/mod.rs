//! Backends: the one dispatch point.
//!
//! A [`Backend`] is chosen once, when a keyed object is built, from the
//! features the CPU has and the process allows; the object keeps key
//! material in the form that backend's kernels need, and every call matches
//! on it (one predictable branch). Record logic above never knows which
//! backend runs.
//!
//! - `portable`: the RustCrypto crates.
//! - `cpu`: feature detection, `CBC_HMAC_CPUID_OVERRIDE`, and the per-CPU
//!   kernel table with `CBC_HMAC_TUNING_CPU`.
//! - `x86_64` (the only module with `unsafe`): AES-NI key expansion and
//!   CBC (`aes`), VAES-512 CBC decryption (`vaes`), SHA-NI SHA-1/SHA-256
//!   (`sha`), SHA-1/SHA-256 for AVX2 CPUs without SHA-NI (`sha_avx2`),
//!   SHA-512 (for SHA-384 and SHA-512) on AVX2, AVX-512VL and in plain
//!   scalar code (`sha512`), and the stitched
//!   seal and fused open built from them (`stitch`).
//!
//! [`seal_mac_then_encrypt`] and [`seal_encrypt_then_mac`] pick a stitched
//! kernel when the AES key is an AES-NI one and the MAC runs on one of our
//! compressors (SHA-NI or AVX2; all four hashes for encrypt-then-MAC, the
//! three TLS ones for MAC-then-encrypt), and the portable
//! composition otherwise; the open's public prefix goes through
//! [`DecryptAbsorb`].

use core::fmt;

use crate::combination::{Cipher, MacAlgorithm};
use crate::primitives::hash::{Compress, Engine, HashFunction};
#[cfg(target_arch = "x86_64")]
use x86_64::vaes::VaesKey;

pub(crate) mod batch;
pub(crate) mod cpu;
pub(crate) mod portable;
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod x86_64;

/// An implementation of the primitives.
///
/// [`Backend::ALL`] lists them best first; [`Backend::detect`] picks the
/// best one that [`Backend::is_available`], which means the CPU has its
/// features *and* the `CBC_HMAC_CPUID_OVERRIDE` mask allows them (see
/// [`cpu_override`](crate::cpu_override) for the bits: `0x1` portable only,
/// `0x2` AES-NI, `0x4` SSSE3/AVX2, `0x8` SHA-NI, `0x10` AVX-512 + VAES).
///
/// The RustCrypto crates used by [`Backend::Portable`] (and for SHA-384 by
/// the others) pick their own implementations at run time and ignore the
/// override; build with
/// `RUSTFLAGS='--cfg aes_backend="soft" --cfg sha1_backend="soft" --cfg sha2_backend="soft"'`
/// to force them to software.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Backend {
    /// VAES with AVX-512 for CBC decryption (sixteen blocks in flight),
    /// AES-NI for CBC encryption stitched with SHA-NI SHA-1/SHA-256.
    /// Needs override bits `0x2 | 0x8 | 0x10`.
    Vaes512ShaNi,
    /// AES-NI CBC (eight-block parallel decryption) stitched with SHA-NI
    /// SHA-1/SHA-256: the MAC is computed in the gaps of the serial CBC
    /// encryption chain. Needs override bits `0x2 | 0x8`.
    AesNiShaNi,
    /// AES-NI CBC (eight-block parallel decryption) stitched with SHA-1 and
    /// SHA-256 whose message schedule runs on AVX2 vectors and rounds on
    /// BMI2 scalar code: for CPUs without SHA-NI. Needs override bits
    /// `0x2 | 0x4`.
    AesNiAvx2,
    /// AES-NI CBC with the hash compression of the `sha1`/`sha2` crates
    /// (which choose SHA-NI or AVX2 themselves). Needs override bit `0x2`.
    AesNi,
    /// The RustCrypto crates (`aes`, `cbc`, `sha1`, `sha2`), which select
    /// their own implementations at run time. Always available.
    Portable,
}

impl Backend {
    /// Every backend, best first.
    pub const ALL: [Backend; 5] = [
        Backend::Vaes512ShaNi,
        Backend::AesNiShaNi,
        Backend::AesNiAvx2,
        Backend::AesNi,
        Backend::Portable,
    ];

    /// A short, stable name (`portable`, ...), as the bench binary prints it.
    pub const fn name(self) -> &'static str {
        match self {
            Backend::Vaes512ShaNi => "vaes512-shani",
            Backend::AesNiShaNi => "aesni-shani",
            Backend::AesNiAvx2 => "aesni-avx2",
            Backend::AesNi => "aesni",
            Backend::Portable => "portable",
        }
    }

    /// The `CBC_HMAC_CPUID_OVERRIDE` bits (and CPU features) this backend
    /// needs.
    pub const fn required_features(self) -> u32 {
        match self {
            Backend::Vaes512ShaNi => cpu::AES_NI | cpu::SHA_NI | cpu::VAES512,
            Backend::AesNiShaNi => cpu::AES_NI | cpu::SHA_NI,
            Backend::AesNiAvx2 => cpu::AES_NI | cpu::AVX2,
            Backend::AesNi => cpu::AES_NI,
            Backend::Portable => 0,
        }
    }

    /// The CPU features this backend needs, for messages
    /// (`SKIPPED: aesni-shani (CPU lacks SHA-NI)`).
    pub const fn feature_names(self) -> &'static str {
        match self {
            Backend::Vaes512ShaNi => "AES-NI, SHA-NI, AVX-512F/BW/VL and VAES",
            Backend::AesNiShaNi => "AES-NI and SHA-NI",
            Backend::AesNiAvx2 => "AES-NI, AVX2 and BMI2",
            Backend::AesNi => "AES-NI",
            Backend::Portable => "nothing",
        }
    }

    /// The kernel that decrypts and hashes the bulk of a MAC-then-encrypt
    /// record when this backend opens it, on this CPU: where the fastest
    /// kernel differs by CPU model, the choice is made here from CPUID
    /// (see the table in `backends/cpu.rs`), so reports can say which ran.
    ///
    /// ```
    /// let kernel = cbc_hmac::Backend::detect().open_kernel();
    /// assert!(!kernel.is_empty());
    /// ```
    pub fn open_kernel(self) -> &'static str {
        match self {
            Backend::Vaes512ShaNi if sha384_open_pairs() => {
                "VAES-512 decryption fused with SHA-NI (SHA-384: AES-NI decryption beside the two-block SHA-512 loop)"
            }
            Backend::Vaes512ShaNi => cpu::Tuning::get().open_prefix_kernel(),
            Backend::AesNiShaNi if sha384_open_pairs() => {
                "AES-NI decryption fused with SHA-NI (SHA-384: decryption beside the two-block SHA-512 loop)"
            }
            Backend::AesNiAvx2 if sha384_open_pairs() => {
                "AES-NI decryption fused with AVX2/BMI2 SHA (SHA-384: decryption beside the two-block SHA-512 loop)"
            }
            Backend::AesNiShaNi if !cpu::Tuning::get().sha384_open_fused => {
                "AES-NI decryption fused with SHA-NI (SHA-384: decrypted, then hashed)"
            }
            Backend::AesNiAvx2 if !cpu::Tuning::get().sha384_open_fused => {
                "AES-NI decryption fused with AVX2/BMI2 SHA (SHA-384: decrypted, then hashed)"
            }
            Backend::AesNiShaNi => "AES-NI decryption fused with SHA-NI",
            Backend::AesNiAvx2 => "AES-NI decryption fused with AVX2/BMI2 SHA",
            Backend::AesNi => "AES-NI decryption, then the sha1/sha2 crates",
            Backend::Portable => "the aes/cbc crates, then the sha1/sha2 crates",
        }
    }

    /// The kernel that runs `mac`'s hash (its compression function) when
    /// this backend hashes, on this CPU and under `CBC_HMAC_CPUID_OVERRIDE`:
    /// SHA-NI has no SHA-512, so SHA-384 and SHA-512 run on a vector kernel
    /// whose best form differs by CPU model (see the table in
    /// `backends/cpu.rs`), and reports say which ran.
    ///
    /// ```
    /// use cbc_hmac::{Backend, MacAlgorithm};
    ///
    /// let kernel = Backend::Portable.hash_kernel(MacAlgorithm::HmacSha384);
    /// assert_eq!(kernel, "the sha2 crate");
    /// ```
    pub fn hash_kernel(self, mac: MacAlgorithm) -> &'static str {
        let wide = matches!(mac, MacAlgorithm::HmacSha384 | MacAlgorithm::HmacSha512);
        let crate_name = match mac {
            MacAlgorithm::HmacSha1 => "the sha1 crate",
            _ => "the sha2 crate",
        };
        match self {
            Backend::Vaes512ShaNi | Backend::AesNiShaNi | Backend::AesNiAvx2 if wide => {
                #[cfg(target_arch = "x86_64")]
                {
                    x86_64::sha512::Sha512Kernel::new(cpu::enabled()).name()
                }
                #[cfg(not(target_arch = "x86_64"))]
                {
                    crate_name
                }
            }
            Backend::Vaes512ShaNi | Backend::AesNiShaNi => {
                #[cfg(target_arch = "x86_64")]
                if let (MacAlgorithm::HmacSha1, Compressor::ShaNi(c)) = (mac, Compressor::new(self))
                {
                    return c.sha1_name();
                }
                "SHA-NI"
            }
            Backend::AesNiAvx2 => "AVX2 schedule, BMI2 rounds",
            Backend::AesNi | Backend::Portable => crate_name,
        }
    }

    /// The kernel that runs this backend's CBC decryption (the cipher
    /// alone, and the encrypt-then-MAC opens: SSH `-etm`, ESP, JOSE) on
    /// this CPU and under `CBC_HMAC_CPUID_OVERRIDE`. Where the CPU has VAES
    /// but AVX-512 is absent or masked, the AES-NI backends other than
    /// [`Backend::AesNi`] decrypt on ymm registers; [`Backend::AesNi`]
    /// stays on AES-NI alone.
    ///
    /// ```
    /// use cbc_hmac::Backend;
    ///
    /// assert_eq!(Backend::Portable.cbc_decrypt_kernel(), "the aes/cbc crates");
    /// ```
    pub fn cbc_decrypt_kernel(self) -> &'static str {
        match self {
            Backend::Vaes512ShaNi => "VAES-512, sixteen blocks at a time",
            Backend::AesNiShaNi | Backend::AesNiAvx2 => {
                #[cfg(target_arch = "x86_64")]
                if x86_64::Vaes256::allowed().is_some() {
                    return "VAES-256, sixteen blocks at a time";
                }
                "AES-NI, eight blocks at a time"
            }
            Backend::AesNi => "AES-NI, eight blocks at a time",
            Backend::Portable => "the aes/cbc crates",
        }
    }

    /// Whether this backend can run here (the CPU has its features and
    /// `CBC_HMAC_CPUID_OVERRIDE` allows them).
    pub fn is_available(self) -> bool {
        let needed = self.required_features();
        cpu::enabled() & needed == needed
    }

    /// The best available backend: what keyed objects use by default.
    pub fn detect() -> Backend {
        Self::available().next().unwrap_or(Backend::Portable)
    }

    /// Every available backend, best first.
    pub fn available() -> impl Iterator<Item = Backend> {
        Self::ALL.into_iter().filter(|b| b.is_available())
    }

    /// Looks a backend up by [`Backend::name`] (case-insensitive).
    pub fn from_name(name: &str) -> Option<Backend> {
        Self::ALL
            .into_iter()
            .find(|b| b.name().eq_ignore_ascii_case(name))
    }

    pub(crate) fn check(self) -> Result<Backend, crate::Error> {
        if self.is_available() {
            Ok(self)
        } else {
            Err(crate::Error::BackendUnavailable { backend: self })
        }
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// `x`, hidden from the optimiser (see `primitives::ct::barrier`).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) fn opaque(x: usize) -> usize {
    let mut x = x as u64;
    x86_64::pin_u64(&mut x);
    x as usize
}

/// `x`, hidden from the optimiser in a vector register (see
/// `primitives::ct::barrier16`).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) fn opaque16(x: [u8; 16]) -> [u8; 16] {
    x86_64::opaque_bytes16(x)
}

/// Expanded AES key material, in the form its backend needs.
#[derive(Clone)]
pub(crate) enum AesKey {
    Portable(portable::AesKey),
    #[cfg(target_arch = "x86_64")]
    AesNi(x86_64::aes::AesNiKey),
    #[cfg(target_arch = "x86_64")]
    Vaes512(x86_64::vaes::Vaes512Key),
    /// AES-NI, with CBC decryption on VAES ymm kernels (CPUs with VAES and
    /// no AVX-512, or AVX-512 masked off).
    #[cfg(target_arch = "x86_64")]
    Vaes256(x86_64::vaes::Vaes256Key),
}

impl AesKey {
    /// Expands `key` (length already checked) for `backend`.
    pub(crate) fn new(backend: Backend, cipher: Cipher, key: &[u8]) -> Self {
        #[cfg(target_arch = "x86_64")]
        {
            use x86_64::{AesNi, Vaes256, Vaes512, aes::AesNiKey};
            match backend {
                Backend::Vaes512ShaNi => {
                    if let Some(t) = Vaes512::detect() {
                        let k = AesNiKey::new(t.aes_ni(), cipher, key);
                        return AesKey::Vaes512(VaesKey::new(t, k));
                    }
                }
                Backend::AesNiShaNi | Backend::AesNiAvx2 => {
                    if let Some(t) = Vaes256::allowed() {
                        let k = AesNiKey::new(t.aes_ni(), cipher, key);
                        return AesKey::Vaes256(VaesKey::new(t, k));
                    }
                    if let Some(t) = AesNi::detect() {
                        return AesKey::AesNi(AesNiKey::new(t, cipher, key));
                    }
                }
                // Stays on AES-NI alone: the baseline the others are
                // compared with.
                Backend::AesNi => {
                    if let Some(t) = AesNi::detect() {
                        return AesKey::AesNi(AesNiKey::new(t, cipher, key));
                    }
                }
                Backend::Portable => {}
            }
        }
        // Only reached for the portable backend (the others were checked
        // available, so their CPU features are present).
        let _ = backend;
        AesKey::Portable(portable::AesKey::new(cipher, key))
    }

    /// CBC-encrypts in place; `iv` becomes the last ciphertext block.
    #[inline]
    pub(crate) fn encrypt_cbc(&self, iv: &mut [u8; 16], blocks: &mut [[u8; 16]]) {
        match self {
            AesKey::Portable(k) => k.encrypt_cbc(iv, blocks),
            #[cfg(target_arch = "x86_64")]
            AesKey::AesNi(k) => k.encrypt_cbc(iv, blocks),
            #[cfg(target_arch = "x86_64")]
            AesKey::Vaes512(VaesKey { key, .. }) | AesKey::Vaes256(VaesKey { key, .. }) => {
                key.encrypt_cbc(iv, blocks)
            }
        }
    }

    /// CBC-decrypts in place; `iv` becomes the last ciphertext block.
    #[inline]
    pub(crate) fn decrypt_cbc(&self, iv: &mut [u8; 16], blocks: &mut [[u8; 16]]) {
        match self {
            AesKey::Portable(k) => k.decrypt_cbc(iv, blocks),
            #[cfg(target_arch = "x86_64")]
            AesKey::AesNi(k) => k.decrypt_cbc(iv, blocks),
            #[cfg(target_arch = "x86_64")]
            AesKey::Vaes512(k) => k.decrypt_cbc(iv, blocks),
            #[cfg(target_arch = "x86_64")]
            AesKey::Vaes256(k) => k.decrypt_cbc(iv, blocks),
        }
    }

    /// Encrypts a single block.
    #[inline]
    pub(crate) fn encrypt_block(&self, block: &mut [u8; 16]) {
        match self {
            AesKey::Portable(k) => k.encrypt_block(block),
            #[cfg(target_arch = "x86_64")]
            AesKey::AesNi(k) => k.encrypt_block(block),
            #[cfg(target_arch = "x86_64")]
            AesKey::Vaes512(VaesKey { key, .. }) | AesKey::Vaes256(VaesKey { key, .. }) => {
                key.encrypt_block(block)
            }
        }
    }

    /// Encrypts independent blocks (ECB), in parallel where the backend can.
    #[inline]
    pub(crate) fn encrypt_blocks(&self, blocks: &mut [[u8; 16]]) {
        match self {
            AesKey::Portable(k) => k.encrypt_blocks(blocks),
            #[cfg(target_arch = "x86_64")]
            _ => blocks.iter_mut().for_each(|b| self.encrypt_block(b)),
        }
    }

    /// The AES-NI key inside, for the stitched kernels.
    #[cfg(target_arch = "x86_64")]
    #[inline]
    fn aes_ni(&self) -> Option<&x86_64::aes::AesNiKey> {
        match self {
            AesKey::Portable(_) => None,
            AesKey::AesNi(k) => Some(k),
            AesKey::Vaes512(VaesKey { key, .. }) | AesKey::Vaes256(VaesKey { key, .. }) => {
                Some(key)
            }
        }
    }
}

/// The compression functions a backend provides, chosen with the backend.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Compressor {
    Crates(portable::CrateCompress),
    /// SHA-1 and SHA-256 on SHA-NI; SHA-384 and SHA-512 on AVX2 where the
    /// CPU has it.
    #[cfg(target_arch = "x86_64")]
    ShaNi(x86_64::sha::ShaNiCompress),
    /// SHA-1, SHA-256, SHA-384 and SHA-512 with AVX2 message schedules.
    #[cfg(target_arch = "x86_64")]
    Avx2(x86_64::sha_avx2::Avx2Compress),
}

impl Compressor {
    pub(crate) fn new(backend: Backend) -> Self {
        #[cfg(target_arch = "x86_64")]
        {
            use x86_64::{Avx2, ShaNi, sha::ShaNiCompress, sha_avx2::Avx2Compress};
            // SHA-NI has no SHA-512: SHA-384 runs on the best SHA-512
            // kernel the override allows, whichever backend.
            let sha512 = x86_64::sha512::Sha512Kernel::new(cpu::enabled());
            match backend {
                Backend::Vaes512ShaNi | Backend::AesNiShaNi => {
                    if let Some(sha) = ShaNi::detect() {
                        // VEX encodings count as AVX code: bit 0x4.
                        let avx = match cpu::enabled() & cpu::AVX2 {
                            0 => None,
                            _ => x86_64::ShaNiAvx::detect(),
                        };
                        let vaes = match cpu::enabled() & cpu::VAES512 {
                            0 => None,
                            _ => x86_64::Vaes512::detect(),
                        };
                        return Compressor::ShaNi(ShaNiCompress::new(sha, avx, vaes, sha512));
                    }
                }
                Backend::AesNiAvx2 => {
                    if let Some(avx2) = Avx2::detect() {
                        return Compressor::Avx2(Avx2Compress { avx2, sha512 });
                    }
                }
                Backend::AesNi | Backend::Portable => {}
            }
        }
        let _ = backend;
        Compressor::Crates(portable::CrateCompress)
    }
}

/// Runs `$body` with `$c` bound to the concrete compressor, so generic code
/// is monomorphised per kernel instead of matching per block.
macro_rules! with_compressor {
    ($compressor:expr, |$c:ident| $body:expr) => {
        match $compressor {
            $crate::backends::Compressor::Crates(ref $c) => $body,
            #[cfg(target_arch = "x86_64")]
            $crate::backends::Compressor::ShaNi(ref $c) => $body,
            #[cfg(target_arch = "x86_64")]
            $crate::backends::Compressor::Avx2(ref $c) => $body,
        }
    };
}
pub(crate) use with_compressor;

/// CBC decryption and hashing in one pass: the public prefix of a
/// MAC-then-encrypt open. Implemented by each compressor; the default runs
/// the two loops one after the other, and a backend overrides it with a
/// fused kernel where that is faster.
pub(crate) trait DecryptAbsorb<H: HashFunction>: Compress<H> + Sized {
    /// CBC-decrypts `region` (whole blocks) in place, chaining from `iv`,
    /// and absorbs `header || region[..hash_len]` into `engine`
    /// (`hash_len <= region.len()`; `engine` holds no buffered bytes).
    fn decrypt_absorb(
        &self,
        aes: &AesKey,
        iv: &[u8; 16],
        region: &mut [u8],
        engine: &mut Engine<H>,
        header: &[u8; 13],
        hash_len: usize,
    ) {
        decrypt_then_absorb(self, aes, iv, region, engine, header, hash_len);
    }
}

/// Whether the SHA-384 open runs on the SHA-512 pair loop with the
/// decryption beside (see `x86_64::open_pairs`), for reports.
fn sha384_open_pairs() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        x86_64::sha512::Sha512Kernel::new(cpu::enabled())
            .pair_open()
            .is_some()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// [`DecryptAbsorb::decrypt_absorb`] unfused: the whole region decrypted,
/// then hashed (public lengths only).
pub(crate) fn decrypt_then_absorb<H: HashFunction, C: Compress<H>>(
    c: &C,
    aes: &AesKey,
    iv: &[u8; 16],
    region: &mut [u8],
    engine: &mut Engine<H>,
    header: &[u8; 13],
    hash_len: usize,
) {
    let mut chain = *iv;
    let (blocks, _) = region.as_chunks_mut::<16>();
    aes.decrypt_cbc(&mut chain, blocks);
    engine.update(c, header);
    engine.update(c, &region[..hash_len]);
}

impl<H: HashFunction> DecryptAbsorb<H> for portable::CrateCompress where
    portable::CrateCompress: Compress<H>
{
}

/// Fills `body[content_len..]` with TLS CBC padding: every byte, the length
/// byte included, equals the number of padding bytes before the length byte.
#[inline]
pub(crate) fn pad(body: &mut [u8], content_len: usize) {
    let value = (body.len() - content_len - 1) as u8;
    body[content_len..].fill(value);
}

/// MAC-then-encrypt seal of one record body in place.
///
/// `body` (whole blocks) holds the plaintext in `[..plaintext_len]`; on
/// return it holds `CBC(plaintext || HMAC(header || plaintext) || padding)`
/// and `iv` the last ciphertext block. Fused kernels replace the
/// composition below.
#[inline]
pub(crate) fn seal_mac_then_encrypt(
    aes: &AesKey,
    mac: &crate::HmacKey,
    header: &[u8; 13],
    iv: &mut [u8; 16],
    body: &mut [u8],
    plaintext_len: usize,
) {
    #[cfg(target_arch = "x86_64")]
    if let Some(k) = aes.aes_ni() {
        use crate::primitives::hmac::AnyStates;
        use x86_64::sha::{Sha1Ni, Sha1NiVl, Sha256Ni};
        use x86_64::sha_avx2::{Sha1Avx2, Sha256Avx2};
        use x86_64::stitch;
        use x86_64::stitch::seal_mac_then_encrypt as stitched;
        let (h, b, p) = (header, &mut *body, plaintext_len);
        match (mac.compressor(), mac.states()) {
            (Compressor::ShaNi(c), AnyStates::Sha1(s)) => {
                return match (c.sha1_vl, c.avx) {
                    (Some(t), _) => stitched::<Sha1NiVl>(k, t, s, h, iv, b, p),
                    (None, Some(t)) => stitched::<Sha1Ni<x86_64::ShaNiAvx>>(k, t, s, h, iv, b, p),
                    (None, None) => stitched::<Sha1Ni>(k, c.sha, s, h, iv, b, p),
                };
            }
            (Compressor::ShaNi(c), AnyStates::Sha256(s)) => {
                return match c.avx {
                    Some(t) => stitched::<Sha256Ni<x86_64::ShaNiAvx>>(k, t, s, h, iv, b, p),
                    None => stitched::<Sha256Ni>(k, c.sha, s, h, iv, b, p),
                };
            }
            (Compressor::ShaNi(c), AnyStates::Sha384(s)) => {
                return stitch::seal_mac_then_encrypt_sha384(k, c.sha, c.sha512, s, h, iv, b, p);
            }
            (Compressor::Avx2(c), AnyStates::Sha1(s)) => {
                return stitched::<Sha1Avx2>(k, c.avx2, s, h, iv, b, p);
            }
            (Compressor::Avx2(c), AnyStates::Sha256(s)) => {
                return stitched::<Sha256Avx2>(k, c.avx2, s, h, iv, b, p);
            }
            (Compressor::Avx2(c), AnyStates::Sha384(s)) => {
                return stitch::seal_mac_then_encrypt_sha384(k, c.avx2, c.sha512, s, h, iv, b, p);
            }
            // No TLS combination uses HMAC-SHA512, and MAC-then-encrypt is
            // TLS's alone: the composition below serves it.
            (_, AnyStates::Sha512(_)) | (Compressor::Crates(_), _) => {}
        }
    }
    let m = mac.output_len();
    let (plaintext, rest) = body.split_at_mut(plaintext_len);
    mac.mac_parts_into(&[header, plaintext], rest);
    pad(body, plaintext_len + m);
    let (blocks, _) = body.as_chunks_mut::<16>();
    aes.encrypt_cbc(iv, blocks);
}

/// One encrypt-then-MAC job, the shape a format's seal takes (TLS's
/// record, SSH's and ESP's packets, JWE's message): CBC-encrypt
/// `authenticated[body_start..]` (whole blocks, padded by the caller) from
/// `iv`, then write `HMAC(head || prefix || authenticated || suffix)` (the
/// full output) to `tag`. `head` is a whole number of hash blocks (JWE's
/// AAD, as far as it fills blocks) or nothing; `prefix` is any short
/// header (TLS's 13 bytes, SSH's sequence number, JWE's AAD tail and IV)
/// or nothing; `suffix` (at most 8 bytes: the padded tail then still fits
/// two hash blocks) is ESP's high sequence half or JWE's AAD bit length,
/// or nothing. On return `iv` holds the last ciphertext block.
///
/// With `mac_plaintext` (SSH without EtM: encrypt-and-MAC) the MAC covers
/// `prefix || authenticated` before it is encrypted; `head` and `suffix`
/// are then empty and `body_start` is 0.
pub(crate) struct EtmJob<'a> {
    pub(crate) head: &'a [u8],
    pub(crate) prefix: &'a [u8],
    pub(crate) iv: &'a mut [u8; 16],
    pub(crate) authenticated: &'a mut [u8],
    pub(crate) body_start: usize,
    pub(crate) suffix: &'a [u8],
    pub(crate) tag: &'a mut [u8],
    pub(crate) mac_plaintext: bool,
}

/// Encrypt-then-MAC seal of one record in place.
///
/// `fragment` is `[explicit IV room (iv_len bytes)][plaintext][padding][MAC
/// room]`, sized exactly; the IV bytes are already written. On return the
/// body is encrypted and the MAC over `header || IV || ciphertext` fills the
/// last `output_len` bytes.
#[inline]
pub(crate) fn seal_encrypt_then_mac(
    aes: &AesKey,
    mac: &crate::HmacKey,
    header: &[u8; 13],
    iv: &mut [u8; 16],
    fragment: &mut [u8],
    iv_len: usize,
    plaintext_len: usize,
) {
    let end = fragment.len() - mac.output_len();
    pad(&mut fragment[iv_len..end], plaintext_len);
    let (authenticated, tag) = fragment.split_at_mut(end);
    let job = EtmJob {
        head: &[],
        prefix: header,
        iv,
        authenticated,
        body_start: iv_len,
        suffix: &[],
        tag,
        mac_plaintext: false,
    };
    encrypt_then_mac(aes, mac, job);
}

/// Runs one [`EtmJob`]: on a stitched kernel when the AES key is an
/// AES-NI one and the MAC runs on one of our compressors, and as the
/// composition of the two otherwise.
#[inline]
pub(crate) fn encrypt_then_mac(aes: &AesKey, mac: &crate::HmacKey, job: EtmJob<'_>) {
    debug_assert!(job.suffix.len() <= 8 && job.tag.len() >= mac.output_len());
    debug_assert!(job.head.len().is_multiple_of(mac.algorithm().block_len()));
    #[cfg(target_arch = "x86_64")]
    if let Some(k) = aes.aes_ni() {
        use crate::primitives::hmac::AnyStates;
        use x86_64::sha::{Sha1Ni, Sha1NiVl, Sha256Ni};
        use x86_64::sha_avx2::{Sha1Avx2, Sha256Avx2};
        use x86_64::stitch;
        use x86_64::stitch::seal_encrypt_then_mac as stitched;
        match (mac.compressor(), mac.states()) {
            (Compressor::ShaNi(c), AnyStates::Sha1(s)) => {
                return match (c.sha1_vl, c.avx) {
                    (Some(t), _) => stitched::<Sha1NiVl>(k, t, s, job),
                    (None, Some(t)) => stitched::<Sha1Ni<x86_64::ShaNiAvx>>(k, t, s, job),
                    (None, None) => stitched::<Sha1Ni>(k, c.sha, s, job),
                };
            }
            (Compressor::ShaNi(c), AnyStates::Sha256(s)) => {
                return match c.avx {
                    Some(t) => stitched::<Sha256Ni<x86_64::ShaNiAvx>>(k, t, s, job),
                    None => stitched::<Sha256Ni>(k, c.sha, s, job),
                };
            }
            (Compressor::ShaNi(c), AnyStates::Sha384(s)) => {
                return stitch::seal_encrypt_then_mac_sha384(k, c.sha, c.sha512, s, job);
            }
            (Compressor::Avx2(c), AnyStates::Sha1(s)) => {
                return stitched::<Sha1Avx2>(k, c.avx2, s, job);
            }
            (Compressor::Avx2(c), AnyStates::Sha256(s)) => {
                return stitched::<Sha256Avx2>(k, c.avx2, s, job);
            }
            (Compressor::Avx2(c), AnyStates::Sha384(s)) => {
                return stitch::seal_encrypt_then_mac_sha384(k, c.avx2, c.sha512, s, job);
            }
            (Compressor::ShaNi(c), AnyStates::Sha512(s)) => {
                return stitch::seal_encrypt_then_mac_sha512(k, c.sha, c.sha512, s, job);
            }
            (Compressor::Avx2(c), AnyStates::Sha512(s)) => {
                return stitch::seal_encrypt_then_mac_sha512(k, c.avx2, c.sha512, s, job);
            }
            (Compressor::Crates(_), _) => {}
        }
    }
    let EtmJob {
        head,
        prefix,
        iv,
        authenticated,
        body_start,
        suffix,
        tag,
        mac_plaintext,
    } = job;
    if mac_plaintext {
        mac.mac_parts_into(&[prefix, authenticated], tag);
    }
    let (blocks, _) = authenticated[body_start..].as_chunks_mut::<16>();
    aes.encrypt_cbc(iv, blocks);
    if !mac_plaintext {
        mac.mac_parts_into(&[head, prefix, authenticated, suffix], tag);
    }
}
