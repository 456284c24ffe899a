//! Shared pieces of the fuzz targets and the seed writer: the input layout,
//! a plain (not constant-time) reference open built on the `hmac` crate, and
//! a record builder that can use any padding length.
//!
//! Input layout shared by `open` and `seal_open_roundtrip` (fixed-size
//! header, so seeds are easy to write and mutations stay meaningful):
//!
//! | bytes | meaning |
//! | --- | --- |
//! | 0 | configuration selector (see [`config_from`]) |
//! | 1..9 | MAC sequence value, little-endian |
//! | 9 | content type |
//! | 10..42 | AES key (first 16 bytes for AES-128) |
//! | 42..90 | MAC key (first 20, 32 or 48 bytes) |
//! | 90..106 | TLS 1.0 initial IV |
//! | 106.. | target-specific |

use cbc_hmac::{
    AesCbcKey, Combination, Error, MacAlgorithm, MacOrder, ProtocolVersion, RecordConfig,
    RecordKeys,
};
use hmac::{KeyInit, Mac};

/// Bytes before the target-specific part of an input.
pub const HEADER_LEN: usize = 106;

/// Largest fragment an opener accepts (2^14 + 2048).
pub const MAX_FRAGMENT_LEN: usize = cbc_hmac::record::MAX_FRAGMENT_LEN;

/// The parsed fixed header.
#[derive(Clone, Copy, Debug)]
pub struct Header<'a> {
    /// The configuration the selector byte names.
    pub config: RecordConfig,
    /// MAC sequence value.
    pub seq: u64,
    /// Record content type.
    pub content_type: u8,
    /// AES key (sized for the combination).
    pub enc_key: &'a [u8],
    /// MAC key (sized for the combination).
    pub mac_key: &'a [u8],
    /// TLS 1.0 initial IV.
    pub iv: &'a [u8; 16],
}

impl<'a> Header<'a> {
    /// Splits `data` into the header and the rest; `None` if too short.
    pub fn parse(data: &'a [u8]) -> Option<(Header<'a>, &'a [u8])> {
        if data.len() < HEADER_LEN {
            return None;
        }
        let config = config_from(data[0]);
        let seq = u64::from_le_bytes(data[1..9].try_into().unwrap());
        let combination = config.combination;
        let enc_key = &data[10..10 + combination.cipher().key_len()];
        let mac_key = &data[42..42 + combination.mac().tls_key_len()];
        let iv = data[90..106].try_into().unwrap();
        Some((
            Header {
                config,
                seq,
                content_type: data[9],
                enc_key,
                mac_key,
                iv,
            },
            &data[HEADER_LEN..],
        ))
    }

    /// The keys as a sealer or opener takes them.
    pub fn keys(&self) -> RecordKeys<'a> {
        RecordKeys {
            enc_key: self.enc_key,
            mac_key: self.mac_key,
            iv: (self.config.version == ProtocolVersion::Tls10).then_some(&self.iv[..]),
        }
    }
}

/// The configuration for selector byte `b`: combination `b % 5`, version
/// `b / 5 % 5`, MAC order `b / 25 % 2`. A SHA-256/384 combination with a
/// version before TLS 1.2 becomes TLS 1.2, so every selector is usable.
pub fn config_from(b: u8) -> RecordConfig {
    let combination = Combination::ALL[b as usize % 5];
    let mut version = ProtocolVersion::ALL[b as usize / 5 % 5];
    if !combination.allows(version) {
        version = ProtocolVersion::Tls12;
    }
    let mac_order = MacOrder::ALL[b as usize / 25 % 2];
    RecordConfig::new(combination, version, mac_order)
}

/// The selector byte of `config` (inverse of [`config_from`] on allowed
/// configurations).
pub fn selector(config: RecordConfig) -> u8 {
    let c = Combination::ALL
        .iter()
        .position(|&c| c == config.combination)
        .unwrap();
    let v = ProtocolVersion::ALL
        .iter()
        .position(|&v| v == config.version)
        .unwrap();
    let o = MacOrder::ALL
        .iter()
        .position(|&o| o == config.mac_order)
        .unwrap();
    (c + 5 * v + 25 * o) as u8
}

/// Writes the fixed header for these values.
pub fn write_header(
    out: &mut Vec<u8>,
    config: RecordConfig,
    seq: u64,
    content_type: u8,
    enc_key: &[u8; 32],
    mac_key: &[u8; 48],
    iv: &[u8; 16],
) {
    out.push(selector(config));
    out.extend_from_slice(&seq.to_le_bytes());
    out.push(content_type);
    out.extend_from_slice(enc_key);
    out.extend_from_slice(mac_key);
    out.extend_from_slice(iv);
}

/// HMAC with the `hmac` crate (independent of the library's HMAC and
/// constant-time digest) over the concatenation of `parts`.
pub fn reference_mac(alg: MacAlgorithm, key: &[u8], parts: &[&[u8]]) -> Vec<u8> {
    fn run<M: Mac + KeyInit>(key: &[u8], parts: &[&[u8]]) -> Vec<u8> {
        let mut m = <M as KeyInit>::new_from_slice(key).unwrap();
        for p in parts {
            m.update(p);
        }
        m.finalize().into_bytes().to_vec()
    }
    match alg {
        MacAlgorithm::HmacSha1 => run::<hmac::Hmac<sha1::Sha1>>(key, parts),
        MacAlgorithm::HmacSha256 => run::<hmac::Hmac<sha2::Sha256>>(key, parts),
        MacAlgorithm::HmacSha384 => run::<hmac::Hmac<sha2::Sha384>>(key, parts),
        MacAlgorithm::HmacSha512 => run::<hmac::Hmac<sha2::Sha512>>(key, parts),
    }
}

/// `seq || type || version || length`.
pub fn mac_header(seq: u64, content_type: u8, version: [u8; 2], len: usize) -> [u8; 13] {
    let mut h = [0u8; 13];
    h[..8].copy_from_slice(&seq.to_be_bytes());
    h[8] = content_type;
    h[9..11].copy_from_slice(&version);
    h[11..].copy_from_slice(&(len as u16).to_be_bytes());
    h
}

/// The smallest valid fragment for `config`.
pub fn min_fragment_len(config: RecordConfig) -> usize {
    let iv = config.version.explicit_iv_len();
    let m = config.combination.mac().output_len();
    match config.mac_order {
        MacOrder::MacThenEncrypt => iv + (m + 1).next_multiple_of(16),
        MacOrder::EncryptThenMac => iv + 16 + m,
    }
}

/// A straightforward open (variable time, obviously correct): the oracle
/// the library must agree with on every input. Returns the plaintext.
pub fn reference_open(h: &Header<'_>, record: &[u8]) -> Result<Vec<u8>, Error> {
    let config = h.config;
    let len = record.len();
    if len > MAX_FRAGMENT_LEN {
        return Err(Error::RecordTooLong {
            len,
            max: MAX_FRAGMENT_LEN,
        });
    }
    let min = min_fragment_len(config);
    if len < min {
        return Err(Error::RecordTooShort { len, min });
    }
    let mac = config.combination.mac();
    let m = mac.output_len();
    let offset = config.version.explicit_iv_len();
    let cipher_end = match config.mac_order {
        MacOrder::MacThenEncrypt => len,
        MacOrder::EncryptThenMac => len - m,
    };
    if !(cipher_end - offset).is_multiple_of(16) {
        return Err(Error::RecordNotBlockAligned { len });
    }
    let iv: [u8; 16] = if offset == 0 {
        *h.iv
    } else {
        record[..16].try_into().unwrap()
    };
    let version = config.version.wire();
    let aes = AesCbcKey::with_backend(
        config.combination.cipher(),
        h.enc_key,
        cbc_hmac::Backend::Portable,
    )
    .unwrap();
    let mut body = record[offset..cipher_end].to_vec();
    match config.mac_order {
        MacOrder::MacThenEncrypt => {
            aes.decrypt(&iv, &mut body).unwrap();
            let pad = *body.last().unwrap() as usize;
            if pad + 1 + m > body.len() {
                return Err(Error::BadRecordMac);
            }
            let data_len = body.len() - m - pad - 1;
            if body[data_len + m..].iter().any(|&b| b as usize != pad) {
                return Err(Error::BadRecordMac);
            }
            let header = mac_header(h.seq, h.content_type, version, data_len);
            let tag = reference_mac(mac, h.mac_key, &[&header, &body[..data_len]]);
            if tag != body[data_len..data_len + m] {
                return Err(Error::BadRecordMac);
            }
            body.truncate(data_len);
            Ok(body)
        }
        MacOrder::EncryptThenMac => {
            let header = mac_header(h.seq, h.content_type, version, cipher_end);
            let tag = reference_mac(mac, h.mac_key, &[&header, &record[..cipher_end]]);
            if tag != record[cipher_end..] {
                return Err(Error::BadRecordMac);
            }
            aes.decrypt(&iv, &mut body).unwrap();
            let pad = *body.last().unwrap() as usize;
            if pad + 1 > body.len()
                || body[body.len() - pad - 1..]
                    .iter()
                    .any(|&b| b as usize != pad)
            {
                return Err(Error::BadRecordMac);
            }
            body.truncate(body.len() - pad - 1);
            Ok(body)
        }
    }
}

/// Builds a valid record for `h` with `plaintext` and `pad` padding bytes
/// (plus the length byte), which must make whole blocks; `explicit_iv` is
/// used for TLS 1.1+ and DTLS, `h.iv` for TLS 1.0.
pub fn build_record(h: &Header<'_>, plaintext: &[u8], pad: u8, explicit_iv: &[u8; 16]) -> Vec<u8> {
    let config = h.config;
    let mac = config.combination.mac();
    let version = config.version.wire();
    let offset = config.version.explicit_iv_len();
    let iv = if offset == 0 { h.iv } else { explicit_iv };
    let aes = AesCbcKey::with_backend(
        config.combination.cipher(),
        h.enc_key,
        cbc_hmac::Backend::Portable,
    )
    .unwrap();
    let mut out = iv[..offset].to_vec();
    let mut body = plaintext.to_vec();
    if config.mac_order == MacOrder::MacThenEncrypt {
        let header = mac_header(h.seq, h.content_type, version, plaintext.len());
        body.extend(reference_mac(mac, h.mac_key, &[&header, plaintext]));
    }
    body.extend(std::iter::repeat_n(pad, pad as usize + 1));
    assert!(
        body.len().is_multiple_of(16),
        "padding must make whole blocks"
    );
    aes.encrypt(iv, &mut body).unwrap();
    out.extend(body);
    if config.mac_order == MacOrder::EncryptThenMac {
        let header = mac_header(h.seq, h.content_type, version, out.len());
        let tag = reference_mac(mac, h.mac_key, &[&header, &out]);
        out.extend(tag);
    }
    out
}
