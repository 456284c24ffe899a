//! TLS/DTLS CBC records composed from EVP AES-CBC and HMAC.

use std::fmt;

use crate::aes::EvpAesCbc;
use crate::error::{Error, Result};
use crate::hmac::{Digest, Hmac};
use crate::{MAX_PLAINTEXT_LEN, MacOrder, TlsParams, sealed_len, tls_mac_header};

/// TLS/DTLS CBC record protection from EVP AES-CBC and `HMAC_CTX`, laid out
/// by hand: every combination (SHA-384 included), both MAC orders, every
/// version. For TLS 1.0 the object carries the chained IV of each direction
/// (the seal chain and the open chain are independent, starting from the
/// same initial IV): a record that fails to open does not advance it.
///
/// Formats: MAC-then-encrypt (RFC 5246 6.2.3.2, RFC 4346, RFC 2246) is
/// `[IV] || CBC(plaintext || HMAC(hdr(len = plaintext) || plaintext) ||
/// padding)`; encrypt-then-MAC (RFC 7366) is `[IV] || C || HMAC(hdr(len =
/// IV + C) || [IV] || C)` with `C = CBC(plaintext || padding)`; `hdr` is
/// [`tls_mac_header`]; `[IV]` is absent for TLS 1.0.
///
/// **A reference, not a hardened implementation**: [`ComposedTls::open`]
/// checks padding and then the MAC with early returns and variable-time
/// comparisons (a padding oracle and Lucky Thirteen would both apply). It is
/// for checking outputs, not for protecting traffic.
///
/// ```
/// use openssl_ref::{ComposedTls, Digest, MacOrder, TLS1_2, TlsParams};
///
/// let params = TlsParams {
///     enc_key: &[1; 16],
///     mac_key: &[2; 20],
///     digest: Digest::Sha1,
///     version: TLS1_2,
///     mac_order: MacOrder::MacThenEncrypt,
///     tls10_iv: None,
/// };
/// let mut tls = ComposedTls::new(&params)?;
/// let mut record = Vec::new();
/// tls.seal(7, 23, Some(&[3; 16]), b"hello", &mut record)?;
/// assert_eq!(record.len(), 16 + 32); // IV, then hello || MAC || padding
/// assert_eq!(tls.open(7, 23, &mut record)?, b"hello");
/// # Ok::<(), openssl_ref::Error>(())
/// ```
pub struct ComposedTls {
    aes: EvpAesCbc,
    mac: Hmac,
    version: [u8; 2],
    explicit: bool,
    order: MacOrder,
    seal_chain: [u8; 16],
    open_chain: [u8; 16],
}

impl ComposedTls {
    /// Keys both directions.
    pub fn new(params: &TlsParams<'_>) -> Result<Self> {
        let (explicit, iv) = params.iv_mode()?;
        if params.enc_key.len() != 16 && params.enc_key.len() != 32 {
            return Err(Error::InvalidInput("TLS AES keys are 16 or 32 bytes"));
        }
        Ok(ComposedTls {
            aes: EvpAesCbc::new(params.enc_key)?,
            mac: Hmac::new(params.digest, params.mac_key)?,
            version: params.version,
            explicit,
            order: params.mac_order,
            seal_chain: iv,
            open_chain: iv,
        })
    }

    /// The version bytes.
    pub fn version(&self) -> [u8; 2] {
        self.version
    }

    /// The MAC order.
    pub fn mac_order(&self) -> MacOrder {
        self.order
    }

    /// The HMAC digest.
    pub fn digest(&self) -> Digest {
        self.mac.digest()
    }

    /// Where the plaintext starts in a record: 16 (after the explicit IV),
    /// or 0 for TLS 1.0.
    pub fn payload_offset(&self) -> usize {
        if self.explicit { 16 } else { 0 }
    }

    /// The length of the record sealing `plaintext_len` bytes (least
    /// padding).
    pub fn sealed_len(&self, plaintext_len: usize) -> usize {
        sealed_len(
            self.explicit,
            self.order,
            self.mac.output_len(),
            plaintext_len,
        )
    }

    /// Seals `plaintext` into `out` (cleared first) as the record fragment
    /// goes on the wire, with the least padding. `explicit_iv` is the IV
    /// sent in front of the record: required for TLS 1.1+ and DTLS, `None`
    /// for TLS 1.0 (which uses and advances the chained IV).
    pub fn seal(
        &mut self,
        seq: u64,
        content_type: u8,
        explicit_iv: Option<&[u8; 16]>,
        plaintext: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<()> {
        self.seal_vec(seq, content_type, explicit_iv, plaintext, None, out)
    }

    /// Like [`ComposedTls::seal`], with `padding_len` padding bytes after
    /// the length byte (each byte of the padding, length byte included,
    /// equals `padding_len`; RFC 5246 allows 0 to 255). `padding_len` must
    /// make the CBC part whole blocks.
    pub fn seal_with_padding(
        &mut self,
        seq: u64,
        content_type: u8,
        explicit_iv: Option<&[u8; 16]>,
        plaintext: &[u8],
        padding_len: u8,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        self.seal_vec(
            seq,
            content_type,
            explicit_iv,
            plaintext,
            Some(padding_len),
            out,
        )
    }

    /// Seals in place: the plaintext is `buf[payload_offset()..][..plaintext_len]`,
    /// and `buf` has room for [`ComposedTls::sealed_len`] bytes. Returns the
    /// record length.
    pub fn seal_in_place(
        &mut self,
        seq: u64,
        content_type: u8,
        explicit_iv: Option<&[u8; 16]>,
        buf: &mut [u8],
        plaintext_len: usize,
    ) -> Result<usize> {
        self.seal_padded(seq, content_type, explicit_iv, buf, plaintext_len, None)
    }

    fn seal_vec(
        &mut self,
        seq: u64,
        content_type: u8,
        explicit_iv: Option<&[u8; 16]>,
        plaintext: &[u8],
        padding: Option<u8>,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        if plaintext.len() > MAX_PLAINTEXT_LEN {
            return Err(Error::InvalidInput("plaintext over 2^14 bytes"));
        }
        let off = self.payload_offset();
        let room = self.sealed_len(plaintext.len()) + usize::from(padding.unwrap_or(0)) + 16;
        out.clear();
        out.resize(room, 0);
        out[off..off + plaintext.len()].copy_from_slice(plaintext);
        let n = self.seal_padded(
            seq,
            content_type,
            explicit_iv,
            out,
            plaintext.len(),
            padding,
        )?;
        out.truncate(n);
        Ok(())
    }

    fn seal_padded(
        &mut self,
        seq: u64,
        content_type: u8,
        explicit_iv: Option<&[u8; 16]>,
        buf: &mut [u8],
        plaintext_len: usize,
        padding: Option<u8>,
    ) -> Result<usize> {
        if plaintext_len > MAX_PLAINTEXT_LEN {
            return Err(Error::InvalidInput("plaintext over 2^14 bytes"));
        }
        let iv = match (self.explicit, explicit_iv) {
            (true, Some(iv)) => *iv,
            (false, None) => self.seal_chain,
            (true, None) => {
                return Err(Error::InvalidInput(
                    "TLS 1.1+ and DTLS records need an explicit IV",
                ));
            }
            (false, Some(_)) => {
                return Err(Error::InvalidInput("TLS 1.0 chains its IV; no explicit IV"));
            }
        };
        let off = self.payload_offset();
        let m = self.mac.output_len();
        let covered = match self.order {
            MacOrder::MacThenEncrypt => plaintext_len + m,
            MacOrder::EncryptThenMac => plaintext_len,
        };
        let pad = match padding {
            None => 15 - covered % 16,
            Some(p) if (covered + usize::from(p) + 1).is_multiple_of(16) => usize::from(p),
            Some(_) => {
                return Err(Error::InvalidInput(
                    "padding length does not give whole blocks",
                ));
            }
        };
        let cbc_end = off + covered + pad + 1;
        let total = match self.order {
            MacOrder::MacThenEncrypt => cbc_end,
            MacOrder::EncryptThenMac => cbc_end + m,
        };
        if buf.len() < total {
            return Err(Error::InvalidInput("seal buffer too small"));
        }
        let pad_byte = pad as u8; // pad <= 255: checked or < 16
        match self.order {
            MacOrder::MacThenEncrypt => {
                let header = tls_mac_header(seq, content_type, self.version, plaintext_len as u16);
                let tag = self
                    .mac
                    .mac_parts(&[&header, &buf[off..off + plaintext_len]])?;
                buf[off + plaintext_len..off + covered].copy_from_slice(tag.as_slice());
                buf[off + covered..cbc_end].fill(pad_byte);
                self.aes.encrypt(&iv, &mut buf[off..cbc_end])?;
                buf[..off].copy_from_slice(&iv[..off]);
            }
            MacOrder::EncryptThenMac => {
                buf[off + covered..cbc_end].fill(pad_byte);
                self.aes.encrypt(&iv, &mut buf[off..cbc_end])?;
                buf[..off].copy_from_slice(&iv[..off]);
                let header = tls_mac_header(seq, content_type, self.version, cbc_end as u16);
                let tag = self.mac.mac_parts(&[&header, &buf[..cbc_end]])?;
                buf[cbc_end..total].copy_from_slice(tag.as_slice());
            }
        }
        if !self.explicit {
            self.seal_chain.copy_from_slice(&buf[cbc_end - 16..cbc_end]);
        }
        Ok(total)
    }

    /// Opens a record fragment in place; returns the plaintext (a slice of
    /// `fragment`). Any failure (length, padding, MAC) is
    /// [`Error::BadRecord`]; the fragment is then left partly decrypted and
    /// the TLS 1.0 chain is not advanced. Padding of 0 to 255 bytes is
    /// accepted.
    pub fn open<'b>(
        &mut self,
        seq: u64,
        content_type: u8,
        fragment: &'b mut [u8],
    ) -> Result<&'b mut [u8]> {
        let len = fragment.len();
        let off = self.payload_offset();
        let m = self.mac.output_len();
        // The CBC part: everything after the IV, less the MAC for EtM.
        let cbc_end = match self.order {
            MacOrder::MacThenEncrypt => len,
            MacOrder::EncryptThenMac => len.checked_sub(m).ok_or(Error::BadRecord)?,
        };
        if cbc_end < off + 16 || !(cbc_end - off).is_multiple_of(16) || len > usize::from(u16::MAX)
        {
            return Err(Error::BadRecord);
        }
        let mut next_chain = [0u8; 16];
        next_chain.copy_from_slice(&fragment[cbc_end - 16..cbc_end]);
        let mut iv = self.open_chain;
        if self.explicit {
            iv.copy_from_slice(&fragment[..16]);
        }
        if self.order == MacOrder::EncryptThenMac {
            let header = tls_mac_header(seq, content_type, self.version, cbc_end as u16);
            let tag = self.mac.mac_parts(&[&header, &fragment[..cbc_end]])?;
            if tag.as_slice() != &fragment[cbc_end..] {
                return Err(Error::BadRecord);
            }
        }
        self.aes.decrypt(&iv, &mut fragment[off..cbc_end])?;
        let body = &fragment[off..cbc_end];
        let pad = usize::from(body[body.len() - 1]);
        let mac_inside = match self.order {
            MacOrder::MacThenEncrypt => m,
            MacOrder::EncryptThenMac => 0,
        };
        let plaintext_len = body
            .len()
            .checked_sub(pad + 1 + mac_inside)
            .ok_or(Error::BadRecord)?;
        if body[body.len() - 1 - pad..]
            .iter()
            .any(|&b| usize::from(b) != pad)
        {
            return Err(Error::BadRecord);
        }
        if self.order == MacOrder::MacThenEncrypt {
            let header = tls_mac_header(seq, content_type, self.version, plaintext_len as u16);
            let tag = self.mac.mac_parts(&[&header, &body[..plaintext_len]])?;
            if tag.as_slice() != &body[plaintext_len..plaintext_len + m] {
                return Err(Error::BadRecord);
            }
        }
        if !self.explicit {
            self.open_chain = next_chain;
        }
        Ok(&mut fragment[off..off + plaintext_len])
    }
}

impl fmt::Debug for ComposedTls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ComposedTls")
            .field("version", &self.version)
            .field("mac_order", &self.order)
            .field("digest", &self.mac.digest())
            .finish_non_exhaustive()
    }
}
