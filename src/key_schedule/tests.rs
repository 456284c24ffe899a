//! Known-answer tests of the key schedule: published vectors
//! (`vectors/prf/published.txt`) and vectors from an independent Python
//! implementation (`vectors/prf/generated.txt`), on every backend the host
//! runs; the NSS key log parser.

extern crate std;

use std::collections::BTreeMap;
use std::string::String;
use std::vec::Vec;
use std::{format, vec};

use super::key_log::{self, KeyLogErrorKind, KeyLogField};
use super::*;
use crate::{Combination, Opener, Sealer};

const PUBLISHED: &str = include_str!("../../vectors/prf/published.txt");
const GENERATED: &str = include_str!("../../vectors/prf/generated.txt");

/// One `key = value` record; every attribute must be taken.
struct Record {
    line: usize,
    fields: BTreeMap<String, String>,
}

impl Record {
    fn take(&mut self, key: &str) -> String {
        self.fields
            .remove(key)
            .unwrap_or_else(|| panic!("record at line {}: no `{key}`", self.line))
    }

    fn hex(&mut self, key: &str) -> Vec<u8> {
        let text = self.take(key);
        assert!(
            text.len().is_multiple_of(2),
            "line {}: odd hex in {key}",
            self.line
        );
        (0..text.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&text[i..i + 2], 16).expect("hex"))
            .collect()
    }

    fn array<const N: usize>(&mut self, key: &str) -> [u8; N] {
        let line = self.line;
        self.hex(key)
            .try_into()
            .unwrap_or_else(|_| panic!("record at line {line}: `{key}` is not {N} bytes"))
    }

    fn prf(&mut self) -> Prf {
        match self.take("prf").as_str() {
            "tls10" => Prf::Tls10,
            "sha256" => Prf::Sha256,
            "sha384" => Prf::Sha384,
            other => panic!("record at line {}: unknown prf {other}", self.line),
        }
    }

    fn done(self) {
        assert!(
            self.fields.is_empty(),
            "record at line {}: attributes not consumed: {:?}",
            self.line,
            self.fields.keys().collect::<Vec<_>>()
        );
    }
}

fn parse(text: &str) -> Vec<Record> {
    let mut records = Vec::new();
    let mut current: Option<Record> = None;
    for (i, line) in text.lines().enumerate() {
        if line.starts_with('#') {
            continue;
        }
        if line.trim().is_empty() {
            records.extend(current.take());
            continue;
        }
        let (key, value) = line
            .split_once('=')
            .unwrap_or_else(|| panic!("line {}: no `=`", i + 1));
        let record = current.get_or_insert_with(|| Record {
            line: i + 1,
            fields: BTreeMap::new(),
        });
        let old = record.fields.insert(key.trim().into(), value.trim().into());
        assert!(old.is_none(), "line {}: duplicate {}", i + 1, key.trim());
    }
    records.extend(current);
    records
}

fn backends() -> Vec<Backend> {
    Backend::available().collect()
}

fn combination(name: &str) -> Combination {
    name.parse().expect("combination name")
}

fn version(name: &str) -> ProtocolVersion {
    match name {
        "TLS1.0" => ProtocolVersion::Tls10,
        "TLS1.1" => ProtocolVersion::Tls11,
        "TLS1.2" => ProtocolVersion::Tls12,
        "DTLS1.0" => ProtocolVersion::Dtls10,
        "DTLS1.2" => ProtocolVersion::Dtls12,
        other => panic!("unknown version {other}"),
    }
}

/// The PRF over `seed` split at every position (and in one piece), on every
/// backend: all must give `want`.
fn check_prf(prf: Prf, secret: &[u8], label: &[u8], seed: &[u8], want: &[u8], line: usize) {
    for backend in backends() {
        let mut out = vec![0u8; want.len()];
        prf.derive_with_backend(secret, label, &[seed], &mut out, backend)
            .unwrap();
        assert_eq!(out, want, "line {line}, {backend:?}");
        for split in [0, 1, seed.len() / 2, seed.len()] {
            let split = split.min(seed.len());
            let mut out = vec![0xaau8; want.len()];
            let (a, b) = seed.split_at(split);
            prf.derive_with_backend(secret, label, &[a, b], &mut out, backend)
                .unwrap();
            assert_eq!(out, want, "line {line}, {backend:?}, seed split at {split}");
        }
        // Prefixes: P_hash is a stream.
        for n in [0, 1, want.len() / 2] {
            let mut out = vec![0u8; n];
            prf.derive_with_backend(secret, label, &[seed], &mut out, backend)
                .unwrap();
            assert_eq!(out, want[..n], "line {line}, {backend:?}, prefix {n}");
        }
    }
}

fn run(text: &str) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for mut r in parse(text) {
        let kind = r.take("kind");
        let _ = r.fields.remove("source");
        match kind.as_str() {
            "prf" => {
                let prf = r.prf();
                let secret = r.hex("secret");
                let label = r.take("label");
                let seed = r.hex("seed");
                let want = r.hex("output");
                check_prf(prf, &secret, label.as_bytes(), &seed, &want, r.line);
            }
            "master_secret" => {
                let prf = r.prf();
                let pms = r.hex("pre_master_secret");
                let cr = r.array::<32>("client_random");
                let sr = r.array::<32>("server_random");
                let want = r.array::<48>("master_secret");
                let got = MasterSecret::derive(prf, &pms, &cr, &sr).unwrap();
                assert_eq!(got.as_bytes(), &want, "line {}", r.line);
                assert_eq!(got, MasterSecret::from_bytes(want));
            }
            "extended_master_secret" => {
                let prf = r.prf();
                let pms = r.hex("pre_master_secret");
                let hash = r.hex("session_hash");
                assert_eq!(hash.len(), prf.handshake_hash_len());
                let want = r.array::<48>("master_secret");
                let got = MasterSecret::derive_extended(prf, &pms, &hash).unwrap();
                assert_eq!(got.as_bytes(), &want, "line {}", r.line);
            }
            "verify_data" => {
                let prf = r.prf();
                let ms = MasterSecret::from_bytes(r.array::<48>("master_secret"));
                let sender = match r.take("sender").as_str() {
                    "client" => Side::Client,
                    "server" => Side::Server,
                    other => panic!("sender {other}"),
                };
                let hash = r.hex("handshake_hash");
                let want = r.array::<12>("verify_data");
                assert_eq!(ms.verify_data(prf, sender, &hash).unwrap(), want);
            }
            "key_expansion" => {
                // A raw key expansion of any length (the NIST vectors): the
                // PRF with the key block's label and seed order.
                let prf = r.prf();
                let ms = r.hex("master_secret");
                let sr = r.hex("server_random");
                let cr = r.hex("client_random");
                let want = r.hex("key_block");
                let mut seed = sr.clone();
                seed.extend_from_slice(&cr);
                check_prf(prf, &ms, b"key expansion", &seed, &want, r.line);
                // And through KeyBlock, for each combination whose key block
                // is a prefix of it.
                let ms: [u8; 48] = ms.try_into().unwrap();
                let cr: [u8; 32] = cr.try_into().unwrap();
                let sr: [u8; 32] = sr.try_into().unwrap();
                for c in Combination::ALL {
                    for v in ProtocolVersion::ALL {
                        if !c.allows(v)
                            || Prf::for_connection(c, v) != prf
                            || KeyBlock::len_for(c, v) > want.len()
                        {
                            continue;
                        }
                        let kb = KeyBlock::derive(c, v, &ms, &cr, &sr).unwrap();
                        assert_eq!(kb.as_bytes(), &want[..KeyBlock::len_for(c, v)]);
                    }
                }
            }
            "key_block" => {
                let c = combination(&r.take("combination"));
                let v = version(&r.take("version"));
                let ms = r.array::<48>("master_secret");
                let cr = r.array::<32>("client_random");
                let sr = r.array::<32>("server_random");
                let want = r.hex("key_block");
                for backend in backends() {
                    let kb = KeyBlock::derive_with_backend(c, v, &ms, &cr, &sr, backend).unwrap();
                    assert_eq!(kb.as_bytes(), &want[..], "line {}", r.line);
                    assert_eq!(kb.prf(), Prf::for_connection(c, v));
                }
                let kb = MasterSecret::from_bytes(ms)
                    .key_block(c, v, &cr, &sr)
                    .unwrap();
                let client = kb.client_write_keys();
                let server = kb.server_write_keys();
                assert_eq!(client.mac_key, &r.hex("client_mac_key")[..]);
                assert_eq!(server.mac_key, &r.hex("server_mac_key")[..]);
                assert_eq!(client.enc_key, &r.hex("client_key")[..]);
                assert_eq!(server.enc_key, &r.hex("server_key")[..]);
                if v == ProtocolVersion::Tls10 {
                    assert_eq!(client.iv, Some(&r.hex("client_iv")[..]));
                    assert_eq!(server.iv, Some(&r.hex("server_iv")[..]));
                } else {
                    assert_eq!((client.iv, server.iv), (None, None));
                }
                // The keys build a sealer and an opener that agree.
                for order in MacOrder::ALL {
                    let config = kb.record_config(order);
                    let mut sealer = Sealer::new(config, client).unwrap();
                    let mut opener = Opener::new(config, client).unwrap();
                    let mut buf = [0u8; 256];
                    let n = sealer.seal(3, 23, b"key block", &mut buf).unwrap();
                    assert_eq!(
                        opener.open_in_place(3, 23, &mut buf[..n]).unwrap(),
                        b"key block"
                    );
                    // The server's keys differ from the client's.
                    let mut wrong = Opener::new(config, server).unwrap();
                    let n = sealer.seal(4, 23, b"key block", &mut buf).unwrap();
                    assert!(wrong.open_in_place(4, 23, &mut buf[..n]).is_err());
                }
            }
            other => panic!("record at line {}: unknown kind {other}", r.line),
        }
        *counts.entry(kind).or_insert(0) += 1;
        r.done();
    }
    counts
}

#[test]
fn published_vectors() {
    let counts = run(PUBLISHED);
    assert_eq!(counts["prf"], 10);
    assert_eq!(counts["master_secret"], 2);
    assert_eq!(counts["key_expansion"], 2);
}

#[test]
fn generated_vectors() {
    let counts = run(GENERATED);
    assert_eq!(counts["prf"], 30);
    assert_eq!(counts["master_secret"], 6);
    assert_eq!(counts["extended_master_secret"], 3);
    assert_eq!(counts["verify_data"], 6);
    // Every combination on every version that allows it.
    let allowed = Combination::ALL
        .iter()
        .flat_map(|c| ProtocolVersion::ALL.iter().filter(|v| c.allows(**v)))
        .count();
    assert_eq!(counts["key_block"], allowed);
}

#[test]
fn prf_choice() {
    use Combination::*;
    use ProtocolVersion::*;
    for v in [Tls10, Tls11, Dtls10] {
        assert_eq!(Prf::for_connection(Aes128CbcSha1, v), Prf::Tls10);
        assert_eq!(Prf::for_connection(Aes256CbcSha1, v), Prf::Tls10);
    }
    for v in [Tls12, Dtls12] {
        for c in [
            Aes128CbcSha1,
            Aes256CbcSha1,
            Aes128CbcSha256,
            Aes256CbcSha256,
        ] {
            assert_eq!(Prf::for_connection(c, v), Prf::Sha256);
        }
        assert_eq!(Prf::for_connection(Aes256CbcSha384, v), Prf::Sha384);
    }
}

#[test]
fn key_block_lengths_and_errors() {
    use Combination::*;
    use ProtocolVersion::*;
    assert_eq!(KeyBlock::len_for(Aes128CbcSha1, Tls10), 104);
    assert_eq!(KeyBlock::len_for(Aes128CbcSha1, Tls11), 72);
    assert_eq!(KeyBlock::len_for(Aes256CbcSha384, Tls12), 160);
    assert_eq!(
        KeyBlock::derive(Aes128CbcSha256, Tls11, &[0; 48], &[0; 32], &[0; 32]).unwrap_err(),
        Error::UnsupportedVersion {
            combination: Aes128CbcSha256,
            version: Tls11
        }
    );
    let kb = KeyBlock::derive(Aes256CbcSha384, Dtls12, &[0; 48], &[0; 32], &[0; 32]).unwrap();
    let dbg = format!("{kb:?} {:?}", MasterSecret::from_bytes([0x5a; 48]));
    assert!(!dbg.contains("5a") && !dbg.contains("90"), "{dbg}");
}

const RANDOM: &str = "0123456789abcdef0123456789ABCDEF0123456789abcdef0123456789abcdef";
const SECRET: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e2f";

#[test]
fn key_log_parses_entries_and_skips_the_rest() {
    let log = format!(
        "# SSL/TLS secrets log file, generated by OpenSSL\n\
         \n\
         CLIENT_HANDSHAKE_TRAFFIC_SECRET {RANDOM} {SECRET}\n\
         RSA 0011 2233\n\
         CLIENT_RANDOM {RANDOM} {SECRET}\r\n\
         \t# indented comment\n\
         CLIENT_RANDOM {} {}",
        "ff".repeat(32),
        "ee".repeat(48)
    );
    let entries: Vec<_> = key_log::entries(&log).collect::<Result<_, _>>().unwrap();
    assert_eq!(entries.len(), 2);
    assert_eq!(entries[0].client_random[..4], [0x01, 0x23, 0x45, 0x67]);
    assert_eq!(entries[0].client_random[16..20], [0x01, 0x23, 0x45, 0x67]);
    let expect: [u8; 48] = core::array::from_fn(|i| i as u8);
    assert_eq!(entries[0].master_secret.as_bytes(), &expect);
    assert_eq!(entries[1].client_random, [0xff; 32]);

    let found = key_log::find_master_secret(&log, &[0xff; 32])
        .unwrap()
        .unwrap();
    assert_eq!(found.as_bytes(), &[0xee; 48]);
    assert!(
        key_log::find_master_secret(&log, &[0; 32])
            .unwrap()
            .is_none()
    );
    assert!(key_log::find_master_secret("", &[0; 32]).unwrap().is_none());
}

#[test]
fn key_log_last_entry_wins() {
    let log = format!(
        "CLIENT_RANDOM {0} {1}\nCLIENT_RANDOM {0} {2}\n",
        "ab".repeat(32),
        "01".repeat(48),
        "02".repeat(48)
    );
    let ms = key_log::find_master_secret(&log, &[0xab; 32])
        .unwrap()
        .unwrap();
    assert_eq!(ms.as_bytes(), &[2; 48]);
}

#[test]
fn key_log_errors_name_the_line() {
    let cases: Vec<(String, KeyLogErrorKind)> = vec![
        ("CLIENT_RANDOM".into(), KeyLogErrorKind::MissingField),
        (
            format!("CLIENT_RANDOM {RANDOM}"),
            KeyLogErrorKind::MissingField,
        ),
        (
            format!("CLIENT_RANDOM {RANDOM} {SECRET} extra"),
            KeyLogErrorKind::ExtraField,
        ),
        (
            format!("CLIENT_RANDOM {} {SECRET}", &RANDOM[..62]),
            KeyLogErrorKind::ClientRandomLength { digits: 62 },
        ),
        (
            format!("CLIENT_RANDOM {RANDOM} {SECRET}00"),
            KeyLogErrorKind::MasterSecretLength { digits: 98 },
        ),
        (
            format!("CLIENT_RANDOM {}g {SECRET}", &RANDOM[..63]),
            KeyLogErrorKind::InvalidHex {
                field: KeyLogField::ClientRandom,
            },
        ),
        (
            // 94 digits and a two-byte character: 96 bytes, not hex.
            format!("CLIENT_RANDOM {RANDOM} {}\u{e9}", &SECRET[..94]),
            KeyLogErrorKind::InvalidHex {
                field: KeyLogField::MasterSecret,
            },
        ),
        (
            format!("CLIENT_RANDOM {RANDOM} {}zz", &SECRET[..94]),
            KeyLogErrorKind::InvalidHex {
                field: KeyLogField::MasterSecret,
            },
        ),
        ("not-a-label x y".into(), KeyLogErrorKind::InvalidLabel),
        ("\u{e9}t\u{e9} x y".into(), KeyLogErrorKind::InvalidLabel),
    ];
    for (line, kind) in cases {
        let log = format!("# header\n\n{line}\nCLIENT_RANDOM {RANDOM} {SECRET}\n");
        let mut it = key_log::entries(&log);
        let err = it.next().unwrap().unwrap_err();
        assert_eq!(err.kind(), kind, "{line}");
        assert_eq!(err.line(), 3, "{line}");
        assert!(format!("{err}").starts_with("key log line 3: "), "{err}");
        // Iteration goes on past the bad line.
        assert!(it.next().unwrap().is_ok());
        assert!(it.next().is_none());
        // find_master_secret refuses the whole log.
        assert_eq!(
            key_log::find_master_secret(&log, &[0; 32]).unwrap_err(),
            err
        );
    }
}
