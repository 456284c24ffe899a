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
//! Opening decrypts in place, so each call needs fresh copies of the
//! sealed records. Every side copies them untimed ([`Staged`]) and times
//! its opens alone: a copy is no part of an open, and at 16 KiB it would
//! weigh alike on every side and pull each ratio towards 1.

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
}

/// Work buffers for calls that consume their input: sets of copies of
/// the input records, restored together, untimed, before a timed run of
/// calls that each take the next set.
pub struct Staged {
    sources: Vec<Vec<u8>>,
    sets: Vec<Buffers>,
    next: usize,
}

impl Staged {
    /// Bytes staged at most (and at least one set): they stay in the L1
    /// data cache as a freshly copied record would, and a small call's set
    /// of calls still lasts well over the clock's cost.
    const BUDGET: usize = 32 * 1024;

    /// Sets of `sources`, each record buffer on its own page if
    /// `page_aligned`.
    pub fn new(sources: Vec<Vec<u8>>, page_aligned: bool) -> Self {
        let bytes: usize = sources.iter().map(Vec::len).sum();
        let count = (Self::BUDGET / bytes.max(1)).max(1);
        let sets = (0..count)
            .map(|_| Buffers::copied(&sources, page_aligned))
            .collect();
        Staged {
            sources,
            sets,
            next: count,
        }
    }

    /// Restores every set; returns how many calls they serve.
    pub fn stage(&mut self) -> u64 {
        for set in &mut self.sets {
            for (w, f) in set.iter_mut().zip(&self.sources) {
                w.copy_from_slice(f);
            }
        }
        self.next = 0;
        self.sets.len() as u64
    }

    /// The set of the next call (restaged first if all are used).
    pub fn take(&mut self) -> &mut Buffers {
        if self.next == self.sets.len() {
            self.stage();
        }
        self.next += 1;
        &mut self.sets[self.next - 1]
    }

    /// The set of the last call.
    pub fn last(&self) -> &Buffers {
        &self.sets[self.next.max(1) - 1]
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
    work: Staged,
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
            work: Staged::new(sealed.fragments.clone(), shape.page_aligned),
            sealed,
            ranges: vec![None; shape.records],
        })
    }

    fn open(&mut self) {
        let conns = self.shape.connections;
        let work = self.work.take();
        if !self.batch {
            for (r, buf) in work.iter_mut().enumerate() {
                let base = buf.as_ptr() as usize;
                let opened =
                    self.openers[r % conns].open_in_place(self.sealed.seqs[r], CONTENT_TYPE, buf);
                self.ranges[r] = opened.ok().map(|p| {
                    let start = p.as_ptr() as usize - base;
                    start..start + p.len()
                });
            }
        } else if conns == 1 {
            let n = work.count();
            let records = work.iter_mut().map(|b| OpenRecord::new(CONTENT_TYPE, b));
            let (opener, seq, ranges) =
                (&mut self.openers[0], self.sealed.seqs[0], &mut self.ranges);
            gathered(n, records, |records| {
                opener.open_many_in_place(seq, records);
                for (range, r) in ranges.iter_mut().zip(records.iter()) {
                    *range = r.result().and_then(Result::ok);
                }
            });
        } else {
            let n = work.count();
            let jobs = self
                .openers
                .iter_mut()
                .zip(work.iter_mut())
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

    fn stage(&mut self) -> Option<u64> {
        Some(self.work.stage())
    }

    fn run_all(&mut self) -> Result<(), Failure> {
        self.open();
        Ok(())
    }

    fn check(&mut self) -> Result<(), Failure> {
        self.ranges.iter_mut().for_each(|r| *r = None);
        self.open();
        for (r, buf) in self.work.last().iter().enumerate() {
            opened_to(&self.shape, r, buf, self.ranges[r].clone())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every call gets a set restored since its last use, however the
    /// calls fall against the staging.
    #[test]
    fn every_call_takes_a_fresh_set() {
        let sources = vec![vec![7u8; 1000], vec![9u8; 1000]];
        let mut staged = Staged::new(sources.clone(), false);
        let sets = Staged::BUDGET / 2000;
        assert_eq!(staged.stage(), sets as u64);
        for _ in 0..3 * sets + 1 {
            let set = staged.take();
            assert!(set.iter().eq(sources.iter().map(Vec::as_slice)));
            set.iter_mut().for_each(|b| b.fill(0));
        }
        assert!(staged.last().iter().all(|b| b.iter().all(|&x| x == 0)));
    }

    /// Records over the budget still get one set.
    #[test]
    fn large_records_get_one_set() {
        let mut staged = Staged::new(vec![vec![1u8; 40_000]], true);
        assert_eq!(staged.stage(), 1);
    }
}
