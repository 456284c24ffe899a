//! Multi-record seals (`seal_batch`, `Sealer::seal_many_in_place`) against
//! the single-record seal, byte for byte, on every available backend, on
//! random batches from a deterministic generator (seed printed; set
//! `CBC_HMAC_TEST_SEED` to replay): 1 to 64 jobs, lengths 0 to 16384 with
//! every block and hash-block boundary, unequal lengths in one batch, mixed
//! keys, combinations, versions and MAC orders. Every record also opens
//! with `Opener`.

mod common;

use cbc_hmac::{
    Backend, Combination, Error, MacOrder, Opener, ProtocolVersion, RecordConfig, RecordKeys,
    SealJob, SealRecord, Sealer, seal_batch,
};
use common::rng::Rng;

/// Every valid (combination, version, MAC order).
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

/// One connection's keys.
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

    fn keys(&self) -> RecordKeys<'_> {
        RecordKeys {
            enc_key: &self.enc,
            mac_key: &self.mac,
            iv: self.iv.as_ref().map(|iv| &iv[..]),
        }
    }

    fn sealer(&self, backend: Backend) -> Sealer {
        Sealer::with_backend(self.config, self.keys(), backend).unwrap()
    }

    fn opener(&self) -> Opener {
        Opener::with_backend(self.config, self.keys(), Backend::Portable).unwrap()
    }
}

/// A plaintext length: often at a block or hash-block boundary (of the
/// plaintext, of plaintext + MAC, or of the 13-byte prefix + message).
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

/// Buffers for `len`-byte plaintexts of `sealer`, the plaintext in place.
fn buffer(rng: &mut Rng, sealer: &Sealer, len: usize) -> (Vec<u8>, Vec<u8>) {
    let plain = rng.bytes(len);
    let extra = rng.below(3) * 7;
    let mut buf = rng.bytes(sealer.sealed_len(len) + extra);
    let o = sealer.payload_offset();
    buf[o..o + len].copy_from_slice(&plain);
    (buf, plain)
}

#[test]
fn seal_batch_matches_single_record_seal() {
    let mut rng = Rng::from_env(
        "seal_batch_matches_single_record_seal",
        0xba7c_4000_5ea1_0001,
    );
    let configs = configs();
    for backend in common::backends() {
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
            // a time, or in the eight-lane kernels, or two records in the
            // stitched pair loop, on CPUs where that beats one by one.
            let few_long = matches!(round, 1 | 2 | 6..=9) || rng.below(8) == 0;
            // Few kinds in some batches (full lanes), many in others.
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
            let mut sealers: Vec<Sealer> = conns.iter().map(|c| c.sealer(backend)).collect();
            let mut reference: Vec<Sealer> = conns.iter().map(|c| c.sealer(backend)).collect();
            let equal = rng.below(3) == 0;
            let shared_len = length(&mut rng);
            let shared_long = 2048 + rng.upto(14336);
            let mut bufs = Vec::new();
            let mut plains = Vec::new();
            let mut seqs = Vec::new();
            let mut ivs = Vec::new();
            for s in &sealers {
                let len = match (few_long, equal) {
                    (true, true) => shared_long,
                    (true, false) => 2048 + rng.upto(14336),
                    (false, true) => shared_len,
                    (false, false) => length(&mut rng),
                };
                let (buf, plain) = buffer(&mut rng, s, len);
                bufs.push(buf);
                plains.push(plain);
                seqs.push(rng.next());
                ivs.push(rng.array::<16>());
            }
            let mut expected = bufs.clone();
            let mut want = Vec::new();
            for (i, s) in reference.iter_mut().enumerate() {
                let len = plains[i].len();
                let n = if s.config().version == ProtocolVersion::Tls10 {
                    s.seal_in_place(seqs[i], 23, &mut expected[i], len)
                } else {
                    s.seal_in_place_with_iv(seqs[i], 23, &mut expected[i], len, &ivs[i])
                };
                want.push(n.unwrap());
            }

            let mut batch: Vec<SealJob<'_>> = sealers
                .iter_mut()
                .zip(&mut bufs)
                .enumerate()
                .map(|(i, (s, b))| {
                    let tls10 = s.config().version == ProtocolVersion::Tls10;
                    let job = SealJob::new(s, seqs[i], 23, b, plains[i].len());
                    if tls10 { job } else { job.with_iv(ivs[i]) }
                })
                .collect();
            seal_batch(&mut batch);
            let got: Vec<_> = batch.iter().map(|j| j.result()).collect();
            drop(batch);
            for i in 0..jobs {
                let what = || {
                    format!(
                        "{backend} round {round}: job {i} of {jobs}, {:?}, {} bytes",
                        conns[i].config,
                        plains[i].len()
                    )
                };
                assert_eq!(got[i], Some(Ok(want[i])), "{}", what());
                assert_eq!(bufs[i], expected[i], "{}", what());
                let mut opener = conns[i].opener();
                let opened = opener.open_in_place(seqs[i], 23, &mut bufs[i][..want[i]]);
                assert_eq!(
                    opened.map(|p| p.to_vec()),
                    Ok(plains[i].clone()),
                    "{}",
                    what()
                );
            }
            // TLS 1.0: the next record chains from where the batch left off.
            for (i, (s, r)) in sealers.iter_mut().zip(&mut reference).enumerate() {
                if s.config().version == ProtocolVersion::Tls10 {
                    let (mut a, _) = buffer(&mut rng, s, 40);
                    let mut b = a.clone();
                    let na = s.seal_in_place(1, 23, &mut a, 40).unwrap();
                    let nb = r.seal_in_place(1, 23, &mut b, 40).unwrap();
                    assert_eq!(
                        a[..na],
                        b[..nb],
                        "{backend} round {round}: TLS 1.0 chain of job {i}"
                    );
                }
            }
        }
    }
}

#[test]
fn seal_many_matches_single_record_seal() {
    let mut rng = Rng::from_env(
        "seal_many_matches_single_record_seal",
        0xba7c_4000_5ea1_0002,
    );
    for backend in common::backends() {
        for (k, config) in configs().into_iter().enumerate() {
            for records in [1usize, 2, 3, 4, 8, 16, 17, 33] {
                let conn = Conn::random(&mut rng, config);
                let mut sealer = conn.sealer(backend);
                let mut reference = conn.sealer(backend);
                let equal = (k + records) % 2 == 0;
                let shared = length(&mut rng);
                let first_seq = rng.next() >> 1;
                let mut bufs = Vec::new();
                let mut plains = Vec::new();
                let mut ivs = Vec::new();
                for _ in 0..records {
                    let len = if equal { shared } else { length(&mut rng) };
                    let (b, p) = buffer(&mut rng, &sealer, len);
                    bufs.push(b);
                    plains.push(p);
                    ivs.push(rng.array::<16>());
                }
                let tls10 = config.version == ProtocolVersion::Tls10;
                let mut expected = bufs.clone();
                let mut want = Vec::new();
                for i in 0..records {
                    let seq = first_seq + i as u64;
                    let len = plains[i].len();
                    want.push(if tls10 {
                        reference
                            .seal_in_place(seq, 22, &mut expected[i], len)
                            .unwrap()
                    } else {
                        reference
                            .seal_in_place_with_iv(seq, 22, &mut expected[i], len, &ivs[i])
                            .unwrap()
                    });
                }
                let mut slots: Vec<SealRecord<'_>> = bufs
                    .iter_mut()
                    .zip(&plains)
                    .zip(&ivs)
                    .map(|((b, p), iv)| {
                        let r = SealRecord::new(b, p.len());
                        if tls10 { r } else { r.with_iv(*iv) }
                    })
                    .collect();
                sealer.seal_many_in_place(first_seq, 22, &mut slots);
                let got: Vec<_> = slots.iter().map(|r| r.result()).collect();
                drop(slots);
                let mut opener = conn.opener();
                for i in 0..records {
                    let what = format!("{backend} {config:?}: record {i} of {records}");
                    assert_eq!(got[i], Some(Ok(want[i])), "{what}");
                    assert_eq!(bufs[i], expected[i], "{what}");
                    let seq = first_seq + i as u64;
                    let opened = opener.open_in_place(seq, 22, &mut bufs[i][..want[i]]);
                    assert_eq!(opened.map(|p| p.to_vec()), Ok(plains[i].clone()), "{what}");
                }
            }
        }
    }
}

#[test]
fn page_aligned_batches_match_single_record_seal() {
    // Buffers at one offset in their pages put every lane's lines in the
    // same L1 sets, where the lane kernels change how they walk the data.
    let mut rng = Rng::from_env(
        "page_aligned_batches_match_single_record_seal",
        0xba7c_4000_5ea1_0005,
    );
    const PAGE: usize = 4096;
    for backend in common::backends() {
        for (round, jobs) in [16usize, 9, 12, 16, 24, 16].into_iter().enumerate() {
            let config = RecordConfig::new(
                [Combination::Aes128CbcSha1, Combination::Aes256CbcSha256][round % 2],
                ProtocolVersion::Tls12,
                MacOrder::ALL[round / 2 % 2],
            );
            let conns: Vec<Conn> = (0..jobs).map(|_| Conn::random(&mut rng, config)).collect();
            let mut sealers: Vec<Sealer> = conns.iter().map(|c| c.sealer(backend)).collect();
            let mut reference: Vec<Sealer> = conns.iter().map(|c| c.sealer(backend)).collect();
            // Equal lengths in some rounds; in others, lanes that end at
            // different blocks.
            let shared = [1408usize, 200, 16384][round % 3];
            let lens: Vec<usize> = (0..jobs)
                .map(|_| if round < 3 { shared } else { length(&mut rng) })
                .collect();
            let stride = lens
                .iter()
                .map(|&l| sealers[0].sealed_len(l))
                .max()
                .map(|l| (l + 64).next_multiple_of(PAGE))
                .unwrap();
            let offset = 64 * rng.below(PAGE / 64);
            let mut arena = vec![0u8; (jobs + 2) * stride];
            let skip = (PAGE - arena.as_ptr() as usize % PAGE) % PAGE + offset;
            let mut plains = Vec::new();
            let mut expected = Vec::new();
            let mut want = Vec::new();
            let (seq, iv) = (rng.next(), rng.array::<16>());
            for (i, lane) in arena[skip..].chunks_mut(stride).take(jobs).enumerate() {
                let (buf, plain) = buffer(&mut rng, &sealers[i], lens[i]);
                lane[..buf.len()].copy_from_slice(&buf);
                let mut e = buf;
                want.push(
                    reference[i]
                        .seal_in_place_with_iv(seq, 23, &mut e, lens[i], &iv)
                        .unwrap(),
                );
                expected.push(e);
                plains.push(plain);
            }
            let mut batch: Vec<SealJob<'_>> = sealers
                .iter_mut()
                .zip(arena[skip..].chunks_mut(stride))
                .zip(&expected)
                .enumerate()
                .map(|(i, ((s, lane), e))| {
                    SealJob::new(s, seq, 23, &mut lane[..e.len()], lens[i]).with_iv(iv)
                })
                .collect();
            seal_batch(&mut batch);
            let got: Vec<_> = batch.iter().map(|j| j.result()).collect();
            drop(batch);
            for (i, lane) in arena[skip..].chunks_mut(stride).take(jobs).enumerate() {
                let what = format!("{backend} round {round}: job {i} of {jobs}, {config:?}");
                assert_eq!(got[i], Some(Ok(want[i])), "{what}");
                assert_eq!(lane[..expected[i].len()], expected[i], "{what}");
                let opened = conns[i]
                    .opener()
                    .open_in_place(seq, 23, &mut lane[..want[i]]);
                assert_eq!(opened.map(|p| p.to_vec()), Ok(plains[i].clone()), "{what}");
            }
        }
    }
}

#[test]
fn fresh_ivs_differ_and_open() {
    // Without `with_iv`, every record draws its own explicit IV.
    let mut rng = Rng::from_env("fresh_ivs_differ_and_open", 0xba7c_4000_5ea1_0003);
    let config = RecordConfig::new(
        Combination::Aes128CbcSha1,
        ProtocolVersion::Tls12,
        MacOrder::MacThenEncrypt,
    );
    let conn = Conn::random(&mut rng, config);
    let mut sealer = conn.sealer(Backend::detect());
    let mut bufs: Vec<Vec<u8>> = (0..16)
        .map(|_| vec![0u8; sealer.sealed_len(1000)])
        .collect();
    let mut slots: Vec<SealRecord<'_>> =
        bufs.iter_mut().map(|b| SealRecord::new(b, 1000)).collect();
    sealer.seal_many_in_place(5, 23, &mut slots);
    let lens: Vec<usize> = slots.iter().map(|r| r.result().unwrap().unwrap()).collect();
    drop(slots);
    let ivs: std::collections::HashSet<&[u8]> = bufs.iter().map(|b| &b[..16]).collect();
    assert_eq!(ivs.len(), 16, "explicit IVs repeat");
    let mut opener = conn.opener();
    for (i, (b, n)) in bufs.iter_mut().zip(lens).enumerate() {
        assert_eq!(
            opener.open_in_place(5 + i as u64, 23, &mut b[..n]).unwrap(),
            &[0u8; 1000][..]
        );
    }
}

#[test]
fn bad_jobs_get_their_own_errors() {
    let mut rng = Rng::from_env("bad_jobs_get_their_own_errors", 0xba7c_4000_5ea1_0004);
    let config = RecordConfig::new(
        Combination::Aes256CbcSha256,
        ProtocolVersion::Tls12,
        MacOrder::EncryptThenMac,
    );
    let conns: Vec<Conn> = (0..6).map(|_| Conn::random(&mut rng, config)).collect();
    let mut sealers: Vec<Sealer> = conns.iter().map(|c| c.sealer(Backend::detect())).collect();
    let lens = [100usize, 100, 20000, 100, 100, 100];
    let mut bufs: Vec<Vec<u8>> = lens
        .iter()
        .zip(&sealers)
        .enumerate()
        .map(|(i, (&l, s))| {
            vec![
                7u8;
                if i == 1 {
                    10
                } else {
                    s.sealed_len(l.min(16384))
                }
            ]
        })
        .collect();
    let mut jobs: Vec<SealJob<'_>> = sealers
        .iter_mut()
        .zip(&mut bufs)
        .zip(lens)
        .map(|((s, b), l)| SealJob::new(s, 9, 23, b, l))
        .collect();
    seal_batch(&mut jobs);
    let results: Vec<_> = jobs.iter().map(|j| j.result().unwrap()).collect();
    drop(jobs);
    assert!(matches!(results[1], Err(Error::BufferTooSmall { .. })));
    assert!(matches!(results[2], Err(Error::PlaintextTooLong { .. })));
    for i in [0, 3, 4, 5] {
        let n = results[i].unwrap();
        let mut opener = conns[i].opener();
        assert_eq!(
            opener.open_in_place(9, 23, &mut bufs[i][..n]).unwrap(),
            &[7u8; 100][..]
        );
    }

    // A record past the last sequence number, and an IV for TLS 1.0.
    let mut sealer = conns[0].sealer(Backend::detect());
    let mut a = vec![0u8; sealer.sealed_len(10)];
    let mut b = vec![0u8; sealer.sealed_len(10)];
    let mut slots = [SealRecord::new(&mut a, 10), SealRecord::new(&mut b, 10)];
    sealer.seal_many_in_place(u64::MAX, 23, &mut slots);
    assert!(matches!(slots[0].result(), Some(Ok(_))));
    assert_eq!(slots[1].result(), Some(Err(Error::SequenceOverflow)));
    let tls10 = Conn::random(
        &mut rng,
        RecordConfig::new(
            Combination::Aes128CbcSha1,
            ProtocolVersion::Tls10,
            MacOrder::MacThenEncrypt,
        ),
    );
    let mut sealer = tls10.sealer(Backend::detect());
    let mut c = vec![0u8; sealer.sealed_len(10)];
    let mut jobs = [SealJob::new(&mut sealer, 1, 23, &mut c, 10).with_iv([0; 16])];
    seal_batch(&mut jobs);
    assert!(matches!(
        jobs[0].result(),
        Some(Err(Error::IvMismatch { .. }))
    ));

    // A batch of one bad job (the single-seal path) gets the same errors.
    let mut sealer = conns[0].sealer(Backend::detect());
    let mut small = vec![0u8; 10];
    let mut jobs = [SealJob::new(&mut sealer, 1, 23, &mut small, 100)];
    seal_batch(&mut jobs);
    assert!(matches!(
        jobs[0].result(),
        Some(Err(Error::BufferTooSmall { .. }))
    ));
    let mut big = vec![0u8; 20000 + 64];
    let mut slots = [SealRecord::new(&mut big, 20000)];
    sealer.seal_many_in_place(1, 23, &mut slots);
    assert!(matches!(
        slots[0].result(),
        Some(Err(Error::PlaintextTooLong { .. }))
    ));
}
