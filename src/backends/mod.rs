//! Backends: the one dispatch point.
//!
//! A [`Backend`] is chosen once, when a keyed object is built, from the
//! features the CPU has and the process allows; the object keeps key
//! material in the form that backend's kernels need, and every call matches
//! on it (one predictable branch). Record logic above never knows which
//! backend runs.

use core::fmt;

use crate::combination::Cipher;

pub(crate) mod portable;

/// An implementation of the primitives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Backend {
    /// The RustCrypto crates (`aes`, `cbc`, `sha1`, `sha2`), which select
    /// their own implementations at run time.
    Portable,
}

impl Backend {
    /// Every backend, best first.
    pub const ALL: [Backend; 1] = [Backend::Portable];

    /// A short, stable name (`portable`, ...), as the bench binary prints it.
    pub const fn name(self) -> &'static str {
        match self {
            Backend::Portable => "portable",
        }
    }

    /// Whether this backend can run here (the CPU has its features and
    /// `CBC_HMAC_CPUID_OVERRIDE` allows them).
    pub fn is_available(self) -> bool {
        match self {
            Backend::Portable => true,
        }
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

/// Expanded AES key material, in the form its backend needs.
#[derive(Clone)]
pub(crate) enum AesKey {
    Portable(portable::AesKey),
}

impl AesKey {
    /// Expands `key` (length already checked) for `backend`.
    pub(crate) fn new(backend: Backend, cipher: Cipher, key: &[u8]) -> Self {
        match backend {
            Backend::Portable => AesKey::Portable(portable::AesKey::new(cipher, key)),
        }
    }

    /// CBC-encrypts in place; `iv` becomes the last ciphertext block.
    #[inline]
    pub(crate) fn encrypt_cbc(&self, iv: &mut [u8; 16], blocks: &mut [[u8; 16]]) {
        match self {
            AesKey::Portable(k) => k.encrypt_cbc(iv, blocks),
        }
    }

    /// CBC-decrypts in place; `iv` becomes the last ciphertext block.
    #[inline]
    pub(crate) fn decrypt_cbc(&self, iv: &mut [u8; 16], blocks: &mut [[u8; 16]]) {
        match self {
            AesKey::Portable(k) => k.decrypt_cbc(iv, blocks),
        }
    }

    /// Encrypts a single block.
    #[inline]
    pub(crate) fn encrypt_block(&self, block: &mut [u8; 16]) {
        match self {
            AesKey::Portable(k) => k.encrypt_block(block),
        }
    }
}

/// The compression functions a backend provides, chosen with the backend.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Compressor {
    Crates(portable::CrateCompress),
}

impl Compressor {
    pub(crate) fn new(backend: Backend) -> Self {
        match backend {
            Backend::Portable => Compressor::Crates(portable::CrateCompress),
        }
    }
}

/// Runs `$body` with `$c` bound to the concrete compressor, so generic code
/// is monomorphised per kernel instead of matching per block.
macro_rules! with_compressor {
    ($compressor:expr, |$c:ident| $body:expr) => {
        match $compressor {
            $crate::backends::Compressor::Crates(ref $c) => $body,
        }
    };
}
pub(crate) use with_compressor;

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
    let m = mac.output_len();
    let (plaintext, rest) = body.split_at_mut(plaintext_len);
    mac.mac_parts_into(&[header, plaintext], rest);
    pad(body, plaintext_len + m);
    let (blocks, _) = body.as_chunks_mut::<16>();
    aes.encrypt_cbc(iv, blocks);
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
    let body = &mut fragment[iv_len..end];
    pad(body, plaintext_len);
    let (blocks, _) = body.as_chunks_mut::<16>();
    aes.encrypt_cbc(iv, blocks);
    let (authenticated, tag) = fragment.split_at_mut(end);
    mac.mac_parts_into(&[header, authenticated], tag);
}
