//! The primitives alone, and the baseline a record layer would get by
//! composing the RustCrypto crates itself.
//!
//! Bench ids:
//! - `encrypt/<cipher>/<backend>/<payload>`, `decrypt/...`: AES-128/256-CBC
//!   in place with a key expanded once and a fixed IV;
//! - `hmac/<algorithm>/<backend>/<payload>`: HMAC-SHA1/256/384 with a key
//!   prepared once;
//! - `composition/AES-128-CBC-SHA1/<how>/<payload>`: one TLS 1.2
//!   MAC-then-encrypt seal, `rustcrypto-keyed-per-record` (`cbc::Encryptor`
//!   and `Hmac<Sha1>` built for every record, PERFORMANCE.md's "plain
//!   composition" row) next to `cbc-hmac` (a [`Sealer`] on the detected
//!   backend), so the two compare within one run.
//!
//! Throughput is bytes of payload; payloads 16, 64, 1024 and 16384.

use std::hint::black_box;
use std::time::Duration;

use aes::Aes128;
use cbc::cipher::{BlockModeEncrypt, KeyIvInit};
use cbc_hmac::{
    AesCbcKey, Backend, Cipher, Combination, HmacKey, MacAlgorithm, MacOrder, Opener,
    ProtocolVersion, RecordConfig, RecordKeys, Sealer,
};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use hmac::{Hmac, KeyInit, Mac};
use sha1::Sha1;

const PAYLOADS: [usize; 4] = [16, 64, 1024, 16384];

/// The detected backend first, then every other available one.
fn backends() -> Vec<Backend> {
    let best = Backend::detect();
    std::iter::once(best)
        .chain(Backend::available().filter(|&b| b != best))
        .collect()
}

fn data(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 13 + 5) as u8).collect()
}

fn ciphers(c: &mut Criterion) {
    for encrypt in [true, false] {
        let mut group = c.benchmark_group(if encrypt { "encrypt" } else { "decrypt" });
        for cipher in Cipher::ALL {
            let key_bytes = vec![0x33; cipher.key_len()];
            for backend in backends() {
                let key = AesCbcKey::with_backend(cipher, &key_bytes, backend).expect("AES key");
                let reference = AesCbcKey::with_backend(cipher, &key_bytes, Backend::Portable)
                    .expect("AES key");
                let iv = [0x44u8; 16];
                for payload in PAYLOADS {
                    let mut buf = data(payload);
                    // Check the round trip against the portable backend.
                    let mut copy = buf.clone();
                    if encrypt {
                        key.encrypt(&iv, &mut copy).expect("encrypt");
                        reference.decrypt(&iv, &mut copy).expect("decrypt");
                    } else {
                        key.decrypt(&iv, &mut copy).expect("decrypt");
                        reference.encrypt(&iv, &mut copy).expect("encrypt");
                    }
                    assert_eq!(copy, buf, "{cipher}/{backend}/{payload}");

                    group.throughput(Throughput::Bytes(payload as u64));
                    group.bench_function(
                        BenchmarkId::new(format!("{cipher}/{backend}"), payload),
                        |b| {
                            if encrypt {
                                b.iter(|| key.encrypt(black_box(&iv), &mut buf).expect("encrypt"))
                            } else {
                                b.iter(|| key.decrypt(black_box(&iv), &mut buf).expect("decrypt"))
                            }
                        },
                    );
                }
            }
        }
        group.finish();
    }
}

fn macs(c: &mut Criterion) {
    let mut group = c.benchmark_group("hmac");
    for algorithm in MacAlgorithm::ALL {
        let key_bytes = vec![0x55; algorithm.tls_key_len()];
        for backend in backends() {
            let key = HmacKey::with_backend(algorithm, &key_bytes, backend).expect("HMAC key");
            let reference =
                HmacKey::with_backend(algorithm, &key_bytes, Backend::Portable).expect("HMAC key");
            for payload in PAYLOADS {
                let message = data(payload);
                let mut tag = [0u8; 64];
                let n = key.mac(&message, &mut tag).expect("mac");
                reference
                    .verify(&message, &tag[..n])
                    .expect("the tag verifies on the portable backend");

                group.throughput(Throughput::Bytes(payload as u64));
                group.bench_function(
                    BenchmarkId::new(format!("{algorithm}/{backend}"), payload),
                    |b| b.iter(|| key.mac(black_box(&message), &mut tag).expect("mac")),
                );
            }
        }
    }
    group.finish();
}

/// TLS 1.2 MAC-then-encrypt AES-128-CBC-SHA1 seal from the RustCrypto crates,
/// keyed per record: `buf` is `[IV room][plaintext][room for MAC and
/// padding]`; returns the fragment length. The explicit IV is the caller's
/// (a counter here, which is cheaper than the unpredictable IV a real
/// sealer, and [`Sealer`], must produce).
fn composed_seal(
    enc_key: &[u8; 16],
    mac_key: &[u8],
    seq: u64,
    iv: &[u8; 16],
    buf: &mut [u8],
    payload: usize,
) -> usize {
    const MAC_LEN: usize = 20;
    let mut header = [0u8; 13];
    header[..8].copy_from_slice(&seq.to_be_bytes());
    header[8] = 23;
    header[9..11].copy_from_slice(&[3, 3]);
    header[11..].copy_from_slice(&(payload as u16).to_be_bytes());

    let mut mac = <Hmac<Sha1> as KeyInit>::new_from_slice(mac_key).expect("any key length");
    mac.update(&header);
    mac.update(&buf[16..16 + payload]);
    let tag = mac.finalize().into_bytes();

    let body_len = (payload + MAC_LEN + 1).next_multiple_of(16);
    let body = &mut buf[16..16 + body_len];
    body[payload..payload + MAC_LEN].copy_from_slice(&tag);
    body[payload + MAC_LEN..].fill((body_len - payload - MAC_LEN - 1) as u8);
    let (blocks, _) = body.as_chunks_mut::<16>();
    cbc::Encryptor::<Aes128>::new(enc_key.into(), iv.into())
        .encrypt_blocks(aes::Block::cast_slice_from_core_mut(blocks));
    buf[..16].copy_from_slice(iv);
    16 + body_len
}

fn composition(c: &mut Criterion) {
    let combination = Combination::Aes128CbcSha1;
    let config = RecordConfig::new(
        combination,
        ProtocolVersion::Tls12,
        MacOrder::MacThenEncrypt,
    );
    let enc_key = [0x66u8; 16];
    let mac_key = [0x77u8; 20];
    let keys = RecordKeys {
        enc_key: &enc_key,
        mac_key: &mac_key,
        iv: None,
    };
    let mut sealer = Sealer::new(config, keys).expect("sealer");
    let mut opener = Opener::new(config, keys).expect("opener");

    let mut group = c.benchmark_group("composition");
    for payload in [16, 16384] {
        let input = data(payload);
        let mut buf = vec![0u8; sealer.sealed_len(payload)];

        // The composition makes real records: cbc-hmac opens them.
        buf[16..16 + payload].copy_from_slice(&input);
        let n = composed_seal(&enc_key, &mac_key, 9, &[1; 16], &mut buf, payload);
        assert_eq!(n, buf.len());
        let opened = opener
            .open_in_place(9, 23, &mut buf)
            .expect("the composed record opens");
        assert_eq!(opened, &input[..]);

        group.throughput(Throughput::Bytes(payload as u64));
        let mut seq = 0u64;
        group.bench_function(
            BenchmarkId::new(
                format!("{combination}/rustcrypto-keyed-per-record"),
                payload,
            ),
            |b| {
                b.iter(|| {
                    seq += 1;
                    let mut iv = [0u8; 16];
                    iv[8..].copy_from_slice(&seq.to_be_bytes());
                    composed_seal(
                        black_box(&enc_key),
                        black_box(&mac_key),
                        seq,
                        &iv,
                        &mut buf,
                        payload,
                    )
                })
            },
        );
        group.bench_function(
            BenchmarkId::new(format!("{combination}/cbc-hmac"), payload),
            |b| {
                b.iter(|| {
                    seq += 1;
                    sealer
                        .seal_in_place(black_box(seq), 23, &mut buf, payload)
                        .expect("seal")
                })
            },
        );
    }
    group.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .sample_size(20)
        .nresamples(10_000)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1))
}

criterion_group! {
    name = benches;
    config = config();
    targets = ciphers, macs, composition
}
criterion_main!(benches);
