//! Deliberately leaky MAC-then-encrypt opens, planted here (never in the
//! library) for `trace.sh --self-test`: the checker passes its self-test
//! only if it tells the valid records of one public class apart under each
//! of them. The first two check only the padding, which is all they need
//! to leak; the third is the naive open Lucky Thirteen broke.

use std::hint::black_box;

use cbc_hmac::{AesCbcKey, Error, HmacKey};

use super::case::{Case, Op};
use super::child::CONTENT_TYPE;

/// `PAD_TOTAL[p]`: the padding bytes, length byte included, that a length
/// byte `p` stands for. Looked up by the secret byte, which is the leak.
static PAD_TOTAL: [u64; 256] = {
    let mut t = [0u64; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = i as u64 + 1;
        i += 1;
    }
    t
};

pub struct Leaky {
    aes: AesCbcKey,
    mac: HmacKey,
    iv_len: usize,
    version: [u8; 2],
}

impl Leaky {
    pub fn new(case: &Case) -> Result<Self, Error> {
        let c = case.config.combination;
        Ok(Leaky {
            aes: AesCbcKey::with_backend(c.cipher(), &case.enc_key, case.backend)?,
            mac: HmacKey::with_backend(c.mac(), &case.mac_key, case.backend)?,
            iv_len: case.config.version.explicit_iv_len(),
            version: case.config.version.wire(),
        })
    }

    /// Opens an explicit-IV MAC-then-encrypt fragment; returns the
    /// plaintext length.
    pub fn open(&self, op: Op, seq: u64, frag: &mut [u8]) -> Result<usize, Error> {
        let (iv, body) = frag.split_at_mut(self.iv_len);
        self.aes.decrypt(iv, body)?;
        let m = self.mac.output_len();
        match op {
            Op::LeakBranch => branchy_padding(body, m),
            Op::LeakTable => table_padding(body, m),
            _ => self.naive(seq, body, m),
        }
    }

    /// Masked padding check, then the MAC over exactly the plaintext: the
    /// number of compression-function calls follows its secret length.
    fn naive(&self, seq: u64, body: &[u8], m: usize) -> Result<usize, Error> {
        let len = body.len();
        let (good, total) = masked_padding(body, m);
        let data_len = len - m - total;
        let mut header = [0u8; 13];
        header[..8].copy_from_slice(&seq.to_be_bytes());
        header[8] = CONTENT_TYPE;
        header[9..11].copy_from_slice(&self.version);
        header[11..].copy_from_slice(&(data_len as u16).to_be_bytes());
        let mut ctx = self.mac.context();
        ctx.update(&header);
        ctx.update(&body[..data_len]);
        let tag = ctx.finish();
        let diff = tag
            .as_bytes()
            .iter()
            .zip(&body[data_len..data_len + m])
            .fold(0u8, |d, (a, b)| d | (a ^ b));
        if good & (diff == 0) {
            Ok(data_len)
        } else {
            Err(Error::BadRecordMac)
        }
    }
}

/// Padding checked byte by byte with an early exit: a branch on the
/// padding byte (the loop count) and on each padding byte.
fn branchy_padding(body: &[u8], m: usize) -> Result<usize, Error> {
    let len = body.len();
    let pad = black_box(body[len - 1]) as usize;
    if pad + 1 + m > len {
        return Err(Error::BadRecordMac);
    }
    for i in 0..=pad {
        if body[len - 1 - i] as usize != pad {
            return Err(Error::BadRecordMac);
        }
    }
    Ok(len - m - pad - 1)
}

/// Masked padding check, but the padding length comes from a table
/// indexed by the secret length byte.
fn table_padding(body: &[u8], m: usize) -> Result<usize, Error> {
    let len = body.len();
    let (good, _) = masked_padding(body, m);
    let pad = body[len - 1] as usize;
    let total = black_box(&PAD_TOTAL)[pad] as usize;
    if good {
        Ok(len - m - total)
    } else {
        Err(Error::BadRecordMac)
    }
}

/// Padding check over the whole 256-byte window with masks (no branch on
/// the data inside the loop): `(good, padding total or 0)`.
fn masked_padding(body: &[u8], m: usize) -> (bool, usize) {
    let len = body.len();
    let pad = body[len - 1];
    let mut diff = 0u8;
    for k in 0..len.min(256) {
        let b = body[len - 1 - k];
        // All ones when k <= pad.
        let in_pad = ((k as u32).wrapping_sub(u32::from(pad) + 1) >> 31) as u8;
        diff |= in_pad.wrapping_neg() & (b ^ pad);
    }
    let fits = pad as usize + 1 + m <= len;
    let good = (diff == 0) & fits;
    (good, usize::from(good) * (pad as usize + 1))
}
