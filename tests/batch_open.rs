//! Multi-record opens (`open_batch`, `Opener::open_many_in_place`) against
//! the single-record open, on every available backend, on random batches
//! from a deterministic generator (seed printed; set `CBC_HMAC_TEST_SEED`
//! to replay): 1 to 64 records, lengths 0 to 16384 with block and
//! hash-block boundaries, mixed keys, combinations, versions and MAC
//! orders, and records damaged in every way a peer or the network can
//! damage them (padding, MAC, first block, length, sequence number). Each
//! record's result must be what `open_in_place` gives, and a rejected
//! record's decrypted region must be zeroed.

mod common;

use cbc_hmac::record::{OpenJob, OpenRecord, open_batch};
use cbc_hmac::{
    Backend, Combination, Error, MacOrder, Opener, ProtocolVersion, RecordConfig, RecordKeys,
    Sealer,
};
use common::rng::Rng;

fn configs() -> Vec<RecordConfig> {
    let mut out = Vec::new();
    for c in Combination::ALL {
        for v in ProtocolVersion::ALL {
            if c.allows(v) {
                for o in MacOrder::ALL {
                    out.push(RecordConfig::new(c, v, o));
                }
            }
        }
    }
    out
}

struct Conn {
    config: RecordConfig,
    enc: Vec<u8>,
    mac: Vec<u8>,
    iv: Option<[u8; 16]>,
}

impl Conn {
    fn random(rng: &mut Rng, config: RecordConfig) -> Self {
        let c = config.combination;
        Conn {
            config,
            enc: rng.bytes(c.cipher().key_len()),
            mac: rng.bytes(c.mac().tls_key_len()),
            iv: (config.version == ProtocolVersion::Tls10).then(|| rng.array()),
        }
    }

    fn keys_with_iv<'a>(&'a self, iv: Option<&'a [u8; 16]>) -> RecordKeys<'a> {
        RecordKeys {
            enc_key: &self.enc,
            mac_key: &self.mac,
            iv: iv.map(|iv| &iv[..]),
        }
    }

    fn sealer(&self) -> Sealer {
        let keys = self.keys_with_iv(self.iv.as_ref());
        Sealer::with_backend(self.config, keys, Backend::Portable).unwrap()
    }

    fn opener(&self, backend: Backend) -> Opener {
        let keys = self.keys_with_iv(self.iv.as_ref());
        Opener::with_backend(self.config, keys, backend).unwrap()
    }

    /// The portable opener of a TLS 1.0 stream positioned at `iv`.
    fn opener_at(&self, iv: Option<[u8; 16]>) -> Opener {
        let iv = iv.or(self.iv);
        let keys = self.keys_with_iv(iv.as_ref());
        Opener::with_backend(self.config, keys, Backend::Portable).unwrap()
    }

    fn mac_len(&self) -> usize {
        self.config.combination.mac().output_len()
    }
}

fn length(rng: &mut Rng) -> usize {
    match rng.below(4) {
        0 => rng.upto(16384),
        1 => rng.upto(300),
        2 => {
            let base = [16usize, 64, 128][rng.below(3)] * rng.upto(128);
            let shifts: [isize; 9] = [-21, -13, -2, -1, 0, 1, 2, 51, 115];
            let len = base as isize + shifts[rng.below(shifts.len())];
            len.clamp(0, 16384) as usize
        }
        _ => 16384 - rng.upto(64),
    }
}

/// A sealed fragment of a random plaintext.
fn seal(rng: &mut Rng, sealer: &mut Sealer, seq: u64, len: usize) -> Vec<u8> {
    let mut buf = vec![0u8; sealer.sealed_len(len)];
    let o = sealer.payload_offset();
    buf[o..o + len].copy_from_slice(&rng.bytes(len));
    let n = sealer.seal_in_place(seq, 23, &mut buf, len).unwrap();
    buf.truncate(n);
    buf
}

/// Damages a fragment, or not; returns the sequence number to open with.
fn damage(rng: &mut Rng, conn: &Conn, buf: &mut Vec<u8>, seq: u64) -> u64 {
    let m = conn.mac_len();
    let cbc_end = match conn.config.mac_order {
        MacOrder::MacThenEncrypt => buf.len(),
        MacOrder::EncryptThenMac => buf.len() - m,
    };
    match rng.below(12) {
        // The last ciphertext block: padding and MAC after decryption.
        0 => buf[cbc_end - 1 - rng.below(16)] ^= 1 << rng.below(8),
        // The block before it.
        1 if cbc_end >= 32 => buf[cbc_end - 17 - rng.below(16)] ^= 1 << rng.below(8),
        // Anywhere.
        2 => {
            let at = rng.below(buf.len());
            buf[at] ^= 1 << rng.below(8);
        }
        // The encrypt-then-MAC tag, or the first byte.
        3 => {
            let last = buf.len() - 1;
            buf[last] ^= 0x80;
        }
        // A public length error.
        4 => match rng.below(3) {
            0 => buf.truncate(buf.len() - 1 - rng.below(15)),
            1 => buf.truncate(rng.below(m + 16)),
            _ => buf.extend_from_slice(&[0u8; 16]),
        },
        5 => return seq ^ 1,
        _ => {}
    }
    seq
}

/// Checks one record's batch outcome against the single open of a copy of
/// what it was given.
fn check(
    what: &str,
    conn: &Conn,
    single: Result<Vec<u8>, Error>,
    got: Option<Result<core::ops::Range<usize>, Error>>,
    after: &[u8],
) {
    let got = got.unwrap_or_else(|| panic!("{what}: no result"));
    match (&single, &got) {
        (Ok(plain), Ok(range)) => assert_eq!(&after[range.clone()], &plain[..], "{what}"),
        (Err(e), Err(f)) => assert_eq!(e, f, "{what}"),
        _ => panic!("{what}: single open {single:?}, batch {got:?}"),
    }
    if got == Err(Error::BadRecordMac) {
        let iv = conn.config.version.explicit_iv_len();
        let end = match conn.config.mac_order {
            MacOrder::MacThenEncrypt => after.len(),
            MacOrder::EncryptThenMac => after.len() - conn.mac_len(),
        };
        assert!(
            after[iv..end].iter().all(|&b| b == 0),
            "{what}: rejected record not wiped"
        );
    }
}

#[test]
fn open_batch_matches_single_record_open() {
    let mut rng = Rng::from_env(
        "open_batch_matches_single_record_open",
        0xba7c_4000_0be4_0001,
    );
    let configs = configs();
    for backend in common::backends() {
        let mut rejected = 0;
        for round in 0..40 {
            let jobs = match round {
                0 => 1,
                1 => 2,
                2 => 3,
                3 => 16,
                4 => 17,
                5 => 64,
                6 => 4,
                7 => 6,
                8 => 8,
                9 => 7,
                _ => 1 + rng.below(40),
            };
            // Few long records of one kind: the lanes hashed two streams at
            // a time, or in the eight-lane kernels, on CPUs where that
            // beats one by one.
            let few_long = matches!(round, 6..=9) || rng.below(8) == 0;
            let kinds = if few_long {
                1
            } else {
                1 + rng.below(if round % 2 == 0 { 2 } else { configs.len() })
            };
            let first = rng.below(configs.len());
            let conns: Vec<Conn> = (0..jobs)
                .map(|_| {
                    let c = configs[(first + rng.below(kinds)) % configs.len()];
                    Conn::random(&mut rng, c)
                })
                .collect();
            let equal = rng.below(3) == 0;
            let shared = length(&mut rng);
            let damaged = rng.below(2) == 0;
            let mut bufs = Vec::new();
            let mut seqs = Vec::new();
            let mut sealers: Vec<Sealer> = conns.iter().map(Conn::sealer).collect();
            for (c, sealer) in conns.iter().zip(&mut sealers) {
                let len = match (few_long, equal) {
                    (true, _) => 4096 + rng.upto(12288),
                    (false, true) => shared,
                    (false, false) => length(&mut rng),
                };
                let seq = rng.next();
                let mut buf = seal(&mut rng, sealer, seq, len);
                let seq = if damaged {
                    damage(&mut rng, c, &mut buf, seq)
                } else {
                    seq
                };
                bufs.push(buf);
                seqs.push(seq);
            }
            let singles: Vec<Result<Vec<u8>, Error>> = conns
                .iter()
                .zip(&bufs)
                .zip(&seqs)
                .map(|((c, b), &seq)| {
                    let mut b = b.clone();
                    c.opener_at(None)
                        .open_in_place(seq, 23, &mut b)
                        .map(|p| p.to_vec())
                })
                .collect();
            let mut openers: Vec<Opener> = conns.iter().map(|c| c.opener(backend)).collect();
            let mut batch: Vec<OpenJob<'_>> = openers
                .iter_mut()
                .zip(&mut bufs)
                .zip(&seqs)
                .map(|((o, b), &seq)| OpenJob::new(o, seq, 23, b))
                .collect();
            open_batch(&mut batch);
            let got: Vec<_> = batch.iter().map(|j| j.result()).collect();
            drop(batch);
            for i in 0..jobs {
                let what = format!(
                    "{backend} round {round}: job {i} of {jobs}, {:?}, {} bytes",
                    conns[i].config,
                    bufs[i].len()
                );
                rejected += usize::from(singles[i].is_err());
                check(
                    &what,
                    &conns[i],
                    singles[i].clone(),
                    got[i].clone(),
                    &bufs[i],
                );
            }
            // TLS 1.0: an opener whose record opened has moved on.
            for (i, ((c, o), sealer)) in
                conns.iter().zip(&mut openers).zip(&mut sealers).enumerate()
            {
                if c.config.version == ProtocolVersion::Tls10 && singles[i].is_ok() {
                    let mut next = seal(&mut rng, sealer, 1, 50);
                    assert!(
                        o.open_in_place(1, 23, &mut next).is_ok(),
                        "{backend} round {round}: chain of {i}"
                    );
                }
            }
        }
        assert!(
            rejected > 20,
            "{backend}: too few damaged records to test anything"
        );
    }
}

#[test]
fn open_many_matches_single_record_open() {
    let mut rng = Rng::from_env(
        "open_many_matches_single_record_open",
        0xba7c_4000_0be4_0002,
    );
    for backend in common::backends() {
        for (k, config) in configs().into_iter().enumerate() {
            for records in [1usize, 2, 3, 5, 8, 16, 17, 33] {
                let conn = Conn::random(&mut rng, config);
                let mut sealer = conn.sealer();
                let equal = (k + records) % 2 == 0;
                let damaged = (k + records) % 3 == 0;
                let shared = length(&mut rng);
                let first_seq = rng.next() >> 1;
                let mut bufs = Vec::new();
                let mut opened_seq = Vec::new();
                for i in 0..records {
                    let len = if equal { shared } else { length(&mut rng) };
                    let seq = first_seq + i as u64;
                    let mut buf = seal(&mut rng, &mut sealer, seq, len);
                    if damaged && rng.below(3) == 0 {
                        damage(&mut rng, &conn, &mut buf, seq);
                    }
                    bufs.push(buf);
                    opened_seq.push(seq);
                }
                // The documented chaining: each TLS 1.0 record's IV is the
                // last ciphertext block of the record before it that had
                // valid public lengths.
                let mut singles = Vec::new();
                let mut chain = None;
                for b in &bufs {
                    let mut copy = b.clone();
                    let i = singles.len();
                    let mut o = conn.opener_at(chain);
                    let r = o
                        .open_in_place(opened_seq[i], 23, &mut copy)
                        .map(|p| p.to_vec());
                    let length_ok = !matches!(
                        r,
                        Err(Error::RecordTooShort { .. }
                            | Error::RecordTooLong { .. }
                            | Error::RecordNotBlockAligned { .. })
                    );
                    if length_ok && config.version == ProtocolVersion::Tls10 {
                        let end = match config.mac_order {
                            MacOrder::MacThenEncrypt => b.len(),
                            MacOrder::EncryptThenMac => b.len() - conn.mac_len(),
                        };
                        chain = Some(b[end - 16..end].try_into().unwrap());
                    }
                    singles.push(r);
                }
                let mut opener = conn.opener(backend);
                let mut slots: Vec<OpenRecord<'_>> =
                    bufs.iter_mut().map(|b| OpenRecord::new(23, b)).collect();
                opener.open_many_in_place(first_seq, &mut slots);
                let got: Vec<_> = slots.iter().map(|r| r.result()).collect();
                drop(slots);
                for i in 0..records {
                    let what = format!("{backend} {config:?}: record {i} of {records}");
                    check(&what, &conn, singles[i].clone(), got[i].clone(), &bufs[i]);
                }
                // All opened: the opener continues the stream.
                if singles.iter().all(Result::is_ok) {
                    let seq = first_seq + records as u64;
                    let mut next = seal(&mut rng, &mut sealer, seq, 100);
                    assert!(
                        opener.open_in_place(seq, 23, &mut next).is_ok(),
                        "{backend} {config:?}: the stream after {records} records"
                    );
                }
            }
        }
    }
}

#[test]
fn sequence_overflow_is_an_error() {
    let mut rng = Rng::from_env("sequence_overflow_is_an_error", 0xba7c_4000_0be4_0003);
    let config = RecordConfig::new(
        Combination::Aes128CbcSha1,
        ProtocolVersion::Tls12,
        MacOrder::MacThenEncrypt,
    );
    let conn = Conn::random(&mut rng, config);
    let mut sealer = conn.sealer();
    let mut bufs: Vec<Vec<u8>> = (0..3)
        .map(|i| seal(&mut rng, &mut sealer, (u64::MAX - 1).wrapping_add(i), 64))
        .collect();
    let mut opener = conn.opener(Backend::detect());
    let mut slots: Vec<OpenRecord<'_>> = bufs.iter_mut().map(|b| OpenRecord::new(23, b)).collect();
    opener.open_many_in_place(u64::MAX - 1, &mut slots);
    assert!(matches!(slots[0].result(), Some(Ok(_))));
    assert!(matches!(slots[1].result(), Some(Ok(_))));
    assert_eq!(slots[2].result(), Some(Err(Error::SequenceOverflow)));
}

/// A peer may pad with up to 255 bytes (RFC 5246 6.2.3.2). Records built
/// by hand from the primitives, with long padding and one of its bytes
/// wrong (the first, one inside, the one before the length byte), each in
/// a window of sixteen (the lane path and its padding comparison) beside
/// well-padded ones: the damaged ones fail with the MAC's error, the others
/// open, on every backend.
#[test]
fn open_batch_checks_every_byte_of_long_padding() {
    use cbc_hmac::{AesCbcKey, HmacKey};
    let mut rng = Rng::from_env(
        "open_batch_checks_every_byte_of_long_padding",
        0xba7c_4000_0be4_0003,
    );
    let configs = configs()
        .into_iter()
        .filter(|c| c.mac_order == MacOrder::MacThenEncrypt && c.version != ProtocolVersion::Tls10);
    let backends = common::backends();
    for config in configs {
        let conn = Conn::random(&mut rng, config);
        let c = config.combination;
        let aes = AesCbcKey::new(c.cipher(), &conn.enc).unwrap();
        let mac = HmacKey::new(c.mac(), &conn.mac).unwrap();
        // Record `i`: sequence number `i`, padding from 200 to 255 bytes;
        // every third one damaged, at a place that turns with `i`.
        let mut records = Vec::new();
        let mut damaged = Vec::new();
        for i in 0..16u64 {
            let data_len = rng.below(600);
            let data = rng.bytes(data_len);
            let mut header = [0u8; 13];
            header[..8].copy_from_slice(&i.to_be_bytes());
            header[8] = 23;
            header[9..11].copy_from_slice(&config.version.wire());
            header[11..].copy_from_slice(&(data_len as u16).to_be_bytes());
            let mut ctx = mac.context();
            ctx.update(&header);
            ctx.update(&data);
            let tag = ctx.finish();
            let unpadded = data_len + tag.len() + 1;
            let pad = (200..=255)
                .filter(|p| (unpadded + p).is_multiple_of(16))
                .nth(rng.below(3))
                .unwrap();
            let mut body = data.clone();
            body.extend_from_slice(tag.as_bytes());
            body.extend(std::iter::repeat_n(pad as u8, pad + 1));
            let bad = i % 3 == 0;
            if bad {
                let first = unpadded - 1;
                let at = match (i / 3) % 3 {
                    0 => first,
                    1 => first + 1 + rng.below(pad - 1),
                    _ => first + pad - 1,
                };
                body[at] ^= 1 << rng.below(8);
            }
            let iv: [u8; 16] = rng.array();
            aes.encrypt(&iv, &mut body).unwrap();
            let mut record = iv.to_vec();
            record.extend(body);
            records.push((record, data));
            damaged.push(bad);
        }
        for &backend in &backends {
            let mut openers: Vec<Opener> = (0..16).map(|_| conn.opener(backend)).collect();
            let mut bufs: Vec<Vec<u8>> = records.iter().map(|(r, _)| r.clone()).collect();
            let mut jobs: Vec<OpenJob<'_>> = openers
                .iter_mut()
                .zip(bufs.iter_mut())
                .enumerate()
                .map(|(i, (o, b))| OpenJob::new(o, i as u64, 23, b))
                .collect();
            open_batch(&mut jobs);
            for (i, job) in jobs.iter().enumerate() {
                let what = format!("{config:?} on {}, record {i}", backend.name());
                if damaged[i] {
                    assert_eq!(job.result(), Some(Err(Error::BadRecordMac)), "{what}");
                } else {
                    assert_eq!(job.plaintext(), Some(&records[i].1[..]), "{what}");
                }
            }
        }
    }
}
