//! Sealing records: plaintext and sequence number in, fragment out.

use core::fmt;

use super::{MAX_PLAINTEXT_LEN, MacOrder, ProtocolVersion, RecordConfig, RecordKeys, mac_header};
use super::{mac_header_after, padded_len};
use crate::backends::batch::{Order, SealLane};
use crate::backends::{self, Backend};
use crate::error::Error;
use crate::primitives::explicit_iv::IvGenerator;
use crate::{AesCbcKey, HmacKey};

// One per sealer, and boxing would allocate: the size difference is fine.
#[allow(clippy::large_enum_variant)]
enum IvSource {
    /// TLS 1.0: the last ciphertext block of the previous record.
    Chained([u8; 16]),
    /// TLS 1.1+, DTLS: a fresh unpredictable IV per record.
    Explicit(IvGenerator),
}

/// Seals the records of one direction.
///
/// The buffer handed to [`Sealer::seal_in_place`] holds the plaintext at
/// [`Sealer::payload_offset`] (room for the explicit IV in front of it) and
/// has room for the MAC and padding after it: [`Sealer::sealed_len`] says
/// how much in all. Sealing never allocates.
///
/// ```
/// use cbc_hmac::{Combination, MacOrder, Opener, ProtocolVersion, RecordConfig, RecordKeys, Sealer};
///
/// let config = RecordConfig::new(
///     Combination::Aes128CbcSha256,
///     ProtocolVersion::Tls12,
///     MacOrder::MacThenEncrypt,
/// );
/// let keys = RecordKeys { enc_key: &[1; 16], mac_key: &[2; 32], iv: None };
/// let mut sealer = Sealer::new(config, keys)?;
/// let mut opener = Opener::new(config, keys)?;
///
/// let message = b"GET / HTTP/1.1\r\n\r\n";
/// let mut buf = [0u8; 128];
/// let offset = sealer.payload_offset();
/// buf[offset..offset + message.len()].copy_from_slice(message);
/// let n = sealer.seal_in_place(0, 23, &mut buf, message.len())?;
/// assert_eq!(n, sealer.sealed_len(message.len()));
///
/// let plaintext = opener.open_in_place(0, 23, &mut buf[..n])?;
/// assert_eq!(plaintext, message);
/// # Ok::<(), cbc_hmac::Error>(())
/// ```
pub struct Sealer {
    config: RecordConfig,
    aes: AesCbcKey,
    mac: HmacKey,
    iv: IvSource,
}

impl Sealer {
    /// A sealer on the best available backend. Fails on key lengths that do
    /// not fit the combination, an IV given for a version other than TLS 1.0
    /// (or none for TLS 1.0), a combination the version does not allow, or a
    /// failing OS random source (explicit-IV versions seed their IV
    /// generator once, here).
    pub fn new(config: RecordConfig, keys: RecordKeys<'_>) -> Result<Self, Error> {
        Self::with_backend(config, keys, Backend::detect())
    }

    /// Like [`Sealer::new`] on a chosen backend.
    pub fn with_backend(
        config: RecordConfig,
        keys: RecordKeys<'_>,
        backend: Backend,
    ) -> Result<Self, Error> {
        let (aes, mac, iv) = super::build_keys(&config, &keys, backend)?;
        let iv = match iv {
            Some(iv) => IvSource::Chained(iv),
            None => IvSource::Explicit(IvGenerator::from_os(aes.backend())?),
        };
        Ok(Sealer {
            config,
            aes,
            mac,
            iv,
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

    /// Where the plaintext starts in the seal buffer: the explicit IV's
    /// length (16, or 0 for TLS 1.0).
    pub fn payload_offset(&self) -> usize {
        self.config.version.explicit_iv_len()
    }

    /// The exact fragment length for a plaintext of `plaintext_len` bytes
    /// (explicit IV, ciphertext and, for encrypt-then-MAC, the MAC). The
    /// sealer always uses the least padding.
    pub fn sealed_len(&self, plaintext_len: usize) -> usize {
        let iv = self.payload_offset();
        let m = self.config.combination.mac().output_len();
        match self.config.mac_order {
            MacOrder::MacThenEncrypt => iv + padded_len(plaintext_len + m),
            MacOrder::EncryptThenMac => iv + padded_len(plaintext_len) + m,
        }
    }

    /// Seals the plaintext at `buf[payload_offset()..][..plaintext_len]`
    /// in place, for MAC sequence value `seq` (DTLS: see
    /// [`crate::dtls_sequence`]) and record content type `content_type`.
    /// Returns the fragment length: the fragment is `buf[..n]`.
    pub fn seal_in_place(
        &mut self,
        seq: u64,
        content_type: u8,
        buf: &mut [u8],
        plaintext_len: usize,
    ) -> Result<usize, Error> {
        self.check(buf, plaintext_len)?;
        let iv = self.next_iv();
        Ok(self.seal_with(seq, content_type, buf, plaintext_len, iv))
    }

    /// Like [`Sealer::seal_in_place`] with a caller-chosen explicit IV, for
    /// known-answer tests. The IV must be unpredictable in real use. TLS 1.0
    /// has no explicit IV: [`Error::IvMismatch`].
    pub fn seal_in_place_with_iv(
        &mut self,
        seq: u64,
        content_type: u8,
        buf: &mut [u8],
        plaintext_len: usize,
        iv: &[u8],
    ) -> Result<usize, Error> {
        if self.config.version == ProtocolVersion::Tls10 {
            return Err(Error::IvMismatch {
                version: self.config.version,
            });
        }
        let iv: [u8; 16] = iv.try_into().map_err(|_| Error::InvalidIvLength {
            expected: 16,
            actual: iv.len(),
        })?;
        self.check(buf, plaintext_len)?;
        Ok(self.seal_with(seq, content_type, buf, plaintext_len, iv))
    }

    /// Copies `plaintext` into `out` at the payload offset and seals it
    /// there; returns the fragment length.
    pub fn seal(
        &mut self,
        seq: u64,
        content_type: u8,
        plaintext: &[u8],
        out: &mut [u8],
    ) -> Result<usize, Error> {
        self.check(out, plaintext.len())?;
        let offset = self.payload_offset();
        out[offset..offset + plaintext.len()].copy_from_slice(plaintext);
        self.seal_in_place(seq, content_type, out, plaintext.len())
    }

    fn check(&self, buf: &[u8], plaintext_len: usize) -> Result<(), Error> {
        check_seal_len(plaintext_len, self.sealed_len(plaintext_len), buf.len())
    }

    /// Seals one record alone, lengths and IV already checked
    /// ([`Sealer::check_job`]): the IV given, else the next one. What a
    /// batch too small to share lanes runs, without the lane window.
    pub(super) fn seal_checked(
        &mut self,
        seq: u64,
        content_type: u8,
        buf: &mut [u8],
        plaintext_len: usize,
        iv: Option<[u8; 16]>,
    ) -> usize {
        let iv = iv.unwrap_or_else(|| self.next_iv());
        self.seal_with(seq, content_type, buf, plaintext_len, iv)
    }

    /// Seals with lengths already checked.
    fn seal_with(
        &mut self,
        seq: u64,
        content_type: u8,
        buf: &mut [u8],
        plaintext_len: usize,
        iv: [u8; 16],
    ) -> usize {
        let (mut lane, n) = self.lane(seq, content_type, buf, plaintext_len, iv);
        lane.seal_one();
        let next = lane.iv;
        self.chain(next);
        n
    }

    /// The IV of the next record: the chained one (TLS 1.0) or a fresh one.
    pub(super) fn next_iv(&mut self) -> [u8; 16] {
        match &mut self.iv {
            IvSource::Chained(iv) => *iv,
            IvSource::Explicit(generator) => generator.next_iv(),
        }
    }

    /// Whether records chain their IVs (TLS 1.0), so must be sealed one
    /// after another.
    pub(super) fn chains(&self) -> bool {
        matches!(self.iv, IvSource::Chained(_))
    }

    /// TLS 1.0: the last ciphertext block becomes the next record's IV.
    pub(super) fn chain(&mut self, last_block: [u8; 16]) {
        if let IvSource::Chained(chain) = &mut self.iv {
            *chain = last_block;
        }
    }

    /// Checks the lengths and a caller-given IV: what
    /// [`Sealer::seal_in_place_with_iv`] checks.
    pub(super) fn check_job(
        &self,
        buf: &[u8],
        plaintext_len: usize,
        iv: Option<[u8; 16]>,
    ) -> Result<(), Error> {
        if iv.is_some() && self.config.version == ProtocolVersion::Tls10 {
            return Err(Error::IvMismatch {
                version: self.config.version,
            });
        }
        self.check(buf, plaintext_len)
    }

    /// Whether `count` records of this sealer's kind, the shortest with
    /// `shortest` bytes of plaintext, would be sealed in lanes.
    pub(super) fn lanes_may_pay(&self, count: usize, shortest: usize) -> bool {
        let order = match self.config.mac_order {
            MacOrder::MacThenEncrypt => Order::HashThenCipher,
            MacOrder::EncryptThenMac => Order::CipherThenHash,
        };
        crate::backends::batch::seal_may_pay(self.aes.raw(), &self.mac, order, count, shortest)
    }

    /// The seal job of one record, lengths already checked: writes the
    /// explicit IV and builds the MAC prefix. Returns the job and the
    /// fragment length.
    ///
    /// Inlined into its callers: returned from a call, the job was copied
    /// out of the return slot with wide loads right after the callee's
    /// narrow stores, which the store buffer cannot forward (about 5 ns a
    /// record in the batch seal's one-by-one path).
    #[inline(always)]
    pub(super) fn lane<'s>(
        &'s self,
        seq: u64,
        content_type: u8,
        buf: &'s mut [u8],
        plaintext_len: usize,
        iv: [u8; 16],
    ) -> (SealLane<'s>, usize) {
        let offset = self.payload_offset();
        let m = self.mac.output_len();
        let version = self.config.version.wire();
        buf[..offset].copy_from_slice(&iv[..offset]);
        let (aes, mac) = (self.aes.raw(), &self.mac);
        match self.config.mac_order {
            MacOrder::MacThenEncrypt => {
                let header = mac_header(seq, content_type, version, plaintext_len);
                let body_len = padded_len(plaintext_len + m);
                let lane = SealLane {
                    aes,
                    mac,
                    header,
                    iv,
                    order: Order::HashThenCipher,
                    buf: &mut buf[offset..offset + body_len],
                    iv_len: 0,
                    plaintext_len,
                };
                (lane, offset + body_len)
            }
            MacOrder::EncryptThenMac => {
                let end = offset + padded_len(plaintext_len);
                let header = mac_header(seq, content_type, version, end);
                let lane = SealLane {
                    aes,
                    mac,
                    header,
                    iv,
                    order: Order::CipherThenHash,
                    buf: &mut buf[..end + m],
                    iv_len: offset,
                    plaintext_len,
                };
                (lane, end + m)
            }
        }
    }
}

/// The checks before a seal: the plaintext fits a record and the buffer
/// holds the `needed` bytes of the sealed output.
pub(crate) fn check_seal_len(
    plaintext_len: usize,
    needed: usize,
    available: usize,
) -> Result<(), Error> {
    if plaintext_len > MAX_PLAINTEXT_LEN {
        return Err(Error::PlaintextTooLong {
            len: plaintext_len,
            max: MAX_PLAINTEXT_LEN,
        });
    }
    if available < needed {
        return Err(Error::BufferTooSmall {
            needed,
            actual: available,
        });
    }
    Ok(())
}

/// Seals the plaintext at `buf[..plaintext_len]` MAC-then-encrypt, in
/// place, with the least padding and the MAC header `prefix || length`,
/// CBC from `iv` (which becomes the last ciphertext block). `buf` holds at
/// least [`padded_len`]`(plaintext_len + MAC length)` bytes (checked by
/// the caller); returns that length. Shared with [`crate::TlsAead`].
pub(crate) fn seal_body(
    aes: &AesCbcKey,
    mac: &HmacKey,
    prefix: &[u8; 11],
    iv: &mut [u8; 16],
    buf: &mut [u8],
    plaintext_len: usize,
) -> usize {
    let header = mac_header_after(prefix, plaintext_len);
    let body_len = padded_len(plaintext_len + mac.output_len());
    let body = &mut buf[..body_len];
    backends::seal_mac_then_encrypt(aes.raw(), mac, &header, iv, body, plaintext_len);
    body_len
}

impl fmt::Debug for Sealer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sealer")
            .field("config", &self.config)
            .field("backend", &self.backend())
            .finish_non_exhaustive()
    }
}
