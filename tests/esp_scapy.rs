//! ESP against an independent implementation: Scapy's
//! `SecurityAssociation` (PyPI `scapy`), through `tests/cross/esp.py`.
//! For every integrity algorithm, both AES key sizes, with and without
//! ESN: Scapy opens what we seal (with random IVs), we open what Scapy
//! seals, and for the same IV both seal the same bytes. Skips, saying so,
//! when python3 or Scapy is missing (`pip install scapy==2.8.0`).

#[path = "cross/mod.rs"]
mod cross;

use cbc_hmac::esp::{EspConfig, EspIntegrity, EspKeys, EspOpener, EspSealer};
use cbc_hmac::{Backend, Cipher, Error};
use cross::{Peer, field, hex, unhex};

fn scapy_name(i: EspIntegrity) -> &'static str {
    match i {
        EspIntegrity::HmacSha1_96 => "HMAC-SHA1-96",
        EspIntegrity::HmacSha256_128 => "SHA2-256-128",
        EspIntegrity::HmacSha384_192 => "SHA2-384-192",
        EspIntegrity::HmacSha512_256 => "SHA2-512-256",
        other => panic!("{other:?} not supported"),
    }
}

/// A small deterministic generator (the peer needs no randomness).
struct Xs(u64);
impl Xs {
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n)
            .map(|_| {
                self.0 ^= self.0 << 13;
                self.0 ^= self.0 >> 7;
                self.0 ^= self.0 << 17;
                self.0 as u8
            })
            .collect()
    }
}

#[test]
fn scapy_opens_what_we_seal_and_we_open_what_it_seals() {
    let mut peer = match Peer::start("esp.py", "scapy.layers.ipsec") {
        Ok(p) => p,
        Err(why) => {
            eprintln!("SKIPPED: ESP cross-check with Scapy: {why}");
            return;
        }
    };
    let mut rng = Xs(0x5ca9);
    let backends: Vec<Backend> = Backend::available().collect();
    let mut checked = 0;
    for integrity in EspIntegrity::ALL {
        for cipher in Cipher::ALL {
            for esn in [false, true] {
                let enc_key = rng.bytes(cipher.key_len());
                let auth_key = rng.bytes(integrity.key_len());
                let spi = 0x1000 + checked as u32;
                let config = EspConfig {
                    cipher,
                    integrity,
                    spi,
                    esn,
                };
                let keys = EspKeys {
                    enc_key: &enc_key,
                    auth_key: &auth_key,
                };
                let seqs: &[u64] = if esn {
                    &[1, 0xffff_ffff, (1 << 32) + 3, (7 << 32) + 0x1234]
                } else {
                    &[1, 77, 0xffff_ffff]
                };
                for (k, &seq) in seqs.iter().enumerate() {
                    for len in [0usize, 1, 13, 14, 15, 16, 31, 64, 100, 1400] {
                        let backend = backends[(k + len) % backends.len()];
                        let mut sealer = EspSealer::with_backend(config, keys, backend).unwrap();
                        let opener = EspOpener::with_backend(config, keys, backend).unwrap();
                        let payload = rng.bytes(len);
                        let nh = if len % 2 == 0 { 253 } else { 254 };
                        let common = format!(
                            r#""auth": "{}", "enc_key": "{}", "auth_key": "{}", "spi": {spi}, "seq": {seq}, "esn": {esn}"#,
                            scapy_name(integrity),
                            hex(&enc_key),
                            hex(&auth_key),
                        );
                        let at = format!(
                            "{integrity:?} {cipher:?} esn {esn} seq {seq:#x} len {len} on {backend}"
                        );

                        // Ours, random IV -> Scapy opens.
                        let mut packet = vec![0u8; config.sealed_len(len)];
                        let n = sealer.seal(seq, nh, &payload, &mut packet).unwrap();
                        let reply = peer.ask(&format!(
                            r#"{{"op": "open", {common}, "packet": "{}"}}"#,
                            hex(&packet[..n])
                        ));
                        assert_eq!(
                            field(&reply, "error"),
                            None,
                            "{at}: Scapy rejects ours: {reply}"
                        );
                        assert_eq!(
                            field(&reply, "payload"),
                            Some(hex(&payload).as_str()),
                            "{at}"
                        );
                        assert_eq!(field(&reply, "nh"), Some(nh.to_string().as_str()), "{at}");

                        // A tampered packet of ours: Scapy rejects it too.
                        if len == 16 {
                            let mut bad = packet[..n].to_vec();
                            bad[n / 2] ^= 4;
                            let reply = peer.ask(&format!(
                                r#"{{"op": "open", {common}, "packet": "{}"}}"#,
                                hex(&bad)
                            ));
                            assert!(
                                field(&reply, "error").is_some(),
                                "{at}: Scapy took a forgery"
                            );
                        }

                        // Scapy seals -> we open; same IV -> same bytes.
                        let iv = rng.bytes(16);
                        let reply = peer.ask(&format!(
                            r#"{{"op": "seal", {common}, "nh": {nh}, "payload": "{}", "iv": "{}"}}"#,
                            hex(&payload),
                            hex(&iv)
                        ));
                        let mut theirs = unhex(field(&reply, "packet").expect("packet"));
                        let mut ours = vec![0u8; config.sealed_len(len)];
                        ours[24..24 + len].copy_from_slice(&payload);
                        let n = sealer
                            .seal_in_place_with_iv(seq, nh, &mut ours, len, &iv)
                            .unwrap();
                        assert_eq!(hex(&ours[..n]), hex(&theirs), "{at}: same IV, other bytes");
                        let opened = opener.open_in_place(seq, &mut theirs).unwrap();
                        assert_eq!(opened.payload, &payload[..], "{at}");
                        assert_eq!(opened.next_header, nh, "{at}");
                        checked += 1;
                    }
                }
                // With ESN the high half matters even though it is not sent.
                if esn {
                    let mut sealer = EspSealer::new(config, keys).unwrap();
                    let mut packet = vec![0u8; config.sealed_len(4)];
                    sealer.seal((2 << 32) + 5, 4, b"wrap", &mut packet).unwrap();
                    let reply = peer.ask(&format!(
                        r#"{{"op": "open", "auth": "{}", "enc_key": "{}", "auth_key": "{}", "spi": {spi}, "seq": {}, "esn": true, "packet": "{}"}}"#,
                        scapy_name(integrity),
                        hex(&enc_key),
                        hex(&auth_key),
                        (3u64 << 32) + 5,
                        hex(&packet)
                    ));
                    assert!(
                        field(&reply, "error").is_some(),
                        "wrong ESN accepted: {reply}"
                    );
                    let opener = EspOpener::new(config, keys).unwrap();
                    assert_eq!(
                        opener.open_in_place((3 << 32) + 5, &mut packet).map(|_| ()),
                        Err(Error::AuthenticationFailed)
                    );
                }
            }
        }
    }
    eprintln!("Scapy cross-check: {checked} packet pairs, each way");
    assert_eq!(checked, 4 * 2 * (3 + 4) * 10);
}
