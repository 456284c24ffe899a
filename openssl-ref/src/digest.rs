//! Plain hashes through OpenSSL's low-level `SHA*_Init/Update/Final`.
//!
//! Those calls go straight to the same assembly the EVP digests run, with a
//! context on the stack and no provider lookup: the fastest way OpenSSL
//! offers to hash one message, so the strictest reference. (The one-shot
//! `SHA384()` of OpenSSL 3 fetches the digest by name on every call.)

use std::ffi::{c_int, c_void};
use std::mem::MaybeUninit;

use openssl_sys as sys;

use crate::error::Result;
use crate::ffi::take_error;
use crate::hmac::{Digest, Tag};

/// The hash of `data` with `digest`.
///
/// ```
/// use openssl_ref::{Digest, hash};
///
/// // FIPS 180-4's "abc" example for SHA-256.
/// let h = hash(Digest::Sha256, b"abc")?;
/// assert_eq!(h.as_slice()[..4], [0xba, 0x78, 0x16, 0xbf]);
/// # Ok::<(), openssl_ref::Error>(())
/// ```
pub fn hash(digest: Digest, data: &[u8]) -> Result<Tag> {
    sys::init();
    let mut out = [0u8; 64];
    let p = data.as_ptr().cast::<c_void>();
    let n = data.len();
    // SAFETY: in every arm the context is a stack value of the type the
    // three calls expect, written by `*_Init` before `*_Update` reads it;
    // `p` is valid for `n` bytes; `out` has 64 bytes, at least the digest's
    // output length that `*_Final` writes.
    let ok: [c_int; 3] = unsafe {
        match digest {
            Digest::Sha1 => {
                let mut c = MaybeUninit::<sys::SHA_CTX>::uninit();
                [
                    sys::SHA1_Init(c.as_mut_ptr()),
                    sys::SHA1_Update(c.as_mut_ptr(), p, n),
                    sys::SHA1_Final(out.as_mut_ptr(), c.as_mut_ptr()),
                ]
            }
            Digest::Sha256 => {
                let mut c = MaybeUninit::<sys::SHA256_CTX>::uninit();
                [
                    sys::SHA256_Init(c.as_mut_ptr()),
                    sys::SHA256_Update(c.as_mut_ptr(), p, n),
                    sys::SHA256_Final(out.as_mut_ptr(), c.as_mut_ptr()),
                ]
            }
            Digest::Sha384 => {
                let mut c = MaybeUninit::<sys::SHA512_CTX>::uninit();
                [
                    sys::SHA384_Init(c.as_mut_ptr()),
                    sys::SHA384_Update(c.as_mut_ptr(), p, n),
                    sys::SHA384_Final(out.as_mut_ptr(), c.as_mut_ptr()),
                ]
            }
            Digest::Sha512 => {
                let mut c = MaybeUninit::<sys::SHA512_CTX>::uninit();
                [
                    sys::SHA512_Init(c.as_mut_ptr()),
                    sys::SHA512_Update(c.as_mut_ptr(), p, n),
                    sys::SHA512_Final(out.as_mut_ptr(), c.as_mut_ptr()),
                ]
            }
        }
    };
    if ok != [1; 3] {
        let call = match digest {
            Digest::Sha1 => "SHA1_Init/Update/Final",
            Digest::Sha256 => "SHA256_Init/Update/Final",
            Digest::Sha384 => "SHA384_Init/Update/Final",
            Digest::Sha512 => "SHA512_Init/Update/Final",
        };
        return Err(take_error(call));
    }
    Ok(Tag::new(out, digest.output_len()))
}
