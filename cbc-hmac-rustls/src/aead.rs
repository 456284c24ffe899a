//! The record protection: rustls's `Tls12AeadAlgorithm` over cbc-hmac's
//! [`Sealer`] and [`Opener`], MAC-then-encrypt with an explicit IV
//! (RFC 5246 section 6.2.3.2).

use cbc_hmac::{Combination, MacOrder, Opener, ProtocolVersion, RecordConfig, RecordKeys, Sealer};
use rustls::crypto::cipher::{
    AeadKey, InboundOpaqueMessage, InboundPlainMessage, KeyBlockShape, MessageDecrypter,
    MessageEncrypter, OutboundOpaqueMessage, OutboundPlainMessage, PrefixedPayload,
    Tls12AeadAlgorithm, UnsupportedOperationError,
};
use rustls::{ConnectionTrafficSecrets, Error};

/// The largest plaintext a record may carry (RFC 5246 section 6.2.1).
const MAX_PLAINTEXT_LEN: usize = 1 << 14;

/// One CBC suite's record protection, for rustls's TLS 1.2 key schedule.
///
/// rustls cuts the key block as `client_key | server_key | client_iv |
/// server_iv`, RFC 5246 section 6.3 as `client_MAC | server_MAC |
/// client_enc | server_enc`. Declaring the "key" as long as the MAC key and
/// the "iv" as long as the AES key makes the two cuts agree: each direction
/// gets its MAC key in the key slot and its AES key in the IV slot.
pub(crate) struct CbcHmacAlgorithm {
    combination: Combination,
}

impl CbcHmacAlgorithm {
    pub(crate) const fn new(combination: Combination) -> Self {
        CbcHmacAlgorithm { combination }
    }

    fn config(&self) -> RecordConfig {
        RecordConfig::new(
            self.combination,
            ProtocolVersion::Tls12,
            MacOrder::MacThenEncrypt,
        )
    }
}

/// Splits rustls's slots back into record keys: see [`CbcHmacAlgorithm`].
fn record_keys<'a>(mac_key: &'a AeadKey, enc_key: &'a [u8]) -> RecordKeys<'a> {
    RecordKeys {
        enc_key,
        mac_key: mac_key.as_ref(),
        iv: None,
    }
}

impl Tls12AeadAlgorithm for CbcHmacAlgorithm {
    fn encrypter(&self, key: AeadKey, iv: &[u8], _extra: &[u8]) -> Box<dyn MessageEncrypter> {
        match Sealer::new(self.config(), record_keys(&key, iv)) {
            Ok(sealer) => Box::new(CbcEncrypter { sealer }),
            // Key lengths come from `key_block_shape`, so only the OS random
            // source (the IV generator's seed) can fail: refuse to send.
            Err(_) => Box::new(FailedEncrypter),
        }
    }

    fn decrypter(&self, key: AeadKey, iv: &[u8]) -> Box<dyn MessageDecrypter> {
        match Opener::new(self.config(), record_keys(&key, iv)) {
            Ok(opener) => Box::new(CbcDecrypter { opener }),
            Err(_) => Box::new(FailedDecrypter),
        }
    }

    fn key_block_shape(&self) -> KeyBlockShape {
        KeyBlockShape {
            enc_key_len: self.combination.mac().output_len(),
            fixed_iv_len: self.combination.cipher().key_len(),
            explicit_nonce_len: 0,
        }
    }

    fn extract_keys(
        &self,
        _key: AeadKey,
        _iv: &[u8],
        _explicit: &[u8],
    ) -> Result<ConnectionTrafficSecrets, UnsupportedOperationError> {
        // `ConnectionTrafficSecrets` has no CBC variant (kTLS export).
        Err(UnsupportedOperationError)
    }
}

/// Seals one direction's records; the sealer holds the expanded AES key,
/// the precomputed HMAC states and the explicit-IV generator, built once.
struct CbcEncrypter {
    sealer: Sealer,
}

impl MessageEncrypter for CbcEncrypter {
    fn encrypt(
        &mut self,
        msg: OutboundPlainMessage<'_>,
        seq: u64,
    ) -> Result<OutboundOpaqueMessage, Error> {
        let plaintext_len = msg.payload.len();
        let total = self.sealer.sealed_len(plaintext_len);
        // rustls's API returns an owned record, so this is the one
        // allocation per record: sized once, never grown.
        let mut payload = PrefixedPayload::with_capacity(total);
        let offset = self.sealer.payload_offset();
        payload.extend_from_slice(&[0; 16][..offset]);
        payload.extend_from_chunks(&msg.payload);
        let tail = total - offset - plaintext_len;
        payload.extend(core::iter::repeat_n(&0u8, tail));
        let n = self
            .sealer
            .seal_in_place(seq, u8::from(msg.typ), payload.as_mut(), plaintext_len)
            .map_err(|_| Error::EncryptError)?;
        debug_assert_eq!(n, total);
        Ok(OutboundOpaqueMessage::new(msg.typ, msg.version, payload))
    }

    fn encrypted_payload_len(&self, payload_len: usize) -> usize {
        // Exact: the sealer always pads to the next block and no further.
        self.sealer.sealed_len(payload_len)
    }
}

/// Opens one direction's records in rustls's receive buffer.
struct CbcDecrypter {
    opener: Opener,
}

impl MessageDecrypter for CbcDecrypter {
    fn decrypt<'a>(
        &mut self,
        mut msg: InboundOpaqueMessage<'a>,
        seq: u64,
    ) -> Result<InboundPlainMessage<'a>, Error> {
        let typ = u8::from(msg.typ);
        let base = msg.payload.as_ptr().addr();
        // Every failure, from a short fragment to bad padding or MAC, is
        // rustls's one decrypt error (a `bad_record_mac` alert): the
        // opener already makes padding and MAC failures one error.
        let plaintext = self
            .opener
            .open_in_place(seq, typ, &mut msg.payload)
            .map_err(|_| Error::DecryptError)?;
        // The plaintext is a sub-slice of the payload (after the explicit IV).
        let start = plaintext.as_ptr().addr() - base;
        let len = plaintext.len();
        if len > MAX_PLAINTEXT_LEN {
            return Err(Error::PeerSentOversizedRecord);
        }
        Ok(msg.into_plain_message_range(start..start + len))
    }
}

/// Stands in for a sealer that could not be built: sends nothing.
struct FailedEncrypter;

impl MessageEncrypter for FailedEncrypter {
    fn encrypt(
        &mut self,
        _: OutboundPlainMessage<'_>,
        _: u64,
    ) -> Result<OutboundOpaqueMessage, Error> {
        Err(Error::EncryptError)
    }

    fn encrypted_payload_len(&self, payload_len: usize) -> usize {
        payload_len
    }
}

/// Stands in for an opener that could not be built: opens nothing.
struct FailedDecrypter;

impl MessageDecrypter for FailedDecrypter {
    fn decrypt<'a>(
        &mut self,
        _: InboundOpaqueMessage<'a>,
        _: u64,
    ) -> Result<InboundPlainMessage<'a>, Error> {
        Err(Error::DecryptError)
    }
}
