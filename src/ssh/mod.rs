//! SSH binary packet protection (RFC 4253 section 6, RFC 6668 for the
//! SHA-2 MACs, OpenSSH's `PROTOCOL` file for the `-etm@openssh.com` forms)
//! with AES-CBC, over the same kernels as the TLS records.
//!
//! A packet, as it is MAC'ed (`seq` is the implicit 32-bit packet counter
//! of the direction, never sent, wrapping at 2^32):
//!
//! ```text
//! packet_length (4) || padding_length (1) || payload || random padding (4..=255)
//! encrypt-and-MAC: CBC(packet) || HMAC(seq || packet)       (packet_length + 4: whole blocks)
//! encrypt-then-MAC: packet_length || CBC(rest) || HMAC(seq || packet_length || CBC(rest))
//!                                                           (packet_length: whole blocks)
//! ```
//!
//! The CBC state runs on from packet to packet: the IV from the key
//! exchange starts the chain, and each packet continues from the last
//! ciphertext block of the one before. So there is one [`SshSealer`] and
//! one [`SshOpener`] per direction, keyed once, each keeping its chain and
//! its sequence number; neither allocates per packet.
//!
//! # Opening, and the length oracle
//!
//! A transport reads a packet in two steps: [`SshOpener::open_length`] on
//! the first bytes (the first block, decrypted, for encrypt-and-MAC; the
//! four clear length bytes for EtM) says how many bytes the whole packet
//! occupies, MAC included; [`SshOpener::open`] then takes all of them.
//!
//! Without EtM the length is encrypted and unauthenticated when it is
//! needed, and Albrecht, Paterson and Watson (IEEE S&P 2009) recovered
//! plaintext from how an implementation reacts to a length that is out of
//! range: an error at once, or after how many bytes. The defence here is
//! OpenSSH's: a bad length is never an error by itself. `open_length` then
//! answers [`SshOpener::discard_len`], the fixed bound (the largest packet
//! and its MAC); `open` on that many bytes MACs them and fails with
//! [`Error::AuthenticationFailed`]. A well-formed length whose padding
//! length or MAC is wrong fails with the same error, its two checks made
//! by masks and declassified once, and the opener then asks for the rest of
//! the bound ([`SshOpener::bytes_to_discard`]): the caller reads and drops
//! that many bytes through [`SshOpener::discard`], which MACs them too,
//! before it closes the connection. Every failure thus consumes and MACs
//! exactly `discard_len` bytes and ends in the one error, whatever was
//! wrong.
//!
//! EtM packets carry the length in clear and authenticated: a bad one is
//! [`Error::SshPacketLength`] at once, and `open` checks the MAC (in
//! constant time) before it decrypts anything.
//!
//! ```
//! use cbc_hmac::ssh::{SshKeys, SshOpener, SshSealer, SshSuite, PAYLOAD_OFFSET};
//!
//! let suite = SshSuite::from_names("aes128-cbc", "hmac-sha2-256-etm@openssh.com")
//!     .expect("a suite this crate knows");
//! let keys = SshKeys { enc_key: &[1; 16], iv: &[2; 16], mac_key: &[3; 32] };
//! // The sequence numbers go on from the packets sent before NEWKEYS.
//! let mut sealer = SshSealer::new(suite, keys, 3)?;
//! let mut opener = SshOpener::new(suite, keys, 3)?;
//!
//! let payload = b"\x05\x00\x00\x00\x0cssh-userauth"; // SSH_MSG_SERVICE_REQUEST
//! let mut wire = [0u8; 128];
//! wire[PAYLOAD_OFFSET..][..payload.len()].copy_from_slice(payload);
//! let n = sealer.seal_in_place(&mut wire, payload.len())?;
//!
//! // The receiving transport: the length first, then the whole packet.
//! let total = opener.open_length(&wire[..opener.length_prefix_len()])?;
//! assert_eq!(total, n);
//! let opened = opener.open(&mut wire[..total])?;
//! assert_eq!(opened, &payload[..]);
//! # Ok::<(), cbc_hmac::Error>(())
//! ```

mod opener;
mod sealer;
mod suite;

pub use opener::SshOpener;
pub use sealer::SshSealer;
pub use suite::SshSuite;

use crate::backends::Backend;
use crate::error::Error;
use crate::{AesCbcKey, HmacKey};

/// Where the payload starts in a packet: after `packet_length` and
/// `padding_length`.
pub const PAYLOAD_OFFSET: usize = 5;

/// The largest packet, length field included, MAC excluded: 256 KiB, what
/// OpenSSH accepts (RFC 4253 section 6.1 asks for at least 35000 bytes).
pub const MAX_PACKET_LEN: usize = 256 * 1024;

/// The fewest padding bytes (RFC 4253 section 6).
pub const MIN_PADDING: usize = 4;

/// The most padding bytes: `padding_length` is one byte.
pub const MAX_PADDING: usize = 255;

/// The largest payload a sealer takes: a payload this long still fits
/// [`MAX_PACKET_LEN`] with the most padding any alignment needs.
pub const MAX_PAYLOAD_LEN: usize = MAX_PACKET_LEN - PAYLOAD_OFFSET - MIN_PADDING - 15;

/// The keys of one direction, as RFC 4253 section 7.2 derives them: the
/// encryption key (16 or 32 bytes), the initial IV (16 bytes), and the
/// integrity key (the MAC's output length: 20 or 32 bytes, RFC 6668).
#[derive(Clone, Copy)]
pub struct SshKeys<'a> {
    /// The AES key (`K` to `"C"`/`"D"` in RFC 4253 section 7.2, cut to the
    /// key length).
    pub enc_key: &'a [u8],
    /// The initial IV (`"A"`/`"B"`), cut to 16 bytes.
    pub iv: &'a [u8],
    /// The integrity key (`"E"`/`"F"`), cut to the MAC's key length.
    pub mac_key: &'a [u8],
}

impl core::fmt::Debug for SshKeys<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("SshKeys { .. }")
    }
}

/// The keyed state both directions share: AES key, HMAC key, the CBC
/// chain and the sequence number.
struct Keyed {
    suite: SshSuite,
    aes: AesCbcKey,
    mac: HmacKey,
    chain: [u8; 16],
    seq: u32,
}

impl Keyed {
    fn new(suite: SshSuite, keys: &SshKeys<'_>, seq: u32, backend: Backend) -> Result<Self, Error> {
        let want = suite.mac_key_len();
        if keys.mac_key.len() != want {
            return Err(Error::InvalidKeyLength {
                expected: want,
                actual: keys.mac_key.len(),
            });
        }
        let chain = crate::primitives::aes_cbc::check_iv(keys.iv)?;
        let aes = AesCbcKey::with_backend(suite.cipher(), keys.enc_key, backend)?;
        let mac = HmacKey::with_backend(suite.mac(), keys.mac_key, backend)?;
        Ok(Keyed {
            suite,
            aes,
            mac,
            chain,
            seq,
        })
    }
}

impl Drop for Keyed {
    fn drop(&mut self) {
        // The chain is the next IV: wiped with the keys.
        zeroize::Zeroize::zeroize(&mut self.chain);
    }
}

/// The least padding for `payload_len` bytes under `suite`: at least four
/// bytes, and the encrypted part whole blocks.
const fn least_padding(etm: bool, payload_len: usize) -> usize {
    // Without EtM the length field is encrypted too.
    let covered = if etm { 1 } else { PAYLOAD_OFFSET } + payload_len;
    let pad = (16 - covered % 16) % 16;
    if pad < MIN_PADDING { pad + 16 } else { pad }
}
