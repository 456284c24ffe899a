//! The constant-time check ("ctgrind", as BoringSSL runs it): secrets are
//! marked *undefined* with valgrind memcheck's client requests, and memcheck
//! then reports every conditional jump and every memory address that
//! depends on them. Run under valgrind by `ct-check/run.sh`.
//!
//! - `ct-check list`: every backend and whether it can run here (run it
//!   natively and under valgrind: valgrind's virtual CPU has fewer
//!   features).
//! - `ct-check run BACKEND`: opens valid records, bad padding and bad MAC
//!   at every padding length 0..=255, short and long plaintexts, in both MAC
//!   orders, for every combination and version, and through the AEAD form
//!   (`TlsAead`) for every algorithm; seals; HMAC sign, verify
//!   and contexts; AES-CBC; hashing. Keys, record bytes (so everything
//!   decrypted from them), plaintexts and tags are secret. Fails on any
//!   wrong answer.
//! - `ct-check analyze FILE.xml...`: reads memcheck's XML reports and fails
//!   on any error except at the declassification sites listed in
//!   [`analyze::SITES`], and if one of those was never reached (the marking
//!   did not take).
//! - `ct-check trace [--full | --self-test]`: the trace-equality check on
//!   the real CPU under `ptrace` (see [`trace`] and `trace.sh`).

mod analyze;
mod records;
mod trace;
mod valgrind;

use std::process::ExitCode;

use cbc_hmac::{
    AesCbcKey, Backend, Cipher, Combination, Error, HmacKey, MacAlgorithm, MacOrder, Opener,
    ProtocolVersion, RecordConfig, RecordKeys, Sealer, TlsAead, TlsAeadAlgorithm, TlsAeadIv,
    digest_with_backend,
};

use records::{Damage, Keys};
use valgrind::{declassify, public, secret, secret_copy};

const ENC_KEY: [u8; 32] = [
    0x60, 0x3d, 0xeb, 0x10, 0x15, 0xca, 0x71, 0xbe, 0x2b, 0x73, 0xae, 0xf0, 0x85, 0x7d, 0x77, 0x81,
    0x1f, 0x35, 0x2c, 0x07, 0x3b, 0x61, 0x08, 0xd7, 0x2d, 0x98, 0x10, 0xa3, 0x09, 0x14, 0xdf, 0xf4,
];
const MAC_KEY: [u8; 48] = {
    let mut k = [0u8; 48];
    let mut i = 0;
    while i < 48 {
        k[i] = 0x0b ^ (i as u8).wrapping_mul(29);
        i += 1;
    }
    k
};
const IV: [u8; 16] = [
    0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f,
];
const CONTENT_TYPE: u8 = 23;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("list") => {
            for b in Backend::ALL {
                let state = if b.is_available() { "yes" } else { "no" };
                println!("{} {state} {}", b.name(), b.feature_names());
            }
            ExitCode::SUCCESS
        }
        Some("run") => {
            let Some(backend) = args.get(1).and_then(|n| Backend::from_name(n)) else {
                eprintln!("usage: ct-check run BACKEND [--native]");
                return ExitCode::from(2);
            };
            let native = args.iter().any(|a| a == "--native");
            if !valgrind::running_on_valgrind() && !native {
                eprintln!(
                    "ct-check: not running under valgrind, so nothing would be checked; \
                     use ct-check/run.sh (or --native for a functional run)"
                );
                return ExitCode::from(2);
            }
            if !backend.is_available() {
                eprintln!("ct-check: backend {backend} is not available here");
                return ExitCode::from(3);
            }
            match run(backend) {
                Ok(()) => ExitCode::SUCCESS,
                Err(msg) => {
                    eprintln!("ct-check: WRONG RESULT on {backend}: {msg}");
                    ExitCode::FAILURE
                }
            }
        }
        Some("analyze") if args.len() > 1 => analyze::main(&args[1..]),
        Some("trace") => trace::main(&args[1..]),
        Some("trace-child") => trace::child::main(),
        _ => {
            eprintln!(
                "usage: ct-check list | run BACKEND [--native] | analyze FILE.xml... | trace [--full | --self-test]"
            );
            ExitCode::from(2)
        }
    }
}

type Check = Result<(), String>;

fn ensure(cond: bool, what: impl FnOnce() -> String) -> Check {
    if cond { Ok(()) } else { Err(what()) }
}

/// Under valgrind, checks that every byte of an output computed from
/// secrets is itself secret: proof that the marking reached it.
fn all_secret(what: impl FnOnce() -> String, bytes: &[u8]) -> Check {
    match valgrind::secret_bytes(bytes) {
        Some(n) if n != bytes.len() => Err(format!(
            "{}: only {n} of {} output bytes are secret: the marking did not take",
            what(),
            bytes.len()
        )),
        _ => Ok(()),
    }
}

/// Every valid (combination, version, MAC order).
fn configs() -> Vec<RecordConfig> {
    let mut out = Vec::new();
    for c in Combination::ALL {
        for v in ProtocolVersion::ALL {
            if !c.allows(v) {
                continue;
            }
            for o in MacOrder::ALL {
                out.push(RecordConfig::new(c, v, o));
            }
        }
    }
    out
}

fn key_lens(config: RecordConfig) -> (usize, usize) {
    (
        config.combination.cipher().key_len(),
        config.combination.mac().tls_key_len(),
    )
}

fn run(backend: Backend) -> Check {
    println!(
        "ct-check: backend {backend}, valgrind errors before: {}",
        valgrind::error_count()
    );
    let mut opened = 0usize;
    for config in configs() {
        opened += open_records(backend, config)?;
        seal_records(backend, config)?;
    }
    println!(
        "  open: {opened} records over {} configurations",
        configs().len()
    );
    let mut aead_opened = 0usize;
    for algorithm in TlsAeadAlgorithm::ALL {
        aead_opened += open_aead_records(backend, algorithm)?;
        seal_aead_records(backend, algorithm)?;
    }
    println!(
        "  TlsAead open: {aead_opened} records over {} algorithms",
        TlsAeadAlgorithm::ALL.len()
    );
    hmac_checks(backend)?;
    aes_checks(backend)?;
    println!(
        "ct-check: backend {backend} done, valgrind errors reported: {}",
        valgrind::error_count()
    );
    Ok(())
}

/// Builds an opener whose keys were secret while it was built, so its
/// whole key schedule and HMAC states are secret too.
fn secret_opener(backend: Backend, config: RecordConfig) -> Opener {
    let (ek, mk) = key_lens(config);
    let enc = secret_copy(&ENC_KEY[..ek]);
    let mac = secret_copy(&MAC_KEY[..mk]);
    // The TLS 1.0 initial IV comes from the key block too.
    let iv = secret_copy(&IV);
    let keys = RecordKeys {
        enc_key: &enc,
        mac_key: &mac,
        iv: (config.version == ProtocolVersion::Tls10).then_some(&iv[..]),
    };
    // Not declassified: the opener holds the secret key schedule. Its
    // `Result` discriminant depends only on public lengths.
    Opener::with_backend(config, keys, backend).expect("opener")
}

/// Opens one record (marked secret) on a fresh opener and checks the
/// outcome. Only the result is declassified, after the call.
fn open_one(
    backend: Backend,
    config: RecordConfig,
    record: &[u8],
    seq: u64,
    expect: Option<&[u8]>,
) -> Check {
    let mut opener = secret_opener(backend, config);
    let mut buf = record.to_vec();
    secret(&mut buf);
    let base = buf.as_ptr() as usize;
    let result = opener
        .open_in_place(seq, CONTENT_TYPE, &mut buf)
        .map(|p| (p.as_ptr() as usize - base, p.len()));
    let result = declassify(result);
    public(&mut buf);
    match (result, expect) {
        (Ok((start, len)), Some(want)) => ensure(&buf[start..start + len] == want, || {
            format!("{config:?}: wrong plaintext ({len} bytes)")
        }),
        (Err(Error::BadRecordMac), None) => Ok(()),
        (got, _) => Err(format!(
            "{config:?}: record of {} bytes: got {got:?}, expected {}",
            record.len(),
            if expect.is_some() {
                "Ok"
            } else {
                "BadRecordMac"
            }
        )),
    }
}

/// Valid, bad-padding and bad-MAC records at every padding length in a
/// 512-byte body, and short and long plaintexts.
fn open_records(backend: Backend, config: RecordConfig) -> Result<usize, String> {
    let (ek, mk) = key_lens(config);
    let keys = Keys {
        enc: &ENC_KEY[..ek],
        mac: &MAC_KEY[..mk],
        iv: &IV,
    };
    let m = config.combination.mac().output_len();
    let mac_in_body = if config.mac_order == MacOrder::MacThenEncrypt {
        m
    } else {
        0
    };
    let mut n = 0;
    let seq = 0x0001_0203_0405_0607;
    // Every padding length, same fragment length: 512-byte body.
    for pad in 0..=255u8 {
        let len = 512 - mac_in_body - pad as usize - 1;
        let pt = records::plaintext(len);
        for damage in Damage::ALL {
            let record = records::build(config, &keys, seq, CONTENT_TYPE, &pt, pad, damage);
            let expect = (damage == Damage::None).then_some(&pt[..]);
            open_one(backend, config, &record, seq, expect)
                .map_err(|e| format!("pad {pad} {damage:?}: {e}"))?;
            n += 1;
        }
    }
    // Short and long plaintexts, least and most padding; the longest is
    // the largest fragment an opener accepts (2^14 + 2048 bytes).
    for len in [0usize, 1, 17, 1000, 1 << 14] {
        let least = (15 - (len + mac_in_body) % 16) as u8;
        let mut pads = vec![least];
        if len + mac_in_body + 256 <= (1 << 14) + 2048 - 16 - m {
            pads.push(least + 240);
        }
        for pad in pads {
            let pt = records::plaintext(len);
            for damage in Damage::ALL {
                let record = records::build(config, &keys, seq, CONTENT_TYPE, &pt, pad, damage);
                let expect = (damage == Damage::None).then_some(&pt[..]);
                open_one(backend, config, &record, seq, expect)
                    .map_err(|e| format!("len {len} pad {pad} {damage:?}: {e}"))?;
                n += 1;
            }
        }
    }
    // A wrong sequence number is a bad MAC too.
    let pt = records::plaintext(100);
    let least = (15 - (100 + mac_in_body) % 16) as u8;
    let record = records::build(config, &keys, seq, CONTENT_TYPE, &pt, least, Damage::None);
    open_one(backend, config, &record, seq + 1, None).map_err(|e| format!("wrong seq: {e}"))?;
    Ok(n + 1)
}

/// Sealing with secret keys and a secret plaintext: nothing may depend on
/// them. The record is declassified afterwards and opened publicly.
fn seal_records(backend: Backend, config: RecordConfig) -> Check {
    let (ek, mk) = key_lens(config);
    let enc = secret_copy(&ENC_KEY[..ek]);
    let mac = secret_copy(&MAC_KEY[..mk]);
    let iv = secret_copy(&IV);
    let tls10 = config.version == ProtocolVersion::Tls10;
    let keys = RecordKeys {
        enc_key: &enc,
        mac_key: &mac,
        iv: tls10.then_some(&iv[..]),
    };
    let mut sealer = Sealer::with_backend(config, keys, backend).expect("sealer");
    let public_keys = RecordKeys {
        enc_key: &ENC_KEY[..ek],
        mac_key: &MAC_KEY[..mk],
        iv: tls10.then_some(&IV[..]),
    };
    let mut opener = Opener::with_backend(config, public_keys, backend).expect("opener");
    for (seq, len) in [0usize, 1, 15, 16, 100, 1000, 1 << 14]
        .into_iter()
        .enumerate()
    {
        let seq = seq as u64;
        let pt = records::plaintext(len);
        let mut buf = vec![0u8; sealer.sealed_len(len)];
        let offset = sealer.payload_offset();
        buf[offset..offset + len].copy_from_slice(&pt);
        secret(&mut buf);
        let result = if tls10 || seq.is_multiple_of(2) {
            sealer.seal_in_place(seq, CONTENT_TYPE, &mut buf, len)
        } else {
            sealer.seal_in_place_with_iv(seq, CONTENT_TYPE, &mut buf, len, &IV)
        };
        let n = declassify(result).map_err(|e| format!("{config:?}: seal {len}: {e:?}"))?;
        all_secret(|| format!("{config:?}: sealed record"), &buf[offset..n])?;
        public(&mut buf);
        let opened = opener.open_in_place(seq, CONTENT_TYPE, &mut buf[..n]);
        ensure(opened.as_deref() == Ok(&pt[..]), || {
            format!("{config:?}: sealed {len} bytes do not open: {opened:?}")
        })?;
    }
    Ok(())
}

/// The record layout the AEAD form shares: MAC-then-encrypt, TLS 1.0
/// (IV chained from the key) for the implicit IV, TLS 1.2 (IV in front,
/// the nonce) for the explicit IV. `records::build` takes the version's
/// bytes only, so SHA-256 and SHA-384 with TLS 1.0 are fine here.
fn aead_config(algorithm: TlsAeadAlgorithm) -> RecordConfig {
    let version = match algorithm.iv() {
        TlsAeadIv::Explicit => ProtocolVersion::Tls12,
        TlsAeadIv::Implicit => ProtocolVersion::Tls10,
    };
    RecordConfig::new(algorithm.combination(), version, MacOrder::MacThenEncrypt)
}

/// `mac_key || enc_key (|| iv)`, secret if asked.
fn aead_key(algorithm: TlsAeadAlgorithm, secret_key: bool) -> Vec<u8> {
    let (ek, mk) = key_lens(aead_config(algorithm));
    let mut key = [&MAC_KEY[..mk], &ENC_KEY[..ek]].concat();
    if algorithm.iv() == TlsAeadIv::Implicit {
        key.extend_from_slice(&IV);
    }
    if secret_key {
        secret(&mut key);
    }
    key
}

/// The AEAD form's additional data for `seq`: `seq || type || version`.
fn aead_ad(config: RecordConfig, seq: u64) -> [u8; 11] {
    let mut ad = [0u8; 11];
    ad[..8].copy_from_slice(&seq.to_be_bytes());
    ad[8] = CONTENT_TYPE;
    ad[9..].copy_from_slice(&config.version.wire());
    ad
}

/// Opens hand-built records through `TlsAead::open_in_place` on a secret
/// key: every padding length (valid, bad padding, bad MAC) in a 512-byte
/// body, and short and long plaintexts. Only the result is declassified.
fn open_aead_records(backend: Backend, algorithm: TlsAeadAlgorithm) -> Result<usize, String> {
    let config = aead_config(algorithm);
    let (ek, mk) = key_lens(config);
    let keys = Keys {
        enc: &ENC_KEY[..ek],
        mac: &MAC_KEY[..mk],
        iv: &IV,
    };
    let m = algorithm.mac_len();
    let seq = 0x0001_0203_0405_0607;
    let ad = aead_ad(config, seq);
    let key = aead_key(algorithm, true);
    let mut n = 0;
    let mut open = |record: &[u8], expect: Option<&[u8]>| -> Check {
        // A fresh object each time: the implicit chain is at the key's IV.
        let mut aead = TlsAead::with_backend(algorithm, &key, backend).expect("TlsAead");
        let (nonce, body) = record.split_at(config.version.explicit_iv_len());
        let mut buf = body.to_vec();
        secret(&mut buf);
        let result = aead.open_in_place(nonce, &ad, &mut buf).map(|p| p.len());
        let result = declassify(result);
        public(&mut buf);
        n += 1;
        match (result, expect) {
            (Ok(len), Some(want)) => ensure(&buf[..len] == want, || {
                format!("{algorithm}: wrong plaintext ({len} bytes)")
            }),
            (Err(Error::BadRecordMac), None) => ensure(buf.iter().all(|&b| b == 0), || {
                format!("{algorithm}: a rejected record was not wiped")
            }),
            (got, _) => Err(format!(
                "{algorithm}: {} bytes: got {got:?}, expected {}",
                body.len(),
                if expect.is_some() {
                    "Ok"
                } else {
                    "BadRecordMac"
                }
            )),
        }
    };
    for pad in 0..=255u8 {
        let pt = records::plaintext(512 - m - pad as usize - 1);
        for damage in Damage::ALL {
            let record = records::build(config, &keys, seq, CONTENT_TYPE, &pt, pad, damage);
            open(&record, (damage == Damage::None).then_some(&pt[..]))
                .map_err(|e| format!("pad {pad} {damage:?}: {e}"))?;
        }
    }
    for len in [0usize, 1, 17, 1000, 1 << 14] {
        let least = (15 - (len + m) % 16) as u8;
        let pt = records::plaintext(len);
        for damage in Damage::ALL {
            let record = records::build(config, &keys, seq, CONTENT_TYPE, &pt, least, damage);
            open(&record, (damage == Damage::None).then_some(&pt[..]))
                .map_err(|e| format!("len {len} {damage:?}: {e}"))?;
        }
    }
    Ok(n)
}

/// Sealing through `TlsAead` with a secret key and plaintext; the output is
/// declassified afterwards and opened publicly.
fn seal_aead_records(backend: Backend, algorithm: TlsAeadAlgorithm) -> Check {
    let config = aead_config(algorithm);
    let mut sealer =
        TlsAead::with_backend(algorithm, &aead_key(algorithm, true), backend).expect("TlsAead");
    let mut opener =
        TlsAead::with_backend(algorithm, &aead_key(algorithm, false), backend).expect("TlsAead");
    let nonce = &IV[..algorithm.nonce_len()];
    for (seq, len) in [0usize, 1, 15, 16, 100, 1000, 1 << 14]
        .into_iter()
        .enumerate()
    {
        let ad = aead_ad(config, seq as u64);
        let pt = records::plaintext(len);
        let mut buf = vec![0u8; sealer.sealed_len(len)];
        buf[..len].copy_from_slice(&pt);
        secret(&mut buf);
        let result = sealer.seal_in_place(nonce, &ad, &mut buf, len);
        let n = declassify(result).map_err(|e| format!("{algorithm}: seal {len}: {e:?}"))?;
        all_secret(|| format!("{algorithm}: sealed output"), &buf[..n])?;
        public(&mut buf);
        let opened = opener.open_in_place(nonce, &ad, &mut buf[..n]);
        ensure(opened.as_deref() == Ok(&pt[..]), || {
            format!("{algorithm}: sealed {len} bytes do not open: {opened:?}")
        })?;
    }
    Ok(())
}

/// HMAC with a secret key (short, block-sized and hashed-long) over secret
/// messages: sign, mac, contexts and verify. Only verify's answer is
/// declassified (by the library).
fn hmac_checks(backend: Backend) -> Check {
    for alg in MacAlgorithm::ALL {
        for key_len in [0usize, 20, 48, 64, 65, 128, 129, 200] {
            let key_bytes = records::plaintext(key_len + 3);
            let key_bytes = &key_bytes[3..];
            let public_key = HmacKey::with_backend(alg, key_bytes, backend).expect("key");
            let k = secret_copy(key_bytes);
            let key = HmacKey::with_backend(alg, &k, backend).expect("key");
            for msg_len in [0usize, 1, 55, 56, 64, 111, 112, 128, 1000] {
                let msg = records::plaintext(msg_len);
                let want = public_key.sign(&msg);
                let mut m = secret_copy(&msg);
                let tag = key.sign(&m);
                if key_len + msg_len > 0 {
                    all_secret(|| format!("{alg:?}: tag"), tag.as_bytes())?;
                }
                let tag = declassify(tag);
                let mut out = [0u8; 64];
                let n = declassify(key.mac(&m, &mut out)).expect("mac");
                public(&mut out);
                let mut ctx = key.context();
                ctx.update(&m[..msg_len / 2]);
                ctx.update(&m[msg_len / 2..]);
                let ctx_tag = declassify(ctx.finish());
                public(&mut m);
                // Compare as public bytes (`Tag`'s `==` is constant-time and
                // would itself be a declassification).
                let ok = tag.as_bytes() == want.as_bytes()
                    && out[..n] == *want.as_bytes()
                    && ctx_tag.as_bytes() == want.as_bytes();
                ensure(ok, || {
                    format!("{alg:?} key {key_len} msg {msg_len}: wrong tag")
                })?;

                // Verify with secret message and tag, right and wrong.
                secret(&mut m);
                let mut good = want.as_bytes().to_vec();
                secret(&mut good);
                let ok = declassify(key.verify(&m, &good));
                let mut bad = want.as_bytes().to_vec();
                bad[0] ^= 1;
                secret(&mut bad);
                let rejected = declassify(key.verify(&m, &bad));
                ensure(ok.is_ok() && rejected == Err(Error::BadMac), || {
                    format!("{alg:?} verify: {ok:?} / {rejected:?}")
                })?;
            }
        }
        // Plain hashing of a secret message.
        let msg = records::plaintext(300);
        let m = secret_copy(&msg);
        let mut out = [0u8; 64];
        let n = declassify(digest_with_backend(alg, &m, &mut out, backend)).expect("digest");
        public(&mut out);
        let mut want = [0u8; 64];
        digest_with_backend(alg, &msg, &mut want, backend).expect("digest");
        ensure(out[..n] == want[..n], || format!("{alg:?}: wrong digest"))?;
    }
    println!("  hmac: sign, mac, context, verify, digest over 4 algorithms");
    Ok(())
}

/// AES-CBC with a secret key over secret data.
fn aes_checks(backend: Backend) -> Check {
    for cipher in Cipher::ALL {
        let key_len = cipher.key_len();
        let k = secret_copy(&ENC_KEY[..key_len]);
        let key = AesCbcKey::with_backend(cipher, &k, backend).expect("key");
        let public_key =
            AesCbcKey::with_backend(cipher, &ENC_KEY[..key_len], backend).expect("key");
        for blocks in [1usize, 2, 7, 8, 9, 64] {
            let data = records::plaintext(16 * blocks);
            let mut buf = data.clone();
            let mut iv = IV;
            secret(&mut buf);
            secret(&mut iv);
            declassify(key.encrypt(&iv, &mut buf)).expect("encrypt");
            all_secret(|| format!("{cipher:?}: ciphertext"), &buf)?;
            let mut ct = buf.clone();
            public(&mut ct);
            let mut want = data.clone();
            public_key.encrypt(&IV, &mut want).expect("encrypt");
            ensure(ct == want, || format!("{cipher:?}: wrong ciphertext"))?;
            declassify(key.decrypt(&iv, &mut buf)).expect("decrypt");
            public(&mut buf);
            ensure(buf == data, || format!("{cipher:?}: wrong decryption"))?;
        }
    }
    println!("  aes-cbc: encrypt, decrypt with secret keys");
    Ok(())
}
