//! The references of the multi-record section: OpenSSL's multi-block seal
//! (`--compare openssl`, the `openssl` feature) and intel-ipsec-mb's job
//! manager (`--compare ipsec-mb`, the `ipsec-mb` feature). Without their
//! feature, asking for one is an error that says how to build it.

use crate::args::CompareWith;
use crate::multi::{Shape, Side};
use crate::workload::Failure;

/// The `--compare` reference's side for `shape`.
pub fn side(reference: CompareWith, shape: Shape) -> Result<Box<dyn Side>, Failure> {
    match reference {
        CompareWith::Openssl => openssl_side(shape),
        CompareWith::IpsecMb => ipsec_mb_side(shape),
    }
}

#[cfg(feature = "openssl")]
fn openssl_side(shape: Shape) -> Result<Box<dyn Side>, Failure> {
    if shape.open {
        return Ok(Box::new(with_openssl::OneByOneOpen::new(shape)?));
    }
    Ok(Box::new(with_openssl::MultiBlock::new(shape)?))
}

#[cfg(not(feature = "openssl"))]
fn openssl_side(_: Shape) -> Result<Box<dyn Side>, Failure> {
    Err(Failure::OpenSsl(crate::reference::HOW_TO_ENABLE.into()))
}

#[cfg(feature = "ipsec-mb")]
fn ipsec_mb_side(shape: Shape) -> Result<Box<dyn Side>, Failure> {
    if shape.open {
        return Ok(Box::new(with_ipsec_mb::DecryptJobs::new(shape)?));
    }
    Ok(Box::new(with_ipsec_mb::Jobs::new(shape)?))
}

#[cfg(not(feature = "ipsec-mb"))]
fn ipsec_mb_side(_: Shape) -> Result<Box<dyn Side>, Failure> {
    Err(Failure::Check(
        "--compare ipsec-mb needs the `ipsec-mb` feature of cbc-hmac-bench, which links \
         Debian's libipsec-mb-dev: cargo run --release -p cbc-hmac-bench --features ipsec-mb \
         -- --records 16 --compare ipsec-mb"
            .into(),
    ))
}

#[cfg(feature = "openssl")]
mod with_openssl {
    use cbc_hmac::MacAlgorithm;
    use openssl_ref::{Digest, MultiBlockSealer, split_records};

    use crate::multi::{Shape, Side, keys, opens_to, plaintext};
    use crate::workload::Failure;

    fn failure(e: openssl_ref::Error) -> Failure {
        Failure::OpenSsl(e.to_string())
    }

    /// OpenSSL's stitched cipher sealing one connection's records 8 (or 4)
    /// per call with `EVP_CTRL_TLS1_1_MULTIBLOCK_ENCRYPT`.
    pub struct MultiBlock {
        shape: Shape,
        sealer: MultiBlockSealer,
        interleave: usize,
        write: Vec<u8>,
        out: Vec<u8>,
        seq: u64,
    }

    impl MultiBlock {
        pub fn new(shape: Shape) -> Result<Self, Failure> {
            let unsupported = |why: &str| Err(Failure::OpenSsl(format!("multi-block: {why}")));
            if shape.connections != 1 {
                return unsupported("one connection per call only (use --connections 1)");
            }
            let interleave = if shape.records.is_multiple_of(8) {
                8
            } else if shape.records.is_multiple_of(4) {
                4
            } else {
                return unsupported("4 or 8 records per call: --records must be a multiple of 4");
            };
            let digest = match shape.combination.mac() {
                MacAlgorithm::HmacSha1 => Digest::Sha1,
                MacAlgorithm::HmacSha256 => Digest::Sha256,
                MacAlgorithm::HmacSha384 => {
                    return unsupported("OpenSSL has no stitched AES-CBC-HMAC-SHA384");
                }
                MacAlgorithm::HmacSha512 => {
                    return unsupported("no TLS combination uses HMAC-SHA512");
                }
            };
            let len = interleave * shape.payload;
            let (frag, last) = MultiBlockSealer::record_lens(len, interleave).map_err(failure)?;
            if frag != shape.payload || last != shape.payload {
                return unsupported(&format!(
                    "OpenSSL cuts a {len}-byte write into records of {frag} and {last} bytes, \
                     not {} (writes of 4 KiB to 128 KiB)",
                    shape.payload
                ));
            }
            let (enc, mac) = keys(shape.combination, 0);
            let sealer = MultiBlockSealer::new(digest, &enc, &mac).map_err(failure)?;
            let out = vec![0u8; sealer.sealed_len(len, interleave).map_err(failure)?];
            let mut m = MultiBlock {
                shape,
                sealer,
                interleave,
                write: vec![0u8; len],
                out,
                seq: 0,
            };
            m.fill(0);
            Ok(m)
        }

        /// The plaintext of the call starting at record `first`.
        fn fill(&mut self, first: usize) {
            for (i, chunk) in self.write.chunks_mut(self.shape.payload).enumerate() {
                chunk.copy_from_slice(&plaintext(&self.shape, first + i));
            }
        }
    }

    impl Side for MultiBlock {
        fn name(&self) -> &'static str {
            "OpenSSL multi-block"
        }

        fn key(&self) -> &'static str {
            "openssl_"
        }

        fn run_all(&mut self) -> Result<(), Failure> {
            for _ in 0..self.shape.records / self.interleave {
                let seq = self.seq;
                self.seq += self.interleave as u64;
                let write = &self.write;
                let out = &mut self.out;
                self.sealer
                    .seal(seq, [3, 3], write, self.interleave, out)
                    .map_err(failure)?;
            }
            Ok(())
        }

        fn check(&mut self) -> Result<(), Failure> {
            let shape = self.shape;
            for call in 0..shape.records / self.interleave {
                let first = call * self.interleave;
                self.fill(first);
                let seq = self.seq;
                self.seq += self.interleave as u64;
                let n = self
                    .sealer
                    .seal(seq, [3, 3], &self.write, self.interleave, &mut self.out)
                    .map_err(failure)?;
                let records = split_records(&self.out[..n])
                    .ok_or_else(|| Failure::Check("OpenSSL's output is not TLS records".into()))?;
                if records.len() != self.interleave {
                    return Err(Failure::Check(format!(
                        "OpenSSL wrote {} records, not {}",
                        records.len(),
                        self.interleave
                    )));
                }
                for (i, (_, fragment)) in records.into_iter().enumerate() {
                    let mut fragment = fragment.to_vec();
                    opens_to(&shape, first + i, seq + i as u64, &mut fragment)?;
                }
            }
            Ok(())
        }
    }

    /// OpenSSL opening the records one at a time (it has no multi-record
    /// open): the stitched cipher's TLS record mode for SHA-1/SHA-256, EVP
    /// AES-CBC + HMAC for SHA-384 (see `reference::Records`).
    pub struct OneByOneOpen {
        shape: Shape,
        records: Vec<crate::reference::Records>,
        sealed: crate::multi_open::Sealed,
        work: crate::multi_open::Staged,
        ranges: Vec<Option<core::ops::Range<usize>>>,
    }

    impl OneByOneOpen {
        pub fn new(shape: Shape) -> Result<Self, Failure> {
            let mut records = Vec::new();
            for conn in 0..shape.connections {
                let (enc, mac) = keys(shape.combination, conn);
                records.push(crate::reference::Records::new(
                    shape.combination,
                    &enc,
                    &mac,
                )?);
            }
            let sealed = crate::multi_open::Sealed::new(&shape)?;
            Ok(OneByOneOpen {
                shape,
                records,
                work: crate::multi_open::Staged::new(sealed.fragments.clone(), shape.page_aligned),
                sealed,
                ranges: vec![None; shape.records],
            })
        }

        fn open(&mut self) -> Result<(), Failure> {
            use crate::workload::RecordImpl;
            let conns = self.shape.connections;
            for (r, buf) in self.work.take().iter_mut().enumerate() {
                let opened = self.records[r % conns].open_in_place(self.sealed.seqs[r], buf)?;
                self.ranges[r] = opened.map(|(start, len)| start..start + len);
            }
            Ok(())
        }
    }

    impl Side for OneByOneOpen {
        fn name(&self) -> &'static str {
            "OpenSSL one by one"
        }

        fn key(&self) -> &'static str {
            "openssl_"
        }

        fn stage(&mut self) -> Option<u64> {
            Some(self.work.stage())
        }

        fn run_all(&mut self) -> Result<(), Failure> {
            self.open()
        }

        fn check(&mut self) -> Result<(), Failure> {
            self.ranges.iter_mut().for_each(|r| *r = None);
            self.open()?;
            for (r, buf) in self.work.last().iter().enumerate() {
                crate::multi_open::opened_to(&self.shape, r, buf, self.ranges[r].clone())?;
            }
            Ok(())
        }
    }
}

#[cfg(feature = "ipsec-mb")]
mod with_ipsec_mb {
    use cbc_hmac::MacAlgorithm;
    use ipsec_mb_ref::{AesKey, CbcHmacJob, Hash, HmacKey, Manager, Order};

    use crate::multi::{Shape, Side, gathered, keys, opens_to, plaintext};
    use crate::workload::{CONTENT_TYPE, Failure};

    fn failure(e: ipsec_mb_ref::Error) -> Failure {
        Failure::Check(format!("intel-ipsec-mb: {e}"))
    }

    /// A manager and every connection's keys, expanded once.
    fn keyed(shape: &Shape) -> Result<(Manager, Vec<AesKey>, Vec<HmacKey>), Failure> {
        let mut manager = Manager::new().map_err(failure)?;
        let hash = match shape.combination.mac() {
            MacAlgorithm::HmacSha1 => Hash::Sha1,
            MacAlgorithm::HmacSha256 => Hash::Sha256,
            MacAlgorithm::HmacSha384 => Hash::Sha384,
            // No TLS combination has it.
            MacAlgorithm::HmacSha512 => {
                return Err(Failure::Check("no TLS combination uses HMAC-SHA512".into()));
            }
        };
        let mut aes = Vec::new();
        let mut hmac = Vec::new();
        for conn in 0..shape.connections {
            let (enc, mac) = keys(shape.combination, conn);
            aes.push(AesKey::new(&mut manager, &enc).map_err(failure)?);
            hmac.push(HmacKey::new(&mut manager, hash, &mac).map_err(failure)?);
        }
        Ok((manager, aes, hmac))
    }

    /// The 13-byte TLS MAC header, which intel-ipsec-mb hashes as data.
    fn header(seq: u64, len: usize) -> [u8; 13] {
        let mut h = [0u8; 13];
        h[..8].copy_from_slice(&seq.to_be_bytes());
        h[8] = CONTENT_TYPE;
        h[9..11].copy_from_slice(&[3, 3]);
        h[11..].copy_from_slice(&(len as u16).to_be_bytes());
        h
    }

    /// The same records as hash-then-cipher jobs: each buffer is
    /// `header || plaintext || tag || padding`, laid out once; a job
    /// hashes `header || plaintext`, writes the tag after it and encrypts
    /// from the plaintext on. No IV generation, no padding, no header
    /// building in the timed work.
    pub struct Jobs {
        shape: Shape,
        manager: Manager,
        aes: Vec<AesKey>,
        hmac: Vec<HmacKey>,
        bufs: crate::multi::Buffers,
        tag_len: usize,
    }

    impl Jobs {
        pub fn new(shape: Shape) -> Result<Self, Failure> {
            let (manager, aes, hmac) = keyed(&shape)?;
            let tag_len = shape.combination.mac().output_len();
            let body = (shape.payload + tag_len + 1).next_multiple_of(16);
            let mut jobs = Jobs {
                shape,
                manager,
                aes,
                hmac,
                bufs: crate::multi::Buffers::new(shape.records, 13 + body, shape.page_aligned),
                tag_len,
            };
            jobs.fill(0);
            Ok(jobs)
        }

        /// Headers for records from sequence value `seq`, plaintexts and
        /// TLS padding.
        fn fill(&mut self, seq: u64) {
            let p = self.shape.payload;
            let k = self.shape.connections;
            for (r, buf) in self.bufs.iter_mut().enumerate() {
                buf[..13].copy_from_slice(&header(seq + (r / k) as u64, p));
                buf[13..13 + p].copy_from_slice(&plaintext(&self.shape, r));
                let pad_start = 13 + p + self.tag_len;
                let pad = (buf.len() - pad_start - 1) as u8;
                buf[pad_start..].fill(pad);
            }
        }

        fn iv(r: usize) -> [u8; 16] {
            [r as u8 ^ 0xa5; 16]
        }

        fn run(&mut self) -> Result<(), Failure> {
            let p = self.shape.payload;
            let k = self.shape.connections;
            let (aes, hmac, manager) = (&self.aes, &self.hmac, &mut self.manager);
            let jobs = self.bufs.iter_mut().enumerate().map(|(r, buf)| {
                let total = buf.len();
                CbcHmacJob::new(
                    &aes[r % k],
                    &hmac[r % k],
                    Self::iv(r),
                    buf,
                    13..total,
                    0..13 + p,
                    Order::HashThenCipher,
                )
                .with_tag_at(13 + p)
            });
            gathered(self.shape.records, jobs, |jobs| {
                manager.cbc_hmac_batch(jobs).map_err(failure)?;
                jobs.iter().try_for_each(|job| job.result.map_err(failure))
            })
        }
    }

    impl Side for Jobs {
        fn name(&self) -> &'static str {
            "intel-ipsec-mb"
        }

        fn key(&self) -> &'static str {
            "ipsec_mb_"
        }

        fn run_all(&mut self) -> Result<(), Failure> {
            self.run()
        }

        /// Every job's output, with its IV in front, is a TLS 1.2 record
        /// that our opener opens.
        fn check(&mut self) -> Result<(), Failure> {
            let seq = 77;
            self.fill(seq);
            self.run()?;
            let shape = self.shape;
            for (r, buf) in self.bufs.iter().enumerate() {
                let mut fragment = Self::iv(r).to_vec();
                fragment.extend_from_slice(&buf[13..]);
                opens_to(
                    &shape,
                    r,
                    seq + (r / shape.connections) as u64,
                    &mut fragment,
                )?;
            }
            Ok(())
        }
    }

    /// The records of an open as intel-ipsec-mb decrypt jobs: each work
    /// buffer is `header || ciphertext` (the explicit IV taken out as the
    /// job's IV); a job CBC-decrypts and then hashes `header || plaintext`
    /// over the plaintext length it is told. It checks no padding,
    /// compares no MAC and does nothing in constant time: a lower bound on
    /// the work, not a TLS open.
    pub struct DecryptJobs {
        shape: Shape,
        manager: Manager,
        aes: Vec<AesKey>,
        hmac: Vec<HmacKey>,
        sealed: crate::multi_open::Sealed,
        work: crate::multi_open::Staged,
        tags: Vec<Vec<u8>>,
    }

    impl DecryptJobs {
        pub fn new(shape: Shape) -> Result<Self, Failure> {
            let (manager, aes, hmac) = keyed(&shape)?;
            let sealed = crate::multi_open::Sealed::new(&shape)?;
            let pristine: Vec<Vec<u8>> = sealed
                .fragments
                .iter()
                .zip(&sealed.seqs)
                .map(|(f, &seq)| {
                    let mut b = header(seq, shape.payload).to_vec();
                    b.extend_from_slice(&f[16..]);
                    b
                })
                .collect();
            Ok(DecryptJobs {
                shape,
                manager,
                aes,
                hmac,
                work: crate::multi_open::Staged::new(pristine, shape.page_aligned),
                sealed,
                tags: vec![Vec::new(); shape.records],
            })
        }

        fn run(&mut self) -> Result<(), Failure> {
            let p = self.shape.payload;
            let k = self.shape.connections;
            let fragments = &self.sealed.fragments;
            let (aes, hmac, manager, tags) =
                (&self.aes, &self.hmac, &mut self.manager, &mut self.tags);
            let jobs = self.work.take().iter_mut().enumerate().map(|(r, buf)| {
                let total = buf.len();
                let iv: [u8; 16] = fragments[r][..16].try_into().expect("explicit IV");
                CbcHmacJob::new_decrypt(
                    &aes[r % k],
                    &hmac[r % k],
                    iv,
                    buf,
                    13..total,
                    0..13 + p,
                    Order::CipherThenHash,
                )
            });
            gathered(self.shape.records, jobs, |jobs| {
                manager.cbc_hmac_batch(jobs).map_err(failure)?;
                for (job, tag) in jobs.iter().zip(tags.iter_mut()) {
                    job.result.map_err(failure)?;
                    tag.clear();
                    tag.extend_from_slice(job.tag());
                }
                Ok(())
            })
        }
    }

    impl Side for DecryptJobs {
        fn name(&self) -> &'static str {
            "intel-ipsec-mb decrypt+HMAC (no padding check, not constant-time)"
        }

        fn key(&self) -> &'static str {
            "ipsec_mb_"
        }

        fn stage(&mut self) -> Option<u64> {
            Some(self.work.stage())
        }

        fn run_all(&mut self) -> Result<(), Failure> {
            self.run()
        }

        /// Every job's plaintext is the record's, and its tag the record's
        /// MAC.
        fn check(&mut self) -> Result<(), Failure> {
            self.run()?;
            let p = self.shape.payload;
            for (r, (buf, tag)) in self.work.last().iter().zip(&self.tags).enumerate() {
                if buf[13..13 + p] != plaintext(&self.shape, r)[..] {
                    return Err(Failure::Check(format!(
                        "intel-ipsec-mb decrypted record {r} wrongly"
                    )));
                }
                if buf[13 + p..13 + p + tag.len()] != tag[..] {
                    return Err(Failure::Check(format!(
                        "intel-ipsec-mb's tag of record {r} is not its MAC"
                    )));
                }
            }
            Ok(())
        }
    }
}
