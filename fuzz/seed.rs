//! Writes the seed corpora under `DIR` (default `corpus`, relative to the
//! current directory): valid records of every configuration with short,
//! long and every padding length for `open`, plaintexts of every
//! configuration for `seal_open_roundtrip`, ESP packets and payloads for
//! `esp_open`, SSH packet streams and payloads for `ssh_open`, batches of
//! sealed, damaged and raw fragments for `batch_open`, and every suite name, OpenSSL
//! name, combination name and code point for `suite_lookup`.
//!
//! `cargo run --manifest-path fuzz/Cargo.toml --example seed -- fuzz/corpus`

use std::fs;
use std::path::Path;

use cbc_hmac::esp::{EspConfig, EspIntegrity, EspKeys, EspSealer};
use cbc_hmac::ssh::{SshKeys, SshSealer, SshSuite};
use cbc_hmac::suite::CipherSuite;
use cbc_hmac::{Cipher, Combination, MacOrder, ProtocolVersion, RecordConfig};
use fuzz_support::{Header, build_record, write_header};

fn configs() -> impl Iterator<Item = RecordConfig> {
    Combination::ALL.into_iter().flat_map(|c| {
        ProtocolVersion::ALL
            .into_iter()
            .filter(move |&v| c.allows(v))
            .flat_map(move |v| {
                MacOrder::ALL
                    .into_iter()
                    .map(move |o| RecordConfig::new(c, v, o))
            })
    })
}

fn write(dir: &Path, name: String, data: &[u8]) {
    fs::write(dir.join(name), data).unwrap();
}

fn main() {
    let root = std::env::args().nth(1).unwrap_or_else(|| "corpus".into());
    let root = Path::new(&root);
    let enc_key: [u8; 32] = std::array::from_fn(|i| i as u8);
    let mac_key: [u8; 48] = std::array::from_fn(|i| 0x40 + i as u8);
    let iv = [0xa5u8; 16];
    // The esp_open target's authentication key.
    let esp_auth_key: [u8; 48] = std::array::from_fn(|i| 0x40 + i as u8);
    let explicit_iv: [u8; 16] = std::array::from_fn(|i| 0xf0 ^ i as u8);

    // open: valid records.
    let dir = root.join("open");
    fs::create_dir_all(&dir).unwrap();
    let mut count = 0;
    for (k, config) in configs().enumerate() {
        let mut head = Vec::new();
        write_header(&mut head, config, 7 + k as u64, 23, &enc_key, &mac_key, &iv);
        let (h, _) = Header::parse(&head).unwrap();
        let m = config.combination.mac().output_len();
        let mac_part = if config.mac_order == MacOrder::MacThenEncrypt {
            m
        } else {
            0
        };
        // Every padding length in a 512-byte body for the first two
        // configurations of each MAC order; a spread for the others.
        let pads: Vec<u8> = if k < 4 {
            (0..=255).collect()
        } else {
            vec![0, 1, 15, 16, 200, 255]
        };
        for pad in pads {
            for body_len in [512usize, 1024] {
                let data_len = body_len - mac_part - pad as usize - 1;
                let plaintext: Vec<u8> = (0..data_len).map(|i| (i * 7) as u8).collect();
                let record = build_record(&h, &plaintext, pad, &explicit_iv);
                let mut input = head.clone();
                input.extend(&record);
                write(&dir, format!("valid-{k:02}-{body_len}-{pad:03}"), &input);
                count += 1;
            }
        }
        // Short and long plaintexts with the least padding.
        for len in [0usize, 1, 16, 100, 1 << 14] {
            let pad = (15 - (len + mac_part) % 16) as u8;
            let plaintext = vec![0x61u8; len];
            let record = build_record(&h, &plaintext, pad, &explicit_iv);
            let mut input = head.clone();
            input.extend(&record);
            write(&dir, format!("len-{k:02}-{len}"), &input);
            count += 1;
        }
    }
    println!("open: {count} seeds");

    // seal_open_roundtrip: header, explicit IV, flip position, plaintext.
    let dir = root.join("seal_open_roundtrip");
    fs::create_dir_all(&dir).unwrap();
    let mut count = 0;
    for (k, config) in configs().enumerate() {
        for len in [0usize, 1, 15, 16, 17, 255, 256, 1000] {
            let mut input = Vec::new();
            write_header(&mut input, config, k as u64, 22, &enc_key, &mac_key, &iv);
            input.extend_from_slice(&explicit_iv);
            input.extend_from_slice(&(len as u32 * 13 + k as u32).to_le_bytes());
            input.extend((0..len).map(|i| i as u8));
            write(&dir, format!("seal-{k:02}-{len}"), &input);
            count += 1;
        }
    }
    println!("seal_open_roundtrip: {count} seeds");

    // esp_open: valid packets of every configuration (mode 0, sealed with
    // the target's keys) and payloads to seal (mode 1).
    let dir = root.join("esp_open");
    fs::create_dir_all(&dir).unwrap();
    let mut count = 0;
    for sel in 0..0x40u8 {
        let integrity = [
            EspIntegrity::HmacSha1_96,
            EspIntegrity::HmacSha256_128,
            EspIntegrity::HmacSha384_192,
        ][(sel % 3) as usize];
        if sel & 0x0f >= 3 {
            continue;
        }
        let cipher = if sel & 0x10 == 0 {
            Cipher::Aes128Cbc
        } else {
            Cipher::Aes256Cbc
        };
        let esn = sel & 0x20 != 0;
        let config = EspConfig {
            cipher,
            integrity,
            spi: 0x0102_0304,
            esn,
        };
        let keys = EspKeys {
            enc_key: &enc_key[..cipher.key_len()],
            auth_key: &esp_auth_key[..integrity.key_len()],
        };
        let seq: u64 = if esn { (7 << 32) + 5 } else { 5 };
        for len in [0usize, 13, 14, 100] {
            let mut sealer = EspSealer::new(config, keys).unwrap();
            let mut packet = vec![0u8; config.sealed_len(len)];
            sealer.seal(seq, 4, &vec![0x5a; len], &mut packet).unwrap();
            for (mode, tail) in [(0u8, packet.as_slice()), (0x40, &vec![0x5a; len][..])] {
                let mut input = vec![sel | mode];
                input.extend(seq.to_le_bytes());
                input.extend(77u32.to_le_bytes());
                input.extend(explicit_iv);
                input.extend(tail);
                write(&dir, format!("esp-{sel:02x}-{mode:02x}-{len}"), &input);
                count += 1;
            }
        }
    }
    println!("esp_open: {count} seeds");

    // ssh_open: streams of valid packets of every suite (mode 0, sealed
    // with the target's keys from sequence number 5) and payloads to seal
    // (mode 0x80).
    let dir = root.join("ssh_open");
    fs::create_dir_all(&dir).unwrap();
    let mut count = 0;
    let ssh_mac_key: [u8; 64] = std::array::from_fn(|i| 0x40 + i as u8);
    for (i, suite) in SshSuite::ALL.into_iter().enumerate() {
        let keys = SshKeys {
            enc_key: &enc_key[..suite.cipher().key_len()],
            iv: &[0x5a; 16],
            mac_key: &ssh_mac_key[..suite.mac_key_len()],
        };
        let mut sealer = SshSealer::new(suite, keys, 5).unwrap();
        let mut stream = Vec::new();
        for len in [0usize, 11, 100] {
            let mut packet = vec![0u8; sealer.sealed_len(len)];
            sealer.seal(&vec![0x5a; len], &mut packet).unwrap();
            stream.extend(packet);
        }
        for (mode, tail) in [(0u8, stream.as_slice()), (0x80, &[0x5a; 40][..])] {
            let mut input = vec![i as u8 | mode];
            input.extend(5u32.to_le_bytes());
            input.extend(77u32.to_le_bytes());
            input.extend(tail);
            write(&dir, format!("ssh-{i}-{mode:02x}"), &input);
            count += 1;
        }
    }
    println!("ssh_open: {count} seeds");

    // batch_open: per configuration selector, batches of sealed records
    // (short, block-sized, hash-block-sized, 16 KiB), one damaged, one
    // truncated and one raw fragment (the layout is in the target).
    let dir = root.join("batch_open");
    fs::create_dir_all(&dir).unwrap();
    let mut count = 0;
    for sel in 0..50u8 {
        for (n, lens) in [
            (1u8, &[0u16][..]),
            (7, &[1, 15, 55, 256, 1000, 0x8000 | 16384]),
        ] {
            let mut input = vec![sel];
            input.extend_from_slice(&(1000u64 + u64::from(sel)).to_le_bytes());
            input.extend_from_slice(&[23, n - 1, sel]);
            for (i, &len) in lens.iter().enumerate() {
                input.push((i as u8) << 1);
                input.extend_from_slice(&len.to_le_bytes());
                input.extend_from_slice(&[i as u8, 0x30 + i as u8]);
                match i {
                    // A flipped bit, and a cut tail.
                    2 => input.extend_from_slice(&[1, 40, 0, 0x80]),
                    3 => input.extend_from_slice(&[1, 16, 0, 0]),
                    _ => input.push(0),
                }
            }
            if n > 1 {
                input.extend_from_slice(&[1, 48, 0]);
                input.extend(0..48u8);
            }
            write(&dir, format!("batch-{sel:02}-{n}"), &input);
            count += 1;
        }
    }
    println!("batch_open: {count} seeds");

    // suite_lookup: every name and code point.
    let dir = root.join("suite_lookup");
    fs::create_dir_all(&dir).unwrap();
    let mut names: Vec<String> = Combination::ALL.iter().map(|c| c.name().into()).collect();
    for s in CipherSuite::all() {
        names.push(s.iana_name().into());
        names.push(s.iana_name().to_ascii_lowercase());
        names.extend(s.openssl_name().map(String::from));
        names.push(format!("0x{:04X}", s.code_point()));
    }
    for (i, n) in names.iter().enumerate() {
        write(&dir, format!("name-{i:03}"), n.as_bytes());
    }
    for s in CipherSuite::all() {
        write(
            &dir,
            format!("code-{:04x}", s.code_point()),
            &s.code_point().to_be_bytes(),
        );
    }
    println!(
        "suite_lookup: {} seeds",
        names.len() + CipherSuite::all().len()
    );
}
