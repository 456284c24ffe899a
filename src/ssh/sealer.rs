//! Sealing SSH packets.

use core::fmt;

use super::{
    Keyed, MAX_PADDING, MAX_PAYLOAD_LEN, MIN_PADDING, PAYLOAD_OFFSET, SshKeys, SshSuite,
    least_padding,
};
use crate::backends::{self, Backend, EtmJob};
use crate::error::Error;
use crate::primitives::explicit_iv::IvGenerator;
use crate::primitives::hmac::MAX_TAG_LEN;

/// Seals the packets of one direction.
///
/// The buffer handed to [`SshSealer::seal_in_place`] holds the payload at
/// [`PAYLOAD_OFFSET`] and has room for the padding and the MAC after it:
/// [`SshSealer::sealed_len`] bytes in all. The padding is the least that
/// aligns the packet (4 to 19 bytes), filled from a per-sealer generator
/// (AES in counter mode under a key drawn from the OS once, at
/// construction). Each packet advances the sequence number (wrapping at
/// 2^32, RFC 4253 section 6.4) and the CBC chain. Sealing never allocates.
///
/// ```
/// use cbc_hmac::ssh::{SshKeys, SshSealer, SshSuite};
///
/// let suite = SshSuite::from_names("aes256-cbc", "hmac-sha1").unwrap();
/// let keys = SshKeys { enc_key: &[1; 32], iv: &[2; 16], mac_key: &[3; 20] };
/// let mut sealer = SshSealer::new(suite, keys, 0)?;
/// let mut out = [0u8; 64];
/// let n = sealer.seal(b"\x02ignore", &mut out)?; // SSH_MSG_IGNORE
/// assert_eq!(n, 16 + 20); // one block and the MAC
/// assert_eq!(sealer.sequence(), 1);
/// # Ok::<(), cbc_hmac::Error>(())
/// ```
pub struct SshSealer {
    keyed: Keyed,
    padding: IvGenerator,
}

impl SshSealer {
    /// A sealer on the best available backend, starting at sequence
    /// number `seq` (the number of packets sent in this direction before,
    /// counting from the first after the version exchange). Fails on key
    /// or IV lengths that do not fit the suite, or a failing OS random
    /// source.
    pub fn new(suite: SshSuite, keys: SshKeys<'_>, seq: u32) -> Result<Self, Error> {
        Self::with_backend(suite, keys, seq, Backend::detect())
    }

    /// Like [`SshSealer::new`] on a chosen backend.
    pub fn with_backend(
        suite: SshSuite,
        keys: SshKeys<'_>,
        seq: u32,
        backend: Backend,
    ) -> Result<Self, Error> {
        let keyed = Keyed::new(suite, &keys, seq, backend)?;
        let padding = IvGenerator::from_os(keyed.aes.backend())?;
        Ok(SshSealer { keyed, padding })
    }

    /// The suite.
    pub fn suite(&self) -> SshSuite {
        self.keyed.suite
    }

    /// The backend in use.
    pub fn backend(&self) -> Backend {
        self.keyed.aes.backend()
    }

    /// The sequence number the next packet is sealed with.
    pub fn sequence(&self) -> u32 {
        self.keyed.seq
    }

    /// The packet length on the wire for a payload of `payload_len` bytes
    /// with the least padding, MAC included.
    pub fn sealed_len(&self, payload_len: usize) -> usize {
        let etm = self.keyed.suite.encrypt_then_mac();
        PAYLOAD_OFFSET + payload_len + least_padding(etm, payload_len) + self.keyed.suite.mac_len()
    }

    /// Seals the payload at `buf[PAYLOAD_OFFSET..][..payload_len]` in
    /// place with the least padding, random; returns the packet's length
    /// on the wire: the packet is `buf[..n]`.
    pub fn seal_in_place(&mut self, buf: &mut [u8], payload_len: usize) -> Result<usize, Error> {
        let pad = least_padding(self.keyed.suite.encrypt_then_mac(), payload_len);
        let end = self.check(buf, payload_len, pad)?;
        let padding = &mut buf[PAYLOAD_OFFSET + payload_len..end];
        for chunk in padding.chunks_mut(16) {
            let random = self.padding.next_iv();
            chunk.copy_from_slice(&random[..chunk.len()]);
        }
        Ok(self.seal_checked(buf, end))
    }

    /// Like [`SshSealer::seal_in_place`] with caller-chosen padding bytes,
    /// for known-answer tests and for padding longer than the least (to
    /// hide payload lengths): `padding.len()` must be 4 to 255 and align
    /// the packet, or the call fails with [`Error::InvalidPadding`]. The
    /// padding should be random in real use.
    pub fn seal_in_place_with_padding(
        &mut self,
        buf: &mut [u8],
        payload_len: usize,
        padding: &[u8],
    ) -> Result<usize, Error> {
        let end = self.check(buf, payload_len, padding.len())?;
        buf[PAYLOAD_OFFSET + payload_len..end].copy_from_slice(padding);
        Ok(self.seal_checked(buf, end))
    }

    /// Copies `payload` into `out` at [`PAYLOAD_OFFSET`] and seals it
    /// there; returns the packet's length on the wire.
    pub fn seal(&mut self, payload: &[u8], out: &mut [u8]) -> Result<usize, Error> {
        let pad = least_padding(self.keyed.suite.encrypt_then_mac(), payload.len());
        self.check(out, payload.len(), pad)?;
        out[PAYLOAD_OFFSET..PAYLOAD_OFFSET + payload.len()].copy_from_slice(payload);
        self.seal_in_place(out, payload.len())
    }

    /// Public checks; returns where the padding ends (the MAC starts) and
    /// writes the two length fields.
    fn check(&self, buf: &mut [u8], payload_len: usize, pad: usize) -> Result<usize, Error> {
        if payload_len > MAX_PAYLOAD_LEN {
            return Err(Error::PlaintextTooLong {
                len: payload_len,
                max: MAX_PAYLOAD_LEN,
            });
        }
        let suite = self.keyed.suite;
        let end = PAYLOAD_OFFSET + payload_len + pad;
        let encrypted = if suite.encrypt_then_mac() {
            end - 4
        } else {
            end
        };
        if !(MIN_PADDING..=MAX_PADDING).contains(&pad)
            || !encrypted.is_multiple_of(16)
            || end > super::MAX_PACKET_LEN
        {
            return Err(Error::InvalidPadding { len: pad });
        }
        let needed = end + suite.mac_len();
        if buf.len() < needed {
            return Err(Error::BufferTooSmall {
                needed,
                actual: buf.len(),
            });
        }
        buf[..4].copy_from_slice(&((end - 4) as u32).to_be_bytes());
        buf[4] = pad as u8;
        Ok(end)
    }

    /// Seals `buf[..end]` (fields and padding written) and appends the MAC.
    fn seal_checked(&mut self, buf: &mut [u8], end: usize) -> usize {
        let k = &mut self.keyed;
        let seq = k.seq.to_be_bytes();
        let mac_len = k.suite.mac_len();
        let (packet, tag) = buf[..end + mac_len].split_at_mut(end);
        // Both forms run the stitched kernels. EtM: HMAC(seq || length ||
        // ciphertext), the length left in clear. Without EtM
        // (encrypt-and-MAC): HMAC(seq || packet) over the plaintext, then all
        // of the packet is encrypted.
        let etm = k.suite.encrypt_then_mac();
        let mut full = [0u8; MAX_TAG_LEN];
        let job = EtmJob {
            head: &[],
            prefix: &seq,
            iv: &mut k.chain,
            authenticated: packet,
            body_start: if etm { 4 } else { 0 },
            suffix: &[],
            tag: &mut full,
            mac_plaintext: !etm,
        };
        backends::encrypt_then_mac(k.aes.raw(), &k.mac, job);
        tag.copy_from_slice(&full[..mac_len]);
        k.seq = k.seq.wrapping_add(1);
        end + mac_len
    }
}

impl fmt::Debug for SshSealer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SshSealer")
            .field("suite", &self.keyed.suite)
            .field("backend", &self.backend())
            .field("sequence", &self.keyed.seq)
            .finish_non_exhaustive()
    }
}
