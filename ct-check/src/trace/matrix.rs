//! The classes to check: members that differ only in secrets (key bytes,
//! plaintext bytes, padding length, which byte is damaged) and so must
//! give one trace per outcome.

use cbc_hmac::{
    Backend, Combination, HmacKey, MacAlgorithm, MacOrder, ProtocolVersion, RecordConfig,
};

use super::case::{Case, Op, Suite};
use super::check::Site;
use super::child::CONTENT_TYPE;
use crate::records::{self, Damage, Keys};

const OPENER_RS: &str = include_str!("../../../src/record/opener.rs");
const HMAC_RS: &str = include_str!("../../../src/primitives/hmac.rs");
const BATCH_OPEN_RS: &str = include_str!("../../../src/record/batch_open.rs");

/// Records in a traced batch: every lane of the widest lane kernel.
pub const BATCH_LANES: usize = 16;

/// One run of a class, and the outcome it must have.
pub struct Member {
    pub label: String,
    pub case: Case,
    pub outcome: &'static str,
}

/// Inputs that differ only in secrets: one trace per outcome, and
/// outcomes part only at `sites`.
pub struct Class {
    pub backend: Backend,
    pub name: String,
    pub members: Vec<Member>,
    pub sites: Vec<Site>,
}

/// The declassification of `Opener::open_in_place`, per MAC order.
fn open_sites(order: MacOrder) -> Vec<Site> {
    let f = "src/record/opener.rs";
    match order {
        MacOrder::MacThenEncrypt => vec![Site::find(f, OPENER_RS, "if ok != usize::MAX", 1)],
        MacOrder::EncryptThenMac => vec![
            Site::find(f, OPENER_RS, ".ct_eq(&buf[end..])", 1),
            Site::find(f, OPENER_RS, "if good != usize::MAX", 1),
        ],
    }
}

fn verify_sites() -> Vec<Site> {
    vec![Site::find(
        "src/primitives/hmac.rs",
        HMAC_RS,
        "expected.as_bytes().ct_eq(tag)",
        4,
    )]
}

/// Two key sets of the same lengths.
struct KeySet {
    enc: [u8; 32],
    mac: [u8; 48],
    iv: [u8; 16],
}

fn key_set(variant: u8) -> KeySet {
    let x = |b: u8, k: u8| if variant == 0 { b } else { b ^ k };
    KeySet {
        enc: crate::ENC_KEY.map(|b| x(b, 0xa5)),
        mac: crate::MAC_KEY.map(|b| x(b, 0x3c)),
        iv: crate::IV.map(|b| x(b, 0x77)),
    }
}

/// Plaintext bytes of two patterns, never 255 (see `records::plaintext`).
fn plaintext(len: usize, variant: u8) -> Vec<u8> {
    if variant == 0 {
        records::plaintext(len)
    } else {
        (0..len).map(|i| ((i * 7 + 3) % 251) as u8).collect()
    }
}

const SEQ: u64 = 0x0001_0203_0405_0607;

/// The configurations checked. `full`: every combination on every
/// version it allows. Otherwise TLS 1.0 and TLS 1.2 with every
/// combination, and DTLS 1.2 (whose open differs from TLS 1.2 only in
/// the public version bytes) with the first.
pub fn configs(full: bool) -> Vec<RecordConfig> {
    let mut out = Vec::new();
    for (i, c) in Combination::ALL.into_iter().enumerate() {
        for v in ProtocolVersion::ALL {
            let ci = match v {
                ProtocolVersion::Tls10 | ProtocolVersion::Tls12 => true,
                ProtocolVersion::Dtls12 => i == 0,
                _ => false,
            };
            if c.allows(v) && (full || ci) {
                for o in MacOrder::ALL {
                    out.push(RecordConfig::new(c, v, o));
                }
            }
        }
    }
    out
}

fn mac_in_body(config: RecordConfig) -> usize {
    match config.mac_order {
        MacOrder::MacThenEncrypt => config.combination.mac().output_len(),
        MacOrder::EncryptThenMac => 0,
    }
}

/// Ciphertext lengths (bytes of CBC blocks): the shortest of 32..=64 that
/// holds the MAC and the one just above the 256-byte padding window plus
/// the MAC; `full` adds more around the window, about 1 KiB and 16 KiB.
pub fn body_lengths(config: RecordConfig, full: bool) -> Vec<usize> {
    let m = mac_in_body(config);
    let short = (m + 1).next_multiple_of(16).max(32);
    let window = (256 + m + 1).next_multiple_of(16);
    let mut out = vec![short, window];
    if full {
        out.extend([64, 256, window + 16, 1024, 16384]);
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// A record of `config` with `body_len` ciphertext bytes and `pad` padding
/// bytes, as a member.
#[allow(clippy::too_many_arguments)]
fn record_member(
    op: Op,
    backend: Backend,
    config: RecordConfig,
    body_len: usize,
    pad: u8,
    damage: Damage,
    variant: u8,
) -> Member {
    let ks = key_set(variant);
    let (ek, mk) = (
        config.combination.cipher().key_len(),
        config.combination.mac().tls_key_len(),
    );
    let keys = Keys {
        enc: &ks.enc[..ek],
        mac: &ks.mac[..mk],
        iv: &ks.iv,
    };
    let len = body_len - mac_in_body(config) - 1 - pad as usize;
    let pt = plaintext(len, variant);
    let record = records::build(config, &keys, SEQ, CONTENT_TYPE, &pt, pad, damage);
    let outcome = match (damage, config.mac_order) {
        (Damage::None, _) => "accept",
        (_, MacOrder::MacThenEncrypt) => "reject",
        (Damage::Mac, MacOrder::EncryptThenMac) => "reject (MAC)",
        (Damage::Padding, MacOrder::EncryptThenMac) => "reject (padding)",
    };
    let what = match damage {
        Damage::None => "valid",
        Damage::Mac => "bad MAC",
        Damage::Padding => "bad padding",
    };
    Member {
        label: format!("{what}, padding {pad}, keys/plaintext {variant}"),
        case: Case {
            op,
            backend,
            config,
            suite: Suite::Record,
            alg: config.combination.mac(),
            seq: SEQ,
            expect: (damage == Damage::None).then_some(len),
            enc_key: keys.enc.to_vec(),
            mac_key: keys.mac.to_vec(),
            iv: keys.iv.to_vec(),
            data: record,
            tag: Vec::new(),
            aad: Vec::new(),
        },
        outcome,
    }
}

fn config_name(config: RecordConfig) -> String {
    format!(
        "{:?} {:?} {:?}",
        config.combination, config.version, config.mac_order
    )
}

/// Valid, bad-MAC and bad-padding records of one length, with the least
/// and the most padding, on two key sets and plaintexts (`few`: four of
/// them, for the long records).
pub fn open_class(backend: Backend, config: RecordConfig, body_len: usize, few: bool) -> Class {
    let max_pad = (body_len - mac_in_body(config) - 1).min(255) as u8;
    let mut members = Vec::new();
    let all = [
        (0, Damage::None, 0),
        (max_pad, Damage::None, 1),
        (0, Damage::Mac, 0),
        (max_pad, Damage::Padding, 1),
        (0, Damage::None, 1),
        (max_pad, Damage::Mac, 1),
        (0, Damage::Padding, 0),
    ];
    for (pad, damage, variant) in all.into_iter().take(if few { 4 } else { 7 }) {
        members.push(record_member(
            Op::Open,
            backend,
            config,
            body_len,
            pad,
            damage,
            variant,
        ));
    }
    Class {
        backend,
        name: format!(
            "open {backend} {}, {body_len}-byte ciphertext",
            config_name(config)
        ),
        members,
        sites: open_sites(config.mac_order),
    }
}

/// The ciphertext length of [`padding_class`]: room for 255 bytes of
/// padding after a SHA-384 MAC.
pub const PADDING_BODY: usize = 320;

/// Valid records with the padding lengths `pads` in one
/// [`PADDING_BODY`]-byte ciphertext, and bad padding with a few.
pub fn padding_class(op: Op, backend: Backend, config: RecordConfig, pads: &[u8]) -> Class {
    let mut members: Vec<Member> = pads
        .iter()
        .map(|&p| record_member(op, backend, config, PADDING_BODY, p, Damage::None, p & 1))
        .collect();
    if op == Op::Open {
        for p in [0, 77, 255] {
            members.push(record_member(
                op,
                backend,
                config,
                PADDING_BODY,
                p,
                Damage::Padding,
                0,
            ));
        }
    }
    Class {
        backend,
        name: format!(
            "{} {backend} {}, {PADDING_BODY}-byte ciphertext, {} padding lengths",
            match op {
                Op::Open => "open",
                Op::LeakBranch => "leak (branch on the padding byte)",
                Op::LeakTable => "leak (table indexed by the padding byte)",
                _ => "leak (naive open: MAC over the plaintext only)",
            },
            config_name(config),
            pads.len()
        ),
        members,
        sites: open_sites(config.mac_order),
    }
}

/// `HmacKey::verify` on `msg_len`-byte messages: right tags and tags wrong
/// in the first, the last or every byte, on two keys and messages.
pub fn verify_class(backend: Backend, alg: MacAlgorithm, msg_len: usize) -> Class {
    let mut members = Vec::new();
    for (variant, damage) in [
        (0u8, None),
        (1, None),
        (0, Some(0)),
        (1, Some(1)),
        (0, Some(2)),
    ] {
        let ks = key_set(variant);
        // HMAC-SHA512's 64-byte key length is past the 48-byte key sets:
        // its key is their 48 bytes.
        let key = &ks.mac[..alg.tls_key_len().min(ks.mac.len())];
        let msg = plaintext(msg_len, variant);
        let mut tag = HmacKey::with_backend(alg, key, Backend::Portable)
            .expect("key")
            .sign(&msg)
            .as_bytes()
            .to_vec();
        let n = tag.len();
        let what = match damage {
            None => "right tag",
            Some(0) => {
                tag[0] ^= 1;
                "tag wrong in its first byte"
            }
            Some(1) => {
                tag[n - 1] ^= 0x80;
                "tag wrong in its last byte"
            }
            _ => {
                tag.iter_mut().for_each(|b| *b = !*b);
                "tag wrong in every byte"
            }
        };
        members.push(Member {
            label: format!("{what}, key/message {variant}"),
            case: Case {
                op: Op::Verify,
                backend,
                config: RecordConfig::new(
                    Combination::ALL[0],
                    ProtocolVersion::Tls12,
                    MacOrder::MacThenEncrypt,
                ),
                suite: Suite::Record,
                alg,
                seq: 0,
                expect: damage.is_none().then_some(msg_len),
                enc_key: Vec::new(),
                mac_key: key.to_vec(),
                iv: Vec::new(),
                data: msg,
                tag,
                aad: Vec::new(),
            },
            outcome: if damage.is_none() { "accept" } else { "reject" },
        });
    }
    Class {
        backend,
        name: format!("verify {backend} {alg:?}, {msg_len}-byte message"),
        members,
        sites: verify_sites(),
    }
}

/// `open_batch` on `lanes` (2 to [`BATCH_LANES`]) records of one length
/// under one key set: all valid with the least padding but one lane, which
/// is valid or damaged (MAC or padding), with the least or the most
/// padding. Members of one outcome (which lane is rejected) must give one
/// trace: nothing one lane holds may change the batch's instructions or
/// addresses. The outcomes part only where each record's result is
/// declassified.
pub fn batch_class(backend: Backend, config: RecordConfig, body_len: usize, lanes: usize) -> Class {
    assert!((2..=BATCH_LANES).contains(&lanes));
    // The lanes varied: two apart, the second the last where fewer than 13.
    let (one, two) = if lanes > 12 { (3, 12) } else { (1, lanes - 1) };
    let max_pad = (body_len - mac_in_body(config) - 1).min(255) as u8;
    let mut members = Vec::new();
    for (lane, pad, damage, variant) in [
        (one, 0, Damage::None, 0),
        (one, max_pad, Damage::None, 1),
        (one, 0, Damage::Mac, 0),
        (one, max_pad, Damage::Padding, 1),
        (one, max_pad, Damage::Mac, 0),
        (two, 0, Damage::Padding, 1),
        (two, max_pad, Damage::Mac, 0),
    ] {
        let fixed = record_member(
            Op::OpenBatch,
            backend,
            config,
            body_len,
            0,
            Damage::None,
            variant,
        );
        let varied = record_member(
            Op::OpenBatch,
            backend,
            config,
            body_len,
            pad,
            damage,
            variant,
        );
        let mut data = Vec::new();
        for i in 0..lanes {
            data.extend_from_slice(if i == lane {
                &varied.case.data
            } else {
                &fixed.case.data
            });
        }
        let all = (1usize << lanes) - 1;
        let (opened, outcome) = match damage {
            Damage::None => (all, "every lane opens"),
            _ if lane == one => (all & !(1 << one), "the first varied lane rejected"),
            _ => (all & !(1 << two), "the second varied lane rejected"),
        };
        members.push(Member {
            label: format!("lane {lane}: {}", varied.label),
            case: Case {
                expect: Some(opened),
                data,
                tag: vec![lanes as u8],
                ..varied.case
            },
            outcome,
        });
    }
    Class {
        backend,
        name: format!(
            "open_batch {backend} {}, {lanes} x {body_len}-byte ciphertext",
            config_name(config)
        ),
        members,
        // A batch that no window could run in lanes on this backend (a
        // public choice of count, length and MAC) opens record by record,
        // and parts where the single open does.
        sites: [Site::find(
            "src/record/batch_open.rs",
            BATCH_OPEN_RS,
            "if self.ok != usize::MAX",
            1,
        )]
        .into_iter()
        .chain(open_sites(config.mac_order))
        .collect(),
    }
}
