//! IPsec ESP (RFC 4303) with AES-CBC (RFC 3602) and truncated HMACs
//! (HMAC-SHA1-96, RFC 2404; HMAC-SHA-256-128, HMAC-SHA-384-192 and
//! HMAC-SHA-512-256, RFC 4868): the packet format over the same kernels as
//! the TLS records.
//!
//! A packet, from the SPI on (the IP header and anything outside ESP are
//! the caller's):
//!
//! ```text
//! SPI (4) || sequence (4, low half) || IV (16)
//!   || CBC(payload || padding 1, 2, 3, ... || pad length || next header)
//!   || ICV = truncated HMAC(SPI || sequence || IV || ciphertext [|| high sequence half])
//! ```
//!
//! With extended sequence numbers (RFC 4303 section 3.3.3) the high 32
//! bits of the 64-bit number enter the ICV after the ciphertext but are not
//! sent; the receiver reconstructs them from its anti-replay window
//! ([`crate::ReplayWindow::infer_esn`]).
//!
//! The sealer runs the stitched encrypt-then-MAC kernels of its backend
//! and draws its IVs from the same per-sealer generator as the TLS sealer
//! (AES in counter mode under a random key drawn once: no system call per
//! packet). The opener checks the ICV in constant time before it decrypts
//! anything, then checks the padding (RFC 4303 section 2.4) without
//! branching on it; both failures are the one [`Error::AuthenticationFailed`].
//!
//! ```
//! use cbc_hmac::esp::{EspConfig, EspIntegrity, EspKeys, EspOpener, EspSealer};
//! use cbc_hmac::{Cipher, ReplayWindow};
//!
//! let config = EspConfig {
//!     cipher: Cipher::Aes128Cbc,
//!     integrity: EspIntegrity::HmacSha256_128,
//!     spi: 0x1000_0001,
//!     esn: true,
//! };
//! let keys = EspKeys { enc_key: &[1; 16], auth_key: &[2; 32] };
//! let mut sealer = EspSealer::new(config, keys)?;
//! let opener = EspOpener::new(config, keys)?;
//! let mut window = ReplayWindow::<16>::new();
//!
//! let datagram = b"an inner IP packet";
//! let mut packet = [0u8; 128];
//! let n = sealer.seal(1, 4, datagram, &mut packet)?; // next header 4: IPv4
//! assert_eq!(n, sealer.sealed_len(datagram.len()));
//!
//! let opened = opener.open_with_window(&mut window, &mut packet[..n])?;
//! assert_eq!((&*opened.payload, opened.next_header, opened.seq), (&datagram[..], 4, 1));
//! // The same packet again is a replay.
//! assert!(opener.open_with_window(&mut window, &mut packet[..n]).is_err());
//! # Ok::<(), cbc_hmac::Error>(())
//! ```
//!
//! # Testing against Linux XFRM
//!
//! Two network namespaces joined by a veth pair, each with one SA per
//! direction (`ip xfrm state add src A dst B proto esp spi 0x1000 reqid 1
//! mode tunnel enc 'cbc(aes)' 0xKEY auth-trunc 'hmac(sha256)' 0xKEY 128
//! flag esn replay-window 64` and the matching `ip xfrm policy`), need a
//! kernel with `CONFIG_INET_ESP` and `CONFIG_XFRM_USER`. Capture the ESP
//! packets on the veth (`tcpdump -w`, the bytes after the IP header) and
//! open them with an [`EspOpener`] built from the same keys; for the other
//! direction, seal with an [`EspSealer`] and send the packet from a raw
//! socket (`IPPROTO_ESP`) in one namespace to the other, where `ip -s xfrm
//! state` counts it as accepted. The sequence number to seal with is the
//! one the kernel expects next (`ip xfrm state` shows `seq`/`oseq`).

mod opener;
mod sealer;

pub use opener::{EspOpener, EspPayload};
pub use sealer::EspSealer;

use crate::backends::Backend;
use crate::combination::{Cipher, MacAlgorithm};
use crate::error::Error;
use crate::{AesCbcKey, HmacKey};

/// Bytes in front of the ciphertext: SPI, sequence number and IV.
pub const HEADER_LEN: usize = 4 + 4 + 16;

/// Largest payload sealed: what one IP datagram can carry.
pub const MAX_PAYLOAD_LEN: usize = 65_535;

/// The integrity algorithm of an SA: an HMAC truncated to its ICV.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(non_camel_case_types)] // the RFC names, digits and all
#[non_exhaustive]
pub enum EspIntegrity {
    /// HMAC-SHA1-96 (RFC 2404): 20-byte key, 12-byte ICV.
    HmacSha1_96,
    /// HMAC-SHA-256-128 (RFC 4868): 32-byte key, 16-byte ICV.
    HmacSha256_128,
    /// HMAC-SHA-384-192 (RFC 4868): 48-byte key, 24-byte ICV.
    HmacSha384_192,
    /// HMAC-SHA-512-256 (RFC 4868): 64-byte key, 32-byte ICV.
    HmacSha512_256,
}

impl EspIntegrity {
    /// The algorithms, in a fixed order.
    pub const ALL: [EspIntegrity; 4] = [
        EspIntegrity::HmacSha1_96,
        EspIntegrity::HmacSha256_128,
        EspIntegrity::HmacSha384_192,
        EspIntegrity::HmacSha512_256,
    ];

    /// The RFC name, for example `HMAC-SHA-256-128`.
    pub const fn name(self) -> &'static str {
        match self {
            EspIntegrity::HmacSha1_96 => "HMAC-SHA1-96",
            EspIntegrity::HmacSha256_128 => "HMAC-SHA-256-128",
            EspIntegrity::HmacSha384_192 => "HMAC-SHA-384-192",
            EspIntegrity::HmacSha512_256 => "HMAC-SHA-512-256",
        }
    }

    /// The ICV's length in bytes.
    pub const fn icv_len(self) -> usize {
        match self {
            EspIntegrity::HmacSha1_96 => 12,
            EspIntegrity::HmacSha256_128 => 16,
            EspIntegrity::HmacSha384_192 => 24,
            EspIntegrity::HmacSha512_256 => 32,
        }
    }

    /// The key length in bytes the RFCs fix: the hash output length.
    pub const fn key_len(self) -> usize {
        match self {
            EspIntegrity::HmacSha1_96 => 20,
            EspIntegrity::HmacSha256_128 => 32,
            EspIntegrity::HmacSha384_192 => 48,
            EspIntegrity::HmacSha512_256 => 64,
        }
    }

    /// The HMAC underneath (`Some` for every algorithm this crate has:
    /// all four today).
    pub const fn mac(self) -> Option<MacAlgorithm> {
        match self {
            EspIntegrity::HmacSha1_96 => Some(MacAlgorithm::HmacSha1),
            EspIntegrity::HmacSha256_128 => Some(MacAlgorithm::HmacSha256),
            EspIntegrity::HmacSha384_192 => Some(MacAlgorithm::HmacSha384),
            EspIntegrity::HmacSha512_256 => Some(MacAlgorithm::HmacSha512),
        }
    }
}

/// The parameters of one ESP security association (one direction).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EspConfig {
    /// AES-128-CBC or AES-256-CBC (RFC 3602; AES-192 is not supported).
    pub cipher: Cipher,
    /// The integrity algorithm.
    pub integrity: EspIntegrity,
    /// The Security Parameters Index, sent in every packet.
    pub spi: u32,
    /// Extended (64-bit) sequence numbers, RFC 4303 section 2.2.1.
    pub esn: bool,
}

impl EspConfig {
    /// The packet length for a payload of `payload_len` bytes, with the
    /// least padding: header, ciphertext and ICV.
    pub const fn sealed_len(&self, payload_len: usize) -> usize {
        HEADER_LEN + padded_len(payload_len) + self.integrity.icv_len()
    }

    /// The shortest packet an opener accepts: header, one block, ICV.
    pub const fn min_packet_len(&self) -> usize {
        HEADER_LEN + 16 + self.integrity.icv_len()
    }

    /// The high half of `seq` as it enters the ICV (nothing without ESN),
    /// after checking `seq` fits the SA.
    fn seq_suffix(&self, seq: u64) -> Result<([u8; 4], usize), Error> {
        if self.esn {
            Ok((((seq >> 32) as u32).to_be_bytes(), 4))
        } else if seq > u32::MAX as u64 {
            Err(Error::SequenceOutOfRange { seq })
        } else {
            Ok(([0; 4], 0))
        }
    }
}

/// The keys of one SA.
#[derive(Clone, Copy)]
pub struct EspKeys<'a> {
    /// The AES key: 16 or 32 bytes.
    pub enc_key: &'a [u8],
    /// The HMAC key: [`EspIntegrity::key_len`] bytes.
    pub auth_key: &'a [u8],
}

impl core::fmt::Debug for EspKeys<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("EspKeys { .. }")
    }
}

/// `payload || padding || pad length || next header` in whole blocks, with
/// the least padding.
const fn padded_len(payload_len: usize) -> usize {
    (payload_len + 2).next_multiple_of(16)
}

/// Checks the configuration and builds the key objects.
fn build_keys(
    config: &EspConfig,
    keys: &EspKeys<'_>,
    backend: Backend,
) -> Result<(AesCbcKey, HmacKey), Error> {
    let Some(mac) = config.integrity.mac() else {
        return Err(Error::UnsupportedAlgorithm {
            name: config.integrity.name(),
        });
    };
    let want = config.integrity.key_len();
    if keys.auth_key.len() != want {
        return Err(Error::InvalidKeyLength {
            expected: want,
            actual: keys.auth_key.len(),
        });
    }
    let aes = AesCbcKey::with_backend(config.cipher, keys.enc_key, backend)?;
    let mac = HmacKey::with_backend(mac, keys.auth_key, backend)?;
    Ok((aes, mac))
}
