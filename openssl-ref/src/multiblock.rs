//! OpenSSL's multi-block seal: one call seals 4 or 8 TLS 1.1+ records of
//! one connection, in parallel lanes, the way libssl's `ssl3_write_bytes`
//! drives it for large writes.
//!
//! The conventions (OpenSSL 3.0's `cipher_aes_cbc_hmac_sha{1,256}_hw.c` and
//! libssl's record layer):
//!
//! - The stitched ciphers carry `EVP_CIPH_FLAG_TLS1_1_MULTIBLOCK` where the
//!   code exists (x86-64 with AES-NI; the SHA-256 ones also need AVX or SHA
//!   extensions); the lane kernels choose SSE, AVX, AVX2 or SHA-NI forms at
//!   run time inside OpenSSL.
//! - `EVP_CTRL_TLS1_1_MULTIBLOCK_AAD` takes the 13-byte header `seq ||
//!   type || version || 00 00` with the write's length and the requested
//!   interleave as parameters, hashes the header into the inner state and
//!   returns the total output length; `EVP_CTRL_TLS1_1_MULTIBLOCK_ENCRYPT`
//!   then writes `interleave` records back to back, each `type || version
//!   || length || explicit IV || ciphertext` (the IVs from OpenSSL's
//!   random generator), with sequence numbers `seq`, `seq + 1`, ...
//! - The write is cut into `interleave - 1` fragments of `frag` bytes and a
//!   last one of `last` bytes (about `len / interleave` each; see
//!   [`MultiBlockSealer::record_lens`]).

use std::ffi::CStr;
use std::fmt;

use crate::error::{Error, Result};
use crate::ffi::{Cipher, CipherCtx, MULTIBLOCK_MAX_LEN, MULTIBLOCK_MIN_LEN, take_error};
use crate::hmac::Digest;
use crate::{MAX_PLAINTEXT_LEN, TLS1_1, TLS1_2, tls_mac_header};

/// `EVP_CTRL_AEAD_SET_MAC_KEY` from `<openssl/evp.h>`.
const EVP_CTRL_AEAD_SET_MAC_KEY: std::ffi::c_int = 0x17;
/// `EVP_CIPH_FLAG_TLS1_1_MULTIBLOCK` from `<openssl/evp.h>`.
const EVP_CIPH_FLAG_TLS1_1_MULTIBLOCK: std::ffi::c_ulong = 0x40_0000;

/// The content type of the records [`MultiBlockSealer::seal`] writes:
/// application data, the only type libssl writes in multi-block mode.
pub const MULTIBLOCK_CONTENT_TYPE: u8 = 23;

/// The length of a TLS record header (`type || version || length`).
pub const RECORD_HEADER_LEN: usize = 5;

/// OpenSSL's multi-block seal on one of its stitched ciphers
/// (`AES-{128,256}-CBC-HMAC-SHA{1,256}`), keyed once: TLS 1.1 and 1.2,
/// MAC-then-encrypt, 4 or 8 records per call.
///
/// ```
/// use openssl_ref::{Digest, MultiBlockSealer, TLS1_2, split_records};
///
/// let mut s = match MultiBlockSealer::new(Digest::Sha1, &[1; 16], &[2; 20]) {
///     Ok(s) => s,
///     // No multi-block code in this OpenSSL on this CPU.
///     Err(openssl_ref::Error::Unavailable(_)) => return Ok(()),
///     Err(e) => return Err(e),
/// };
/// let write = vec![0x61; 4 * 16384];
/// let mut out = vec![0; s.sealed_len(write.len(), 4)?];
/// let n = s.seal(7, TLS1_2, &write, 4, &mut out)?;
/// let records = split_records(&out[..n]).unwrap();
/// assert_eq!(records.len(), 4); // sequence numbers 7, 8, 9, 10
/// assert_eq!(records[0].0, [23, 3, 3, 0x40, 0x30]); // IV + 16384 + MAC + padding
/// # Ok::<(), openssl_ref::Error>(())
/// ```
pub struct MultiBlockSealer {
    name: &'static str,
    ctx: CipherCtx,
    mac_len: usize,
    max_record_buf: usize,
}

impl MultiBlockSealer {
    fn c_name(enc_key_len: usize, digest: Digest) -> Option<&'static CStr> {
        match (enc_key_len, digest) {
            (16, Digest::Sha1) => Some(c"AES-128-CBC-HMAC-SHA1"),
            (32, Digest::Sha1) => Some(c"AES-256-CBC-HMAC-SHA1"),
            (16, Digest::Sha256) => Some(c"AES-128-CBC-HMAC-SHA256"),
            (32, Digest::Sha256) => Some(c"AES-256-CBC-HMAC-SHA256"),
            _ => None,
        }
    }

    /// Keys the stitched cipher for `digest` and the AES key length
    /// (16 or 32 bytes) for sealing, then the MAC key, and seals one small
    /// write to see that OpenSSL accepts the multi-block controls. Fails
    /// with [`Error::Unavailable`] (naming why) where this OpenSSL on this
    /// CPU has no such cipher, or has it without the multi-block code, or
    /// refuses the multi-block controls; with [`Error::InvalidInput`] for a
    /// key length or digest no stitched cipher has.
    pub fn new(digest: Digest, enc_key: &[u8], mac_key: &[u8]) -> Result<Self> {
        let key_len = enc_key.len();
        if key_len != 16 && key_len != 32 {
            return Err(Error::InvalidInput("stitched AES keys are 16 or 32 bytes"));
        }
        let c_name = Self::c_name(key_len, digest)
            .ok_or(Error::InvalidInput("no stitched cipher for this digest"))?;
        let cipher = Cipher::by_name(c_name, key_len).ok_or(Error::Unavailable(
            "the stitched AES-CBC-HMAC cipher (x86-64 with AES-NI only)",
        ))?;
        if cipher.flags() & EVP_CIPH_FLAG_TLS1_1_MULTIBLOCK == 0 {
            return Err(Error::Unavailable(
                "multi-block in this OpenSSL's stitched cipher",
            ));
        }
        let mut ctx = CipherCtx::new(cipher, enc_key, &[0; 16], true)?;
        let mut key = mac_key.to_vec();
        let keyed = ctx.ctrl(EVP_CTRL_AEAD_SET_MAC_KEY, &mut key);
        key.fill(0);
        if keyed <= 0 {
            return Err(take_error("EVP_CTRL_AEAD_SET_MAC_KEY"));
        }
        let max = ctx.multiblock_max_bufsize(MAX_PLAINTEXT_LEN as u16);
        if max <= 0 {
            crate::ffi::clear_errors();
            return Err(Error::Unavailable(
                "EVP_CTRL_TLS1_1_MULTIBLOCK_MAX_BUFSIZE (multi-block refused)",
            ));
        }
        // The AAD control is where OpenSSL says no (for example to a CPU its
        // lane code does not run on): one small write, thrown away.
        let mut probe = vec![0u8; 4 * max as usize];
        let header = tls_mac_header(0, MULTIBLOCK_CONTENT_TYPE, TLS1_2, 0);
        match ctx.multiblock_seal(&header, &[0; MULTIBLOCK_MIN_LEN], 4, &mut probe) {
            Ok(_) => {}
            Err(Error::OpenSsl { .. }) => {
                crate::ffi::clear_errors();
                return Err(Error::Unavailable(
                    "EVP_CTRL_TLS1_1_MULTIBLOCK_AAD/_ENCRYPT (multi-block refused)",
                ));
            }
            Err(e) => return Err(e),
        }
        Ok(MultiBlockSealer {
            name: c_name.to_str().unwrap_or(""),
            ctx,
            mac_len: digest.output_len(),
            max_record_buf: max as usize,
        })
    }

    /// OpenSSL's name of the cipher, for example `AES-128-CBC-HMAC-SHA1`.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The room one record of up to 2^14 plaintext bytes takes, header
    /// included (`EVP_CTRL_TLS1_1_MULTIBLOCK_MAX_BUFSIZE`; libssl sizes its
    /// write buffer as this times the interleave).
    pub fn max_record_buf(&self) -> usize {
        self.max_record_buf
    }

    /// How OpenSSL cuts a write of `len` bytes into `interleave` records:
    /// `(frag, last)`, the plaintext length of each of the first
    /// `interleave - 1` records and of the last. Errors for an interleave
    /// other than 4 or 8, a length outside 4096..=131072, or a cut that
    /// would make a record longer than 2^14 bytes.
    pub fn record_lens(len: usize, interleave: usize) -> Result<(usize, usize)> {
        if interleave != 4 && interleave != 8 {
            return Err(Error::InvalidInput("multi-block interleave is 4 or 8"));
        }
        if !(MULTIBLOCK_MIN_LEN..=MULTIBLOCK_MAX_LEN).contains(&len) {
            return Err(Error::InvalidInput(
                "multi-block writes are 4096 to 131072 bytes",
            ));
        }
        // OpenSSL's cut: equal fragments, the remainder on the last one,
        // unless that leaves the last record's MAC padding block nearly
        // empty (then one byte more for each of the others).
        let mut frag = len / interleave;
        let mut last = len - (interleave - 1) * frag;
        if last > frag && (last + 13 + 9) % 64 < interleave - 1 {
            frag += 1;
            last -= interleave - 1;
        }
        if frag > MAX_PLAINTEXT_LEN || last > MAX_PLAINTEXT_LEN {
            return Err(Error::InvalidInput(
                "multi-block write would make a record over 2^14 bytes",
            ));
        }
        Ok((frag, last))
    }

    /// The bytes [`MultiBlockSealer::seal`] writes for `len` plaintext
    /// bytes in `interleave` records: per record the 5-byte header, the
    /// explicit IV, and plaintext, MAC and padding in whole blocks.
    pub fn sealed_len(&self, len: usize, interleave: usize) -> Result<usize> {
        let (frag, last) = Self::record_lens(len, interleave)?;
        let record =
            |n: usize| RECORD_HEADER_LEN + 16 + (n + self.mac_len + 1).next_multiple_of(16);
        Ok((interleave - 1) * record(frag) + record(last))
    }

    /// Seals `plaintext` as `interleave` (4 or 8) back-to-back TLS records
    /// of content type 23 into `out`, headers included, with sequence
    /// numbers `seq`, `seq + 1`, ..., exactly as libssl's multi-block write
    /// does (random explicit IVs). `version` is [`TLS1_1`] or [`TLS1_2`].
    /// Returns the bytes written ([`MultiBlockSealer::sealed_len`]).
    ///
    /// Errors before OpenSSL is called for another version, a write or cut
    /// [`MultiBlockSealer::record_lens`] refuses, sequence numbers that
    /// would wrap, or `out` too small.
    pub fn seal(
        &mut self,
        seq: u64,
        version: [u8; 2],
        plaintext: &[u8],
        interleave: usize,
        out: &mut [u8],
    ) -> Result<usize> {
        if version != TLS1_1 && version != TLS1_2 {
            return Err(Error::InvalidInput(
                "multi-block records are TLS 1.1 or 1.2 (5-byte headers)",
            ));
        }
        let total = self.sealed_len(plaintext.len(), interleave)?;
        if out.len() < total {
            return Err(Error::InvalidInput("multi-block output buffer too small"));
        }
        if seq.checked_add(interleave as u64 - 1).is_none() {
            return Err(Error::InvalidInput("sequence numbers would wrap"));
        }
        // libssl's header: length 0, the write's length as a parameter.
        let aad = tls_mac_header(seq, MULTIBLOCK_CONTENT_TYPE, version, 0);
        let (written, used) =
            self.ctx
                .multiblock_seal(&aad, plaintext, interleave as u32, &mut out[..total])?;
        if written != total || used as usize != interleave {
            return Err(Error::OpenSsl {
                call: "EVP_CTRL_TLS1_1_MULTIBLOCK_ENCRYPT (unexpected layout)",
                code: 0,
            });
        }
        Ok(written)
    }
}

impl fmt::Debug for MultiBlockSealer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MultiBlockSealer")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// Splits back-to-back TLS records (as [`MultiBlockSealer::seal`] writes
/// them) into `(header, fragment)` pairs; `None` if `records` does not end
/// exactly at a record boundary.
pub fn split_records(mut records: &[u8]) -> Option<Vec<(&[u8], &[u8])>> {
    let mut out = Vec::new();
    while !records.is_empty() {
        if records.len() < RECORD_HEADER_LEN {
            return None;
        }
        let len = usize::from(u16::from_be_bytes([records[3], records[4]]));
        let end = RECORD_HEADER_LEN.checked_add(len)?;
        if records.len() < end {
            return None;
        }
        out.push((
            &records[..RECORD_HEADER_LEN],
            &records[RECORD_HEADER_LEN..end],
        ));
        records = &records[end..];
    }
    Some(out)
}
