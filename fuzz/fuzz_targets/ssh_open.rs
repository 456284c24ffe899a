//! SSH: opening an arbitrary byte stream as packets, and sealing arbitrary
//! payloads. Every backend gives the same result on the stream (payloads,
//! then the same error, and the same bytes asked for); a packet that opens
//! has a MAC the independent HMAC agrees with and a padding length RFC 4253
//! allows. A sealed payload opens back to itself, and with any one bit
//! flipped it does not.
//!
//! Input: a selector byte (suite, mode), the 4-byte first sequence number,
//! a 4-byte bit position, then the stream (mode 0) or the payload (mode 1).
#![no_main]

use cbc_hmac::ssh::{SshKeys, SshOpener, SshSealer, SshSuite};
use cbc_hmac::{AesCbcKey, Backend, Error};
use fuzz_support::reference_mac;
use libfuzzer_sys::fuzz_target;

/// The target's keys (the seeds are sealed with them).
const IV: [u8; 16] = [0x5a; 16];

fn keys(suite: SshSuite, enc: &[u8; 32], mac: &[u8; 64]) -> (Vec<u8>, Vec<u8>) {
    (
        enc[..suite.cipher().key_len()].to_vec(),
        mac[..suite.mac_key_len()].to_vec(),
    )
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 9 {
        return;
    }
    let suite = SshSuite::ALL[data[0] as usize % SshSuite::ALL.len()];
    let seal_mode = data[0] & 0x80 != 0;
    let seq = u32::from_le_bytes(data[1..5].try_into().unwrap());
    let flip = u32::from_le_bytes(data[5..9].try_into().unwrap()) as usize;
    let rest = &data[9..];
    let enc_key: [u8; 32] = std::array::from_fn(|i| i as u8);
    let mac_key: [u8; 64] = std::array::from_fn(|i| 0x40 + i as u8);
    let (enc, mac) = keys(suite, &enc_key, &mac_key);
    let keys = SshKeys {
        enc_key: &enc,
        iv: &IV,
        mac_key: &mac,
    };

    if !seal_mode {
        let mut first: Option<(Vec<Vec<u8>>, Option<Error>, usize)> = None;
        for backend in Backend::available() {
            let mut opener = SshOpener::with_backend(suite, keys, seq, backend).unwrap();
            let aes = AesCbcKey::with_backend(suite.cipher(), &enc, backend).unwrap();
            let mut chain = IV;
            let (mut opened, mut error, mut at) = (Vec::new(), None, 0);
            while at < rest.len() && opened.len() < 8 {
                let head = &rest[at..];
                let total = match opener.open_length(head) {
                    Ok(t) => t,
                    Err(e) => {
                        error = Some(e);
                        break;
                    }
                };
                if head.len() < total {
                    break;
                }
                let mut packet = head[..total].to_vec();
                match opener.open(&mut packet) {
                    Ok(payload) => {
                        let payload = payload.to_vec();
                        // The reference: decrypt with the public CBC, MAC
                        // with the independent HMAC.
                        let m = suite.mac_len();
                        let n = opened.len() as u32;
                        let s = seq.wrapping_add(n).to_be_bytes();
                        let mut plain = head[..total - m].to_vec();
                        let from = if suite.encrypt_then_mac() { 4 } else { 0 };
                        let authenticated = plain.clone();
                        chain = aes.decrypt(&chain, &mut plain[from..]).unwrap();
                        let covered = if suite.encrypt_then_mac() {
                            &authenticated
                        } else {
                            &plain
                        };
                        let tag = reference_mac(suite.mac(), &mac, &[&s, covered]);
                        assert_eq!(&tag[..], &head[total - m..total], "MAC on {backend}");
                        let pad = plain[4] as usize;
                        assert!(pad >= 4 && payload.len() == plain.len() - 5 - pad);
                        assert_eq!(payload, &plain[5..5 + payload.len()]);
                        opened.push(payload);
                        at += total;
                    }
                    Err(e) => {
                        assert_eq!(e, Error::AuthenticationFailed);
                        error = Some(e);
                        break;
                    }
                }
            }
            let got = (opened, error, opener.bytes_to_discard());
            match &first {
                None => first = Some(got),
                Some(f) => assert_eq!(f, &got, "{backend} opens differently"),
            }
        }
        return;
    }

    let payload = &rest[..rest.len().min(4000)];
    for backend in Backend::available() {
        let mut sealer = SshSealer::with_backend(suite, keys, seq, backend).unwrap();
        let mut buf = vec![0u8; sealer.sealed_len(payload.len())];
        let n = sealer.seal(payload, &mut buf).unwrap();
        assert_eq!(n, buf.len());
        let mut opener = SshOpener::with_backend(suite, keys, seq, backend).unwrap();
        let total = opener.open_length(&buf).unwrap();
        assert_eq!(total, n);
        assert_eq!(opener.open(&mut buf.clone()).unwrap(), payload);
        let bit = flip % (8 * n);
        buf[bit / 8] ^= 1 << (bit % 8);
        let mut opener = SshOpener::with_backend(suite, keys, seq, backend).unwrap();
        let refused = match opener.open_length(&buf) {
            Err(_) => true,
            Ok(total) => {
                let mut packet = buf.clone();
                packet.resize(total, 0);
                opener.open(&mut packet).is_err()
            }
        };
        assert!(refused, "flip {bit} on {backend}");
    }
});
