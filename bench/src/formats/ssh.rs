//! `--format ssh`: seal and open of SSH binary packets (RFC 4253 section
//! 6, OpenSSH's `-etm@openssh.com` forms) for every suite of
//! [`SshSuite::ALL`]; with `--compare openssl`, the same packets through
//! OpenSSL's EVP AES-CBC plus HMAC composed as OpenSSH composes them.
//!
//! Seals work in place on one buffer, as the other formats do. An SSH
//! packet opens only once (the CBC chain and the sequence number move on
//! with every packet), so each open side reads a stream instead: a ring of
//! packets sealed in order between timed batches, untimed, then opened in
//! order, each in place and in the two steps a transport takes (the
//! length, then the packet). The ring stays within [`RING_BYTES`], in
//! cache as a packet just read from a socket is. Our seals draw random
//! padding; the reference takes fixed padding of the same length
//! (generating it is not its timed work).

use cbc_hmac::Backend;
use cbc_hmac::ssh::{PAYLOAD_OFFSET, SshKeys, SshOpener, SshSealer, SshSuite};

use super::{Case, Filter, Op, Timed, err, plaintext, repeat};
use crate::measure::{self, Measurement};

/// The sequence number both directions start at (the packets of the key
/// exchange came before).
const FIRST_SEQ: u32 = 3;

/// The most bytes of sealed packets a ring holds (at least one packet).
const RING_BYTES: usize = 256 * 1024;

/// Every SSH case at one payload size, handed to `each` one at a time.
pub(super) fn cases(
    backend: Backend,
    payload: usize,
    compare: bool,
    filter: &Filter<'_>,
    each: &mut dyn FnMut(Case<'_>) -> Result<(), String>,
) -> Result<(), String> {
    for suite in SshSuite::ALL {
        if !filter.keeps(&[suite.cipher_name(), suite.mac_name()]) {
            continue;
        }
        let keys = Keys::new(suite);
        let text = plaintext(payload);
        let mut sealer =
            SshSealer::with_backend(suite, keys.get(), FIRST_SEQ, backend).map_err(err)?;
        let n = sealer.sealed_len(payload);
        // The reference's padding: as long as our least padding, fixed.
        let padding: Vec<u8> = (0..n - PAYLOAD_OFFSET - payload - suite.mac_len())
            .map(|i| 0xa0 ^ i as u8)
            .collect();
        if compare {
            agree(suite, &keys, backend, &text, &padding)?;
        }
        let name = format!("SSH {suite}");

        // Seal.
        let mut buf = with_payload(&text, n);
        let mut ref_buf = buf.clone();
        let mut ref_sealer = if compare {
            Some(reference::Ssh::new(suite, keys.get(), FIRST_SEQ)?)
        } else {
            None
        };
        let seal_ours = repeat(|| {
            sealer
                .seal_in_place(&mut buf, payload)
                .map(drop)
                .map_err(err)
        });
        let ref_padding = padding.clone();
        let seal_ref = ref_sealer
            .as_mut()
            .map(|r| repeat(move || r.seal(&mut ref_buf, payload, &ref_padding).map(drop)));
        each(Case {
            title: format!("{name} seal"),
            ours: seal_ours,
            reference: seal_ref,
        })?;
        // After timing: the sealer's chain and sequence number went on
        // consistently, so an opener started from where the last timed
        // packet left them opens its next packet.
        let mut chain = [0u8; 16];
        let end = n - suite.mac_len();
        chain.copy_from_slice(&buf[end - 16..end]);
        let resumed = SshKeys {
            iv: &chain,
            ..keys.get()
        };
        let opener =
            SshOpener::with_backend(suite, resumed, sealer.sequence(), backend).map_err(err)?;
        let mut link = Ours { sealer, opener };
        if link.round_trip(&text)? != text[..] {
            return Err(format!(
                "{name}: a packet sealed after the timed ones does not open to its payload"
            ));
        }

        // Open.
        let mut ours = Ring::new(Ours::new(suite, &keys, backend)?, &text, n);
        let reference = if compare {
            Some(Reference::new(suite, &keys, padding)?)
        } else {
            None
        };
        let mut reference = reference.map(|r| Ring::new(r, &text, n));
        each(Case {
            title: format!("{name} open"),
            ours: Box::new(&mut ours),
            reference: reference.as_mut().map(|r| Box::new(r) as Op<'_>),
        })?;
        // After timing: the last timed open returned the whole payload,
        // and the stream still opens to the plaintext.
        if !ours.check(&text)? {
            return Err(format!(
                "{name}: the opened packets differ from the plaintext"
            ));
        }
        if let Some(r) = reference.as_mut()
            && !r.check(&text)?
        {
            return Err(format!(
                "{name}: OpenSSL's opened packets differ from the plaintext"
            ));
        }
    }
    Ok(())
}

/// The keys of the measured direction, fixed.
struct Keys {
    enc: Vec<u8>,
    iv: [u8; 16],
    mac: Vec<u8>,
}

impl Keys {
    fn new(suite: SshSuite) -> Keys {
        Keys {
            enc: vec![0x11; suite.cipher().key_len()],
            iv: [0x33; 16],
            mac: vec![0x22; suite.mac_key_len()],
        }
    }

    fn get(&self) -> SshKeys<'_> {
        SshKeys {
            enc_key: &self.enc,
            iv: &self.iv,
            mac_key: &self.mac,
        }
    }
}

/// A packet buffer of `n` bytes with `text` at the payload's place.
fn with_payload(text: &[u8], n: usize) -> Vec<u8> {
    let mut buf = vec![0u8; n];
    buf[PAYLOAD_OFFSET..][..text.len()].copy_from_slice(text);
    buf
}

/// Checks before timing that the reference does our work: with the same
/// padding both seal the same bytes, packet after packet (the chain and
/// the sequence number carried alike), and each opens the other's.
fn agree(
    suite: SshSuite,
    keys: &Keys,
    backend: Backend,
    text: &[u8],
    padding: &[u8],
) -> Result<(), String> {
    let payload = text.len();
    let mut ours = SshSealer::with_backend(suite, keys.get(), FIRST_SEQ, backend).map_err(err)?;
    let mut random = SshSealer::with_backend(suite, keys.get(), FIRST_SEQ, backend).map_err(err)?;
    let mut opener = SshOpener::with_backend(suite, keys.get(), FIRST_SEQ, backend).map_err(err)?;
    let mut theirs = reference::Ssh::new(suite, keys.get(), FIRST_SEQ)?;
    let mut their_opener = reference::Ssh::new(suite, keys.get(), FIRST_SEQ)?;
    let n = ours.sealed_len(payload);
    for packet in 0..2 {
        let mut a = with_payload(text, n);
        let len = ours
            .seal_in_place_with_padding(&mut a, payload, padding)
            .map_err(err)?;
        let mut b = with_payload(text, n);
        theirs.seal(&mut b, payload, padding)?;
        if len != n || a != b {
            return Err(format!(
                "SSH {suite}: OpenSSL's packet {packet} differs from ours"
            ));
        }
        // Ours opens OpenSSL's packet.
        let total = opener.open_length(&b).map_err(err)?;
        if total != n || opener.open(&mut b[..total]).map_err(err)? != text {
            return Err(format!(
                "SSH {suite}: we do not open OpenSSL's packet {packet}"
            ));
        }
        // OpenSSL opens ours, random padding and all.
        let mut c = with_payload(text, n);
        random.seal_in_place(&mut c, payload).map_err(err)?;
        let total = their_opener.open_length(&c)?;
        if total != n || their_opener.open(&mut c[..total])? != text {
            return Err(format!(
                "SSH {suite}: OpenSSL does not open our packet {packet}"
            ));
        }
    }
    Ok(())
}

/// One direction's two ends, as one side of the open measurement uses
/// them: the sealer makes the packets, the opener takes them in order.
trait Link {
    /// Seals the payload at `buf[PAYLOAD_OFFSET..][..len]` in place;
    /// returns the packet's length on the wire.
    fn seal(&mut self, buf: &mut [u8], len: usize) -> Result<usize, String>;

    /// Opens the packet that fills `packet`, in place, the length first;
    /// returns the payload.
    fn open<'a>(&mut self, packet: &'a mut [u8]) -> Result<&'a [u8], String>;

    /// Seals `text` and opens it again; returns what opened.
    fn round_trip(&mut self, text: &[u8]) -> Result<Vec<u8>, String> {
        // Room for the most padding (19 bytes) and the longest MAC.
        let mut buf = with_payload(text, PAYLOAD_OFFSET + text.len() + 32 + 64);
        let n = self.seal(&mut buf, text.len())?;
        self.open(&mut buf[..n]).map(<[u8]>::to_vec)
    }
}

/// Our sealer and opener.
struct Ours {
    sealer: SshSealer,
    opener: SshOpener,
}

impl Ours {
    fn new(suite: SshSuite, keys: &Keys, backend: Backend) -> Result<Ours, String> {
        Ok(Ours {
            sealer: SshSealer::with_backend(suite, keys.get(), FIRST_SEQ, backend).map_err(err)?,
            opener: SshOpener::with_backend(suite, keys.get(), FIRST_SEQ, backend).map_err(err)?,
        })
    }
}

impl Link for Ours {
    fn seal(&mut self, buf: &mut [u8], len: usize) -> Result<usize, String> {
        self.sealer.seal_in_place(buf, len).map_err(err)
    }

    fn open<'a>(&mut self, packet: &'a mut [u8]) -> Result<&'a [u8], String> {
        let total = self.opener.open_length(packet).map_err(err)?;
        let packet = packet
            .get_mut(..total)
            .ok_or_else(|| format!("a packet of {total} bytes announced, fewer there"))?;
        self.opener.open(packet).map(|p| &*p).map_err(err)
    }
}

/// OpenSSL's sealer and opener, the padding fixed.
struct Reference {
    sealer: reference::Ssh,
    opener: reference::Ssh,
    padding: Vec<u8>,
}

impl Reference {
    fn new(suite: SshSuite, keys: &Keys, padding: Vec<u8>) -> Result<Reference, String> {
        let sealer = reference::Ssh::new(suite, keys.get(), FIRST_SEQ)?;
        let opener = reference::Ssh::new(suite, keys.get(), FIRST_SEQ)?;
        Ok(Reference {
            sealer,
            opener,
            padding,
        })
    }
}

impl Link for Reference {
    fn seal(&mut self, buf: &mut [u8], len: usize) -> Result<usize, String> {
        self.sealer.seal(buf, len, &self.padding)
    }

    fn open<'a>(&mut self, packet: &'a mut [u8]) -> Result<&'a [u8], String> {
        let total = self.opener.open_length(packet)?;
        let packet = packet
            .get_mut(..total)
            .ok_or_else(|| format!("a packet of {total} bytes announced, fewer there"))?;
        self.opener.open(packet)
    }
}

/// A stream of packets for one open side: slots sealed in order by
/// [`Ring::stage`], opened in order by [`Ring::open_next`].
struct Ring<L> {
    link: L,
    slots: Vec<Vec<u8>>,
    text: Vec<u8>,
    next: usize,
    /// The payload length of the last timed open.
    opened_len: usize,
}

impl<L: Link> Ring<L> {
    /// A ring of packets of `n` bytes on the wire, carrying `text`.
    fn new(link: L, text: &[u8], n: usize) -> Self {
        let count = (RING_BYTES / n).max(1);
        Ring {
            link,
            slots: vec![vec![0; n]; count],
            text: text.to_vec(),
            next: count,
            opened_len: 0,
        }
    }

    /// Seals the next packets of the stream into every slot.
    fn stage(&mut self) -> Result<u64, String> {
        debug_assert_eq!(self.next, self.slots.len(), "every staged packet opened");
        for slot in &mut self.slots {
            slot[PAYLOAD_OFFSET..][..self.text.len()].copy_from_slice(&self.text);
            let n = self.link.seal(slot, self.text.len())?;
            if n != slot.len() {
                return Err(format!(
                    "a sealed packet of {n} bytes, {} expected",
                    slot.len()
                ));
            }
        }
        self.next = 0;
        Ok(self.slots.len() as u64)
    }

    /// Opens the next staged packet (the timed operation).
    fn open_next(&mut self) -> Result<(), String> {
        let slot = &mut self.slots[self.next];
        self.next += 1;
        self.opened_len = self.link.open(slot)?.len();
        Ok(())
    }

    /// After timing: the last timed open returned the whole payload, and
    /// the next packet of the stream opens to the plaintext.
    fn check(&mut self, text: &[u8]) -> Result<bool, String> {
        Ok(self.opened_len == text.len() && self.link.round_trip(text)? == text)
    }
}

impl<L: Link> Timed for Ring<L> {
    fn run(&mut self, target: std::time::Duration) -> Result<Measurement, String> {
        measure::run_staged(target, self, Self::stage, Self::open_next)
    }
}

#[cfg(feature = "openssl")]
mod reference {
    //! One direction of an SSH connection composed from OpenSSL's EVP
    //! AES-CBC and HMAC_CTX as OpenSSH composes them: without EtM,
    //! HMAC(seq || packet) then the whole packet CBC-encrypted; the open
    //! decrypts the first block for the length, then the rest, then checks
    //! the MAC. With EtM, the packet after the length encrypted, then
    //! HMAC(seq || length || ciphertext); the open checks the MAC first.
    //! The CBC chain runs on from packet to packet (each EVP call is
    //! handed it as the IV, which resets nothing else).

    use cbc_hmac::MacAlgorithm;
    use cbc_hmac::ssh::{MAX_PACKET_LEN, PAYLOAD_OFFSET, SshKeys, SshSuite};
    use openssl_ref::{Digest, EvpAesCbc, Hmac};

    fn e(e: openssl_ref::Error) -> String {
        format!("OpenSSL: {e}")
    }

    pub struct Ssh {
        etm: bool,
        mac_len: usize,
        aes: EvpAesCbc,
        hmac: Hmac,
        chain: [u8; 16],
        seq: u32,
        /// The first block as received and decrypted, between
        /// `open_length` and `open` (without EtM).
        first: Option<([u8; 16], [u8; 16])>,
        total: usize,
    }

    impl Ssh {
        pub fn new(suite: SshSuite, keys: SshKeys<'_>, seq: u32) -> Result<Self, String> {
            let digest = match suite.mac() {
                MacAlgorithm::HmacSha1 => Digest::Sha1,
                MacAlgorithm::HmacSha256 => Digest::Sha256,
                MacAlgorithm::HmacSha384 => Digest::Sha384,
                MacAlgorithm::HmacSha512 => Digest::Sha512,
            };
            Ok(Ssh {
                etm: suite.encrypt_then_mac(),
                mac_len: suite.mac_len(),
                aes: EvpAesCbc::new(keys.enc_key).map_err(e)?,
                hmac: Hmac::new(digest, keys.mac_key).map_err(e)?,
                chain: keys.iv.try_into().map_err(|_| "the IV is 16 bytes")?,
                seq,
                first: None,
                total: 0,
            })
        }

        /// Seals the payload at `buf[PAYLOAD_OFFSET..][..len]` in place
        /// with `padding` (which must align the packet); returns the
        /// packet's length on the wire.
        pub fn seal(
            &mut self,
            buf: &mut [u8],
            len: usize,
            padding: &[u8],
        ) -> Result<usize, String> {
            let end = PAYLOAD_OFFSET + len + padding.len();
            let n = end + self.mac_len;
            let encrypted = if self.etm { end - 4 } else { end };
            if buf.len() < n || !encrypted.is_multiple_of(16) {
                return Err("OpenSSL side: padding or buffer does not fit".into());
            }
            buf[..4].copy_from_slice(&((end - 4) as u32).to_be_bytes());
            buf[4] = padding.len() as u8;
            buf[PAYLOAD_OFFSET + len..end].copy_from_slice(padding);
            let seq = self.seq.to_be_bytes();
            let (packet, mac) = buf[..n].split_at_mut(end);
            let tag = if self.etm {
                self.aes.encrypt(&self.chain, &mut packet[4..]).map_err(e)?;
                self.hmac.mac_parts(&[&seq, packet]).map_err(e)?
            } else {
                let tag = self.hmac.mac_parts(&[&seq, packet]).map_err(e)?;
                self.aes.encrypt(&self.chain, packet).map_err(e)?;
                tag
            };
            self.chain.copy_from_slice(&packet[end - 16..]);
            mac.copy_from_slice(tag.as_slice());
            self.seq = self.seq.wrapping_add(1);
            Ok(n)
        }

        /// Reads the packet length from the start of `head` (decrypting
        /// the first block without EtM); returns the bytes the packet
        /// occupies, MAC included.
        pub fn open_length(&mut self, head: &[u8]) -> Result<usize, String> {
            if head.len() < 16 {
                return Err("OpenSSL side: less than a block".into());
            }
            let len = if self.etm {
                u32::from_be_bytes(head[..4].try_into().expect("4 bytes")) as usize
            } else {
                let mut ct = [0u8; 16];
                ct.copy_from_slice(&head[..16]);
                let mut block = ct;
                self.aes.decrypt(&self.chain, &mut block).map_err(e)?;
                self.first = Some((ct, block));
                u32::from_be_bytes(block[..4].try_into().expect("4 bytes")) as usize
            };
            let aligned = if self.etm { len } else { len + 4 };
            if !(12..=MAX_PACKET_LEN - 4).contains(&len) || !aligned.is_multiple_of(16) {
                return Err("OpenSSL side: bad packet length".into());
            }
            self.total = 4 + len + self.mac_len;
            Ok(self.total)
        }

        /// Opens the packet whose length `open_length` read, in place;
        /// returns the payload.
        pub fn open<'a>(&mut self, packet: &'a mut [u8]) -> Result<&'a [u8], String> {
            if packet.len() != self.total {
                return Err("OpenSSL side: wrong packet size".into());
            }
            let seq = self.seq.to_be_bytes();
            self.seq = self.seq.wrapping_add(1);
            let (body, mac) = packet.split_at_mut(self.total - self.mac_len);
            let mut last = [0u8; 16];
            last.copy_from_slice(&body[body.len() - 16..]);
            if self.etm {
                let tag = self.hmac.mac_parts(&[&seq, body]).map_err(e)?;
                if tag.as_slice() != mac {
                    return Err("OpenSSL side: MAC mismatch".into());
                }
                self.aes.decrypt(&self.chain, &mut body[4..]).map_err(e)?;
            } else {
                let (ct, plain) = self.first.take().ok_or("OpenSSL side: no length read")?;
                body[..16].copy_from_slice(&plain);
                self.aes.decrypt(&ct, &mut body[16..]).map_err(e)?;
                let tag = self.hmac.mac_parts(&[&seq, body]).map_err(e)?;
                if tag.as_slice() != mac {
                    return Err("OpenSSL side: MAC mismatch".into());
                }
            }
            self.chain = last;
            let pad = usize::from(body[4]);
            if pad < 4 || PAYLOAD_OFFSET + pad > body.len() {
                return Err("OpenSSL side: bad padding length".into());
            }
            Ok(&body[PAYLOAD_OFFSET..body.len() - pad])
        }
    }
}

#[cfg(not(feature = "openssl"))]
mod reference {
    //! Without the `openssl` feature nothing can be built (main refuses
    //! `--compare openssl` first).

    use cbc_hmac::ssh::{SshKeys, SshSuite};

    pub enum Ssh {}

    impl Ssh {
        pub fn new(_: SshSuite, _: SshKeys<'_>, _: u32) -> Result<Self, String> {
            Err(crate::reference::HOW_TO_ENABLE.into())
        }
        pub fn seal(&mut self, _: &mut [u8], _: usize, _: &[u8]) -> Result<usize, String> {
            match *self {}
        }
        pub fn open_length(&mut self, _: &[u8]) -> Result<usize, String> {
            match *self {}
        }
        pub fn open<'a>(&mut self, _: &'a mut [u8]) -> Result<&'a [u8], String> {
            match *self {}
        }
    }
}
