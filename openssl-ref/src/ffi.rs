//! The raw OpenSSL objects: cipher handles and an owned `EVP_CIPHER_CTX`.
//! Everything above this module (and `hmac.rs`) is safe code.

use std::ffi::{CStr, c_int, c_void};
use std::ptr::{self, NonNull};

use openssl_sys as sys;

use crate::error::{Error, Result};

/// Takes the first entry of this thread's OpenSSL error queue and clears
/// the queue.
pub(crate) fn take_error(call: &'static str) -> Error {
    // SAFETY: both functions only read and clear this thread's error queue;
    // they take no arguments.
    let code = unsafe {
        let code = sys::ERR_get_error();
        sys::ERR_clear_error();
        code
    };
    Error::OpenSsl {
        call,
        code: code as u64,
    }
}

/// Clears this thread's OpenSSL error queue (after an expected failure,
/// such as a record that does not authenticate).
pub(crate) fn clear_errors() {
    // SAFETY: only clears this thread's error queue.
    unsafe { sys::ERR_clear_error() }
}

/// OpenSSL's version string.
pub(crate) fn version() -> &'static str {
    sys::init();
    // SAFETY: OpenSSL_version returns a pointer to a static NUL-terminated
    // string (never NULL for OPENSSL_VERSION) that lives as long as the
    // library is loaded, i.e. the whole process.
    let s = unsafe {
        let p = sys::OpenSSL_version(sys::OPENSSL_VERSION);
        if p.is_null() {
            return "OpenSSL (unknown version)";
        }
        CStr::from_ptr(p)
    };
    s.to_str().unwrap_or("OpenSSL (version string not UTF-8)")
}

/// A cipher implementation: a pointer to one of libcrypto's static
/// `EVP_CIPHER` objects (never freed), and its key length.
#[derive(Clone, Copy)]
pub(crate) struct Cipher {
    ptr: NonNull<sys::EVP_CIPHER>,
    key_len: usize,
}

impl Cipher {
    /// `aes-128-cbc`, `aes-192-cbc` or `aes-256-cbc` by key length.
    pub(crate) fn aes_cbc(key_len: usize) -> Result<Cipher> {
        sys::init();
        // SAFETY: these functions take no arguments and return pointers to
        // static cipher tables (or NULL), never to be freed.
        let ptr = unsafe {
            match key_len {
                16 => sys::EVP_aes_128_cbc(),
                24 => sys::EVP_aes_192_cbc(),
                32 => sys::EVP_aes_256_cbc(),
                _ => return Err(Error::InvalidInput("AES keys are 16, 24 or 32 bytes")),
            }
        };
        NonNull::new(ptr.cast_mut())
            .map(|ptr| Cipher { ptr, key_len })
            .ok_or(Error::Unavailable("AES-CBC"))
    }

    /// A cipher looked up by name with `EVP_get_cipherbyname` (libcrypto
    /// registers the stitched ciphers under their names only where the CPU
    /// can run them).
    pub(crate) fn by_name(name: &CStr, key_len: usize) -> Option<Cipher> {
        sys::init();
        // SAFETY: `name` is a valid NUL-terminated string; the result is a
        // static cipher table or NULL.
        let ptr = unsafe { sys::EVP_get_cipherbyname(name.as_ptr()) };
        clear_errors();
        NonNull::new(ptr.cast_mut()).map(|ptr| Cipher { ptr, key_len })
    }

    /// `EVP_CIPHER_get_flags`: the `EVP_CIPH_FLAG_*` bits.
    pub(crate) fn flags(&self) -> std::ffi::c_ulong {
        // SAFETY: the pointer is one of libcrypto's static cipher tables.
        unsafe { sys::EVP_CIPHER_get_flags(self.ptr.as_ptr()) }
    }
}

/// `EVP_CTRL_TLS1_1_MULTIBLOCK_PARAM` from `<openssl/evp.h>`.
#[repr(C)]
struct MultiBlockParam {
    out: *mut u8,
    inp: *const u8,
    len: usize,
    interleave: std::ffi::c_uint,
}

/// `EVP_CTRL_TLS1_1_MULTIBLOCK_AAD` from `<openssl/evp.h>`.
const EVP_CTRL_TLS1_1_MULTIBLOCK_AAD: c_int = 0x19;
/// `EVP_CTRL_TLS1_1_MULTIBLOCK_ENCRYPT` from `<openssl/evp.h>`.
const EVP_CTRL_TLS1_1_MULTIBLOCK_ENCRYPT: c_int = 0x1a;
/// `EVP_CTRL_TLS1_1_MULTIBLOCK_MAX_BUFSIZE` from `<openssl/evp.h>`.
const EVP_CTRL_TLS1_1_MULTIBLOCK_MAX_BUFSIZE: c_int = 0x1c;

/// The shortest write the multi-block code is given here: OpenSSL's own
/// floor for a write whose length it reads from the header (shorter
/// records would underflow its per-record block counts).
pub(crate) const MULTIBLOCK_MIN_LEN: usize = 4096;
/// The longest: 8 records of 2^14 bytes.
pub(crate) const MULTIBLOCK_MAX_LEN: usize = 8 << 14;

/// An owned `EVP_CIPHER_CTX`, keyed for one direction.
pub(crate) struct CipherCtx {
    ptr: NonNull<sys::EVP_CIPHER_CTX>,
    encrypt: bool,
}

// SAFETY: an EVP_CIPHER_CTX is plain heap state owned by this value alone;
// OpenSSL does not tie it to the creating thread, and `&mut self` on every
// operation rules out concurrent use.
unsafe impl Send for CipherCtx {}

impl CipherCtx {
    /// A context for `cipher` with `key` and `iv`, padding off.
    pub(crate) fn new(cipher: Cipher, key: &[u8], iv: &[u8; 16], encrypt: bool) -> Result<Self> {
        if key.len() != cipher.key_len {
            return Err(Error::InvalidInput("wrong key length for the cipher"));
        }
        // SAFETY: no arguments; returns an owned context or NULL.
        let ptr = unsafe { sys::EVP_CIPHER_CTX_new() };
        let ptr = NonNull::new(ptr).ok_or_else(|| take_error("EVP_CIPHER_CTX_new"))?;
        // From here on, Drop frees the context on every error path.
        let ctx = CipherCtx { ptr, encrypt };
        // SAFETY: the context is valid; `cipher` points to a static cipher
        // table; `key` holds exactly the cipher's key length (checked above)
        // and `iv` the 16-byte block length of every cipher used here.
        let ok = unsafe {
            sys::EVP_CipherInit_ex(
                ctx.ptr.as_ptr(),
                cipher.ptr.as_ptr(),
                ptr::null_mut(),
                key.as_ptr(),
                iv.as_ptr(),
                c_int::from(encrypt),
            )
        };
        if ok != 1 {
            return Err(take_error("EVP_CipherInit_ex"));
        }
        // SAFETY: the context is valid and initialised.
        let ok = unsafe { sys::EVP_CIPHER_CTX_set_padding(ctx.ptr.as_ptr(), 0) };
        if ok != 1 {
            return Err(take_error("EVP_CIPHER_CTX_set_padding"));
        }
        Ok(ctx)
    }

    /// Sets the IV for the next operation, keeping the expanded key (and,
    /// for the stitched ciphers, the MAC key).
    pub(crate) fn reset_iv(&mut self, iv: &[u8; 16]) -> Result<()> {
        // SAFETY: the context is valid and was initialised with a cipher, so
        // NULL cipher and key mean "keep them"; `iv` is 16 bytes, the IV
        // length of every cipher used here.
        let ok = unsafe {
            sys::EVP_CipherInit_ex(
                self.ptr.as_ptr(),
                ptr::null(),
                ptr::null_mut(),
                ptr::null(),
                iv.as_ptr(),
                c_int::from(self.encrypt),
            )
        };
        if ok == 1 {
            Ok(())
        } else {
            Err(take_error("EVP_CipherInit_ex"))
        }
    }

    /// `EVP_CipherUpdate` over `data` in place. Returns whether OpenSSL
    /// reported success and produced exactly `data.len()` bytes; leaves the
    /// error queue for the caller (an unauthenticated record is an expected
    /// failure). Empty input is not passed to OpenSSL.
    pub(crate) fn update_in_place(&mut self, data: &mut [u8]) -> bool {
        let Ok(len) = c_int::try_from(data.len()) else {
            return false;
        };
        if len == 0 {
            return true;
        }
        let p = data.as_mut_ptr();
        let mut out_len: c_int = 0;
        // SAFETY: the context is valid and keyed. Input and output are the
        // same `len` bytes (exact overlap, which EVP allows). With padding
        // off and whole blocks (all callers pass whole blocks), AES-CBC
        // writes exactly `len` bytes; the stitched ciphers' TLS mode writes
        // within the `len` bytes it is given (its record length was fixed by
        // the preceding EVP_CTRL_AEAD_TLS1_AAD, and the callers pass exactly
        // that length). `out_len` is a valid out-parameter.
        let ok = unsafe { sys::EVP_CipherUpdate(self.ptr.as_ptr(), p, &mut out_len, p, len) };
        ok == 1 && out_len == len
    }

    /// `EVP_CIPHER_CTX_ctrl(op, data.len(), data)`: OpenSSL may read and
    /// write `data` (the TLS AAD control rewrites its length field).
    /// Returns OpenSSL's result.
    pub(crate) fn ctrl(&mut self, op: c_int, data: &mut [u8]) -> c_int {
        let Ok(len) = c_int::try_from(data.len()) else {
            return 0;
        };
        // SAFETY: the context is valid; `data` is valid for reads and writes
        // of `len` bytes, and the controls used here (EVP_CTRL_AEAD_SET_MAC_KEY,
        // EVP_CTRL_AEAD_TLS1_AAD) touch at most `len` bytes of it.
        unsafe {
            sys::EVP_CIPHER_CTX_ctrl(
                self.ptr.as_ptr(),
                op,
                len,
                data.as_mut_ptr().cast::<c_void>(),
            )
        }
    }
}

impl CipherCtx {
    /// `EVP_CTRL_TLS1_1_MULTIBLOCK_MAX_BUFSIZE` with `max_fragment`: the
    /// room one record of at most that many plaintext bytes takes (header,
    /// explicit IV, MAC, padding included). OpenSSL's result (<= 0:
    /// refused).
    pub(crate) fn multiblock_max_bufsize(&mut self, max_fragment: u16) -> c_int {
        // SAFETY: the context is valid and keyed; this control takes an
        // integer argument and no pointer (NULL is what libssl passes).
        unsafe {
            sys::EVP_CIPHER_CTX_ctrl(
                self.ptr.as_ptr(),
                EVP_CTRL_TLS1_1_MULTIBLOCK_MAX_BUFSIZE,
                c_int::from(max_fragment),
                ptr::null_mut(),
            )
        }
    }

    /// OpenSSL's multi-block seal as libssl drives it: `EVP_CTRL_TLS1_1_MULTIBLOCK_AAD`
    /// with the 13-byte header `aad` (length field zero, so that OpenSSL
    /// takes the length from the parameter) and `interleave` (4 or 8), then
    /// `EVP_CTRL_TLS1_1_MULTIBLOCK_ENCRYPT` of `inp` into `out`. Returns the
    /// bytes written (`interleave` records with their 5-byte headers) and
    /// the interleave OpenSSL used.
    ///
    /// Refuses, before calling OpenSSL, what it does not check itself:
    /// `inp` outside [`MULTIBLOCK_MIN_LEN`, `MULTIBLOCK_MAX_LEN`], an
    /// interleave other than 4 or 8, and `out` shorter than the length the
    /// AAD control announces.
    pub(crate) fn multiblock_seal(
        &mut self,
        aad: &[u8; 13],
        inp: &[u8],
        interleave: u32,
        out: &mut [u8],
    ) -> Result<(usize, u32)> {
        if !(MULTIBLOCK_MIN_LEN..=MULTIBLOCK_MAX_LEN).contains(&inp.len()) {
            return Err(Error::InvalidInput(
                "multi-block writes are 4096 to 131072 bytes",
            ));
        }
        if interleave != 4 && interleave != 8 {
            return Err(Error::InvalidInput("multi-block interleave is 4 or 8"));
        }
        if aad[11] != 0 || aad[12] != 0 {
            return Err(Error::InvalidInput("multi-block header length must be 0"));
        }
        let mut param = MultiBlockParam {
            out: ptr::null_mut(),
            inp: aad.as_ptr(),
            len: inp.len(),
            interleave,
        };
        let arg = std::mem::size_of::<MultiBlockParam>() as c_int;
        // SAFETY: the context is valid and keyed for encryption; `param` is
        // a valid EVP_CTRL_TLS1_1_MULTIBLOCK_PARAM whose `inp` points to the
        // 13 header bytes, all the AAD control reads (it takes `len` as a
        // number and reads no input bytes); it writes only
        // `param.interleave`.
        let packlen = unsafe {
            sys::EVP_CIPHER_CTX_ctrl(
                self.ptr.as_ptr(),
                EVP_CTRL_TLS1_1_MULTIBLOCK_AAD,
                arg,
                (&raw mut param).cast::<c_void>(),
            )
        };
        if packlen <= 0 {
            return Err(take_error("EVP_CTRL_TLS1_1_MULTIBLOCK_AAD"));
        }
        let packlen = packlen as usize;
        if out.len() < packlen {
            return Err(Error::InvalidInput("multi-block output buffer too small"));
        }
        let used = param.interleave;
        if used != 4 && used != 8 {
            return Err(Error::OpenSsl {
                call: "EVP_CTRL_TLS1_1_MULTIBLOCK_AAD (unexpected interleave)",
                code: 0,
            });
        }
        param.out = out.as_mut_ptr();
        param.inp = inp.as_ptr();
        param.len = inp.len();
        param.interleave = used;
        // SAFETY: the context is valid and was just given the header and
        // length by the AAD control. OpenSSL reads `inp.len()` bytes of
        // `inp` (at least 4096, so every record is long enough for its
        // block arithmetic) and writes exactly `packlen` bytes to `out`
        // (the layout the AAD control computed for the same length and
        // interleave), which `out` has room for (checked above).
        let written = unsafe {
            sys::EVP_CIPHER_CTX_ctrl(
                self.ptr.as_ptr(),
                EVP_CTRL_TLS1_1_MULTIBLOCK_ENCRYPT,
                arg,
                (&raw mut param).cast::<c_void>(),
            )
        };
        if written <= 0 {
            return Err(take_error("EVP_CTRL_TLS1_1_MULTIBLOCK_ENCRYPT"));
        }
        if written as usize != packlen {
            return Err(Error::OpenSsl {
                call: "EVP_CTRL_TLS1_1_MULTIBLOCK_ENCRYPT (length differs from the AAD's)",
                code: 0,
            });
        }
        Ok((packlen, used))
    }
}

impl Drop for CipherCtx {
    fn drop(&mut self) {
        // SAFETY: the context is owned by this value and freed exactly once;
        // EVP_CIPHER_CTX_free also wipes the key schedule.
        unsafe { sys::EVP_CIPHER_CTX_free(self.ptr.as_ptr()) }
    }
}
