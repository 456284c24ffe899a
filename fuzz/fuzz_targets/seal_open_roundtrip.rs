//! Sealing then opening arbitrary plaintexts: every backend seals to the
//! same bytes (the explicit IV comes from the input), the reference and
//! every backend open it to the plaintext, and a record with any one bit
//! flipped is rejected.
//!
//! Input: the shared header, a 16-byte explicit IV, a 4-byte bit position,
//! then the plaintext.
#![no_main]

use cbc_hmac::{Backend, Error, Opener, ProtocolVersion, Sealer, record::MAX_PLAINTEXT_LEN};
use fuzz_support::{Header, reference_open};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((h, rest)) = Header::parse(data) else {
        return;
    };
    if rest.len() < 20 {
        return;
    }
    let explicit_iv: [u8; 16] = rest[..16].try_into().unwrap();
    let flip = u32::from_le_bytes(rest[16..20].try_into().unwrap()) as usize;
    let plaintext = &rest[20..];

    let mut sealed: Option<Vec<u8>> = None;
    for backend in Backend::available() {
        let mut sealer = Sealer::with_backend(h.config, h.keys(), backend).unwrap();
        let mut buf = vec![0u8; sealer.sealed_len(plaintext.len())];
        let offset = sealer.payload_offset();
        let result = if plaintext.len() > MAX_PLAINTEXT_LEN {
            sealer.seal(h.seq, h.content_type, plaintext, &mut buf)
        } else {
            buf[offset..offset + plaintext.len()].copy_from_slice(plaintext);
            if h.config.version == ProtocolVersion::Tls10 {
                sealer.seal_in_place(h.seq, h.content_type, &mut buf, plaintext.len())
            } else {
                sealer.seal_in_place_with_iv(
                    h.seq,
                    h.content_type,
                    &mut buf,
                    plaintext.len(),
                    &explicit_iv,
                )
            }
        };
        if plaintext.len() > MAX_PLAINTEXT_LEN {
            assert_eq!(
                result,
                Err(Error::PlaintextTooLong {
                    len: plaintext.len(),
                    max: MAX_PLAINTEXT_LEN
                })
            );
            return;
        }
        let n = result.unwrap();
        assert_eq!(n, buf.len(), "sealed_len must be exact");
        match &sealed {
            None => sealed = Some(buf),
            Some(first) => assert_eq!(first, &buf, "{backend} seals differently"),
        }
    }
    let record = sealed.unwrap();

    // The reference opens it, and so does every backend.
    assert_eq!(reference_open(&h, &record).as_deref(), Ok(plaintext));
    for backend in Backend::available() {
        let mut opener = Opener::with_backend(h.config, h.keys(), backend).unwrap();
        let mut buf = record.clone();
        let opened = opener.open_in_place(h.seq, h.content_type, &mut buf);
        assert_eq!(opened.as_deref(), Ok(plaintext), "{backend}");
    }

    // One flipped bit anywhere is rejected, by every backend, as
    // `BadRecordMac` (the length is unchanged, so no public check fires).
    let bit = flip % (record.len() * 8);
    let mut tampered = record.clone();
    tampered[bit / 8] ^= 1 << (bit % 8);
    for backend in Backend::available() {
        let mut opener = Opener::with_backend(h.config, h.keys(), backend).unwrap();
        let mut buf = tampered.clone();
        let opened = opener.open_in_place(h.seq, h.content_type, &mut buf);
        assert_eq!(opened, Err(Error::BadRecordMac), "{backend}, bit {bit}");
    }
});
