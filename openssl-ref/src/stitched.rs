//! OpenSSL's stitched AES-CBC-HMAC-SHA ciphers in TLS record mode.
//!
//! The conventions (OpenSSL 3.0 `cipher_aes_cbc_hmac_sha{1,256}_hw.c`, the
//! legacy `e_aes_cbc_hmac_sha{1,256}.c`, and libssl's `tls1_enc`):
//!
//! - `EVP_CTRL_AEAD_SET_MAC_KEY` once, *after* the AES key (keying the AES
//!   part resets the MAC state).
//! - Per record, `EVP_CTRL_AEAD_TLS1_AAD` with the 13-byte
//!   `seq || type || version || length` header, then one `EVP_CipherUpdate`
//!   over the whole record.
//! - Sealing: the length in the header counts the explicit IV block too
//!   (libssl passes the record length so far, IV included); for versions >=
//!   0x0302 OpenSSL subtracts 16 and rewrites the header in place before
//!   MAC'ing it. The control returns the number of bytes to add (MAC plus
//!   padding); the update then runs over `[IV block] || plaintext || room`
//!   of exactly that total length and writes the MAC and padding itself.
//!   The IV block is *encrypted* like the rest, chained from the context's
//!   running IV: what goes on the wire is its ciphertext.
//! - Opening: the header's length field is ignored (OpenSSL recomputes it
//!   from the padding); the control returns the MAC length. The update
//!   returns failure for a bad MAC or padding, success otherwise, and never
//!   a length: the plaintext length is `len - IV - MAC - 1 - last byte`.
//! - The explicit-IV test is `version >= 0x0302` numerically, so DTLS's
//!   0xfeff and 0xfefd count as explicit-IV versions. TLS 1.0 uses the
//!   context's running IV (the chained IV).

use std::ffi::{CStr, c_int};
use std::fmt;

use crate::aes::EvpAesCbc;
use crate::error::{Error, Result};
use crate::ffi::{Cipher, CipherCtx, clear_errors, take_error};
use crate::hmac::Digest;
use crate::{MAX_PLAINTEXT_LEN, MacOrder, TlsParams, sealed_len, tls_mac_header};

/// `EVP_CTRL_AEAD_TLS1_AAD` from `<openssl/evp.h>`.
const EVP_CTRL_AEAD_TLS1_AAD: c_int = 0x16;
/// `EVP_CTRL_AEAD_SET_MAC_KEY` from `<openssl/evp.h>`.
const EVP_CTRL_AEAD_SET_MAC_KEY: c_int = 0x17;

/// One of OpenSSL's stitched ciphers (`AES-128-CBC-HMAC-SHA1`,
/// `AES-256-CBC-HMAC-SHA1`, `AES-128-CBC-HMAC-SHA256`,
/// `AES-256-CBC-HMAC-SHA256`) in TLS record mode, as libssl uses it for
/// MAC-then-encrypt CBC suites. Both directions: a sealing and an opening
/// context, keyed once. For TLS 1.0 each carries its chained IV; a record
/// that fails to open does not advance it (the wrapper restores it).
///
/// Exists only where OpenSSL has the assembly: x86-64 with AES-NI (the
/// SHA-256 ones also need AVX or SHA extensions); [`StitchedTlsCipher::new`]
/// returns [`Error::Unavailable`] elsewhere, for SHA-384 and for
/// encrypt-then-MAC.
pub struct StitchedTlsCipher {
    name: &'static str,
    enc: CipherCtx,
    dec: CipherCtx,
    /// Same AES key, plain CBC: to pick the IV block whose encryption is
    /// the requested explicit IV.
    iv_block: EvpAesCbc,
    mac_len: usize,
    version: [u8; 2],
    explicit: bool,
    seal_chain: [u8; 16],
    open_chain: [u8; 16],
}

impl StitchedTlsCipher {
    /// OpenSSL's name of the stitched cipher for an AES key length and a
    /// digest, if OpenSSL has one (not for SHA-384).
    pub fn cipher_name(enc_key_len: usize, digest: Digest) -> Option<&'static str> {
        Self::c_name(enc_key_len, digest).map(|n| n.to_str().unwrap_or(""))
    }

    fn c_name(enc_key_len: usize, digest: Digest) -> Option<&'static CStr> {
        match (enc_key_len, digest) {
            (16, Digest::Sha1) => Some(c"AES-128-CBC-HMAC-SHA1"),
            (32, Digest::Sha1) => Some(c"AES-256-CBC-HMAC-SHA1"),
            (16, Digest::Sha256) => Some(c"AES-128-CBC-HMAC-SHA256"),
            (32, Digest::Sha256) => Some(c"AES-256-CBC-HMAC-SHA256"),
            _ => None,
        }
    }

    /// Whether this OpenSSL on this CPU has the stitched cipher.
    pub fn is_available(enc_key_len: usize, digest: Digest) -> bool {
        Self::c_name(enc_key_len, digest)
            .and_then(|name| Cipher::by_name(name, enc_key_len))
            .is_some()
    }

    /// Keys both directions: the AES key, then the MAC key
    /// (`EVP_CTRL_AEAD_SET_MAC_KEY`); for TLS 1.0 the initial IV.
    pub fn new(params: &TlsParams<'_>) -> Result<Self> {
        if params.mac_order == MacOrder::EncryptThenMac {
            return Err(Error::Unavailable(
                "encrypt-then-MAC in OpenSSL's stitched ciphers",
            ));
        }
        let key_len = params.enc_key.len();
        if key_len != 16 && key_len != 32 {
            return Err(Error::InvalidInput("TLS AES keys are 16 or 32 bytes"));
        }
        let c_name = Self::c_name(key_len, params.digest).ok_or(Error::Unavailable(
            "a stitched AES-CBC-HMAC cipher for this digest",
        ))?;
        let name = c_name.to_str().unwrap_or("");
        let (explicit, iv) = params.iv_mode()?;
        let cipher = Cipher::by_name(c_name, key_len).ok_or(Error::Unavailable(name))?;
        let mut enc = CipherCtx::new(cipher, params.enc_key, &iv, true)?;
        let mut dec = CipherCtx::new(cipher, params.enc_key, &iv, false)?;
        let mut mac_key = params.mac_key.to_vec();
        for ctx in [&mut enc, &mut dec] {
            if ctx.ctrl(EVP_CTRL_AEAD_SET_MAC_KEY, &mut mac_key) <= 0 {
                return Err(take_error("EVP_CTRL_AEAD_SET_MAC_KEY"));
            }
        }
        mac_key.fill(0);
        Ok(StitchedTlsCipher {
            name,
            enc,
            dec,
            iv_block: EvpAesCbc::new(params.enc_key)?,
            mac_len: params.digest.output_len(),
            version: params.version,
            explicit,
            seal_chain: iv,
            open_chain: iv,
        })
    }

    /// OpenSSL's name of the cipher, for example `AES-128-CBC-HMAC-SHA1`.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The version bytes.
    pub fn version(&self) -> [u8; 2] {
        self.version
    }

    /// Where the plaintext starts in a record: 16 (after the explicit IV),
    /// or 0 for TLS 1.0.
    pub fn payload_offset(&self) -> usize {
        if self.explicit { 16 } else { 0 }
    }

    /// The length of the record sealing `plaintext_len` bytes.
    pub fn sealed_len(&self, plaintext_len: usize) -> usize {
        sealed_len(
            self.explicit,
            MacOrder::MacThenEncrypt,
            self.mac_len,
            plaintext_len,
        )
    }

    /// Seals `plaintext` into `out` (cleared first) as the record fragment
    /// goes on the wire. `explicit_iv` is the IV that appears in front of
    /// the record, exactly: required for TLS 1.1+ and DTLS, `None` for TLS
    /// 1.0. (To make OpenSSL's encrypted IV block come out as `explicit_iv`,
    /// the context's IV is reset to zero and the IV block is AES-decrypted
    /// `explicit_iv`: one IV reset and one block more than libssl does, see
    /// [`StitchedTlsCipher::seal_in_place_libssl`].)
    pub fn seal(
        &mut self,
        seq: u64,
        content_type: u8,
        explicit_iv: Option<&[u8; 16]>,
        plaintext: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<()> {
        if plaintext.len() > MAX_PLAINTEXT_LEN {
            return Err(Error::InvalidInput("plaintext over 2^14 bytes"));
        }
        let off = self.payload_offset();
        out.clear();
        out.resize(self.sealed_len(plaintext.len()), 0);
        out[off..off + plaintext.len()].copy_from_slice(plaintext);
        let n = self.seal_in_place(seq, content_type, explicit_iv, out, plaintext.len())?;
        out.truncate(n);
        Ok(())
    }

    /// Seals in place with an exact explicit IV (as [`StitchedTlsCipher::seal`]):
    /// the plaintext is `buf[payload_offset()..][..plaintext_len]` and `buf`
    /// has room for [`StitchedTlsCipher::sealed_len`] bytes. Returns the
    /// record length.
    pub fn seal_in_place(
        &mut self,
        seq: u64,
        content_type: u8,
        explicit_iv: Option<&[u8; 16]>,
        buf: &mut [u8],
        plaintext_len: usize,
    ) -> Result<usize> {
        match (self.explicit, explicit_iv) {
            (true, Some(iv)) => {
                if buf.len() < self.sealed_len(plaintext_len) {
                    return Err(Error::InvalidInput("seal buffer too small"));
                }
                // E(0 xor D(iv)) = iv: the first ciphertext block, the one
                // on the wire, is the requested IV.
                self.enc.reset_iv(&[0; 16])?;
                buf[..16].copy_from_slice(iv);
                self.iv_block.decrypt(&[0; 16], &mut buf[..16])?;
            }
            (false, None) => {}
            (true, None) => {
                return Err(Error::InvalidInput(
                    "TLS 1.1+ and DTLS records need an explicit IV",
                ));
            }
            (false, Some(_)) => {
                return Err(Error::InvalidInput("TLS 1.0 chains its IV; no explicit IV"));
            }
        }
        self.seal_record(seq, content_type, buf, plaintext_len)
    }

    /// Seals in place exactly as libssl does: for TLS 1.1+ and DTLS,
    /// `buf[..16]` holds an IV block the caller filled (libssl: random
    /// bytes), which OpenSSL CBC-encrypts chained from the previous record's
    /// last ciphertext block; its ciphertext is the explicit IV on the wire.
    /// No extra work per record: the fair thing to time. For TLS 1.0 it is
    /// [`StitchedTlsCipher::seal_in_place`] with `None`.
    pub fn seal_in_place_libssl(
        &mut self,
        seq: u64,
        content_type: u8,
        buf: &mut [u8],
        plaintext_len: usize,
    ) -> Result<usize> {
        self.seal_record(seq, content_type, buf, plaintext_len)
    }

    fn seal_record(
        &mut self,
        seq: u64,
        content_type: u8,
        buf: &mut [u8],
        plaintext_len: usize,
    ) -> Result<usize> {
        if plaintext_len > MAX_PLAINTEXT_LEN {
            return Err(Error::InvalidInput("plaintext over 2^14 bytes"));
        }
        let off = self.payload_offset();
        let total = self.sealed_len(plaintext_len);
        if buf.len() < total {
            return Err(Error::InvalidInput("seal buffer too small"));
        }
        // libssl's convention: the length so far, explicit IV included.
        let mut aad = tls_mac_header(
            seq,
            content_type,
            self.version,
            (off + plaintext_len) as u16,
        );
        let added = self.enc.ctrl(EVP_CTRL_AEAD_TLS1_AAD, &mut aad);
        if added <= 0 {
            let err = take_error("EVP_CTRL_AEAD_TLS1_AAD");
            self.restore_seal_chain();
            return Err(err);
        }
        if off + plaintext_len + added as usize != total {
            self.restore_seal_chain();
            return Err(Error::OpenSsl {
                call: "EVP_CTRL_AEAD_TLS1_AAD (unexpected MAC and padding length)",
                code: 0,
            });
        }
        if !self.enc.update_in_place(&mut buf[..total]) {
            let err = take_error("EVP_CipherUpdate");
            self.restore_seal_chain();
            return Err(err);
        }
        if !self.explicit {
            self.seal_chain.copy_from_slice(&buf[total - 16..total]);
        }
        Ok(total)
    }

    fn restore_seal_chain(&mut self) {
        if !self.explicit {
            // Best effort; a failure here surfaces on the next record.
            let _ = self.enc.reset_iv(&self.seal_chain);
        }
    }

    /// Opens a record fragment in place; returns the plaintext (a slice of
    /// `fragment`). A bad MAC, bad padding or impossible length is
    /// [`Error::BadRecord`] (OpenSSL's verdict, except lengths no record
    /// can have, which are refused before calling it).
    pub fn open<'b>(
        &mut self,
        seq: u64,
        content_type: u8,
        fragment: &'b mut [u8],
    ) -> Result<&'b mut [u8]> {
        let len = fragment.len();
        let off = self.payload_offset();
        if len < off + self.mac_len + 1 || !len.is_multiple_of(16) || len > usize::from(u16::MAX) {
            return Err(Error::BadRecord);
        }
        let mut next_chain = [0u8; 16];
        next_chain.copy_from_slice(&fragment[len - 16..]);
        // The length field is ignored when opening.
        let mut aad = tls_mac_header(seq, content_type, self.version, 0);
        if self.dec.ctrl(EVP_CTRL_AEAD_TLS1_AAD, &mut aad) <= 0 {
            return Err(take_error("EVP_CTRL_AEAD_TLS1_AAD"));
        }
        if !self.dec.update_in_place(fragment) {
            clear_errors();
            if !self.explicit {
                self.dec.reset_iv(&self.open_chain)?;
            }
            return Err(Error::BadRecord);
        }
        let pad = usize::from(fragment[len - 1]);
        let plaintext_len = (len - off)
            .checked_sub(self.mac_len + 1 + pad)
            .ok_or(Error::BadRecord)?;
        if !self.explicit {
            self.open_chain = next_chain;
        }
        Ok(&mut fragment[off..off + plaintext_len])
    }
}

impl fmt::Debug for StitchedTlsCipher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StitchedTlsCipher")
            .field("name", &self.name)
            .field("version", &self.version)
            .finish_non_exhaustive()
    }
}
