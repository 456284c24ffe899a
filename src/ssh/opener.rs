//! Opening SSH packets, in the two steps a transport reads them in.

use core::fmt;

use subtle::{Choice, ConstantTimeEq};

use super::{Keyed, MAX_PACKET_LEN, MIN_PADDING, PAYLOAD_OFFSET, SshKeys, SshSuite};
use crate::backends::Backend;
use crate::error::Error;
use crate::primitives::ct;
use crate::primitives::hmac::MAX_TAG_LEN;

/// Where the opener is between the two steps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    /// Waiting for [`SshOpener::open_length`].
    Length,
    /// The length is read: the packet is this many bytes, MAC included.
    Packet(usize),
    /// The decrypted length was out of range: the packet is taken to be
    /// [`SshOpener::discard_len`] bytes, which are MAC'ed and refused.
    BadLength,
    /// A packet failed: this many more bytes are to be dropped (and MAC'ed)
    /// before the error is final.
    Discarding(usize),
    /// A packet failed and its bytes are consumed: nothing more opens.
    Failed,
}

/// Opens the packets of one direction.
///
/// A transport calls [`SshOpener::open_length`] once it has
/// [`SshOpener::length_prefix_len`] bytes (16 without EtM: the first
/// block; 4 with EtM: the clear length), reads until it has the number of
/// bytes that returns, and passes them all to [`SshOpener::open`].
///
/// Without EtM every failure (a decrypted length out of range, a bad
/// padding length, a bad MAC) is [`Error::AuthenticationFailed`] after
/// [`SshOpener::discard_len`] bytes consumed and MAC'ed, as OpenSSH does
/// against the length oracle (see the [module docs](super)): after a failed
/// `open`, read [`SshOpener::bytes_to_discard`] more bytes, pass them to
/// [`SshOpener::discard`], then close the connection. With EtM a bad MAC is
/// [`Error::AuthenticationFailed`] at once (the MAC is checked before
/// anything is decrypted) and a bad clear length [`Error::SshPacketLength`].
/// Opening never allocates.
///
/// ```
/// use cbc_hmac::ssh::{SshKeys, SshOpener, SshSealer, SshSuite};
/// use cbc_hmac::Error;
///
/// let suite = SshSuite::from_names("aes128-cbc", "hmac-sha1").unwrap();
/// let keys = SshKeys { enc_key: &[1; 16], iv: &[2; 16], mac_key: &[3; 20] };
/// let mut sealer = SshSealer::new(suite, keys, 7)?;
/// let mut opener = SshOpener::new(suite, keys, 7)?;
/// let mut wire = [0u8; 64];
/// let n = sealer.seal(b"\x02hello", &mut wire)?;
///
/// let total = opener.open_length(&wire[..16])?;
/// assert_eq!(total, n);
/// assert_eq!(opener.open(&mut wire[..total])?, b"\x02hello");
///
/// // A flipped bit in the next packet's MAC: the one error, then the
/// // rest of the fixed bound is read and dropped before closing.
/// let n = sealer.seal(b"\x02again", &mut wire)?;
/// wire[n - 1] ^= 1;
/// let total = opener.open_length(&wire[..16])?;
/// assert_eq!(opener.open(&mut wire[..total]), Err(Error::AuthenticationFailed));
/// assert_eq!(opener.bytes_to_discard(), opener.discard_len() - total);
/// let dropped = vec![0u8; opener.bytes_to_discard()]; // as read from the peer
/// assert_eq!(opener.discard(&dropped), 0);
/// # Ok::<(), cbc_hmac::Error>(())
/// ```
pub struct SshOpener {
    keyed: Keyed,
    step: Step,
    /// The first block, decrypted by `open_length` (non-EtM).
    first: [u8; 16],
    /// The ciphertext of the first block: the chain for the rest.
    first_ct: [u8; 16],
}

impl SshOpener {
    /// An opener on the best available backend, starting at sequence
    /// number `seq` (the number of packets received in this direction
    /// before). Fails on key or IV lengths that do not fit the suite.
    pub fn new(suite: SshSuite, keys: SshKeys<'_>, seq: u32) -> Result<Self, Error> {
        Self::with_backend(suite, keys, seq, Backend::detect())
    }

    /// Like [`SshOpener::new`] on a chosen backend.
    pub fn with_backend(
        suite: SshSuite,
        keys: SshKeys<'_>,
        seq: u32,
        backend: Backend,
    ) -> Result<Self, Error> {
        Ok(SshOpener {
            keyed: Keyed::new(suite, &keys, seq, backend)?,
            step: Step::Length,
            first: [0; 16],
            first_ct: [0; 16],
        })
    }

    /// The suite.
    pub fn suite(&self) -> SshSuite {
        self.keyed.suite
    }

    /// The backend in use.
    pub fn backend(&self) -> Backend {
        self.keyed.aes.backend()
    }

    /// The sequence number the next packet is opened with.
    pub fn sequence(&self) -> u32 {
        self.keyed.seq
    }

    /// The bytes [`SshOpener::open_length`] needs: the first block (16)
    /// without EtM, the clear `packet_length` (4) with it.
    pub fn length_prefix_len(&self) -> usize {
        if self.keyed.suite.encrypt_then_mac() {
            4
        } else {
            16
        }
    }

    /// The fixed bound every failed packet consumes without EtM: the
    /// largest packet and its MAC.
    pub fn discard_len(&self) -> usize {
        MAX_PACKET_LEN + self.keyed.suite.mac_len()
    }

    /// Step one: reads the length from the first
    /// [`SshOpener::length_prefix_len`] bytes of `head` (more are
    /// ignored) and returns how many bytes the whole packet occupies on
    /// the wire, MAC included, counted from its start; `head` is not
    /// changed.
    ///
    /// Without EtM the first block is decrypted (the CBC state moves on
    /// only in [`SshOpener::open`]). A decrypted length out of range (a
    /// packet shorter than 16 bytes, longer than [`MAX_PACKET_LEN`], or
    /// not whole blocks) is no error here: the answer is then
    /// [`SshOpener::discard_len`], and `open` on that many bytes fails
    /// with [`Error::AuthenticationFailed`] as a bad MAC does.
    ///
    /// With EtM a length out of range is [`Error::SshPacketLength`].
    /// Calling this twice before `open` is [`Error::SshOutOfOrder`], as is
    /// any call after a failure.
    pub fn open_length(&mut self, head: &[u8]) -> Result<usize, Error> {
        if self.step != Step::Length {
            return Err(Error::SshOutOfOrder);
        }
        let need = self.length_prefix_len();
        if head.len() < need {
            return Err(Error::PacketTooShort {
                len: head.len(),
                min: need,
            });
        }
        let k = &self.keyed;
        let mac_len = k.suite.mac_len();
        if k.suite.encrypt_then_mac() {
            let len = u32::from_be_bytes(head[..4].try_into().expect("4 bytes"));
            let packet_len = len as usize;
            // In clear and authenticated by the MAC: public. At least one
            // block after the length field; RFC 4253 section 6.
            if !(16..=MAX_PACKET_LEN - 4).contains(&packet_len) || !packet_len.is_multiple_of(16) {
                return Err(Error::SshPacketLength { len });
            }
            let total = 4 + packet_len + mac_len;
            self.step = Step::Packet(total);
            return Ok(total);
        }
        self.first_ct.copy_from_slice(&head[..16]);
        self.first = self.first_ct;
        let mut chain = k.chain;
        k.aes
            .raw()
            .decrypt_cbc(&mut chain, core::slice::from_mut(&mut self.first));
        let len = u32::from_be_bytes(self.first[..4].try_into().expect("4 bytes")) as usize;
        // The one branch on the decrypted length, unavoidable: it decides
        // how many bytes to wait for. Both outcomes end the same way on a
        // forgery (see the module docs). The range and the alignment are
        // one mask, so that how a length is wrong is not told by the time
        // it takes.
        let in_range = ct::ge(len, 12) & ct::ge(MAX_PACKET_LEN - 4, len);
        let aligned = ct::is_zero((len + 4) % 16);
        if ct::barrier(in_range & aligned) == usize::MAX {
            let total = 4 + len + mac_len;
            self.step = Step::Packet(total);
            Ok(total)
        } else {
            self.step = Step::BadLength;
            Ok(self.discard_len())
        }
    }

    /// Step two: opens the whole packet (`packet.len()` is what
    /// [`SshOpener::open_length`] returned, else
    /// [`Error::SshWrongPacketSize`]) in place and returns its payload.
    /// The first block may be passed as received or as `open_length` left
    /// it: it is taken from the opener.
    ///
    /// A bad MAC or padding length is [`Error::AuthenticationFailed`],
    /// one error, checked in constant time; without EtM, follow it with
    /// [`SshOpener::discard`].
    pub fn open<'a>(&mut self, packet: &'a mut [u8]) -> Result<&'a mut [u8], Error> {
        let total = match self.step {
            Step::Packet(total) => total,
            Step::BadLength => self.discard_len(),
            _ => return Err(Error::SshOutOfOrder),
        };
        if packet.len() != total {
            return Err(Error::SshWrongPacketSize {
                expected: total,
                actual: packet.len(),
            });
        }
        let k = &mut self.keyed;
        let seq = k.seq.to_be_bytes();
        // The packet counts as received whatever happens (RFC 4253 section
        // 6.4: the number is never reset).
        k.seq = k.seq.wrapping_add(1);
        let mac_len = k.suite.mac_len();
        let (body, received) = packet.split_at_mut(total - mac_len);

        if k.suite.encrypt_then_mac() {
            // The MAC first, over the ciphertext; nothing is decrypted
            // unless it matches.
            if !k.mac.truncated_matches(&[&seq, body], received) {
                self.step = Step::Failed;
                return Err(Error::AuthenticationFailed);
            }
            let (blocks, _) = body[4..].as_chunks_mut::<16>();
            k.aes.raw().decrypt_cbc(&mut k.chain, blocks);
            // Authenticated, yet still checked by the same masks.
            let ok = padding_fits(body);
            if !bool::from(ok) {
                self.step = Step::Failed;
                return Err(Error::AuthenticationFailed);
            }
            self.step = Step::Length;
            return Ok(payload(body));
        }

        // Encrypt-and-MAC: decrypt the rest from the first block's
        // ciphertext, then MAC the plaintext.
        body[..16].copy_from_slice(&self.first);
        let (blocks, _) = body[16..].as_chunks_mut::<16>();
        k.chain = self.first_ct;
        k.aes.raw().decrypt_cbc(&mut k.chain, blocks);
        let mut tag = [0u8; MAX_TAG_LEN];
        k.mac.mac_parts_into(&[&seq, body], &mut tag);
        if self.step == Step::BadLength {
            // Not a packet: its bound's worth of bytes was decrypted and
            // MAC'ed as a packet of that size would be; refused as a bad
            // MAC is. The chain is dead.
            core::hint::black_box(&tag);
            self.step = Step::Failed;
            return Err(Error::AuthenticationFailed);
        }
        let mac_ok = tag[..mac_len].ct_eq(received);
        let pad_ok = padding_fits(body);
        // The one declassification: padding and MAC fail alike.
        if bool::from(mac_ok & pad_ok) {
            self.step = Step::Length;
            Ok(payload(body))
        } else {
            // OpenSSH's discard: the failure is final once the bound is
            // consumed.
            self.step = Step::Discarding(self.discard_len() - total);
            Err(Error::AuthenticationFailed)
        }
    }

    /// After a failed [`SshOpener::open`] without EtM: how many more bytes
    /// to read from the peer and pass to [`SshOpener::discard`] before
    /// closing. 0 otherwise.
    pub fn bytes_to_discard(&self) -> usize {
        match self.step {
            Step::Discarding(n) => n,
            _ => 0,
        }
    }

    /// Drops `input` (bytes read after a failed packet), MAC'ing them as
    /// OpenSSH does so that the work matches a packet of the bound's size;
    /// returns how many bytes are still to drop (bytes past the bound are
    /// ignored). Once it returns 0 the failure is final: nothing more opens
    /// ([`Error::SshOutOfOrder`]).
    pub fn discard(&mut self, input: &[u8]) -> usize {
        let Step::Discarding(left) = self.step else {
            return 0;
        };
        let take = input.len().min(left);
        let mut tag = [0u8; MAX_TAG_LEN];
        let seq = self.keyed.seq.to_be_bytes();
        self.keyed
            .mac
            .mac_parts_into(&[&seq, &input[..take]], &mut tag);
        core::hint::black_box(&tag);
        let left = left - take;
        self.step = if left == 0 {
            Step::Failed
        } else {
            Step::Discarding(left)
        };
        left
    }
}

/// Whether `padding_length` of the decrypted packet `body` (from its
/// length field on, of public length) is at least 4 and leaves a payload
/// of zero or more bytes, by masks.
fn padding_fits(body: &[u8]) -> Choice {
    let packet_len = body.len() - 4;
    let pad = ct::barrier(body[4] as usize);
    // packet_length = 1 + payload + padding, so padding <= packet_length - 1.
    let ok = ct::ge(pad, MIN_PADDING) & ct::ge(packet_len - 1, pad);
    Choice::from((ct::barrier(ok) & 1) as u8)
}

/// The payload of a packet whose padding has been checked.
fn payload(body: &mut [u8]) -> &mut [u8] {
    let end = body.len() - body[4] as usize;
    &mut body[PAYLOAD_OFFSET..end]
}

impl Drop for SshOpener {
    fn drop(&mut self) {
        zeroize::Zeroize::zeroize(&mut self.first);
    }
}

impl fmt::Debug for SshOpener {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SshOpener")
            .field("suite", &self.keyed.suite)
            .field("backend", &self.backend())
            .field("sequence", &self.keyed.seq)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn padding_length_checked_by_masks() {
        // packet_length 12: padding_length 4..=11 fits.
        let mut body = [0u8; 16];
        body[..4].copy_from_slice(&12u32.to_be_bytes());
        for pad in 0..=255u8 {
            body[4] = pad;
            assert_eq!(
                bool::from(padding_fits(&body)),
                (4..=11).contains(&pad),
                "{pad}"
            );
        }
    }
}
