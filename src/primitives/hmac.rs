//! HMAC (RFC 2104) with precomputed inner and outer states.
//!
//! [`HmacKey::new`] compresses `key ^ ipad` and `key ^ opad` once; every MAC
//! after that starts from copies of those two states on the stack, so a MAC
//! costs the message's own compressions plus one for the outer hash, and no
//! call allocates.

use core::fmt;

use subtle::ConstantTimeEq;
use zeroize::Zeroize;

use super::hash::{Compress, Engine, HashFunction, Sha1, Sha256, Sha384, Sha512};
use crate::backends::{Backend, Compressor, with_compressor};
use crate::combination::MacAlgorithm;
use crate::error::Error;

/// Largest tag: HMAC-SHA512's 64 bytes.
pub(crate) const MAX_TAG_LEN: usize = 64;

/// Largest tag a TLS record carries: HMAC-SHA384's 48 bytes (no TLS CBC
/// suite uses HMAC-SHA512). The record layer sizes its buffers and its
/// constant-time MAC window by this, not by [`MAX_TAG_LEN`].
pub(crate) const MAX_TLS_TAG_LEN: usize = 48;

/// The chaining states after absorbing `key ^ ipad` and `key ^ opad`.
#[derive(Clone)]
pub(crate) struct HmacStates<H: HashFunction> {
    pub(crate) inner: H::State,
    pub(crate) outer: H::State,
}

impl<H: HashFunction> HmacStates<H> {
    pub(crate) fn new<C: Compress<H>>(c: &C, key: &[u8]) -> Self {
        // Keys longer than a block are hashed first (RFC 2104 section 2).
        let mut k = H::ZERO_BLOCK;
        if key.len() > H::BLOCK_LEN {
            let mut e = Engine::<H>::new();
            e.update(c, key);
            let digest = e.finish(c);
            H::write_output(&digest, &mut k.as_mut()[..H::OUTPUT_LEN]);
        } else {
            k.as_mut()[..key.len()].copy_from_slice(key);
        }
        let mut pad = k;
        for b in pad.as_mut() {
            *b ^= 0x36;
        }
        let mut inner = H::INITIAL_STATE;
        c.compress(&mut inner, core::slice::from_ref(&pad));
        for (p, b) in pad.as_mut().iter_mut().zip(k.as_ref()) {
            *p = b ^ 0x5c;
        }
        let mut outer = H::INITIAL_STATE;
        c.compress(&mut outer, core::slice::from_ref(&pad));
        k.as_mut().zeroize();
        pad.as_mut().zeroize();
        HmacStates { inner, outer }
    }

    /// A context positioned after the inner key block.
    #[inline]
    pub(crate) fn inner_engine(&self) -> Engine<H> {
        Engine::resume(self.inner, H::BLOCK_LEN as u64)
    }

    /// The outer hash over an inner digest state, written to `out`
    /// (`out.len() <= OUTPUT_LEN`).
    #[inline]
    pub(crate) fn finish_outer<C: Compress<H>>(&self, c: &C, inner: &H::State, out: &mut [u8]) {
        let mut digest = [0u8; MAX_TAG_LEN];
        H::write_output(inner, &mut digest[..H::OUTPUT_LEN]);
        let state = Engine::resume(self.outer, H::BLOCK_LEN as u64)
            .finish_with(c, &digest[..H::OUTPUT_LEN]);
        H::write_output(&state, out);
    }

    /// HMAC over the concatenation of `parts`.
    #[inline]
    pub(crate) fn mac_parts<C: Compress<H>>(&self, c: &C, parts: &[&[u8]], out: &mut [u8]) {
        let inner = match parts {
            [message] => self.inner_engine().finish_with(c, message),
            _ => {
                let mut e = self.inner_engine();
                for part in parts {
                    e.update(c, part);
                }
                e.finish(c)
            }
        };
        self.finish_outer(c, &inner, out);
    }
}

impl<H: HashFunction> Drop for HmacStates<H> {
    fn drop(&mut self) {
        self.inner.zeroize();
        self.outer.zeroize();
    }
}

/// The precomputed states of one of the four hash functions.
#[derive(Clone)]
pub(crate) enum AnyStates {
    Sha1(HmacStates<Sha1>),
    Sha256(HmacStates<Sha256>),
    Sha384(HmacStates<Sha384>),
    Sha512(HmacStates<Sha512>),
}

/// A MAC tag: up to 64 bytes, compared in constant time.
///
/// `PartialEq` is constant-time in the tag bytes.
#[derive(Clone, Copy)]
pub struct Tag {
    bytes: [u8; MAX_TAG_LEN],
    len: u8,
}

impl Tag {
    /// The tag bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len as usize]
    }

    /// Tag length in bytes.
    #[allow(clippy::len_without_is_empty)] // a tag is never empty
    pub fn len(&self) -> usize {
        self.len as usize
    }
}

impl AsRef<[u8]> for Tag {
    fn as_ref(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl PartialEq for Tag {
    fn eq(&self, other: &Self) -> bool {
        self.as_bytes().ct_eq(other.as_bytes()).into()
    }
}

impl Eq for Tag {}

impl fmt::Debug for Tag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Tag(")?;
        for b in self.as_bytes() {
            write!(f, "{b:02x}")?;
        }
        f.write_str(")")
    }
}

/// An HMAC key with its inner and outer states precomputed.
///
/// ```
/// use cbc_hmac::{HmacKey, MacAlgorithm};
///
/// let key = HmacKey::new(MacAlgorithm::HmacSha256, b"key")?;
/// let tag = key.sign(b"The quick brown fox jumps over the lazy dog");
/// assert_eq!(
///     tag.as_bytes()[..4],
///     [0xf7, 0xbc, 0x83, 0xf4],
/// );
/// key.verify(b"The quick brown fox jumps over the lazy dog", tag.as_bytes())?;
///
/// // Incremental, on the stack:
/// let mut ctx = key.context();
/// ctx.update(b"The quick brown fox ");
/// ctx.update(b"jumps over the lazy dog");
/// assert_eq!(ctx.finish(), tag);
/// # Ok::<(), cbc_hmac::Error>(())
/// ```
#[derive(Clone)]
pub struct HmacKey {
    states: AnyStates,
    compressor: Compressor,
    backend: Backend,
}

impl HmacKey {
    /// Precomputes the states for `key` (any length, RFC 2104) on the best
    /// available backend.
    pub fn new(algorithm: MacAlgorithm, key: &[u8]) -> Result<Self, Error> {
        Self::with_backend(algorithm, key, Backend::detect())
    }

    /// Like [`HmacKey::new`] on a chosen backend; fails with
    /// [`Error::BackendUnavailable`] if it cannot run here.
    pub fn with_backend(
        algorithm: MacAlgorithm,
        key: &[u8],
        backend: Backend,
    ) -> Result<Self, Error> {
        let backend = backend.check()?;
        let compressor = Compressor::new(backend);
        let states = with_compressor!(compressor, |c| match algorithm {
            MacAlgorithm::HmacSha1 => AnyStates::Sha1(HmacStates::new(c, key)),
            MacAlgorithm::HmacSha256 => AnyStates::Sha256(HmacStates::new(c, key)),
            MacAlgorithm::HmacSha384 => AnyStates::Sha384(HmacStates::new(c, key)),
            MacAlgorithm::HmacSha512 => AnyStates::Sha512(HmacStates::new(c, key)),
        });
        Ok(HmacKey {
            states,
            compressor,
            backend,
        })
    }

    /// The algorithm.
    pub fn algorithm(&self) -> MacAlgorithm {
        match self.states {
            AnyStates::Sha1(_) => MacAlgorithm::HmacSha1,
            AnyStates::Sha256(_) => MacAlgorithm::HmacSha256,
            AnyStates::Sha384(_) => MacAlgorithm::HmacSha384,
            AnyStates::Sha512(_) => MacAlgorithm::HmacSha512,
        }
    }

    /// The backend this key runs on.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// Tag length in bytes.
    pub fn output_len(&self) -> usize {
        self.algorithm().output_len()
    }

    pub(crate) fn states(&self) -> &AnyStates {
        &self.states
    }

    pub(crate) fn compressor(&self) -> &Compressor {
        &self.compressor
    }

    /// The HMAC of the concatenation of `parts` into `out[..output_len]`.
    /// `out` has been checked to be long enough.
    pub(crate) fn mac_parts_into(&self, parts: &[&[u8]], out: &mut [u8]) {
        let out = &mut out[..self.output_len()];
        with_compressor!(self.compressor, |c| match &self.states {
            AnyStates::Sha1(s) => s.mac_parts(c, parts, out),
            AnyStates::Sha256(s) => s.mac_parts(c, parts, out),
            AnyStates::Sha384(s) => s.mac_parts(c, parts, out),
            AnyStates::Sha512(s) => s.mac_parts(c, parts, out),
        })
    }

    /// The tag of `message`.
    pub fn sign(&self, message: &[u8]) -> Tag {
        let mut tag = Tag {
            bytes: [0; MAX_TAG_LEN],
            len: self.output_len() as u8,
        };
        self.mac_parts_into(&[message], &mut tag.bytes);
        tag
    }

    /// Writes the tag of `message` to the start of `out` and returns its
    /// length; fails if `out` is shorter than [`HmacKey::output_len`].
    pub fn mac(&self, message: &[u8], out: &mut [u8]) -> Result<usize, Error> {
        let n = self.output_len();
        if out.len() < n {
            return Err(Error::BufferTooSmall {
                needed: n,
                actual: out.len(),
            });
        }
        self.mac_parts_into(&[message], out);
        Ok(n)
    }

    /// Checks `tag` against the tag of `message` in constant time.
    ///
    /// The tag must have the full length ([`Error::InvalidTagLength`]
    /// otherwise); a mismatch is [`Error::BadMac`].
    pub fn verify(&self, message: &[u8], tag: &[u8]) -> Result<(), Error> {
        let expected = self.sign(message);
        if tag.len() != expected.len() {
            return Err(Error::InvalidTagLength {
                expected: expected.len(),
                actual: tag.len(),
            });
        }
        if bool::from(expected.as_bytes().ct_eq(tag)) {
            Ok(())
        } else {
            Err(Error::BadMac)
        }
    }

    /// The shortest tag [`HmacKey::verify_truncated`] accepts: half the
    /// output and at least 10 bytes (80 bits), as RFC 2104 section 5
    /// recommends. 10 bytes for HMAC-SHA1 (HMAC-SHA1-96 sends 12), 16 for
    /// HMAC-SHA256, 24 for HMAC-SHA384, 32 for HMAC-SHA512.
    pub fn min_truncated_len(&self) -> usize {
        (self.output_len() / 2).max(10)
    }

    /// Checks `tag` against the leftmost `tag.len()` bytes of the tag of
    /// `message`, in constant time (RFC 2104 section 5; the truncated MACs
    /// of ESP, RFC 2404 and RFC 4868, and of JWE, RFC 7518 section 5.2).
    ///
    /// The length is public: shorter than [`HmacKey::min_truncated_len`]
    /// is [`Error::TagTooShort`], longer than the output
    /// [`Error::InvalidTagLength`]; a mismatch is [`Error::BadMac`].
    ///
    /// ```
    /// use cbc_hmac::{Error, HmacKey, MacAlgorithm};
    ///
    /// let key = HmacKey::new(MacAlgorithm::HmacSha1, b"key")?;
    /// let tag = key.sign(b"message");
    /// // HMAC-SHA1-96 (RFC 2404): the first 12 bytes.
    /// key.verify_truncated(b"message", &tag.as_bytes()[..12])?;
    /// assert_eq!(
    ///     key.verify_truncated(b"message", &tag.as_bytes()[..8]),
    ///     Err(Error::TagTooShort { min: 10, actual: 8 }),
    /// );
    /// # Ok::<(), cbc_hmac::Error>(())
    /// ```
    pub fn verify_truncated(&self, message: &[u8], tag: &[u8]) -> Result<(), Error> {
        self.check_truncated_len(tag.len())?;
        if self.truncated_matches(&[message], tag) {
            Ok(())
        } else {
            Err(Error::BadMac)
        }
    }

    /// Public length check of a truncated tag.
    pub(crate) fn check_truncated_len(&self, len: usize) -> Result<(), Error> {
        let full = self.output_len();
        let min = self.min_truncated_len();
        if len > full {
            return Err(Error::InvalidTagLength {
                expected: full,
                actual: len,
            });
        }
        if len < min {
            return Err(Error::TagTooShort { min, actual: len });
        }
        Ok(())
    }

    /// Whether `tag` (length already checked) is the leftmost part of the
    /// HMAC of the concatenation of `parts`; compared in constant time.
    pub(crate) fn truncated_matches(&self, parts: &[&[u8]], tag: &[u8]) -> bool {
        let mut full = [0u8; MAX_TAG_LEN];
        self.mac_parts_into(parts, &mut full);
        bool::from(full[..tag.len()].ct_eq(tag))
    }

    /// An incremental context, on the stack, copied from the precomputed
    /// inner state.
    pub fn context(&self) -> HmacContext<'_> {
        let engine = match &self.states {
            AnyStates::Sha1(s) => AnyEngine::Sha1(s.inner_engine(), s),
            AnyStates::Sha256(s) => AnyEngine::Sha256(s.inner_engine(), s),
            AnyStates::Sha384(s) => AnyEngine::Sha384(s.inner_engine(), s),
            AnyStates::Sha512(s) => AnyEngine::Sha512(s.inner_engine(), s),
        };
        HmacContext { key: self, engine }
    }
}

impl fmt::Debug for HmacKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HmacKey")
            .field("algorithm", &self.algorithm())
            .field("backend", &self.backend)
            .finish_non_exhaustive()
    }
}

/// An engine together with the states it finishes against, so the two
/// always agree in type.
#[derive(Clone, Copy)]
enum AnyEngine<'k> {
    Sha1(Engine<Sha1>, &'k HmacStates<Sha1>),
    Sha256(Engine<Sha256>, &'k HmacStates<Sha256>),
    Sha384(Engine<Sha384>, &'k HmacStates<Sha384>),
    Sha512(Engine<Sha512>, &'k HmacStates<Sha512>),
}

/// An HMAC computation in progress (see [`HmacKey::context`]).
#[derive(Clone)]
pub struct HmacContext<'k> {
    key: &'k HmacKey,
    engine: AnyEngine<'k>,
}

impl HmacContext<'_> {
    /// Absorbs `data`.
    pub fn update(&mut self, data: &[u8]) {
        with_compressor!(self.key.compressor, |c| match &mut self.engine {
            AnyEngine::Sha1(e, _) => e.update(c, data),
            AnyEngine::Sha256(e, _) => e.update(c, data),
            AnyEngine::Sha384(e, _) => e.update(c, data),
            AnyEngine::Sha512(e, _) => e.update(c, data),
        })
    }

    /// The tag of everything absorbed.
    pub fn finish(self) -> Tag {
        let mut tag = Tag {
            bytes: [0; MAX_TAG_LEN],
            len: self.key.output_len() as u8,
        };
        let out = &mut tag.bytes[..tag.len as usize];
        with_compressor!(self.key.compressor, |c| match self.engine {
            AnyEngine::Sha1(e, s) => s.finish_outer(c, &e.finish(c), out),
            AnyEngine::Sha256(e, s) => s.finish_outer(c, &e.finish(c), out),
            AnyEngine::Sha384(e, s) => s.finish_outer(c, &e.finish(c), out),
            AnyEngine::Sha512(e, s) => s.finish_outer(c, &e.finish(c), out),
        });
        tag
    }
}

impl fmt::Debug for HmacContext<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HmacContext")
            .field("algorithm", &self.key.algorithm())
            .finish_non_exhaustive()
    }
}

/// A plain hash: SHA-1, SHA-256, SHA-384 or SHA-512 (named by the HMAC
/// built on it) over the backend's compression function (the same code
/// path HMAC uses; exposed for benchmarks and known-answer tests).
///
/// ```
/// use cbc_hmac::{digest, MacAlgorithm};
///
/// let mut out = [0u8; 20];
/// let n = digest(MacAlgorithm::HmacSha1, b"abc", &mut out)?;
/// assert_eq!(n, 20);
/// assert_eq!(out[..4], [0xa9, 0x99, 0x3e, 0x36]);
///
/// // SHA-512 (FIPS 180-4, appendix C.1).
/// let mut out = [0u8; 64];
/// assert_eq!(digest(MacAlgorithm::HmacSha512, b"abc", &mut out)?, 64);
/// assert_eq!(out[..4], [0xdd, 0xaf, 0x35, 0xa1]);
/// # Ok::<(), cbc_hmac::Error>(())
/// ```
pub fn digest(algorithm: MacAlgorithm, message: &[u8], out: &mut [u8]) -> Result<usize, Error> {
    digest_with_backend(algorithm, message, out, Backend::detect())
}

/// [`digest`] on a chosen backend.
pub fn digest_with_backend(
    algorithm: MacAlgorithm,
    message: &[u8],
    out: &mut [u8],
    backend: Backend,
) -> Result<usize, Error> {
    let n = algorithm.output_len();
    if out.len() < n {
        return Err(Error::BufferTooSmall {
            needed: n,
            actual: out.len(),
        });
    }
    let compressor = Compressor::new(backend.check()?);
    let out = &mut out[..n];
    fn run<H: HashFunction, C: Compress<H>>(c: &C, m: &[u8], out: &mut [u8]) {
        H::write_output(&Engine::<H>::new().finish_with(c, m), out);
    }
    with_compressor!(compressor, |c| match algorithm {
        MacAlgorithm::HmacSha1 => run::<Sha1, _>(c, message, out),
        MacAlgorithm::HmacSha256 => run::<Sha256, _>(c, message, out),
        MacAlgorithm::HmacSha384 => run::<Sha384, _>(c, message, out),
        MacAlgorithm::HmacSha512 => run::<Sha512, _>(c, message, out),
    });
    Ok(n)
}
