//! The classes of the other formats' opens: SSH (`SshOpener`, both
//! steps), ESP (`EspOpener::open_in_place`) and JOSE
//! (`CbcHmacAead::open_in_place`). Packets are built by hand from
//! `AesCbcKey` and `HmacKey` on the portable backend, so that a bad
//! padding (length) under a valid MAC, ICV or tag can be made: the
//! sealers only write good ones.
//!
//! What is public, and so may differ between classes but not within one:
//! every length (the packet, the ciphertext, the MAC), the sequence
//! number, the ESP SPI and IV, the JOSE IV and AAD. Secret, and varied
//! within a class: key bytes (and SSH's IV, which is never sent),
//! plaintext, padding (length), MAC/ICV/tag bytes, and which check fails.
//!
//! SSH without EtM decides from the decrypted length how many bytes to
//! read: the amount `open_length` answers is public by design (a peer
//! sees it consumed). So a well-formed length and an out-of-range one
//! are different classes; within the second, every bad length must give
//! one trace, as every reject of the first must.

use cbc_hmac::esp::{EspConfig, EspIntegrity, HEADER_LEN};
use cbc_hmac::jose::ContentEncryption;
use cbc_hmac::ssh::{MAX_PACKET_LEN, SshSuite};
use cbc_hmac::{AesCbcKey, Backend, Cipher, Combination, HmacKey, MacAlgorithm, RecordConfig};

use super::case::{Case, ESP_SPI, Op, Suite};
use super::check::Site;
use super::matrix::{Class, Member};

const SSH_OPENER_RS: &str = include_str!("../../../src/ssh/opener.rs");
const ESP_OPENER_RS: &str = include_str!("../../../src/esp/opener.rs");
const JOSE_AEAD_RS: &str = include_str!("../../../src/jose/aead.rs");
const HMAC_RS: &str = include_str!("../../../src/primitives/hmac.rs");

/// What is wrong with a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Damage {
    None,
    /// A bit of the MAC (ICV, tag) flipped: `first` in its first byte,
    /// else in its last.
    Mac {
        first: bool,
    },
    /// The padding (SSH: its length byte) wrong under a valid MAC.
    Padding,
}

impl Damage {
    fn what(self) -> &'static str {
        match self {
            Damage::None => "valid",
            Damage::Mac { .. } => "bad MAC",
            Damage::Padding => "bad padding",
        }
    }
}

/// Deterministic key bytes of one length, two variants.
fn key(len: usize, variant: u8, salt: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(37) ^ salt ^ if variant == 0 { 0 } else { 0x5a })
        .collect()
}

/// Plaintext bytes of two patterns.
fn plaintext(len: usize, variant: u8) -> Vec<u8> {
    (0..len)
        .map(|i| {
            if variant == 0 {
                (i % 251) as u8
            } else {
                ((i * 7 + 3) % 253) as u8
            }
        })
        .collect()
}

fn portable_hmac(alg: MacAlgorithm, key: &[u8], parts: &[&[u8]]) -> Vec<u8> {
    let mac = HmacKey::with_backend(alg, key, Backend::Portable).expect("MAC key");
    let mut ctx = mac.context();
    for p in parts {
        ctx.update(p);
    }
    ctx.finish().as_bytes().to_vec()
}

fn portable_cbc(cipher: Cipher, key: &[u8], iv: &[u8], data: &mut [u8]) {
    AesCbcKey::with_backend(cipher, key, Backend::Portable)
        .expect("AES key")
        .encrypt(iv, data)
        .expect("whole blocks");
}

fn flip(mac: &mut [u8], first: bool) {
    if first {
        mac[0] ^= 0x01;
    } else {
        let n = mac.len();
        mac[n - 1] ^= 0x80;
    }
}

/// The fields of [`Case`] a format case does not use.
fn case(op: Op, backend: Backend, suite: Suite, alg: MacAlgorithm) -> Case {
    Case {
        op,
        backend,
        config: RecordConfig::new(
            Combination::ALL[0],
            cbc_hmac::ProtocolVersion::Tls12,
            cbc_hmac::MacOrder::MacThenEncrypt,
        ),
        suite,
        alg,
        seq: 0,
        expect: None,
        enc_key: Vec::new(),
        mac_key: Vec::new(),
        iv: Vec::new(),
        data: Vec::new(),
        tag: Vec::new(),
        aad: Vec::new(),
    }
}

// ---- SSH ----

/// The sequence number of every traced SSH packet.
const SSH_SEQ: u32 = 0x0000_0107;

/// The sites where an SSH open may part: without EtM the one
/// declassification of the MAC and padding-length checks; with EtM the
/// MAC check (and the comparison inside it), then the padding length.
fn ssh_sites(etm: bool) -> Vec<Site> {
    let f = "src/ssh/opener.rs";
    if etm {
        vec![
            Site::find(f, SSH_OPENER_RS, "if !k.mac.truncated_matches(", 0),
            Site::find(f, SSH_OPENER_RS, "if !bool::from(ok)", 0),
            truncated_matches_site(),
        ]
    } else {
        vec![Site::find(
            f,
            SSH_OPENER_RS,
            "if bool::from(mac_ok & pad_ok)",
            0,
        )]
    }
}

/// The constant-time comparison inside `HmacKey::truncated_matches`,
/// whose result the formats branch on.
fn truncated_matches_site() -> Site {
    Site::find(
        "src/primitives/hmac.rs",
        HMAC_RS,
        "bool::from(full[..tag.len()].ct_eq(tag))",
        0,
    )
}

/// An SSH packet by hand (RFC 4253 section 6; OpenSSH's `PROTOCOL` for
/// EtM): `body_len` bytes from `packet_length` on, whose
/// `padding_length` byte is `pad_byte` (the bytes after it are a
/// plaintext pattern: payload and random padding alike), MAC'ed and
/// encrypted under the variant's keys.
fn ssh_wire(
    suite: SshSuite,
    keys: &(Vec<u8>, Vec<u8>, Vec<u8>),
    length: u32,
    body_len: usize,
    pad_byte: u8,
    variant: u8,
    damage: Damage,
) -> Vec<u8> {
    let (enc, iv, mac_key) = keys;
    let mut plain = length.to_be_bytes().to_vec();
    plain.push(pad_byte);
    plain.extend(plaintext(body_len - 5, variant));
    let seq = SSH_SEQ.to_be_bytes();
    let mut wire;
    let mut mac;
    if suite.encrypt_then_mac() {
        wire = plain.clone();
        portable_cbc(suite.cipher(), enc, iv, &mut wire[4..]);
        mac = portable_hmac(suite.mac(), mac_key, &[&seq, &wire]);
    } else {
        mac = portable_hmac(suite.mac(), mac_key, &[&seq, &plain]);
        wire = plain;
        portable_cbc(suite.cipher(), enc, iv, &mut wire);
    }
    if let Damage::Mac { first } = damage {
        flip(&mut mac, first);
    }
    wire.extend(&mac[..suite.mac_len()]);
    wire
}

fn ssh_keys(suite: SshSuite, variant: u8) -> (Vec<u8>, Vec<u8>, Vec<u8>) {
    (
        key(suite.cipher().key_len(), variant, 0x11),
        key(16, variant, 0x22),
        key(suite.mac_key_len(), variant, 0x33),
    )
}

fn ssh_member(
    backend: Backend,
    suite: SshSuite,
    body_len: usize,
    pad_byte: u8,
    variant: u8,
    damage: Damage,
) -> Member {
    let etm = suite.encrypt_then_mac();
    let keys = ssh_keys(suite, variant);
    let length = (body_len - 4) as u32;
    let data = ssh_wire(suite, &keys, length, body_len, pad_byte, variant, damage);
    let opens = damage == Damage::None;
    let outcome = match (damage, etm) {
        (Damage::None, _) => "accept",
        (_, false) => "reject",
        (Damage::Mac { .. }, true) => "reject (MAC)",
        (Damage::Padding, true) => "reject (padding length)",
    };
    let (enc_key, iv, mac_key) = keys;
    Member {
        label: format!(
            "{}, padding length {pad_byte}, keys/plaintext {variant}",
            damage.what()
        ),
        case: Case {
            seq: SSH_SEQ as u64,
            expect: opens.then_some(body_len - 5 - pad_byte as usize),
            enc_key,
            mac_key,
            iv,
            data,
            ..case(Op::SshOpen, backend, Suite::Ssh(suite), suite.mac())
        },
        outcome,
    }
}

/// SSH packets of one length (`body_len` bytes from `packet_length` on,
/// MAC excluded): valid with the least and the most padding on two key
/// sets and plaintexts, a bad MAC (first or last byte), and padding
/// lengths that do not fit (under 4; past the packet where it can be)
/// under a valid MAC (`few`: the first four).
pub fn ssh_class(backend: Backend, suite: SshSuite, body_len: usize, few: bool) -> Class {
    let max_pad = (body_len - 5).min(255) as u8;
    let mut members = vec![
        (4, 0, Damage::None),
        (max_pad, 1, Damage::None),
        (4, 0, Damage::Mac { first: true }),
        (3, 1, Damage::Padding),
        (4, 1, Damage::None),
        (max_pad, 1, Damage::Mac { first: false }),
        (0, 0, Damage::Padding),
    ];
    if body_len - 5 < 255 {
        members.push((max_pad + 1, 1, Damage::Padding));
        members.push((255, 0, Damage::Padding));
    }
    members.truncate(if few { 4 } else { members.len() });
    Class {
        backend,
        name: format!("ssh open {backend} {suite}, {body_len}-byte packet"),
        members: members
            .into_iter()
            .map(|(pad, variant, damage)| {
                ssh_member(backend, suite, body_len, pad, variant, damage)
            })
            .collect(),
        sites: ssh_sites(suite.encrypt_then_mac()),
    }
}

/// Without EtM: first blocks whose decrypted length is out of range (too
/// short, not whole blocks, too long, all ones) on two key sets. Each
/// consumes and MACs the fixed bound and is refused; one trace for all.
pub fn ssh_bad_length_class(backend: Backend, suite: SshSuite, lengths: &[u32]) -> Class {
    assert!(!suite.encrypt_then_mac());
    let total = MAX_PACKET_LEN + suite.mac_len();
    let members = lengths
        .iter()
        .enumerate()
        .map(|(i, &length)| {
            let variant = (i & 1) as u8;
            let keys = ssh_keys(suite, variant);
            let data = ssh_wire(
                suite,
                &keys,
                length,
                MAX_PACKET_LEN,
                (i * 40) as u8,
                variant,
                Damage::None,
            );
            debug_assert_eq!(data.len(), total);
            let (enc_key, iv, mac_key) = keys;
            Member {
                label: format!("decrypted length {length:#x}, keys/plaintext {variant}"),
                case: Case {
                    seq: SSH_SEQ as u64,
                    expect: None,
                    enc_key,
                    mac_key,
                    iv,
                    data,
                    ..case(Op::SshOpen, backend, Suite::Ssh(suite), suite.mac())
                },
                outcome: "reject",
            }
        })
        .collect();
    Class {
        backend,
        name: format!("ssh open {backend} {suite}, bad decrypted length, {total}-byte bound"),
        members,
        sites: Vec::new(),
    }
}

/// Decrypted lengths out of range: too short, in range but not whole
/// blocks, all ones, whole blocks but too long.
pub const SSH_BAD_LENGTHS: [u32; 4] = [0, 13, u32::MAX, MAX_PACKET_LEN as u32 + 12];

// ---- ESP ----

/// The fixed (public) IV of every traced ESP packet.
const ESP_IV: [u8; 16] = [0x3c; 16];

fn esp_seq(config: EspConfig) -> u64 {
    if config.esn { (5 << 32) | 7 } else { 7 }
}

fn esp_sites() -> Vec<Site> {
    let f = "src/esp/opener.rs";
    vec![
        Site::find(f, ESP_OPENER_RS, "if !self", 3),
        Site::find(f, ESP_OPENER_RS, "if good != usize::MAX", 0),
        truncated_matches_site(),
    ]
}

/// An ESP packet by hand (RFC 4303): `body_len` bytes of ciphertext over
/// `payload || 1, 2, .. pad || pad || next header`, with the padding's
/// first byte wrong for [`Damage::Padding`] (or, for `pad` past the
/// body, a pad length that does not fit).
fn esp_member(
    backend: Backend,
    config: EspConfig,
    body_len: usize,
    pad: u8,
    variant: u8,
    damage: Damage,
) -> Member {
    let mac = config.integrity.mac().expect("an HMAC this crate has");
    let (enc_key, auth_key) = (
        key(config.cipher.key_len(), variant, 0x44),
        key(config.integrity.key_len(), variant, 0x55),
    );
    let fits = pad as usize + 2 <= body_len;
    let payload_len = body_len.saturating_sub(pad as usize + 2);
    let mut body = plaintext(payload_len, variant);
    if fits {
        body.extend(1..=pad);
    } else {
        body.resize(body_len - 2, 0);
    }
    if damage == Damage::Padding && fits {
        assert!(pad > 0, "no padding byte to damage");
        body[payload_len] ^= 0x40;
    }
    body.push(pad);
    body.push(4);
    portable_cbc(config.cipher, &enc_key, &ESP_IV, &mut body);
    let seq = esp_seq(config);
    let mut packet = ESP_SPI.to_be_bytes().to_vec();
    packet.extend((seq as u32).to_be_bytes());
    packet.extend(ESP_IV);
    packet.extend(&body);
    let high = ((seq >> 32) as u32).to_be_bytes();
    let suffix: &[u8] = if config.esn { &high } else { &[] };
    let mut icv = portable_hmac(mac, &auth_key, &[&packet, suffix]);
    icv.truncate(config.integrity.icv_len());
    if let Damage::Mac { first } = damage {
        flip(&mut icv, first);
    }
    packet.extend(icv);
    debug_assert_eq!(
        packet.len(),
        HEADER_LEN + body_len + config.integrity.icv_len()
    );
    let outcome = match damage {
        Damage::None => "accept",
        Damage::Mac { .. } => "reject (ICV)",
        Damage::Padding => "reject (padding)",
    };
    Member {
        label: format!(
            "{}, pad length {pad}, keys/plaintext {variant}",
            match damage {
                Damage::Mac { .. } => "bad ICV",
                d => d.what(),
            }
        ),
        case: Case {
            seq,
            expect: (damage == Damage::None).then_some(payload_len),
            enc_key,
            mac_key: auth_key,
            data: packet,
            ..case(Op::EspOpen, backend, Suite::Esp(config), mac)
        },
        outcome,
    }
}

/// ESP packets of one ciphertext length: valid with the least and the
/// most padding on two key sets and plaintexts, a bad ICV (first or last
/// byte), a wrong padding byte under a valid ICV, and a pad length past
/// the body where the body is short enough (`few`: the first four).
pub fn esp_class(backend: Backend, config: EspConfig, body_len: usize, few: bool) -> Class {
    let max_pad = (body_len - 2).min(255) as u8;
    let mut members = vec![
        (0, 0, Damage::None),
        (max_pad, 1, Damage::None),
        (0, 0, Damage::Mac { first: true }),
        (max_pad, 1, Damage::Padding),
        (1, 1, Damage::None),
        (max_pad, 1, Damage::Mac { first: false }),
        (1, 0, Damage::Padding),
    ];
    if body_len - 2 < 255 {
        members.push((255, 0, Damage::Padding));
    }
    members.truncate(if few { 4 } else { members.len() });
    Class {
        backend,
        name: format!(
            "esp open {backend} {:?} {}{}, {body_len}-byte ciphertext",
            config.cipher,
            config.integrity.name(),
            if config.esn { " ESN" } else { "" }
        ),
        members: members
            .into_iter()
            .map(|(pad, variant, damage)| {
                esp_member(backend, config, body_len, pad, variant, damage)
            })
            .collect(),
        sites: esp_sites(),
    }
}

// ---- JOSE ----

/// The fixed (public) IV and AAD of every traced JOSE message: the AAD
/// is the ASCII of an encoded protected header.
const JOSE_IV: [u8; 16] = [0x6b; 16];
const JOSE_AAD: &[u8] = b"eyJhbGciOiJkaXIiLCJlbmMiOiJBMTI4Q0JDLUhTMjU2In0";

fn jose_sites() -> Vec<Site> {
    let f = "src/jose/aead.rs";
    vec![
        Site::find(f, JOSE_AEAD_RS, "if !self.mac.truncated_matches(", 0),
        Site::find(f, JOSE_AEAD_RS, "if good != usize::MAX", 0),
        truncated_matches_site(),
    ]
}

/// A JOSE ciphertext of `ct_len` bytes by hand (RFC 7518 section 5.2):
/// PKCS#7 padding of `pad` bytes (1..=16), or for [`Damage::Padding`] a
/// `pad` that is not one (0, past 16) or a padding byte wrong.
fn jose_member(
    backend: Backend,
    alg: ContentEncryption,
    ct_len: usize,
    pad: u8,
    variant: u8,
    damage: Damage,
) -> Member {
    let k = key(alg.key_len(), variant, 0x66);
    let (mac_key, enc_key) = k.split_at(k.len() / 2);
    let (cipher, mac) = match alg {
        ContentEncryption::A128CbcHs256 => (Cipher::Aes128Cbc, MacAlgorithm::HmacSha256),
        _ => (Cipher::Aes256Cbc, MacAlgorithm::HmacSha512),
    };
    let mut e = plaintext(ct_len, variant);
    let n = (pad as usize).clamp(1, 16);
    e[ct_len - n..].fill(pad);
    if damage == Damage::Padding && (1..=16).contains(&pad) {
        e[ct_len - n] ^= 0x01;
    }
    portable_cbc(cipher, enc_key, &JOSE_IV, &mut e);
    let al = (JOSE_AAD.len() as u64 * 8).to_be_bytes();
    let mut tag = portable_hmac(mac, mac_key, &[JOSE_AAD, &JOSE_IV, &e, &al]);
    tag.truncate(alg.tag_len());
    if let Damage::Mac { first } = damage {
        flip(&mut tag, first);
    }
    let outcome = match damage {
        Damage::None => "accept",
        Damage::Mac { .. } => "reject (tag)",
        Damage::Padding => "reject (padding)",
    };
    Member {
        label: format!(
            "{}, padding byte {pad}, key/plaintext {variant}",
            match damage {
                Damage::Mac { .. } => "bad tag",
                d => d.what(),
            }
        ),
        case: Case {
            expect: (damage == Damage::None).then_some(ct_len - pad as usize),
            enc_key: k.clone(),
            iv: JOSE_IV.to_vec(),
            data: e,
            tag,
            aad: JOSE_AAD.to_vec(),
            ..case(Op::JoseOpen, backend, Suite::Jose(alg), mac)
        },
        outcome,
    }
}

/// JOSE ciphertexts of one length: valid with 1 and 16 bytes of padding
/// on two keys and plaintexts, a bad tag (first or last byte), and under
/// a valid tag a wrong padding byte, a padding byte of 0 and one of 17
/// (`few`: the first four).
pub fn jose_class(backend: Backend, alg: ContentEncryption, ct_len: usize, few: bool) -> Class {
    let mut members = vec![
        (1, 0, Damage::None),
        (16, 1, Damage::None),
        (1, 0, Damage::Mac { first: true }),
        (16, 1, Damage::Padding),
        (7, 1, Damage::None),
        (16, 1, Damage::Mac { first: false }),
        (0, 0, Damage::Padding),
        (17, 1, Damage::Padding),
    ];
    members.truncate(if few { 4 } else { members.len() });
    Class {
        backend,
        name: format!(
            "jose open {backend} {}, {ct_len}-byte ciphertext",
            alg.name()
        ),
        members: members
            .into_iter()
            .map(|(pad, variant, damage)| jose_member(backend, alg, ct_len, pad, variant, damage))
            .collect(),
        sites: jose_sites(),
    }
}

// ---- The matrix ----

fn ssh_suite(cipher: &str, mac: &str) -> SshSuite {
    SshSuite::from_names(cipher, mac).expect("a suite this crate knows")
}

fn esp(cipher: Cipher, integrity: EspIntegrity, esn: bool) -> EspConfig {
    EspConfig {
        cipher,
        integrity,
        spi: ESP_SPI,
        esn,
    }
}

/// The format classes on `backend`. CI: on the best backend one SSH suite
/// of each form at two lengths (two blocks, and room for 255 bytes of
/// padding) and the bad-length class, ESP with one integrity algorithm
/// per hash family (and a short packet for one), JOSE with both
/// algorithms, every member; on the others one class per path, four
/// members each. `full`: every SSH suite, every ESP integrity algorithm
/// with both ciphers, both JOSE algorithms at three lengths, on every
/// backend.
pub fn classes(backend: Backend, best: bool, full: bool) -> Vec<Class> {
    let plain = ssh_suite("aes128-cbc", "hmac-sha2-256");
    let etm = ssh_suite("aes256-cbc", "hmac-sha2-512-etm@openssh.com");
    let esp_configs = [
        esp(Cipher::Aes128Cbc, EspIntegrity::HmacSha1_96, false),
        esp(Cipher::Aes256Cbc, EspIntegrity::HmacSha256_128, true),
        esp(Cipher::Aes128Cbc, EspIntegrity::HmacSha384_192, true),
    ];
    let jose = [
        ContentEncryption::A128CbcHs256,
        ContentEncryption::A256CbcHs512,
    ];
    let mut out = Vec::new();
    if full {
        for suite in SshSuite::ALL {
            let lens = if suite.encrypt_then_mac() {
                [36, 292]
            } else {
                [32, 288]
            };
            for len in lens {
                out.push(ssh_class(backend, suite, len, false));
            }
        }
        out.push(ssh_bad_length_class(backend, plain, &SSH_BAD_LENGTHS));
        for cipher in [Cipher::Aes128Cbc, Cipher::Aes256Cbc] {
            for integrity in EspIntegrity::ALL {
                for len in [32, 272] {
                    out.push(esp_class(backend, esp(cipher, integrity, true), len, false));
                }
            }
        }
        for alg in jose {
            for len in [16, 64, 1024] {
                out.push(jose_class(backend, alg, len, false));
            }
        }
    } else if best {
        out.push(ssh_class(backend, plain, 32, false));
        out.push(ssh_class(backend, plain, 288, false));
        out.push(ssh_class(backend, etm, 36, false));
        out.push(ssh_class(backend, etm, 292, false));
        out.push(ssh_bad_length_class(backend, plain, &SSH_BAD_LENGTHS[..3]));
        for config in esp_configs {
            out.push(esp_class(backend, config, 272, false));
        }
        out.push(esp_class(backend, esp_configs[1], 32, false));
        for alg in jose {
            out.push(jose_class(backend, alg, 64, false));
        }
    } else {
        out.push(ssh_class(backend, plain, 288, true));
        out.push(ssh_class(backend, etm, 292, true));
        out.push(esp_class(backend, esp_configs[1], 272, true));
        out.push(jose_class(backend, jose[0], 64, true));
    }
    out
}
