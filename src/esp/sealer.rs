//! Sealing ESP packets.

use core::fmt;

use super::{EspConfig, EspKeys, HEADER_LEN, MAX_PAYLOAD_LEN, build_keys, padded_len};
use crate::backends::{self, Backend, EtmJob};
use crate::error::Error;
use crate::primitives::explicit_iv::IvGenerator;
use crate::primitives::hmac::MAX_TAG_LEN;
use crate::{AesCbcKey, HmacKey};

/// Seals the packets of one outbound SA.
///
/// The buffer handed to [`EspSealer::seal_in_place`] holds the payload at
/// [`HEADER_LEN`] and has room for padding, trailer and ICV after it:
/// [`EspSealer::sealed_len`] bytes in all. The caller owns the sequence
/// counter (RFC 4303 section 3.3.3: start at 1, never cycle; without ESN
/// numbers above 2^32 - 1 are refused). Sealing never allocates.
///
/// ```
/// use cbc_hmac::esp::{EspConfig, EspIntegrity, EspKeys, EspSealer, HEADER_LEN};
/// use cbc_hmac::Cipher;
///
/// let config = EspConfig {
///     cipher: Cipher::Aes256Cbc,
///     integrity: EspIntegrity::HmacSha1_96,
///     spi: 7,
///     esn: false,
/// };
/// let mut sealer = EspSealer::new(config, EspKeys { enc_key: &[1; 32], auth_key: &[2; 20] })?;
/// let mut buf = [0u8; 96];
/// buf[HEADER_LEN..HEADER_LEN + 5].copy_from_slice(b"hello");
/// let n = sealer.seal_in_place(1, 17, &mut buf, 5)?;
/// assert_eq!(n, 24 + 16 + 12);
/// assert_eq!(buf[..8], [0, 0, 0, 7, 0, 0, 0, 1]);
/// # Ok::<(), cbc_hmac::Error>(())
/// ```
pub struct EspSealer {
    config: EspConfig,
    aes: AesCbcKey,
    mac: HmacKey,
    iv: IvGenerator,
}

impl EspSealer {
    /// A sealer on the best available backend. Fails on key lengths that
    /// do not fit, an unsupported algorithm, or a failing OS random source
    /// (the IV generator is seeded once, here).
    pub fn new(config: EspConfig, keys: EspKeys<'_>) -> Result<Self, Error> {
        Self::with_backend(config, keys, Backend::detect())
    }

    /// Like [`EspSealer::new`] on a chosen backend.
    pub fn with_backend(
        config: EspConfig,
        keys: EspKeys<'_>,
        backend: Backend,
    ) -> Result<Self, Error> {
        let (aes, mac) = build_keys(&config, &keys, backend)?;
        let iv = IvGenerator::from_os(aes.backend())?;
        Ok(EspSealer {
            config,
            aes,
            mac,
            iv,
        })
    }

    /// The configuration.
    pub fn config(&self) -> EspConfig {
        self.config
    }

    /// The backend in use.
    pub fn backend(&self) -> Backend {
        self.aes.backend()
    }

    /// The packet length for a payload of `payload_len` bytes.
    pub fn sealed_len(&self, payload_len: usize) -> usize {
        self.config.sealed_len(payload_len)
    }

    /// Seals the payload at `buf[HEADER_LEN..][..payload_len]` in place as
    /// packet number `seq` carrying protocol `next_header` (4 IPv4, 41
    /// IPv6, 6 TCP, 17 UDP, ...). Returns the packet length: the packet is
    /// `buf[..n]`.
    pub fn seal_in_place(
        &mut self,
        seq: u64,
        next_header: u8,
        buf: &mut [u8],
        payload_len: usize,
    ) -> Result<usize, Error> {
        self.check(seq, buf, payload_len)?;
        let iv = self.iv.next_iv();
        Ok(self.seal_with(seq, next_header, buf, payload_len, iv))
    }

    /// Like [`EspSealer::seal_in_place`] with a caller-chosen IV, for
    /// known-answer tests. The IV must be unpredictable in real use.
    pub fn seal_in_place_with_iv(
        &mut self,
        seq: u64,
        next_header: u8,
        buf: &mut [u8],
        payload_len: usize,
        iv: &[u8],
    ) -> Result<usize, Error> {
        let iv = crate::primitives::aes_cbc::check_iv(iv)?;
        self.check(seq, buf, payload_len)?;
        Ok(self.seal_with(seq, next_header, buf, payload_len, iv))
    }

    /// Copies `payload` into `out` at [`HEADER_LEN`] and seals it there;
    /// returns the packet length.
    pub fn seal(
        &mut self,
        seq: u64,
        next_header: u8,
        payload: &[u8],
        out: &mut [u8],
    ) -> Result<usize, Error> {
        self.check(seq, out, payload.len())?;
        out[HEADER_LEN..HEADER_LEN + payload.len()].copy_from_slice(payload);
        self.seal_in_place(seq, next_header, out, payload.len())
    }

    fn check(&self, seq: u64, buf: &[u8], payload_len: usize) -> Result<(), Error> {
        self.config.seq_suffix(seq)?;
        if payload_len > MAX_PAYLOAD_LEN {
            return Err(Error::PlaintextTooLong {
                len: payload_len,
                max: MAX_PAYLOAD_LEN,
            });
        }
        let needed = self.sealed_len(payload_len);
        if buf.len() < needed {
            return Err(Error::BufferTooSmall {
                needed,
                actual: buf.len(),
            });
        }
        Ok(())
    }

    /// Seals with lengths and `seq` already checked.
    fn seal_with(
        &mut self,
        seq: u64,
        next_header: u8,
        buf: &mut [u8],
        payload_len: usize,
        mut iv: [u8; 16],
    ) -> usize {
        let end = HEADER_LEN + padded_len(payload_len);
        let icv = self.config.integrity.icv_len();
        buf[..4].copy_from_slice(&self.config.spi.to_be_bytes());
        buf[4..8].copy_from_slice(&(seq as u32).to_be_bytes());
        buf[8..HEADER_LEN].copy_from_slice(&iv);
        // RFC 4303 section 2.4: padding bytes 1, 2, 3, ..., then the
        // trailer.
        let pad_len = end - 2 - HEADER_LEN - payload_len;
        for (i, b) in buf[HEADER_LEN + payload_len..end - 2]
            .iter_mut()
            .enumerate()
        {
            *b = i as u8 + 1;
        }
        buf[end - 2] = pad_len as u8;
        buf[end - 1] = next_header;
        let (suffix, suffix_len) = self.config.seq_suffix(seq).unwrap_or(([0; 4], 0));
        let mut tag = [0u8; MAX_TAG_LEN];
        let job = EtmJob {
            head: &[],
            prefix: &[],
            iv: &mut iv,
            authenticated: &mut buf[..end],
            body_start: HEADER_LEN,
            suffix: &suffix[..suffix_len],
            tag: &mut tag,
            mac_plaintext: false,
        };
        backends::encrypt_then_mac(self.aes.raw(), &self.mac, job);
        buf[end..end + icv].copy_from_slice(&tag[..icv]);
        end + icv
    }
}

impl fmt::Debug for EspSealer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EspSealer")
            .field("config", &self.config)
            .field("backend", &self.backend())
            .finish_non_exhaustive()
    }
}
