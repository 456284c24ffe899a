//! HMAC through `HMAC_CTX`, keyed once.

use std::ffi::{c_int, c_uint, c_void};
use std::fmt;
use std::ptr::{self, NonNull};

use openssl_sys as sys;

use crate::error::{Error, Result};
use crate::ffi::take_error;

/// The hash under HMAC.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Digest {
    /// SHA-1 (20-byte tags).
    Sha1,
    /// SHA-256 (32-byte tags).
    Sha256,
    /// SHA-384 (48-byte tags).
    Sha384,
    /// SHA-512 (64-byte tags).
    Sha512,
}

impl Digest {
    /// Every digest.
    pub const ALL: [Digest; 4] = [Digest::Sha1, Digest::Sha256, Digest::Sha384, Digest::Sha512];

    /// Tag length in bytes.
    pub const fn output_len(self) -> usize {
        match self {
            Digest::Sha1 => 20,
            Digest::Sha256 => 32,
            Digest::Sha384 => 48,
            Digest::Sha512 => 64,
        }
    }

    /// `SHA1`, `SHA256`, `SHA384` or `SHA512`.
    pub const fn name(self) -> &'static str {
        match self {
            Digest::Sha1 => "SHA1",
            Digest::Sha256 => "SHA256",
            Digest::Sha384 => "SHA384",
            Digest::Sha512 => "SHA512",
        }
    }

    fn md(self) -> Result<NonNull<sys::EVP_MD>> {
        sys::init();
        // SAFETY: no arguments; each returns a pointer to a static digest
        // table (or NULL), never to be freed.
        let md = unsafe {
            match self {
                Digest::Sha1 => sys::EVP_sha1(),
                Digest::Sha256 => sys::EVP_sha256(),
                Digest::Sha384 => sys::EVP_sha384(),
                Digest::Sha512 => sys::EVP_sha512(),
            }
        };
        NonNull::new(md.cast_mut()).ok_or(Error::Unavailable(self.name()))
    }
}

/// An HMAC tag or a digest (up to 64 bytes, held inline).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Tag {
    bytes: [u8; 64],
    len: usize,
}

impl Tag {
    /// The first `len` bytes of `bytes` (`len` at most 64).
    pub(crate) fn new(bytes: [u8; 64], len: usize) -> Tag {
        debug_assert!(len <= bytes.len());
        Tag { bytes, len }
    }

    /// The tag's bytes.
    pub fn as_slice(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

impl AsRef<[u8]> for Tag {
    fn as_ref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl fmt::Debug for Tag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Tag(")?;
        for b in self.as_slice() {
            write!(f, "{b:02x}")?;
        }
        f.write_str(")")
    }
}

/// HMAC with a key set once: `HMAC_Init_ex` with the key hashes it and
/// stores the inner and outer states; each message starts from those
/// (`HMAC_Init_ex` with a NULL key), without re-keying.
pub struct Hmac {
    ctx: NonNull<sys::HMAC_CTX>,
    digest: Digest,
}

// SAFETY: an HMAC_CTX is plain heap state owned by this value alone;
// OpenSSL does not tie it to the creating thread, and `&mut self` on every
// operation rules out concurrent use.
unsafe impl Send for Hmac {}

impl Hmac {
    /// Keys HMAC-`digest` with `key` (any length).
    pub fn new(digest: Digest, key: &[u8]) -> Result<Self> {
        let md = digest.md()?;
        let key_len =
            c_int::try_from(key.len()).map_err(|_| Error::InvalidInput("HMAC key too long"))?;
        // SAFETY: no arguments; returns an owned context or NULL.
        let ctx = unsafe { sys::HMAC_CTX_new() };
        let ctx = NonNull::new(ctx).ok_or_else(|| take_error("HMAC_CTX_new"))?;
        // From here on, Drop frees the context on every error path.
        let hmac = Hmac { ctx, digest };
        // A non-NULL key pointer even for an empty key (NULL means "keep the
        // old key").
        static EMPTY_KEY: [u8; 1] = [0];
        let key_ptr: *const u8 = if key.is_empty() {
            EMPTY_KEY.as_ptr()
        } else {
            key.as_ptr()
        };
        // SAFETY: the context is valid; `key_ptr` is valid for `key_len`
        // bytes (one readable byte when the key is empty, of which OpenSSL
        // reads none); `md` is a static digest table; no engine.
        let ok = unsafe {
            sys::HMAC_Init_ex(
                hmac.ctx.as_ptr(),
                key_ptr.cast::<c_void>(),
                key_len,
                md.as_ptr(),
                ptr::null_mut(),
            )
        };
        if ok != 1 {
            return Err(take_error("HMAC_Init_ex"));
        }
        Ok(hmac)
    }

    /// The digest.
    pub fn digest(&self) -> Digest {
        self.digest
    }

    /// Tag length in bytes.
    pub fn output_len(&self) -> usize {
        self.digest.output_len()
    }

    /// HMAC of `data`.
    pub fn mac(&mut self, data: &[u8]) -> Result<Tag> {
        self.mac_parts(&[data])
    }

    /// HMAC of the concatenation of `parts`.
    pub fn mac_parts(&mut self, parts: &[&[u8]]) -> Result<Tag> {
        // SAFETY: the context is valid and keyed; NULL key, length 0 and
        // NULL digest mean "restart from the stored key".
        let ok = unsafe {
            sys::HMAC_Init_ex(
                self.ctx.as_ptr(),
                ptr::null(),
                0,
                ptr::null(),
                ptr::null_mut(),
            )
        };
        if ok != 1 {
            return Err(take_error("HMAC_Init_ex"));
        }
        for part in parts.iter().filter(|p| !p.is_empty()) {
            // SAFETY: the context is valid and initialised; `part` is valid
            // for `part.len()` bytes.
            let ok = unsafe { sys::HMAC_Update(self.ctx.as_ptr(), part.as_ptr(), part.len()) };
            if ok != 1 {
                return Err(take_error("HMAC_Update"));
            }
        }
        let mut tag = Tag {
            bytes: [0; 64],
            len: 0,
        };
        let mut len: c_uint = 0;
        // SAFETY: the context is valid; `tag.bytes` has EVP_MAX_MD_SIZE (64)
        // bytes, the most HMAC_Final writes; `len` is a valid out-parameter.
        let ok = unsafe { sys::HMAC_Final(self.ctx.as_ptr(), tag.bytes.as_mut_ptr(), &mut len) };
        if ok != 1 {
            return Err(take_error("HMAC_Final"));
        }
        tag.len = len as usize;
        if tag.len != self.output_len() {
            return Err(Error::OpenSsl {
                call: "HMAC_Final (unexpected tag length)",
                code: 0,
            });
        }
        Ok(tag)
    }
}

impl Drop for Hmac {
    fn drop(&mut self) {
        // SAFETY: the context is owned by this value and freed exactly once;
        // HMAC_CTX_free also wipes the key states.
        unsafe { sys::HMAC_CTX_free(self.ctx.as_ptr()) }
    }
}

impl fmt::Debug for Hmac {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Hmac")
            .field("digest", &self.digest)
            .finish_non_exhaustive()
    }
}

/// One-shot HMAC (keys a fresh context; use [`Hmac`] for repeated calls).
pub fn hmac(digest: Digest, key: &[u8], data: &[u8]) -> Result<Tag> {
    Hmac::new(digest, key)?.mac(data)
}
