//! ESP: opening arbitrary packets and sealing arbitrary payloads. Every
//! backend gives the same result; a packet that opens has an ICV the
//! independent HMAC agrees with and RFC 4303 padding; a sealed payload
//! opens back to itself, and with any one bit flipped it does not.
//!
//! Input: a selector byte (integrity, AES key size, ESN, mode), the 8-byte
//! sequence number, a 4-byte bit position, a 16-byte IV, then the packet
//! (mode 0) or the payload (mode 1).
#![no_main]

use cbc_hmac::esp::{EspConfig, EspIntegrity, EspKeys, EspOpener, EspSealer, HEADER_LEN};
use cbc_hmac::{Backend, Cipher, Error};
use fuzz_support::reference_mac;
use libfuzzer_sys::fuzz_target;

const SPI: u32 = 0x0102_0304;

fuzz_target!(|data: &[u8]| {
    if data.len() < 29 {
        return;
    }
    let sel = data[0];
    let integrity = [
        EspIntegrity::HmacSha1_96,
        EspIntegrity::HmacSha256_128,
        EspIntegrity::HmacSha384_192,
    ][(sel % 3) as usize];
    let cipher = if sel & 0x10 == 0 {
        Cipher::Aes128Cbc
    } else {
        Cipher::Aes256Cbc
    };
    let esn = sel & 0x20 != 0;
    let seal_mode = sel & 0x40 != 0;
    let mut seq = u64::from_le_bytes(data[1..9].try_into().unwrap());
    if !esn {
        seq &= 0xffff_ffff;
    }
    let flip = u32::from_le_bytes(data[9..13].try_into().unwrap()) as usize;
    let iv: [u8; 16] = data[13..29].try_into().unwrap();
    let rest = &data[29..];

    let config = EspConfig {
        cipher,
        integrity,
        spi: SPI,
        esn,
    };
    let enc_key: [u8; 32] = std::array::from_fn(|i| i as u8);
    let auth_key: [u8; 48] = std::array::from_fn(|i| 0x40 + i as u8);
    let keys = EspKeys {
        enc_key: &enc_key[..cipher.key_len()],
        auth_key: &auth_key[..integrity.key_len()],
    };
    let mac = integrity.mac().unwrap();

    if !seal_mode {
        let mut first: Option<Result<(Vec<u8>, u8), Error>> = None;
        for backend in Backend::available() {
            let opener = EspOpener::with_backend(config, keys, backend).unwrap();
            let mut packet = rest.to_vec();
            let got = opener
                .open_in_place(seq, &mut packet)
                .map(|p| (p.payload.to_vec(), p.next_header));
            if let Ok((payload, _)) = &got {
                let end = rest.len() - integrity.icv_len();
                let hi = ((seq >> 32) as u32).to_be_bytes();
                let suffix: &[u8] = if esn { &hi } else { &[] };
                let icv = reference_mac(mac, keys.auth_key, &[&rest[..end], suffix]);
                assert_eq!(
                    &icv[..integrity.icv_len()],
                    &rest[end..],
                    "ICV on {backend}"
                );
                let body = &packet[HEADER_LEN..end];
                let pad = body[body.len() - 2] as usize;
                assert_eq!(payload.len(), body.len() - 2 - pad);
                for (i, &b) in body[payload.len()..body.len() - 2].iter().enumerate() {
                    assert_eq!(b as usize, i + 1, "padding on {backend}");
                }
            }
            match &first {
                None => first = Some(got),
                Some(f) => assert_eq!(f, &got, "{backend} opens differently"),
            }
        }
        return;
    }

    let payload = &rest[..rest.len().min(4000)];
    let mut sealed: Option<Vec<u8>> = None;
    for backend in Backend::available() {
        let mut sealer = EspSealer::with_backend(config, keys, backend).unwrap();
        let mut buf = vec![0u8; config.sealed_len(payload.len())];
        buf[HEADER_LEN..HEADER_LEN + payload.len()].copy_from_slice(payload);
        let n = sealer
            .seal_in_place_with_iv(seq, rest.len() as u8, &mut buf, payload.len(), &iv)
            .unwrap();
        assert_eq!(n, buf.len());
        match &sealed {
            None => sealed = Some(buf.clone()),
            Some(s) => assert_eq!(s, &buf, "{backend} seals differently"),
        }
        let opener = EspOpener::with_backend(config, keys, backend).unwrap();
        let mut copy = buf.clone();
        let opened = opener.open_in_place(seq, &mut copy).unwrap();
        assert_eq!(opened.payload, payload);
        let bit = flip % (8 * n);
        buf[bit / 8] ^= 1 << (bit % 8);
        assert!(
            opener.open_in_place(seq, &mut buf).is_err(),
            "flip {bit} on {backend}"
        );
    }
});
