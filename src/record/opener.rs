//! Opening records: fragment and sequence number in, plaintext out.

use core::fmt;

use subtle::ConstantTimeEq;

use super::ct_open::{check_padding, open_mac_then_encrypt};
use super::{
    MacOrder, RecordConfig, RecordKeys, check_fragment_len, mac_header, mac_prefix,
    min_mac_then_encrypt_len,
};
use crate::backends::Backend;
use crate::error::Error;
use crate::primitives::hmac::MAX_TLS_TAG_LEN;
use crate::{AesCbcKey, HmacKey};

/// Opens the records of one direction.
///
/// [`Opener::open_in_place`] decrypts and authenticates a fragment in place
/// and returns the plaintext inside it. Length checks on public values come
/// first and have their own errors; after decryption every padding or MAC
/// failure is [`Error::BadRecordMac`], decided in constant time (see the
/// [`crate::record`] module and `ct_open`). Opening never allocates.
///
/// For TLS 1.0 the opener carries the chained IV: it advances only when a
/// record opens, and after a failure the connection must be closed anyway.
pub struct Opener {
    config: RecordConfig,
    aes: AesCbcKey,
    mac: HmacKey,
    chained_iv: Option<[u8; 16]>,
}

impl Opener {
    /// An opener on the best available backend; fails like
    /// [`crate::Sealer::new`] on bad keys or configurations.
    pub fn new(config: RecordConfig, keys: RecordKeys<'_>) -> Result<Self, Error> {
        Self::with_backend(config, keys, Backend::detect())
    }

    /// Like [`Opener::new`] on a chosen backend.
    pub fn with_backend(
        config: RecordConfig,
        keys: RecordKeys<'_>,
        backend: Backend,
    ) -> Result<Self, Error> {
        let (aes, mac, chained_iv) = super::build_keys(&config, &keys, backend)?;
        Ok(Opener {
            config,
            aes,
            mac,
            chained_iv,
        })
    }

    /// The configuration.
    pub fn config(&self) -> RecordConfig {
        self.config
    }

    /// The backend in use.
    pub fn backend(&self) -> Backend {
        self.aes.backend()
    }

    /// The smallest fragment that can be valid.
    pub fn min_fragment_len(&self) -> usize {
        let iv = self.config.version.explicit_iv_len();
        let m = self.mac.output_len();
        match self.config.mac_order {
            MacOrder::MacThenEncrypt => iv + min_mac_then_encrypt_len(m),
            MacOrder::EncryptThenMac => iv + 16 + m,
        }
    }

    /// The largest plaintext a fragment of `fragment_len` bytes can carry
    /// (with the least padding).
    pub fn max_plaintext_len(&self, fragment_len: usize) -> usize {
        let iv = self.config.version.explicit_iv_len();
        fragment_len.saturating_sub(iv + self.mac.output_len() + 1)
    }

    /// Opens the fragment `buf` (explicit IV, ciphertext, and MAC for
    /// encrypt-then-MAC) in place and returns the plaintext, a sub-slice of
    /// `buf`. `seq` and `content_type` are those the record was sealed with.
    ///
    /// When a record that was decrypted is rejected
    /// ([`Error::BadRecordMac`]), the decrypted region (everything after the
    /// explicit IV, up to the MAC for encrypt-then-MAC) is zeroed, so no
    /// unauthenticated plaintext is left in `buf`. An encrypt-then-MAC record
    /// whose MAC fails is never decrypted and is left as it came.
    ///
    /// ```
    /// use cbc_hmac::{Combination, Error, MacOrder, Opener, ProtocolVersion, RecordConfig, RecordKeys};
    ///
    /// let config = RecordConfig::new(
    ///     Combination::Aes128CbcSha1,
    ///     ProtocolVersion::Tls12,
    ///     MacOrder::MacThenEncrypt,
    /// );
    /// let keys = RecordKeys { enc_key: &[7; 16], mac_key: &[9; 20], iv: None };
    /// let mut opener = Opener::new(config, keys)?;
    /// // A fragment that is not a valid record: rejected, and its body wiped.
    /// let mut fragment = [0x5au8; 16 + 32];
    /// assert_eq!(opener.open_in_place(0, 23, &mut fragment), Err(Error::BadRecordMac));
    /// assert!(fragment[16..].iter().all(|&b| b == 0));
    /// # Ok::<(), Error>(())
    /// ```
    pub fn open_in_place<'b>(
        &mut self,
        seq: u64,
        content_type: u8,
        buf: &'b mut [u8],
    ) -> Result<&'b mut [u8], Error> {
        let len = buf.len();
        let offset = self.config.version.explicit_iv_len();
        let m = self.mac.output_len();
        // Public length checks first, outside the masked code.
        self.check_len(len)?;
        let version = self.config.version.wire();
        let mut iv = [0u8; 16];
        match self.chained_iv {
            Some(chained) => iv = chained,
            None => iv.copy_from_slice(&buf[..16]),
        }

        match self.config.mac_order {
            MacOrder::MacThenEncrypt => {
                let prefix = mac_prefix(seq, content_type, version);
                let mut next_iv = [0u8; 16];
                let data_len = open_body(
                    &self.aes,
                    &self.mac,
                    &iv,
                    &mut next_iv,
                    &prefix,
                    &mut buf[offset..],
                )?;
                self.advance(next_iv);
                Ok(&mut buf[offset..offset + data_len])
            }
            MacOrder::EncryptThenMac => {
                let end = len - m;
                let header = mac_header(seq, content_type, version, end);
                let mut tag = [0u8; MAX_TLS_TAG_LEN];
                self.mac.mac_parts_into(&[&header, &buf[..end]], &mut tag);
                if !bool::from(tag[..m].ct_eq(&buf[end..])) {
                    return Err(Error::BadRecordMac);
                }
                // Authenticated: padding is no longer an oracle, but it is
                // still checked without branches, and fails the same way.
                let body = &mut buf[offset..end];
                self.decrypt(&mut iv, body);
                let (good, padding_total) = check_padding(body, 0);
                if good != usize::MAX {
                    body.fill(0);
                    return Err(Error::BadRecordMac);
                }
                self.advance(iv);
                let data_len = body.len() - padding_total;
                Ok(&mut buf[offset..offset + data_len])
            }
        }
    }

    /// The public length checks on a fragment of `len` bytes.
    pub(super) fn check_len(&self, len: usize) -> Result<(), Error> {
        let offset = self.config.version.explicit_iv_len();
        let outside_cbc = match self.config.mac_order {
            MacOrder::MacThenEncrypt => offset,
            MacOrder::EncryptThenMac => offset + self.mac.output_len(),
        };
        check_fragment_len(len, self.min_fragment_len(), outside_cbc)
    }

    /// The keys, for the batch open.
    pub(super) fn keys(&self) -> (&AesCbcKey, &HmacKey) {
        (&self.aes, &self.mac)
    }

    /// TLS 1.0's chained IV (`None` for explicit IVs).
    pub(super) fn chained_iv(&self) -> Option<[u8; 16]> {
        self.chained_iv
    }

    fn decrypt(&self, iv: &mut [u8; 16], body: &mut [u8]) {
        let (blocks, _) = body.as_chunks_mut::<16>();
        self.aes.raw().decrypt_cbc(iv, blocks);
    }

    /// After a record opened: TLS 1.0's next IV is its last ciphertext
    /// block.
    pub(super) fn advance(&mut self, iv: [u8; 16]) {
        if let Some(chain) = &mut self.chained_iv {
            *chain = iv;
        }
    }
}

/// Opens a MAC-then-encrypt CBC `body` in place (lengths already checked:
/// whole blocks, at least [`min_mac_then_encrypt_len`]), CBC from `iv`,
/// with the MAC header `prefix || length`. Returns the plaintext length:
/// the plaintext is `body[..len]`. `next_iv` receives the last ciphertext
/// block. Shared with [`crate::TlsAead`].
pub(crate) fn open_body(
    aes: &AesCbcKey,
    mac: &HmacKey,
    iv: &[u8; 16],
    next_iv: &mut [u8; 16],
    prefix: &[u8; 11],
    body: &mut [u8],
) -> Result<usize, Error> {
    let (ok, data_len) = open_mac_then_encrypt(
        mac.states(),
        mac.compressor(),
        aes.raw(),
        iv,
        next_iv,
        prefix,
        body,
    );
    // The one declassification: accept or reject.
    if ok != usize::MAX {
        // Leave no decrypted byte behind: the same wipe for every reject
        // of this length, none on accept.
        body.fill(0);
        return Err(Error::BadRecordMac);
    }
    Ok(data_len)
}

impl fmt::Debug for Opener {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Opener")
            .field("config", &self.config)
            .field("backend", &self.backend())
            .finish_non_exhaustive()
    }
}
