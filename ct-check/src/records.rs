//! Records built by hand from `AesCbcKey` and `HmacKey` (on public keys),
//! so that every padding length and every kind of damage can be made: the
//! sealer itself only ever writes the least padding.

use cbc_hmac::{AesCbcKey, Backend, HmacKey, MacOrder, RecordConfig};

/// What is wrong with a record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Damage {
    /// Nothing: the record opens.
    None,
    /// A padding byte differs from the length byte (for zero padding: the
    /// length byte claims 255 bytes that are not all 255).
    Padding,
    /// One bit of the MAC is flipped.
    Mac,
}

impl Damage {
    pub const ALL: [Damage; 3] = [Damage::None, Damage::Padding, Damage::Mac];
}

/// The public key material records are built with.
pub struct Keys<'a> {
    pub enc: &'a [u8],
    pub mac: &'a [u8],
    /// TLS 1.0's initial IV (or the explicit IV of later versions).
    pub iv: &'a [u8; 16],
}

fn header(seq: u64, content_type: u8, version: [u8; 2], len: usize) -> [u8; 13] {
    let mut h = [0u8; 13];
    h[..8].copy_from_slice(&seq.to_be_bytes());
    h[8] = content_type;
    h[9..11].copy_from_slice(&version);
    h[11..].copy_from_slice(&(len as u16).to_be_bytes());
    h
}

/// A record of `config` carrying `plaintext` with `pad` padding bytes
/// (plus the length byte; the total must make whole blocks), damaged as
/// asked.
pub fn build(
    config: RecordConfig,
    keys: &Keys<'_>,
    seq: u64,
    content_type: u8,
    plaintext: &[u8],
    pad: u8,
    damage: Damage,
) -> Vec<u8> {
    let alg = config.combination.mac();
    let m = alg.output_len();
    let version = config.version.wire();
    let offset = config.version.explicit_iv_len();
    let aes = AesCbcKey::with_backend(config.combination.cipher(), keys.enc, Backend::Portable)
        .expect("key length");
    let mac = HmacKey::with_backend(alg, keys.mac, Backend::Portable).expect("MAC key");

    let mut out = keys.iv[..offset].to_vec();
    let mut body = plaintext.to_vec();
    if config.mac_order == MacOrder::MacThenEncrypt {
        let mut ctx = mac.context();
        ctx.update(&header(seq, content_type, version, plaintext.len()));
        ctx.update(plaintext);
        body.extend_from_slice(ctx.finish().as_bytes());
        if damage == Damage::Mac {
            let at = plaintext.len() + m / 2;
            body[at] ^= 0x10;
        }
    }
    let pad_start = body.len();
    body.extend(std::iter::repeat_n(pad, pad as usize + 1));
    if damage == Damage::Padding {
        if pad == 0 {
            *body.last_mut().unwrap() = 255;
        } else {
            body[pad_start] ^= 0x01;
        }
    }
    assert!(
        body.len().is_multiple_of(16),
        "padding must make whole blocks"
    );
    aes.encrypt(keys.iv, &mut body).expect("whole blocks");
    out.extend(body);
    if config.mac_order == MacOrder::EncryptThenMac {
        let mut ctx = mac.context();
        ctx.update(&header(seq, content_type, version, out.len()));
        ctx.update(&out);
        let mut tag = ctx.finish().as_bytes().to_vec();
        if damage == Damage::Mac {
            tag[m / 2] ^= 0x10;
        }
        out.extend(tag);
    }
    out
}

/// Plaintext bytes that never equal 255, so that a length byte claiming 255
/// padding bytes is always bad padding.
pub fn plaintext(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8).collect()
}
