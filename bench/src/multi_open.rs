//! The multi-record open section (`--records N --open`): N sealed records
//! of `payload` bytes opened per call, from one connection
//! (`Opener::open_many_in_place`) or from N connections with distinct keys
//! (`open_batch`), TLS 1.2 MAC-then-encrypt, against the same records
//! opened one by one (`open_in_place`) and, with `--compare openssl`, by
//! OpenSSL one at a time (it has no multi-record open), or, with
//! `--compare ipsec-mb`, by intel-ipsec-mb's CBC-decrypt + HMAC jobs, which
//! check no padding and nothing in constant time (a bound on the work, not
//! a TLS open).
//!
//! Opening decrypts in place, so every timed call first copies the sealed
//! records into the work buffers; every side does the same copy, so the
//! ratios compare the opens plus one `memcpy` of the records each.

use cbc_hmac::record::{OpenJob, OpenRecord, open_batch};

use crate::multi::gathered;
use cbc_hmac::{Backend, Opener, RecordKeys, Sealer};

use crate::multi::{Buffers, Shape, Side, config, keys, plaintext};
use crate::workload::{CONTENT_TYPE, Failure};

/// The records of a shape, sealed once: fragment and sequence value of
/// each (record `r` is from connection `r % connections`).
pub struct Sealed {
    pub fragments: Vec<Vec<u8>>,
    pub seqs: Vec<u64>,
}

impl Sealed {
    pub fn new(shape: &Shape) -> Result<Self, Failure> {
        let mut sealers = Vec::new();
        for conn in 0..shape.connections {
            let (enc, mac) = keys(shape.combination, conn);
            let keys = RecordKeys {
                enc_key: &enc,
                mac_key: &mac,
                iv: None,
            };
            sealers.push(Sealer::with_backend(
                config(shape.combination),
                keys,
                Backend::Portable,
            )?);
        }
        let mut fragments = Vec::new();
        let mut seqs = Vec::new();
        for r in 0..shape.records {
            let sealer = &mut sealers[r % shape.connections];
            let seq = 1000 + (r / shape.connections) as u64;
            let mut buf = vec![0u8; sealer.sealed_len(shape.payload)];
            let o = sealer.payload_offset();
            buf[o..o + shape.payload].copy_from_slice(&plaintext(shape, r));
            let n = sealer.seal_in_place(seq, CONTENT_TYPE, &mut buf, shape.payload)?;
            buf.truncate(n);
            fragments.push(buf);
            seqs.push(seq);
        }
        Ok(Sealed { fragments, seqs })
    }

    /// Copies the sealed records into `work` (the first step of every
    /// timed call).
    pub fn restore(&self, work: &mut Buffers) {
        for (w, f) in work.iter_mut().zip(&self.fragments) {
            w.copy_from_slice(f);
        }
    }
}

/// Checks that record `r` opened to its plaintext at `range` of `buf`.
pub fn opened_to(
    shape: &Shape,
    r: usize,
    buf: &[u8],
    range: Option<core::ops::Range<usize>>,
) -> Result<(), Failure> {
    match range {
        Some(range) if buf[range.clone()] == plaintext(shape, r)[..] => Ok(()),
        Some(_) => Err(Failure::Check(format!(
            "record {r} opened to the wrong plaintext"
        ))),
        None => Err(Failure::Check(format!("record {r} was rejected"))),
    }
}

/// cbc-hmac: the multi-record open (`batch`) or the single-record open
/// (`one by one`).
pub struct OursOpen {
    shape: Shape,
    batch: bool,
    openers: Vec<Opener>,
    sealed: Sealed,
    work: Buffers,
    ranges: Vec<Option<core::ops::Range<usize>>>,
}

impl OursOpen {
    pub fn new(shape: Shape, backend: Backend, batch: bool) -> Result<Self, Failure> {
        let sealed = Sealed::new(&shape)?;
        let mut openers = Vec::new();
        for conn in 0..shape.connections {
            let (enc, mac) = keys(shape.combination, conn);
            let keys = RecordKeys {
                enc_key: &enc,
                mac_key: &mac,
                iv: None,
            };
            openers.push(Opener::with_backend(
                config(shape.combination),
                keys,
                backend,
            )?);
        }
        Ok(OursOpen {
            shape,
            batch,
            openers,
            work: Buffers::copied(&sealed.fragments, shape.page_aligned),
            sealed,
            ranges: vec![None; shape.records],
        })
    }

    fn open(&mut self) {
        self.sealed.restore(&mut self.work);
        let conns = self.shape.connections;
        if !self.batch {
            for (r, buf) in self.work.iter_mut().enumerate() {
                let base = buf.as_ptr() as usize;
                let opened =
                    self.openers[r % conns].open_in_place(self.sealed.seqs[r], CONTENT_TYPE, buf);
                self.ranges[r] = opened.ok().map(|p| {
                    let start = p.as_ptr() as usize - base;
                    start..start + p.len()
                });
            }
        } else if conns == 1 {
            let n = self.work.count();
            let records = self
                .work
                .iter_mut()
                .map(|b| OpenRecord::new(CONTENT_TYPE, b));
            let (opener, seq, ranges) =
                (&mut self.openers[0], self.sealed.seqs[0], &mut self.ranges);
            gathered(n, records, |records| {
                opener.open_many_in_place(seq, records);
                for (range, r) in ranges.iter_mut().zip(records.iter()) {
                    *range = r.result().and_then(Result::ok);
                }
            });
        } else {
            let n = self.work.count();
            let jobs = self
                .openers
                .iter_mut()
                .zip(self.work.iter_mut())
                .zip(&self.sealed.seqs)
                .map(|((o, b), &seq)| OpenJob::new(o, seq, CONTENT_TYPE, b));
            let ranges = &mut self.ranges;
            gathered(n, jobs, |jobs| {
                open_batch(jobs);
                for (range, j) in ranges.iter_mut().zip(jobs.iter()) {
                    *range = j.result().and_then(Result::ok);
                }
            });
        }
    }
}

impl Side for OursOpen {
    fn name(&self) -> &'static str {
        if self.batch { "batch" } else { "one by one" }
    }

    fn key(&self) -> &'static str {
        if self.batch { "" } else { "single_" }
    }

    fn run_all(&mut self) -> Result<(), Failure> {
        self.open();
        Ok(())
    }

    fn check(&mut self) -> Result<(), Failure> {
        self.ranges.iter_mut().for_each(|r| *r = None);
        self.open();
        for (r, buf) in self.work.iter().enumerate() {
            opened_to(&self.shape, r, buf, self.ranges[r].clone())?;
        }
        Ok(())
    }
}
