//! Opening ESP packets.

use core::fmt;

use super::{EspConfig, EspKeys, HEADER_LEN, build_keys};
use crate::backends::Backend;
use crate::error::Error;
use crate::primitives::ct_padding::check_esp_padding;
use crate::replay::ReplayWindow;
use crate::{AesCbcKey, HmacKey};

/// An opened packet: the payload (in the packet's buffer) and the trailer.
#[derive(Debug, PartialEq, Eq)]
pub struct EspPayload<'a> {
    /// The payload, padding and trailer removed.
    pub payload: &'a mut [u8],
    /// The next-header byte: the payload's protocol. 59 ("no next header")
    /// marks a dummy packet (RFC 4303 section 2.6), which the caller drops.
    pub next_header: u8,
    /// The full (64-bit with ESN) sequence number the ICV was checked for.
    pub seq: u64,
}

/// Opens the packets of one inbound SA.
///
/// [`EspOpener::open_in_place`] takes the full sequence number from the
/// caller; [`EspOpener::open_with_window`] reconstructs it (ESN) and runs
/// the anti-replay window around the open: checked before the ICV,
/// updated after. Every ICV or padding failure is
/// [`Error::AuthenticationFailed`]; the ICV is compared in constant time
/// before anything is decrypted, and the padding is checked without
/// branches. Opening never allocates.
pub struct EspOpener {
    config: EspConfig,
    aes: AesCbcKey,
    mac: HmacKey,
}

impl EspOpener {
    /// An opener on the best available backend.
    pub fn new(config: EspConfig, keys: EspKeys<'_>) -> Result<Self, Error> {
        Self::with_backend(config, keys, Backend::detect())
    }

    /// Like [`EspOpener::new`] on a chosen backend.
    pub fn with_backend(
        config: EspConfig,
        keys: EspKeys<'_>,
        backend: Backend,
    ) -> Result<Self, Error> {
        let (aes, mac) = build_keys(&config, &keys, backend)?;
        Ok(EspOpener { config, aes, mac })
    }

    /// The configuration.
    pub fn config(&self) -> EspConfig {
        self.config
    }

    /// The backend in use.
    pub fn backend(&self) -> Backend {
        self.aes.backend()
    }

    /// The SPI and the (low 32 bits of the) sequence number of a packet:
    /// its first 8 bytes, for routing to an SA before opening.
    pub fn peek_header(packet: &[u8]) -> Option<(u32, u32)> {
        let spi = u32::from_be_bytes(packet.get(..4)?.try_into().ok()?);
        let seq = u32::from_be_bytes(packet.get(4..8)?.try_into().ok()?);
        Some((spi, seq))
    }

    /// Opens `packet` in place as sequence number `seq` (its low 32 bits
    /// must be the packet's; with ESN the high 32 bits enter the ICV).
    pub fn open_in_place<'a>(
        &self,
        seq: u64,
        packet: &'a mut [u8],
    ) -> Result<EspPayload<'a>, Error> {
        // Public checks first, outside the constant-time part.
        let (suffix, suffix_len) = self.config.seq_suffix(seq)?;
        let len = packet.len();
        let min = self.config.min_packet_len();
        if len < min {
            return Err(Error::PacketTooShort { len, min });
        }
        let icv = self.config.integrity.icv_len();
        let end = len - icv;
        if !(end - HEADER_LEN).is_multiple_of(16) {
            return Err(Error::PacketNotBlockAligned {
                len: end - HEADER_LEN,
            });
        }
        let (spi, seq_lo) = Self::peek_header(packet).expect("length checked");
        if spi != self.config.spi {
            return Err(Error::SpiMismatch {
                expected: self.config.spi,
                actual: spi,
            });
        }
        if seq_lo != seq as u32 {
            return Err(Error::SequenceOutOfRange { seq });
        }

        let (authenticated, received) = packet.split_at_mut(end);
        if !self
            .mac
            .truncated_matches(&[authenticated, &suffix[..suffix_len]], received)
        {
            return Err(Error::AuthenticationFailed);
        }
        let (header, body) = authenticated.split_at_mut(HEADER_LEN);
        let mut iv = [0u8; 16];
        iv.copy_from_slice(&header[8..]);
        let (blocks, _) = body.as_chunks_mut::<16>();
        self.aes.raw().decrypt_cbc(&mut iv, blocks);
        let (good, pad_len) = check_esp_padding(body);
        // The one declassification.
        if good != usize::MAX {
            return Err(Error::AuthenticationFailed);
        }
        let trailer = body.len() - 2;
        let next_header = body[trailer + 1];
        Ok(EspPayload {
            payload: &mut body[..trailer - pad_len],
            next_header,
            seq,
        })
    }

    /// Opens `packet` with the anti-replay window of this SA (RFC 4303
    /// section 3.4.3): reconstructs the sequence number (ESN, RFC 4303
    /// Appendix A2.2), rejects a replay or a stale packet before checking
    /// the ICV, and records the number in the window only once the packet
    /// has authenticated.
    pub fn open_with_window<'a, const WORDS: usize>(
        &self,
        window: &mut ReplayWindow<WORDS>,
        packet: &'a mut [u8],
    ) -> Result<EspPayload<'a>, Error> {
        let min = self.config.min_packet_len();
        let Some((_, seq_lo)) = Self::peek_header(packet).filter(|_| packet.len() >= min) else {
            return Err(Error::PacketTooShort {
                len: packet.len(),
                min,
            });
        };
        let seq = if self.config.esn {
            window
                .infer_esn(seq_lo)
                .ok_or(Error::Replayed { seq: seq_lo as u64 })?
        } else {
            seq_lo as u64
        };
        window.check(seq)?;
        let opened = self.open_in_place(seq, packet)?;
        window.update(seq)?;
        Ok(opened)
    }
}

impl fmt::Debug for EspOpener {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EspOpener")
            .field("config", &self.config)
            .field("backend", &self.backend())
            .finish_non_exhaustive()
    }
}
