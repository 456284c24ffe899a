//! ESP (RFC 4303) with AES-CBC and truncated HMACs: the packet layout built
//! independently here from AES-CBC and HMAC, every backend against it and
//! against portable, tampering, bad padding under a valid ICV, extended
//! sequence numbers, the anti-replay window, and the typed errors.

mod common;

use cbc_hmac::esp::{
    EspConfig, EspIntegrity, EspKeys, EspOpener, EspSealer, HEADER_LEN, MAX_PAYLOAD_LEN,
};
use cbc_hmac::{AesCbcKey, Backend, Cipher, Error, HmacKey, ReplayWindow};
use common::rng::Rng;
use common::{backends, hex};

const SUPPORTED: [EspIntegrity; 4] = [
    EspIntegrity::HmacSha1_96,
    EspIntegrity::HmacSha256_128,
    EspIntegrity::HmacSha384_192,
    EspIntegrity::HmacSha512_256,
];

const LENGTHS: [usize; 14] = [0, 1, 2, 13, 14, 15, 16, 17, 30, 31, 63, 64, 200, 1400];

struct Sa {
    config: EspConfig,
    enc_key: Vec<u8>,
    auth_key: Vec<u8>,
}

impl Sa {
    fn random(rng: &mut Rng, cipher: Cipher, integrity: EspIntegrity, esn: bool) -> Self {
        Sa {
            config: EspConfig {
                cipher,
                integrity,
                spi: rng.next() as u32,
                esn,
            },
            enc_key: rng.bytes(cipher.key_len()),
            auth_key: rng.bytes(integrity.key_len()),
        }
    }

    fn keys(&self) -> EspKeys<'_> {
        EspKeys {
            enc_key: &self.enc_key,
            auth_key: &self.auth_key,
        }
    }

    /// The packet by hand: RFC 4303's layout from the primitives.
    fn reference(&self, seq: u64, nh: u8, payload: &[u8], iv: &[u8; 16]) -> Vec<u8> {
        let mut body = payload.to_vec();
        let pad = (16 - (payload.len() + 2) % 16) % 16;
        body.extend((1..=pad).map(|i| i as u8));
        body.push(pad as u8);
        body.push(nh);
        let aes =
            AesCbcKey::with_backend(self.config.cipher, &self.enc_key, Backend::Portable).unwrap();
        aes.encrypt(iv, &mut body).unwrap();
        let mut packet = Vec::new();
        packet.extend(self.config.spi.to_be_bytes());
        packet.extend((seq as u32).to_be_bytes());
        packet.extend(iv);
        packet.extend(&body);
        let mac = HmacKey::with_backend(
            self.config.integrity.mac().unwrap(),
            &self.auth_key,
            Backend::Portable,
        )
        .unwrap();
        let mut ctx = mac.context();
        ctx.update(&packet);
        if self.config.esn {
            ctx.update(&((seq >> 32) as u32).to_be_bytes());
        }
        let tag = ctx.finish();
        packet.extend(&tag.as_bytes()[..self.config.integrity.icv_len()]);
        packet
    }
}

fn seqs(esn: bool) -> &'static [u64] {
    if esn {
        &[
            1,
            0xffff_ffff,
            (1 << 32) + 7,
            (5 << 32) | 0xffff_fff0,
            u64::MAX,
        ]
    } else {
        &[1, 2, 0x8000_0000, 0xffff_ffff]
    }
}

/// Every backend seals exactly the hand-built packet for a given IV, and
/// opens it back; random-IV packets open on every other backend.
#[test]
fn seal_matches_the_layout_on_every_backend() {
    let backends = backends();
    let mut rng = Rng::from_env("seal_matches_the_layout_on_every_backend", 0xe59);
    let mut checked = 0;
    for integrity in SUPPORTED {
        for cipher in Cipher::ALL {
            for esn in [false, true] {
                let sa = Sa::random(&mut rng, cipher, integrity, esn);
                for &len in &LENGTHS {
                    for &seq in seqs(esn) {
                        let payload = rng.bytes(len);
                        let iv: [u8; 16] = rng.array();
                        let nh = rng.next() as u8;
                        let expected = sa.reference(seq, nh, &payload, &iv);
                        assert_eq!(expected.len(), sa.config.sealed_len(len));
                        for &backend in &backends {
                            let mut sealer =
                                EspSealer::with_backend(sa.config, sa.keys(), backend).unwrap();
                            assert_eq!(sealer.backend(), backend);
                            let mut buf = vec![0u8; expected.len() + 3];
                            buf[HEADER_LEN..HEADER_LEN + len].copy_from_slice(&payload);
                            let n = sealer
                                .seal_in_place_with_iv(seq, nh, &mut buf, len, &iv)
                                .unwrap();
                            let at = format!(
                                "{integrity:?} {cipher:?} esn {esn} len {len} seq {seq:#x} on {backend}"
                            );
                            assert_eq!(hex(&buf[..n]), hex(&expected), "{at}");
                            let opener =
                                EspOpener::with_backend(sa.config, sa.keys(), backend).unwrap();
                            let opened = opener.open_in_place(seq, &mut buf[..n]).unwrap();
                            assert_eq!(opened.payload, &payload[..], "{at}");
                            assert_eq!((opened.next_header, opened.seq), (nh, seq), "{at}");

                            // A fresh IV from the generator: another backend
                            // (portable) opens it.
                            let mut packet = vec![0u8; expected.len()];
                            let n = sealer.seal(seq, nh, &payload, &mut packet).unwrap();
                            assert_ne!(packet[8..24], iv, "{at}: IV reused");
                            let portable =
                                EspOpener::with_backend(sa.config, sa.keys(), Backend::Portable)
                                    .unwrap();
                            let opened = portable.open_in_place(seq, &mut packet[..n]).unwrap();
                            assert_eq!(opened.payload, &payload[..], "{at}: random IV");
                        }
                        checked += 1;
                    }
                }
            }
        }
    }
    eprintln!("{checked} packets checked on {} backends", backends.len());
}

/// Any single flipped bit fails: in the SPI or the sequence number as a
/// typed error, anywhere else as AuthenticationFailed. A wrong ESN high half
/// (not sent) fails too.
#[test]
fn tampering_fails() {
    let backends = backends();
    let mut rng = Rng::from_env("tampering_fails", 0x7a3);
    for integrity in SUPPORTED {
        for esn in [false, true] {
            let sa = Sa::random(&mut rng, Cipher::Aes128Cbc, integrity, esn);
            let seq = if esn { (3 << 32) + 9 } else { 9 };
            let packet = sa.reference(seq, 17, &rng.bytes(45), &rng.array());
            for &backend in &backends {
                let opener = EspOpener::with_backend(sa.config, sa.keys(), backend).unwrap();
                for byte in 0..packet.len() {
                    let mut bad = packet.clone();
                    bad[byte] ^= 1 << (byte % 8);
                    let got = opener.open_in_place(seq, &mut bad).map(|_| ());
                    let expected = match byte {
                        0..4 => Err(Error::SpiMismatch {
                            expected: sa.config.spi,
                            actual: u32::from_be_bytes(bad[..4].try_into().unwrap()),
                        }),
                        4..8 => Err(Error::SequenceOutOfRange { seq }),
                        _ => Err(Error::AuthenticationFailed),
                    };
                    assert_eq!(got, expected, "{integrity:?} byte {byte} on {backend}");
                }
                if esn {
                    let mut copy = packet.clone();
                    assert_eq!(
                        opener.open_in_place(seq + (1 << 32), &mut copy).map(|_| ()),
                        Err(Error::AuthenticationFailed),
                        "wrong high half on {backend}"
                    );
                }
                let mut good = packet.clone();
                assert!(opener.open_in_place(seq, &mut good).is_ok());
            }
        }
    }
}

/// Packets whose ICV is right but whose padding is not 1, 2, 3, ... or
/// does not fit: AuthenticationFailed, the same error as a bad ICV.
#[test]
fn bad_padding_under_a_valid_icv() {
    let backends = backends();
    let mut rng = Rng::from_env("bad_padding_under_a_valid_icv", 0xbad);
    let sa = Sa::random(
        &mut rng,
        Cipher::Aes256Cbc,
        EspIntegrity::HmacSha256_128,
        true,
    );
    let seq = (1 << 32) + 1;
    // Builds a packet from a chosen plaintext body (whole blocks).
    let build = |body: &[u8]| {
        let iv = [0x11u8; 16];
        let mut enc = body.to_vec();
        let aes = AesCbcKey::new(sa.config.cipher, &sa.enc_key).unwrap();
        aes.encrypt(&iv, &mut enc).unwrap();
        let mut packet = Vec::new();
        packet.extend(sa.config.spi.to_be_bytes());
        packet.extend((seq as u32).to_be_bytes());
        packet.extend(iv);
        packet.extend(enc);
        let mac = HmacKey::new(sa.config.integrity.mac().unwrap(), &sa.auth_key).unwrap();
        let mut ctx = mac.context();
        ctx.update(&packet);
        ctx.update(&((seq >> 32) as u32).to_be_bytes());
        packet.extend(&ctx.finish().as_bytes()[..16]);
        packet
    };
    for &backend in &backends {
        let opener = EspOpener::with_backend(sa.config, sa.keys(), backend).unwrap();
        for pad in 0..=29usize {
            let mut body = vec![0xabu8; 32];
            body[30] = pad as u8;
            body[31] = 4;
            if pad <= 30 {
                for i in 0..pad {
                    body[30 - pad + i] = i as u8 + 1;
                }
            }
            let mut packet = build(&body);
            let opened = opener.open_in_place(seq, &mut packet).unwrap();
            assert_eq!(opened.payload.len(), 30 - pad, "pad {pad} on {backend}");
            for i in 0..pad {
                let mut bad_body = body.clone();
                bad_body[30 - pad + i] ^= 0x20;
                let mut packet = build(&bad_body);
                assert_eq!(
                    opener.open_in_place(seq, &mut packet).map(|_| ()),
                    Err(Error::AuthenticationFailed),
                    "pad {pad} byte {i} on {backend}"
                );
            }
        }
        // A pad length that does not fit the body.
        for pad in [31u8, 32, 200, 255] {
            let mut body = vec![0u8; 32];
            body[30] = pad;
            let mut packet = build(&body);
            assert_eq!(
                opener.open_in_place(seq, &mut packet).map(|_| ()),
                Err(Error::AuthenticationFailed),
                "pad {pad} on {backend}"
            );
        }
    }
}

#[test]
fn public_checks_are_typed_errors() {
    let mut rng = Rng::from_env("public_checks_are_typed_errors", 1);
    let sa = Sa::random(
        &mut rng,
        Cipher::Aes128Cbc,
        EspIntegrity::HmacSha1_96,
        false,
    );
    let mut sealer = EspSealer::new(sa.config, sa.keys()).unwrap();
    let opener = EspOpener::new(sa.config, sa.keys()).unwrap();
    let mut buf = [0u8; 128];
    assert_eq!(
        sealer.seal(1 << 32, 4, b"x", &mut buf),
        Err(Error::SequenceOutOfRange { seq: 1 << 32 })
    );
    assert_eq!(
        sealer.seal(1, 4, &[0; 100], &mut buf),
        Err(Error::BufferTooSmall {
            needed: 24 + 112 + 12,
            actual: 128
        })
    );
    let big = vec![0u8; MAX_PAYLOAD_LEN + 1];
    let mut big_out = vec![0u8; MAX_PAYLOAD_LEN + 100];
    assert_eq!(
        sealer.seal(1, 4, &big, &mut big_out),
        Err(Error::PlaintextTooLong {
            len: MAX_PAYLOAD_LEN + 1,
            max: MAX_PAYLOAD_LEN
        })
    );
    assert_eq!(
        sealer.seal_in_place_with_iv(1, 4, &mut buf, 1, &[0; 8]),
        Err(Error::InvalidIvLength {
            expected: 16,
            actual: 8
        })
    );
    let n = sealer.seal(5, 4, &[7; 20], &mut buf).unwrap();
    assert_eq!(n, 68);
    assert_eq!(
        opener.open_in_place(5, &mut buf[..67]).map(|_| ()),
        Err(Error::PacketNotBlockAligned { len: 31 })
    );
    assert_eq!(
        opener.open_in_place(5, &mut buf[..40]).map(|_| ()),
        Err(Error::PacketTooShort { len: 40, min: 52 })
    );
    assert_eq!(
        opener.open_in_place(6, &mut buf[..n]).map(|_| ()),
        Err(Error::SequenceOutOfRange { seq: 6 })
    );
    assert_eq!(
        opener
            .open_in_place(5 + (1 << 32), &mut buf[..n])
            .map(|_| ()),
        Err(Error::SequenceOutOfRange { seq: 5 + (1 << 32) })
    );
    assert_eq!(EspOpener::peek_header(&buf[..n]), Some((sa.config.spi, 5)));
    assert_eq!(EspOpener::peek_header(&buf[..7]), None);
    assert!(opener.open_in_place(5, &mut buf[..n]).is_ok());

    // Keys and algorithms: HMAC-SHA-512-256 takes a 64-byte key.
    let config = EspConfig {
        integrity: EspIntegrity::HmacSha512_256,
        ..sa.config
    };
    let keys = EspKeys {
        enc_key: &[0; 16],
        auth_key: &[0; 63],
    };
    assert_eq!(
        EspSealer::new(config, keys).map(|_| ()),
        Err(Error::InvalidKeyLength {
            expected: 64,
            actual: 63
        })
    );
    assert_eq!(
        EspOpener::new(config, keys).map(|_| ()),
        Err(Error::InvalidKeyLength {
            expected: 64,
            actual: 63
        })
    );
    let short_auth = EspKeys {
        enc_key: &[0; 16],
        auth_key: &[0; 16],
    };
    assert_eq!(
        EspOpener::new(sa.config, short_auth).map(|_| ()),
        Err(Error::InvalidKeyLength {
            expected: 20,
            actual: 16
        })
    );
    let aes192 = EspKeys {
        enc_key: &[0; 24],
        auth_key: &[0; 20],
    };
    assert_eq!(
        EspOpener::new(sa.config, aes192).map(|_| ()),
        Err(Error::InvalidKeyLength {
            expected: 16,
            actual: 24
        })
    );
    let names: Vec<_> = EspIntegrity::ALL.iter().map(|i| i.name()).collect();
    assert_eq!(
        names,
        [
            "HMAC-SHA1-96",
            "HMAC-SHA-256-128",
            "HMAC-SHA-384-192",
            "HMAC-SHA-512-256"
        ]
    );
}

/// The window around the open: replays and stale packets are rejected
/// before the ICV is checked, forgeries do not move the window, and ESN
/// numbers are reconstructed across the 2^32 wrap.
#[test]
fn replay_window_with_esn_across_the_wrap() {
    let mut rng = Rng::from_env("replay_window_with_esn_across_the_wrap", 2);
    let sa = Sa::random(
        &mut rng,
        Cipher::Aes128Cbc,
        EspIntegrity::HmacSha256_128,
        true,
    );
    let mut sealer = EspSealer::new(sa.config, sa.keys()).unwrap();
    let opener = EspOpener::new(sa.config, sa.keys()).unwrap();
    let mut window = ReplayWindow::<2>::new(); // 64 numbers
    let mut seal = |seq: u64| {
        let mut p = vec![0u8; sa.config.sealed_len(8)];
        sealer.seal(seq, 4, &seq.to_be_bytes(), &mut p).unwrap();
        p
    };
    let start = 0xffff_ffff - 40;
    // The SA has been running: its window already stands just below.
    window.update(start - 1).unwrap();
    let mut kept = Vec::new();
    for seq in start..start + 100 {
        let mut p = seal(seq);
        kept.push((seq, p.clone()));
        // Every third packet is delayed: delivered after the next two.
        if seq % 3 == 0 {
            continue;
        }
        let opened = opener.open_with_window(&mut window, &mut p).unwrap();
        assert_eq!(opened.seq, seq);
        assert_eq!(opened.payload, seq.to_be_bytes());
    }
    assert_eq!(window.top(), start + 99);
    // Left of the window, RFC 4303 Appendix A2.2 reads a number as one of
    // the next subspace, whose ICV then fails.
    let left_of_window = Err(Error::AuthenticationFailed);
    // The delayed ones: inside the window they open, once; left of it they
    // fail. Replays fail either way.
    for (seq, p) in &kept {
        let inside = start + 99 - seq < 64;
        if seq % 3 != 0 {
            let mut again = p.clone();
            let got = opener
                .open_with_window(&mut window, &mut again)
                .map(|o| o.seq);
            if inside {
                assert_eq!(
                    got,
                    Err(Error::Replayed { seq: *seq }),
                    "replay of {seq:#x}"
                );
            } else {
                assert_eq!(got, left_of_window, "old replay of {seq:#x}");
            }
            continue;
        }
        let mut p = p.clone();
        let got = opener.open_with_window(&mut window, &mut p).map(|o| o.seq);
        if inside {
            assert_eq!(got, Ok(*seq), "delayed {seq:#x}");
        } else {
            assert_eq!(got, left_of_window, "stale {seq:#x}");
        }
    }
    // Without ESN, left of the window is a plain replay error.
    let plain = Sa::random(
        &mut rng,
        Cipher::Aes128Cbc,
        EspIntegrity::HmacSha1_96,
        false,
    );
    let mut plain_sealer = EspSealer::new(plain.config, plain.keys()).unwrap();
    let plain_opener = EspOpener::new(plain.config, plain.keys()).unwrap();
    let mut plain_window = ReplayWindow::<2>::new();
    let mut old = vec![0u8; plain.config.sealed_len(3)];
    plain_sealer.seal(10, 4, b"old", &mut old).unwrap();
    let mut new = vec![0u8; plain.config.sealed_len(3)];
    plain_sealer.seal(100, 4, b"new", &mut new).unwrap();
    assert!(
        plain_opener
            .open_with_window(&mut plain_window, &mut new)
            .is_ok()
    );
    assert_eq!(
        plain_opener
            .open_with_window(&mut plain_window, &mut old)
            .map(|_| ()),
        Err(Error::Replayed { seq: 10 })
    );
    // A forgery does not move the window: a far-ahead sequence number with
    // a bad ICV fails, and the window still accepts the next real packet.
    let mut forged = seal(start + 1000);
    let last = forged.len() - 1;
    forged[last] ^= 1;
    assert_eq!(
        opener
            .open_with_window(&mut window, &mut forged)
            .map(|_| ()),
        Err(Error::AuthenticationFailed)
    );
    assert_eq!(window.top(), start + 99);
    let mut next = seal(start + 100);
    assert!(opener.open_with_window(&mut window, &mut next).is_ok());
    assert_eq!(window.top(), start + 100);
    assert_eq!(
        opener
            .open_with_window(&mut window, &mut [0u8; 10])
            .map(|_| ()),
        Err(Error::PacketTooShort { len: 10, min: 56 })
    );
}
