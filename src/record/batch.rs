//! Sealing many records at once: several records of one connection
//! ([`Sealer::seal_many_in_place`]), or records of many connections in one
//! call ([`seal_batch`]).
//!
//! Records with explicit IVs (TLS 1.1+, DTLS) are independent, so they run
//! side by side in parallel lanes where the backend has lane kernels
//! (`vaes512-shani`: sixteen VAES CBC lanes, sixteen AVX-512 SHA-1/SHA-256
//! lanes, eight SHA-512 lanes for SHA-384; `aesni-shani`, on the CPUs where
//! it pays: eight AES-NI CBC lanes, SHA-1/SHA-256 two streams at a time on
//! SHA-NI). The records of one TLS 1.0
//! connection chain their IVs, each record's IV being the previous one's
//! last ciphertext block, so [`Sealer::seal_many_in_place`] seals them one
//! after another; in [`seal_batch`] each job has its own sealer, so TLS 1.0
//! connections share lanes too.
//!
//! Every record comes out byte for byte as [`Sealer::seal_in_place`] (or
//! [`Sealer::seal_in_place_with_iv`]) would seal it. Each record has its
//! own result; a record with bad lengths gets its typed error and does not
//! affect the others. Nothing allocates: the caller owns the job slice and
//! the buffers, lane state lives on the stack. A batch of one record runs
//! the single-record seal directly, so it costs what that does; so does a
//! window of records too few or too short for this CPU's lanes (on most
//! CPUs, any window of two), without building the lanes.

use super::{RecordConfig, Sealer};
use crate::backends::batch::{self, FEWEST_LANES, FEWEST_SEAL_LANES, WINDOW, Window};
use crate::error::Error;

/// One record of a [`Sealer::seal_many_in_place`] call: its buffer (laid
/// out as for [`Sealer::seal_in_place`]) and plaintext length.
#[derive(Debug)]
pub struct SealRecord<'a> {
    buf: &'a mut [u8],
    plaintext_len: usize,
    iv: Option<[u8; 16]>,
    result: Option<Result<usize, Error>>,
}

impl<'a> SealRecord<'a> {
    /// A record whose plaintext sits at `buf[sealer.payload_offset()..]`
    /// `[..plaintext_len]`, with room after it for MAC and padding
    /// ([`Sealer::sealed_len`] bytes in all).
    pub fn new(buf: &'a mut [u8], plaintext_len: usize) -> Self {
        SealRecord {
            buf,
            plaintext_len,
            iv: None,
            result: None,
        }
    }

    /// Seals with this explicit IV instead of a fresh one, as
    /// [`Sealer::seal_in_place_with_iv`] does: for known-answer tests only.
    pub fn with_iv(mut self, iv: [u8; 16]) -> Self {
        self.iv = Some(iv);
        self
    }

    /// The outcome: `None` before the record was sealed, then the
    /// fragment length or the error.
    pub fn result(&self) -> Option<Result<usize, Error>> {
        self.result
    }

    /// The sealed fragment, if sealing succeeded.
    pub fn fragment(&self) -> Option<&[u8]> {
        match self.result {
            Some(Ok(n)) => Some(&self.buf[..n]),
            _ => None,
        }
    }
}

/// One record of a [`seal_batch`] call: the sealer of its connection, its
/// sequence number and content type, and its buffer.
pub struct SealJob<'a> {
    sealer: &'a mut Sealer,
    seq: u64,
    content_type: u8,
    record: SealRecord<'a>,
}

impl<'a> SealJob<'a> {
    /// A job sealing the plaintext at
    /// `buf[sealer.payload_offset()..][..plaintext_len]` in place, as
    /// [`Sealer::seal_in_place`] does.
    pub fn new(
        sealer: &'a mut Sealer,
        seq: u64,
        content_type: u8,
        buf: &'a mut [u8],
        plaintext_len: usize,
    ) -> Self {
        SealJob {
            sealer,
            seq,
            content_type,
            record: SealRecord::new(buf, plaintext_len),
        }
    }

    /// Seals with this explicit IV instead of a fresh one: for known-answer
    /// tests only.
    pub fn with_iv(mut self, iv: [u8; 16]) -> Self {
        self.record.iv = Some(iv);
        self
    }

    /// The outcome: `None` before [`seal_batch`] ran, then the fragment
    /// length or the error.
    pub fn result(&self) -> Option<Result<usize, Error>> {
        self.record.result
    }

    /// The sealed fragment, if sealing succeeded.
    pub fn fragment(&self) -> Option<&[u8]> {
        self.record.fragment()
    }
}

impl core::fmt::Debug for SealJob<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SealJob")
            .field("sealer", &self.sealer)
            .field("seq", &self.seq)
            .field("content_type", &self.content_type)
            .field("result", &self.record.result)
            .finish_non_exhaustive()
    }
}

/// Seals a batch of records of many connections, each job with its own
/// sealer (keys, combination, version, MAC order), sequence number,
/// content type and buffer, and sets each job's result.
///
/// Jobs may mix combinations, versions, MAC orders and lengths: jobs of one
/// combination and MAC order share lanes, up to sixteen at a time. Each
/// job's record is what [`Sealer::seal_in_place`] would produce; a job
/// with bad lengths gets its error and the others are sealed.
///
/// ```
/// use cbc_hmac::record::{SealJob, seal_batch};
/// use cbc_hmac::{Combination, MacOrder, Opener, ProtocolVersion, RecordConfig, RecordKeys, Sealer};
///
/// let config = RecordConfig::new(Combination::Aes128CbcSha1, ProtocolVersion::Tls12, MacOrder::MacThenEncrypt);
/// let keys: Vec<([u8; 16], [u8; 20])> = (0..4u8).map(|i| ([i; 16], [i ^ 0x55; 20])).collect();
/// let mut sealers: Vec<Sealer> = keys.iter()
///     .map(|(e, m)| Sealer::new(config, RecordKeys { enc_key: e, mac_key: m, iv: None }))
///     .collect::<Result<_, _>>()?;
///
/// let message = b"one record per connection";
/// let mut bufs = vec![[0u8; 128]; 4];
/// for buf in &mut bufs {
///     buf[16..16 + message.len()].copy_from_slice(message);
/// }
/// let mut jobs: Vec<SealJob> = sealers.iter_mut().zip(&mut bufs)
///     .map(|(s, b)| SealJob::new(s, 7, 23, b, message.len()))
///     .collect();
/// seal_batch(&mut jobs);
/// let lens: Vec<usize> = jobs.iter().map(|j| j.result().unwrap()).collect::<Result<_, _>>()?;
/// drop(jobs);
///
/// for (((e, m), buf), n) in keys.iter().zip(&mut bufs).zip(lens) {
///     let mut opener = Opener::new(config, RecordKeys { enc_key: e, mac_key: m, iv: None })?;
///     assert_eq!(opener.open_in_place(7, 23, &mut buf[..n])?, message);
/// }
/// # Ok::<(), cbc_hmac::Error>(())
/// ```
pub fn seal_batch(jobs: &mut [SealJob<'_>]) {
    // Too few jobs to share lanes, or one window of them that the first
    // one's lanes would not take (public counts and lengths; two jobs, or
    // jobs of one kind): single seals, without grouping or the window.
    if jobs.len() < FEWEST_SEAL_LANES
        || (jobs.len() <= WINDOW
            && (jobs.len() < FEWEST_LANES || one_kind(jobs))
            && !may_pay(jobs[0].sealer, jobs.iter().map(|j| &j.record)))
    {
        for job in jobs {
            let (sealer, r) = (&mut *job.sealer, &mut job.record);
            r.result = Some(sealer.check_job(r.buf, r.plaintext_len, r.iv).map(|()| {
                sealer.seal_checked(job.seq, job.content_type, r.buf, r.plaintext_len, r.iv)
            }));
        }
        return;
    }
    for job in jobs.iter_mut() {
        let r = &mut job.record;
        r.result = job
            .sealer
            .check_job(r.buf, r.plaintext_len, r.iv)
            .err()
            .map(Err);
    }
    // The kinds (combination and MAC order) in the order their first jobs
    // come: one pass over the jobs per kind the batch has, not per kind
    // there is.
    let mut from = 0;
    while let Some(skip) = jobs[from..].iter().position(|j| j.record.result.is_none()) {
        from += skip;
        let first = jobs[from].sealer.config();
        let kind =
            |j: &&mut SealJob<'_>| j.record.result.is_none() && same_kind(j.sealer.config(), first);
        let mut pending = jobs[from..].iter_mut().filter(kind).peekable();
        while pending.peek().is_some() {
            let mut group: [Option<&mut SealJob<'_>>; WINDOW] = Default::default();
            for slot in group.iter_mut() {
                *slot = pending.next();
            }
            seal_group(&mut group);
        }
    }
}

/// Whether every job has the first one's kind (combination and MAC
/// order), so that its lanes' decision holds for all of them.
fn one_kind(jobs: &[SealJob<'_>]) -> bool {
    let first = jobs[0].sealer.config();
    jobs.iter().all(|j| same_kind(j.sealer.config(), first))
}

/// Whether two configurations' records can share lanes: the same
/// combination (cipher and hash) and MAC order (what is hashed, what is
/// encrypted). The version may differ: it changes only each record's
/// header and where its IV comes from, which every job carries for
/// itself.
fn same_kind(a: RecordConfig, b: RecordConfig) -> bool {
    a.combination == b.combination && a.mac_order == b.mac_order
}

/// Whether the lanes of `sealer`'s kind would take `records` (at most a
/// window of them), so that a batch they would not take skips the
/// grouping.
fn may_pay<'a, 'b: 'a>(sealer: &Sealer, records: impl Iterator<Item = &'a SealRecord<'b>>) -> bool {
    let (count, shortest) =
        records.fold((0, usize::MAX), |(n, s), r| (n + 1, s.min(r.plaintext_len)));
    sealer.lanes_may_pay(count, shortest)
}

/// Seals up to [`WINDOW`] jobs of one kind in lanes.
fn seal_group(group: &mut [Option<&mut SealJob<'_>>; WINDOW]) {
    // A window the lanes would not take: single seals, without building it
    // (public counts and lengths).
    let count = group.iter().flatten().count();
    let shortest = group.iter().flatten().map(|j| j.record.plaintext_len).min();
    if let (Some(first), Some(shortest)) = (group.iter().flatten().next(), shortest)
        && !first.sealer.lanes_may_pay(count, shortest)
    {
        for job in group.iter_mut().flatten() {
            let (sealer, r) = (&mut *job.sealer, &mut job.record);
            let n = sealer.seal_checked(job.seq, job.content_type, r.buf, r.plaintext_len, r.iv);
            r.result = Some(Ok(n));
        }
        return;
    }
    let mut ivs = [[0u8; 16]; WINDOW];
    for (iv, job) in ivs.iter_mut().zip(group.iter_mut()) {
        if let Some(job) = job {
            *iv = job.record.iv.unwrap_or_else(|| job.sealer.next_iv());
        }
    }
    let mut lens = [0usize; WINDOW];
    let mut last = [[0u8; 16]; WINDOW];
    {
        let mut window: Window<'_> = Default::default();
        for (((slot, job), iv), len) in window
            .iter_mut()
            .zip(group.iter_mut())
            .zip(ivs)
            .zip(&mut lens)
        {
            if let Some(job) = job {
                let (sealer, r) = (&*job.sealer, &mut job.record);
                let (lane, n) = sealer.lane(job.seq, job.content_type, r.buf, r.plaintext_len, iv);
                *slot = Some(lane);
                *len = n;
            }
        }
        batch::seal(&mut window);
        for (l, lane) in last.iter_mut().zip(&window) {
            if let Some(lane) = lane {
                *l = lane.iv;
            }
        }
    }
    for ((job, n), l) in group.iter_mut().zip(lens).zip(last) {
        if let Some(job) = job {
            job.sealer.chain(l);
            job.record.result = Some(Ok(n));
        }
    }
}

impl Sealer {
    /// Seals several records of this connection in one call, record `i`
    /// with MAC sequence value `first_seq + i` and content type
    /// `content_type`, and sets each record's result.
    ///
    /// TLS 1.1+ and DTLS records run side by side in parallel lanes where
    /// the backend has lane kernels; TLS 1.0 records chain their IVs, so
    /// they are sealed one after another (same results, no speed-up). A
    /// record whose sequence value would pass `u64::MAX` gets
    /// [`Error::SequenceOverflow`]. For DTLS, `first_seq + i` must stay in
    /// the epoch: see [`crate::dtls_sequence`].
    ///
    /// ```
    /// use cbc_hmac::record::SealRecord;
    /// use cbc_hmac::{Combination, MacOrder, Opener, ProtocolVersion, RecordConfig, RecordKeys, Sealer};
    ///
    /// let config = RecordConfig::new(Combination::Aes128CbcSha256, ProtocolVersion::Tls12, MacOrder::MacThenEncrypt);
    /// let keys = RecordKeys { enc_key: &[1; 16], mac_key: &[2; 32], iv: None };
    /// let mut sealer = Sealer::new(config, keys)?;
    /// let mut opener = Opener::new(config, keys)?;
    ///
    /// // A 40 KiB write cut into 16 KiB fragments, sealed together.
    /// let data = vec![0x61u8; 40 << 10];
    /// let offset = sealer.payload_offset();
    /// let mut bufs: Vec<Vec<u8>> = data.chunks(16 << 10).map(|chunk| {
    ///     let mut buf = vec![0u8; sealer.sealed_len(chunk.len())];
    ///     buf[offset..offset + chunk.len()].copy_from_slice(chunk);
    ///     buf
    /// }).collect();
    /// let mut records: Vec<SealRecord> = bufs.iter_mut().zip(data.chunks(16 << 10))
    ///     .map(|(buf, chunk)| SealRecord::new(buf, chunk.len()))
    ///     .collect();
    /// sealer.seal_many_in_place(100, 23, &mut records);
    /// let lens: Vec<usize> = records.iter().map(|r| r.result().unwrap()).collect::<Result<_, _>>()?;
    /// drop(records);
    ///
    /// for (i, (buf, n)) in bufs.iter_mut().zip(lens).enumerate() {
    ///     let plaintext = opener.open_in_place(100 + i as u64, 23, &mut buf[..n])?;
    ///     assert_eq!(plaintext, &data[(16 << 10) * i..][..plaintext.len()]);
    /// }
    /// # Ok::<(), cbc_hmac::Error>(())
    /// ```
    pub fn seal_many_in_place(
        &mut self,
        first_seq: u64,
        content_type: u8,
        records: &mut [SealRecord<'_>],
    ) {
        for (i, r) in records.iter_mut().enumerate() {
            r.result = match first_seq.checked_add(i as u64) {
                Some(_) => self.check_job(r.buf, r.plaintext_len, r.iv).err().map(Err),
                None => Some(Err(Error::SequenceOverflow)),
            };
        }
        // TLS 1.0, too few records to share lanes, or one window of them
        // that the lanes would not take (public counts and lengths): one
        // after another, without the grouping (which cost up to 20 ns a
        // record).
        if self.chains()
            || records.len() < FEWEST_SEAL_LANES
            || (records.len() <= WINDOW
                && !may_pay(self, records.iter().filter(|r| r.result.is_none())))
        {
            for (i, r) in records.iter_mut().enumerate() {
                if r.result.is_none() {
                    let seq = first_seq + i as u64;
                    let n = self.seal_checked(seq, content_type, r.buf, r.plaintext_len, r.iv);
                    r.result = Some(Ok(n));
                }
            }
            return;
        }
        let mut pending = records
            .iter_mut()
            .enumerate()
            .filter(|(_, r)| r.result.is_none())
            .peekable();
        while pending.peek().is_some() {
            let mut group: [Option<(u64, &mut SealRecord<'_>)>; WINDOW] = Default::default();
            for slot in group.iter_mut() {
                *slot = pending.next().map(|(i, r)| (first_seq + i as u64, r));
            }
            // A window the lanes would not take: single seals, without
            // building it (public counts and lengths).
            let count = group.iter().flatten().count();
            let shortest = group.iter().flatten().map(|(_, r)| r.plaintext_len).min();
            if !shortest.is_some_and(|s| self.lanes_may_pay(count, s)) {
                for (seq, r) in group.iter_mut().flatten() {
                    let n = self.seal_checked(*seq, content_type, r.buf, r.plaintext_len, r.iv);
                    r.result = Some(Ok(n));
                }
                continue;
            }
            let mut ivs = [[0u8; 16]; WINDOW];
            for (iv, slot) in ivs.iter_mut().zip(group.iter()) {
                if let Some((_, r)) = slot {
                    *iv = r.iv.unwrap_or_else(|| self.next_iv());
                }
            }
            let mut lens = [0usize; WINDOW];
            {
                let mut window: Window<'_> = Default::default();
                for (((slot, entry), iv), len) in window
                    .iter_mut()
                    .zip(group.iter_mut())
                    .zip(ivs)
                    .zip(&mut lens)
                {
                    if let Some((seq, r)) = entry {
                        let (lane, n) = self.lane(*seq, content_type, r.buf, r.plaintext_len, iv);
                        *slot = Some(lane);
                        *len = n;
                    }
                }
                batch::seal(&mut window);
            }
            for (entry, n) in group.iter_mut().zip(lens) {
                if let Some((_, r)) = entry {
                    r.result = Some(Ok(n));
                }
            }
        }
    }
}
