//! SSH packets: round trips on every suite and backend, tampering, the
//! sequence number wrapping, the two-step open, and the length-oracle
//! defence (every failure consumes the same bytes and ends in one error).

use cbc_hmac::ssh::{
    MAX_PACKET_LEN, MAX_PAYLOAD_LEN, PAYLOAD_OFFSET, SshKeys, SshOpener, SshSealer, SshSuite,
};
use cbc_hmac::{AesCbcKey, Backend, Error, HmacKey};

struct Xs(u64);
impl Xs {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

struct Material {
    enc: Vec<u8>,
    iv: Vec<u8>,
    mac: Vec<u8>,
}

impl Material {
    fn new(suite: SshSuite, rng: &mut Xs) -> Self {
        Material {
            enc: rng.bytes(suite.cipher().key_len()),
            iv: rng.bytes(16),
            mac: rng.bytes(suite.mac_key_len()),
        }
    }
    fn keys(&self) -> SshKeys<'_> {
        SshKeys {
            enc_key: &self.enc,
            iv: &self.iv,
            mac_key: &self.mac,
        }
    }
}

/// Opens one packet in the two steps, from the bytes as they came.
fn open_two_step(opener: &mut SshOpener, wire: &[u8]) -> Result<Vec<u8>, Error> {
    let total = opener.open_length(&wire[..opener.length_prefix_len()])?;
    let mut packet = vec![0u8; total];
    let n = total.min(wire.len());
    packet[..n].copy_from_slice(&wire[..n]);
    opener.open(&mut packet).map(|p| p.to_vec())
}

#[test]
fn round_trips_every_suite_backend_and_length() {
    let mut rng = Xs(0x55aa);
    for backend in Backend::available() {
        for suite in SshSuite::ALL {
            let m = Material::new(suite, &mut rng);
            let mut sealer = SshSealer::with_backend(suite, m.keys(), 5, backend).unwrap();
            let mut opener = SshOpener::with_backend(suite, m.keys(), 5, backend).unwrap();
            let mut lens: Vec<usize> = (0..=300).collect();
            lens.extend([1024, 32 * 1024, 35000, MAX_PAYLOAD_LEN]);
            let mut buf = vec![0u8; MAX_PACKET_LEN + 64];
            for (i, &len) in lens.iter().enumerate() {
                let payload = rng.bytes(len);
                let n = sealer.seal(&payload, &mut buf).unwrap();
                assert_eq!(n, sealer.sealed_len(len));
                let mac_len = suite.mac_len();
                let packet_len = u32::from_be_bytes(buf[..4].try_into().unwrap()) as usize;
                if suite.encrypt_then_mac() {
                    // The length in clear; the rest whole blocks.
                    assert_eq!(packet_len + 4 + mac_len, n, "{suite}");
                    assert_eq!(packet_len % 16, 0);
                } else {
                    assert_eq!((n - mac_len) % 16, 0);
                }
                let padding = n - mac_len - PAYLOAD_OFFSET - len;
                assert!(
                    (4..20).contains(&padding),
                    "{suite} len {len}: least padding"
                );
                let opened = open_two_step(&mut opener, &buf[..n])
                    .unwrap_or_else(|e| panic!("{suite} on {backend} len {len}: {e}"));
                assert_eq!(opened, payload, "{suite} on {backend} len {len}");
                assert_eq!(opener.sequence(), 5 + i as u32 + 1);
                assert_eq!(sealer.sequence(), opener.sequence());
            }
        }
    }
}

/// Every backend's seal (stitched for both MAC orders where the CPU has
/// the features) is byte for byte the portable seal, chained over several
/// packets: lengths on both sides of the 64- and 128-byte hash blocks and
/// up to the largest payload, with the same caller-chosen padding.
#[test]
fn seal_matches_portable_on_every_backend() {
    let mut rng = Xs(0x5ea1);
    let lens = [
        0,
        1,
        7,
        43,
        44,
        59,
        60,
        61,
        107,
        108,
        123,
        124,
        125,
        500,
        4096,
        35000,
        MAX_PAYLOAD_LEN,
    ];
    for suite in SshSuite::ALL {
        let m = Material::new(suite, &mut rng);
        let mut want = SshSealer::with_backend(suite, m.keys(), 9, Backend::Portable).unwrap();
        let mut sealers: Vec<_> = Backend::available()
            .map(|b| (b, SshSealer::with_backend(suite, m.keys(), 9, b).unwrap()))
            .collect();
        let mut buf = vec![0u8; MAX_PACKET_LEN + 64];
        let mut got = buf.clone();
        for &len in &lens {
            let payload = rng.bytes(len);
            let base = if suite.encrypt_then_mac() { 1 } else { 5 } + len;
            let pad = 4 + (16 - (base + 4) % 16) % 16;
            let padding = rng.bytes(pad);
            buf[PAYLOAD_OFFSET..PAYLOAD_OFFSET + len].copy_from_slice(&payload);
            let n = want
                .seal_in_place_with_padding(&mut buf, len, &padding)
                .unwrap();
            for (backend, sealer) in &mut sealers {
                got[PAYLOAD_OFFSET..PAYLOAD_OFFSET + len].copy_from_slice(&payload);
                let k = sealer
                    .seal_in_place_with_padding(&mut got, len, &padding)
                    .unwrap();
                assert_eq!(k, n, "{suite} on {backend} len {len}");
                assert!(
                    got[..n] == buf[..n],
                    "{suite} on {backend} len {len}: differs from portable"
                );
            }
        }
    }
}

#[test]
fn caller_chosen_padding_and_its_limits() {
    let mut rng = Xs(7);
    for suite in SshSuite::ALL {
        let m = Material::new(suite, &mut rng);
        let mut sealer = SshSealer::new(suite, m.keys(), 0).unwrap();
        let mut opener = SshOpener::new(suite, m.keys(), 0).unwrap();
        let mut buf = vec![0u8; 600];
        // Longest padding that aligns: 255 - something.
        let len = 10;
        let base = if suite.encrypt_then_mac() { 1 } else { 5 } + len;
        for pad in 0..=260usize {
            let aligned = (base + pad) % 16 == 0;
            let valid = aligned && (4..=255).contains(&pad);
            buf[PAYLOAD_OFFSET..PAYLOAD_OFFSET + len].copy_from_slice(b"0123456789");
            let padding = vec![0xa5; pad];
            match sealer.seal_in_place_with_padding(&mut buf, len, &padding) {
                Ok(n) => {
                    assert!(valid, "{suite} pad {pad}");
                    assert_eq!(n, PAYLOAD_OFFSET + len + pad + suite.mac_len());
                    let opened = open_two_step(&mut opener, &buf[..n]).unwrap();
                    assert_eq!(opened, b"0123456789");
                }
                Err(e) => {
                    assert!(!valid, "{suite} pad {pad}: {e}");
                    assert_eq!(e, Error::InvalidPadding { len: pad });
                }
            }
        }
        let small = sealer.sealed_len(len) - 1;
        assert!(matches!(
            sealer.seal(b"0123456789", &mut buf[..small]),
            Err(Error::BufferTooSmall { .. })
        ));
        assert!(matches!(
            sealer.seal_in_place(&mut vec![0; MAX_PACKET_LEN + 100], MAX_PAYLOAD_LEN + 1),
            Err(Error::PlaintextTooLong { .. })
        ));
    }
}

/// Every flipped bit of a packet is refused with the one error, and
/// without EtM the opener asks for the rest of the bound. (A flip in the
/// first block garbles the decrypted length, whose bad-length path MACs
/// the whole bound: sampled, as it costs 256 KiB of hashing per flip; the
/// discard itself is checked in `length_oracle_every_failure_looks_the_same`.)
#[test]
fn every_bit_flip_rejected() {
    let mut rng = Xs(0xf11b);
    for backend in Backend::available() {
        for suite in SshSuite::ALL {
            let m = Material::new(suite, &mut rng);
            let payload = rng.bytes(21);
            let padding = rng.bytes(if suite.encrypt_then_mac() { 10 } else { 6 });
            let mut sealer = SshSealer::with_backend(suite, m.keys(), 9, backend).unwrap();
            let mut wire = vec![0u8; 128];
            wire[PAYLOAD_OFFSET..][..21].copy_from_slice(&payload);
            let n = sealer
                .seal_in_place_with_padding(&mut wire, 21, &padding)
                .unwrap();
            let wire = &wire[..n];
            let first_block = !suite.encrypt_then_mac();
            for bit in (0..8 * n).filter(|&b| !first_block || b >= 128 || b % 16 == 5) {
                let mut bad = wire.to_vec();
                bad[bit / 8] ^= 1 << (bit % 8);
                let mut opener = SshOpener::with_backend(suite, m.keys(), 9, backend).unwrap();
                match open_two_step(&mut opener, &bad) {
                    Err(Error::SshPacketLength { .. }) => {
                        assert!(suite.encrypt_then_mac() && bit < 32, "{suite} bit {bit}");
                    }
                    Err(Error::AuthenticationFailed) => {
                        let consumed = opener.discard_len() - opener.bytes_to_discard();
                        if suite.encrypt_then_mac() {
                            assert_eq!(opener.bytes_to_discard(), 0);
                        } else if bit >= 128 {
                            assert_eq!(consumed, n, "{suite} bit {bit}");
                        } else {
                            // Either the garbled length happened to be
                            // well-formed (then `open` took that many
                            // bytes), or the bound was taken at once.
                            assert!(consumed <= opener.discard_len());
                        }
                        assert_eq!(opener.open_length(wire), Err(Error::SshOutOfOrder));
                    }
                    Err(e) => panic!("{suite} on {backend} bit {bit}: {e}"),
                    Ok(_) => panic!("{suite} on {backend} bit {bit}: opened"),
                }
            }
            // And the packet itself opens.
            let mut opener = SshOpener::with_backend(suite, m.keys(), 9, backend).unwrap();
            assert_eq!(open_two_step(&mut opener, wire).unwrap(), payload);
        }
    }
}

/// Feeds `wire` (then zeros, as more bytes from the peer) through the
/// documented failure path; returns the bytes consumed when the open
/// failed with [`Error::AuthenticationFailed`], or the other error.
fn consume_failing(opener: &mut SshOpener, wire: &[u8]) -> Result<usize, Error> {
    match open_two_step(opener, wire) {
        Ok(_) => panic!("a tampered packet opened"),
        Err(Error::AuthenticationFailed) => {}
        Err(e) => return Err(e),
    }
    let mut consumed = opener.discard_len() - opener.bytes_to_discard();
    if !opener.suite().encrypt_then_mac() {
        // `open` took `total` bytes; drop the rest in uneven chunks.
        let chunk = vec![0u8; 7000];
        while opener.bytes_to_discard() > 0 {
            let before = opener.bytes_to_discard();
            let left = opener.discard(&chunk);
            consumed += before - left;
        }
    } else {
        consumed = 0;
    }
    Ok(consumed)
}

#[test]
fn sequence_number_wraps() {
    let mut rng = Xs(0xabc);
    for suite in SshSuite::ALL {
        let m = Material::new(suite, &mut rng);
        let start = u32::MAX - 2;
        let mut sealer = SshSealer::new(suite, m.keys(), start).unwrap();
        let mut opener = SshOpener::new(suite, m.keys(), start).unwrap();
        let mut buf = [0u8; 128];
        for i in 0..6u32 {
            let payload = [i as u8; 9];
            let n = sealer.seal(&payload, &mut buf).unwrap();
            assert_eq!(open_two_step(&mut opener, &buf[..n]).unwrap(), payload);
        }
        assert_eq!(sealer.sequence(), 3);
        assert_eq!(opener.sequence(), 3);

        // The MAC binds the number: an opener one packet behind refuses.
        let mut sealer = SshSealer::new(suite, m.keys(), 0).unwrap();
        let mut opener = SshOpener::new(suite, m.keys(), u32::MAX).unwrap();
        let n = sealer.seal(b"x", &mut buf).unwrap();
        assert!(open_two_step(&mut opener, &buf[..n]).is_err(), "{suite}");
    }
}

#[test]
fn two_step_open_rules() {
    let mut rng = Xs(0x2);
    for suite in SshSuite::ALL {
        let m = Material::new(suite, &mut rng);
        let mut sealer = SshSealer::new(suite, m.keys(), 0).unwrap();
        let mut opener = SshOpener::new(suite, m.keys(), 0).unwrap();
        let mut buf = [0u8; 256];
        let n = sealer.seal(&[7; 100], &mut buf).unwrap();
        let head = opener.length_prefix_len();
        assert_eq!(head, if suite.encrypt_then_mac() { 4 } else { 16 });
        // Too few bytes for the length; open before the length.
        assert_eq!(
            opener.open_length(&buf[..head - 1]),
            Err(Error::PacketTooShort {
                len: head - 1,
                min: head
            })
        );
        assert_eq!(opener.open(&mut buf[..n]), Err(Error::SshOutOfOrder));
        let total = opener.open_length(&buf[..head]).unwrap();
        assert_eq!(total, n);
        assert_eq!(opener.open_length(&buf[..head]), Err(Error::SshOutOfOrder));
        assert_eq!(
            opener.open(&mut buf[..n - 1]),
            Err(Error::SshWrongPacketSize {
                expected: n,
                actual: n - 1
            })
        );
        // The packet still opens: a size error is public and changes
        // nothing.
        assert_eq!(opener.open(&mut buf[..n]).unwrap(), &[7; 100][..]);
        assert_eq!(opener.bytes_to_discard(), 0);
        assert_eq!(opener.discard(&[0; 10]), 0);
        // Packets in a row, each starting where the last CBC chain ended.
        let mut stream = Vec::new();
        for i in 0..20 {
            let n = sealer.seal(&vec![i as u8; i * 7], &mut buf).unwrap();
            stream.extend_from_slice(&buf[..n]);
        }
        let mut at = 0;
        for i in 0..20 {
            let total = opener.open_length(&stream[at..]).unwrap();
            let opened = opener.open(&mut stream[at..at + total]).unwrap();
            assert_eq!(opened, &vec![i as u8; i * 7][..]);
            at += total;
        }
        assert_eq!(at, stream.len());
    }
}

#[test]
fn etm_clear_length_checked() {
    let mut rng = Xs(0x3);
    for suite in SshSuite::ALL.into_iter().filter(|s| s.encrypt_then_mac()) {
        let m = Material::new(suite, &mut rng);
        for len in [0u32, 8, 15, 17, 40, (MAX_PACKET_LEN) as u32, u32::MAX] {
            let mut opener = SshOpener::new(suite, m.keys(), 0).unwrap();
            assert_eq!(
                opener.open_length(&len.to_be_bytes()),
                Err(Error::SshPacketLength { len }),
                "{suite}"
            );
        }
        let mut opener = SshOpener::new(suite, m.keys(), 0).unwrap();
        // The largest whole-block packet_length within 256 KiB.
        let top = (MAX_PACKET_LEN - 16) as u32;
        assert_eq!(
            opener.open_length(&top.to_be_bytes()),
            Ok(MAX_PACKET_LEN - 12 + suite.mac_len())
        );
    }
}

/// Builds a non-EtM packet by hand from the plaintext fields (the length
/// field and padding length as given), MAC'ed with `mac_ok` and encrypted
/// from `iv` with the public primitives.
fn forge(
    suite: SshSuite,
    m: &Material,
    seq: u32,
    packet_len: u32,
    padding_len: u8,
    body_len: usize,
    mac_ok: bool,
) -> Vec<u8> {
    let mut plain = vec![0x41u8; body_len];
    plain[..4].copy_from_slice(&packet_len.to_be_bytes());
    plain[4] = padding_len;
    let mac = HmacKey::new(suite.mac(), &m.mac).unwrap();
    let mut input = seq.to_be_bytes().to_vec();
    input.extend_from_slice(&plain);
    let mut tag = mac.sign(&input).as_bytes().to_vec();
    if !mac_ok {
        tag[3] ^= 0x10;
    }
    let aes = AesCbcKey::new(suite.cipher(), &m.enc).unwrap();
    aes.encrypt(&m.iv, &mut plain).unwrap();
    plain.extend_from_slice(&tag);
    plain
}

/// The length-oracle defence, recorded: a decrypted length out of range, a
/// padding length out of range under a good MAC, and a bad MAC each
/// consume exactly `discard_len` bytes and end in the same error.
#[test]
fn length_oracle_every_failure_looks_the_same() {
    let mut rng = Xs(0x0a1e);
    for suite in SshSuite::ALL.into_iter().filter(|s| !s.encrypt_then_mac()) {
        let m = Material::new(suite, &mut rng);
        let cases: [(&str, Vec<u8>); 6] = [
            ("length 2^31", forge(suite, &m, 0, 1 << 31, 4, 64, true)),
            ("length 8", forge(suite, &m, 0, 8, 4, 64, true)),
            (
                "length 61 (not aligned)",
                forge(suite, &m, 0, 61, 4, 64, true),
            ),
            ("padding length 3", forge(suite, &m, 0, 60, 3, 64, true)),
            ("padding length 60", forge(suite, &m, 0, 60, 60, 64, true)),
            ("bad MAC", forge(suite, &m, 0, 60, 4, 64, false)),
        ];
        // The well-formed packet opens, so the forger is right.
        let good = forge(suite, &m, 0, 60, 4, 64, true);
        let mut opener = SshOpener::new(suite, m.keys(), 0).unwrap();
        assert_eq!(open_two_step(&mut opener, &good).unwrap(), vec![0x41; 55]);

        for (what, wire) in cases {
            let mut opener = SshOpener::new(suite, m.keys(), 0).unwrap();
            let consumed = consume_failing(&mut opener, &wire);
            let shown = match consumed {
                Ok(n) => format!("consumed {n} bytes, then AuthenticationFailed"),
                Err(e) => format!("{e:?}"),
            };
            println!("{suite}: {what}: {shown}");
            assert_eq!(consumed, Ok(opener.discard_len()), "{suite} {what}");
            assert_eq!(opener.open_length(&wire), Err(Error::SshOutOfOrder));
        }
    }
}
