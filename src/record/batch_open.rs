//! Opening many records at once, in constant time: several records of one
//! connection ([`Opener::open_many_in_place`]), or records of many
//! connections in one call ([`open_batch`]).
//!
//! A single open is bound by its HMAC's chain of compressions (CBC
//! decryption is parallel within a record already). Independent records
//! break that chain: where the backend has lane kernels (`vaes512-shani`)
//! the records of a window hash side by side, sixteen lanes of SHA-1 or
//! SHA-256, eight of SHA-512 for SHA-384; on `aesni-shani`, where the CPU
//! gains by it, SHA-1 and SHA-256 two streams at a time on SHA-NI (each
//! record's secret-length finish then runs alone, as in the single open).
//! TLS 1.0's chained IVs do not
//! stop this: CBC decryption needs only the previous ciphertext block.
//!
//! Each record is opened exactly as [`Opener::open_in_place`] opens it,
//! lane by lane:
//!
//! - public length checks first, with their own errors;
//! - MAC-then-encrypt: the padding span is decrypted and checked with
//!   masks, the rest decrypted; the public prefix of the plaintext (all
//!   but the last 256 + MAC bytes, which every valid padding leaves in
//!   place) is hashed in the lanes, then each record's hash is finished
//!   over its secret length and its MAC compared by the same constant-time
//!   pieces as the single open (`ct_open`);
//! - encrypt-then-MAC: every record's MAC is computed in the lanes and
//!   compared in constant time, then every record is decrypted and its
//!   padding checked, whatever its MAC said.
//!
//! What runs, and where in memory, depends only on the records' public
//! lengths and kinds: no record's padding, MAC or outcome changes the work
//! done for it or for any other. Each record's result is declassified once,
//! after its whole window is done. A rejected record
//! ([`Error::BadRecordMac`]) has its decrypted region zeroed; unlike the
//! single encrypt-then-MAC open, which never decrypts a record whose MAC
//! fails, the batch decrypts every record, so it wipes those too. Nothing
//! allocates. A batch of one or two records (two of TLS 1.1+ or DTLS), too
//! few to share lanes, runs the single open (with the batch's wipe on
//! reject), so it costs what `open_in_place` costs.

use core::ops::Range;

use subtle::ConstantTimeEq;

use super::ct_open::{
    check_padding, mac_matches, mac_window, open_mac_then_encrypt, padding_diff, public_prefix_len,
    secret_tail, split_record_by,
};
use super::{MacOrder, Opener, mac_header_after, mac_prefix};
use crate::backends::batch::{
    BatchHash, FEWEST_LANES, HashJob, SecretTailJob, WINDOW, mac_at, padding_diff_at,
};
use crate::backends::{AesKey, Backend, DecryptAbsorb, with_compressor};
use crate::error::Error;
use crate::primitives::ct;
use crate::primitives::hash::{Sha1, Sha256, Sha384};
use crate::primitives::hmac::{HmacStates, MAX_TLS_TAG_LEN};
use crate::{HmacKey, MacAlgorithm};

/// One record of an [`Opener::open_many_in_place`] call: its content type
/// (from the record header) and its fragment, opened in place.
#[derive(Debug)]
pub struct OpenRecord<'a> {
    content_type: u8,
    buf: &'a mut [u8],
    result: Option<Result<Range<usize>, Error>>,
}

impl<'a> OpenRecord<'a> {
    /// A record whose fragment (explicit IV, ciphertext, and the MAC for
    /// encrypt-then-MAC) is the whole of `buf`.
    pub fn new(content_type: u8, buf: &'a mut [u8]) -> Self {
        OpenRecord {
            content_type,
            buf,
            result: None,
        }
    }

    /// The outcome: `None` before the record was opened, then where the
    /// plaintext lies in the buffer, or the error.
    pub fn result(&self) -> Option<Result<Range<usize>, Error>> {
        self.result.clone()
    }

    /// The plaintext, if the record opened.
    pub fn plaintext(&self) -> Option<&[u8]> {
        match &self.result {
            Some(Ok(range)) => Some(&self.buf[range.clone()]),
            _ => None,
        }
    }

    /// The plaintext, mutable, if the record opened.
    pub fn plaintext_mut(&mut self) -> Option<&mut [u8]> {
        match &self.result {
            Some(Ok(range)) => Some(&mut self.buf[range.clone()]),
            _ => None,
        }
    }
}

/// One record of an [`open_batch`] call: the opener of its connection, its
/// sequence number, content type and fragment.
pub struct OpenJob<'a> {
    opener: &'a mut Opener,
    seq: u64,
    record: OpenRecord<'a>,
}

impl<'a> OpenJob<'a> {
    /// A job opening the fragment `buf` in place, as
    /// [`Opener::open_in_place`] does.
    pub fn new(opener: &'a mut Opener, seq: u64, content_type: u8, buf: &'a mut [u8]) -> Self {
        OpenJob {
            opener,
            seq,
            record: OpenRecord::new(content_type, buf),
        }
    }

    /// The outcome: `None` before [`open_batch`] ran, then where the
    /// plaintext lies in the buffer, or the error.
    pub fn result(&self) -> Option<Result<Range<usize>, Error>> {
        self.record.result()
    }

    /// The plaintext, if the record opened.
    pub fn plaintext(&self) -> Option<&[u8]> {
        self.record.plaintext()
    }

    /// The plaintext, mutable, if the record opened.
    pub fn plaintext_mut(&mut self) -> Option<&mut [u8]> {
        self.record.plaintext_mut()
    }
}

impl core::fmt::Debug for OpenJob<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("OpenJob")
            .field("opener", &self.opener)
            .field("seq", &self.seq)
            .field("content_type", &self.record.content_type)
            .field("result", &self.record.result)
            .finish_non_exhaustive()
    }
}

/// Opens a batch of records of many connections, each job with its own
/// opener (keys, combination, version, MAC order), sequence number,
/// content type and fragment, and sets each job's result.
///
/// Jobs may mix combinations, versions, MAC orders and lengths: jobs of one
/// MAC algorithm, MAC order and backend share lanes, up to sixteen at a
/// time. Each job's result is what [`Opener::open_in_place`] would return
/// (as a range of the buffer); one bad record does not affect the others.
/// A TLS 1.0 opener's chained IV advances when its record opens.
///
/// ```
/// use cbc_hmac::record::{OpenJob, open_batch};
/// use cbc_hmac::{Combination, MacOrder, Opener, ProtocolVersion, RecordConfig, RecordKeys, Sealer};
///
/// let config = RecordConfig::new(Combination::Aes128CbcSha1, ProtocolVersion::Tls12, MacOrder::MacThenEncrypt);
/// let keys: Vec<([u8; 16], [u8; 20])> = (0..4u8).map(|i| ([i; 16], [i ^ 0x55; 20])).collect();
/// fn key((e, m): &([u8; 16], [u8; 20])) -> RecordKeys<'_> {
///     RecordKeys { enc_key: &e[..], mac_key: &m[..], iv: None }
/// }
///
/// // One record from each of four connections.
/// let message = b"one record per connection";
/// let mut fragments = Vec::new();
/// for k in &keys {
///     let mut sealer = Sealer::new(config, key(k))?;
///     let mut buf = vec![0u8; sealer.sealed_len(message.len())];
///     buf[sealer.payload_offset()..][..message.len()].copy_from_slice(message);
///     let n = sealer.seal_in_place(7, 23, &mut buf, message.len())?;
///     buf.truncate(n);
///     fragments.push(buf);
/// }
/// fragments[2][40] ^= 1; // damaged in transit
///
/// let mut openers: Vec<Opener> = keys.iter().map(|k| Opener::new(config, key(k))).collect::<Result<_, _>>()?;
/// let mut jobs: Vec<OpenJob> = openers.iter_mut().zip(&mut fragments)
///     .map(|(o, f)| OpenJob::new(o, 7, 23, f))
///     .collect();
/// open_batch(&mut jobs);
/// for (i, job) in jobs.iter().enumerate() {
///     match i {
///         2 => assert_eq!(job.result(), Some(Err(cbc_hmac::Error::BadRecordMac))),
///         _ => assert_eq!(job.plaintext(), Some(&message[..])),
///     }
/// }
/// # Ok::<(), cbc_hmac::Error>(())
/// ```
pub fn open_batch(jobs: &mut [OpenJob<'_>]) {
    // Too few jobs to share lanes, or none of their windows could take
    // them (public counts and lengths): single opens, without the window.
    // Each job has its own opener, so they are independent.
    let longest = jobs.iter().map(|j| j.record.buf.len()).max().unwrap_or(0);
    let may_pay = |o: &Opener| lanes_may_pay(o, jobs.len(), longest);
    if jobs.len() < FEWEST_LANES || !jobs.iter().any(|j| may_pay(j.opener)) {
        for job in jobs {
            job.record.result = Some(job.opener.open_one(job.seq, &mut job.record));
        }
        return;
    }
    for job in jobs.iter_mut() {
        let r = &mut job.record;
        r.result = job.opener.check_len(r.buf.len()).err().map(Err);
    }
    let kind = |o: &Opener| {
        (
            o.backend(),
            o.config().combination.mac(),
            o.config().mac_order,
        )
    };
    let mut next = 0;
    while let Some(start) = (next..jobs.len()).find(|&i| jobs[i].record.result.is_none()) {
        next = start + 1;
        let k = kind(jobs[start].opener);
        let mut pending = jobs[start..]
            .iter_mut()
            .filter(|j| j.record.result.is_none() && kind(j.opener) == k);
        let mut group: [Option<&mut OpenJob<'_>>; WINDOW] = Default::default();
        for slot in group.iter_mut() {
            *slot = pending.next();
        }
        open_jobs(&mut group, k.0, k.2);
    }
}

/// Whether a window of at most `jobs` of `opener`'s records, none longer
/// than `longest` bytes, could run in lanes: `BatchHash::lanes_pay` grows
/// with the count and the shortest length, so the largest window and
/// `longest` bound it. Encrypt-then-MAC windows always run the batch path.
fn lanes_may_pay(opener: &Opener, jobs: usize, longest: usize) -> bool {
    let (backend, config) = (opener.backend(), opener.config());
    let pays = match config.combination.mac() {
        _ if config.mac_order == MacOrder::EncryptThenMac => return true,
        MacAlgorithm::HmacSha1 => Sha1::lanes_pay,
        MacAlgorithm::HmacSha256 => Sha256::lanes_pay,
        MacAlgorithm::HmacSha384 => Sha384::lanes_pay,
        MacAlgorithm::HmacSha512 => return true,
    };
    pays(backend, jobs.min(WINDOW), longest)
}

/// Opens up to [`WINDOW`] jobs of one kind and sets their results.
fn open_jobs(group: &mut [Option<&mut OpenJob<'_>>; WINDOW], backend: Backend, order: MacOrder) {
    let mut outcomes: [Option<Outcome>; WINDOW] = Default::default();
    {
        let mut window: [Option<Pending<'_>>; WINDOW] = Default::default();
        for (slot, job) in window.iter_mut().zip(group.iter_mut()) {
            if let Some(job) = job {
                let (opener, r) = (&*job.opener, &mut job.record);
                let iv = opener.chained_iv().unwrap_or_else(|| first_block(r.buf));
                *slot = Some(Pending::new(opener, job.seq, r.content_type, iv, r.buf));
            }
        }
        open_window(&mut window, backend, order);
        for (o, p) in outcomes.iter_mut().zip(&mut window) {
            *o = p.as_mut().map(|p| p.finish(order));
        }
    }
    for (job, outcome) in group.iter_mut().zip(outcomes) {
        if let (Some(job), Some((result, next_iv))) = (job, outcome) {
            if result.is_ok() {
                job.opener.advance(next_iv);
            }
            job.record.result = Some(result);
        }
    }
}

impl Opener {
    /// Opens several records of this connection in one call, record `i`
    /// with MAC sequence value `first_seq + i`, and sets each record's
    /// result (as [`Opener::open_in_place`] would return it, as a range of
    /// the record's buffer).
    ///
    /// The records are consecutive records of the stream: for TLS 1.0 the
    /// IV of each is the last ciphertext block of the one before (records
    /// with bad public lengths are skipped, as they are when opened one by
    /// one), and the opener's chained IV advances past the records that
    /// opened, up to the first rejected one. TLS requires closing the
    /// connection on any rejected record; the records after it are opened
    /// as though it had been accepted. A record whose sequence value would
    /// pass `u64::MAX` gets [`Error::SequenceOverflow`].
    ///
    /// ```
    /// use cbc_hmac::record::{OpenRecord, SealRecord};
    /// use cbc_hmac::{Combination, MacOrder, Opener, ProtocolVersion, RecordConfig, RecordKeys, Sealer};
    ///
    /// let config = RecordConfig::new(Combination::Aes128CbcSha256, ProtocolVersion::Tls12, MacOrder::MacThenEncrypt);
    /// let keys = RecordKeys { enc_key: &[1; 16], mac_key: &[2; 32], iv: None };
    /// let mut sealer = Sealer::new(config, keys)?;
    /// let mut opener = Opener::new(config, keys)?;
    ///
    /// // Eight records read from the socket at once.
    /// let mut fragments: Vec<Vec<u8>> = (0..8u8).map(|i| {
    ///     let text = vec![b'a' + i; 1000];
    ///     let mut buf = vec![0u8; sealer.sealed_len(text.len())];
    ///     buf[sealer.payload_offset()..][..text.len()].copy_from_slice(&text);
    ///     let n = sealer.seal_in_place(40 + i as u64, 23, &mut buf, text.len()).unwrap();
    ///     buf.truncate(n);
    ///     buf
    /// }).collect();
    /// let mut records: Vec<OpenRecord> = fragments.iter_mut().map(|f| OpenRecord::new(23, f)).collect();
    /// opener.open_many_in_place(40, &mut records);
    /// for (i, r) in records.iter().enumerate() {
    ///     assert_eq!(r.plaintext(), Some(&vec![b'a' + i as u8; 1000][..]));
    /// }
    /// # Ok::<(), cbc_hmac::Error>(())
    /// ```
    pub fn open_many_in_place(&mut self, first_seq: u64, records: &mut [OpenRecord<'_>]) {
        // Too few records to share lanes, and independent (explicit IVs, or
        // only one): single opens, without the window, whose length checks
        // are the single open's own. (TLS 1.0 records chain through the
        // window, whose rule for a rejected record differs from the single
        // open's.)
        let longest = records.iter().map(|r| r.buf.len()).max().unwrap_or(0);
        let few = records.len() < FEWEST_LANES || !lanes_may_pay(self, records.len(), longest);
        if records.len() == 1 || (few && self.chained_iv().is_none()) {
            for (i, r) in records.iter_mut().enumerate() {
                r.result = Some(match first_seq.checked_add(i as u64) {
                    Some(seq) => self.open_one(seq, r),
                    None => Err(Error::SequenceOverflow),
                });
            }
            return;
        }
        for (i, r) in records.iter_mut().enumerate() {
            r.result = match first_seq.checked_add(i as u64) {
                Some(_) => self.check_len(r.buf.len()).err().map(Err),
                None => Some(Err(Error::SequenceOverflow)),
            };
        }
        let order = self.config().mac_order;
        let backend = self.backend();
        let m = self.keys().1.output_len();
        // TLS 1.0: the IV of the next record to open.
        let mut chain = self.chained_iv();
        let mut advancing = true;
        let mut pending = records
            .iter_mut()
            .enumerate()
            .filter(|(_, r)| r.result.is_none())
            .peekable();
        while pending.peek().is_some() {
            let mut group: [Option<(u64, &mut OpenRecord<'_>)>; WINDOW] = Default::default();
            for slot in group.iter_mut() {
                *slot = pending.next().map(|(i, r)| (first_seq + i as u64, r));
            }
            let mut outcomes: [Option<Outcome>; WINDOW] = Default::default();
            {
                let mut window: [Option<Pending<'_>>; WINDOW] = Default::default();
                for (slot, entry) in window.iter_mut().zip(group.iter_mut()) {
                    if let Some((seq, r)) = entry {
                        let iv = match &mut chain {
                            // Taken before anything in the window is
                            // decrypted.
                            Some(c) => core::mem::replace(c, last_cbc_block(r.buf, order, m)),
                            None => first_block(r.buf),
                        };
                        *slot = Some(Pending::new(self, *seq, r.content_type, iv, r.buf));
                    }
                }
                open_window(&mut window, backend, order);
                for (o, p) in outcomes.iter_mut().zip(&mut window) {
                    *o = p.as_mut().map(|p| p.finish(order));
                }
            }
            for (entry, outcome) in group.iter_mut().zip(outcomes) {
                if let (Some((_, r)), Some((result, next_iv))) = (entry, outcome) {
                    advancing &= result.is_ok();
                    if advancing {
                        self.advance(next_iv);
                    }
                    r.result = Some(result);
                }
            }
        }
    }
}

impl Opener {
    /// `open_in_place` on one record, its result as a range.
    /// A rejected record is wiped as the batch wipes it (the single
    /// encrypt-then-MAC open leaves a record whose MAC fails as it came).
    fn open_one(&mut self, seq: u64, r: &mut OpenRecord<'_>) -> Result<Range<usize>, Error> {
        let start = self.config().version.explicit_iv_len();
        let len = match self.open_in_place(seq, r.content_type, r.buf) {
            Ok(plaintext) => plaintext.len(),
            Err(Error::BadRecordMac) => {
                let m = self.keys().1.output_len();
                let end = last_cbc_end(r.buf.len(), self.config().mac_order, m);
                r.buf[start..end].fill(0);
                return Err(Error::BadRecordMac);
            }
            Err(e) => return Err(e),
        };
        Ok(start..start + len)
    }
}

/// A record's result and its last ciphertext block.
type Outcome = (Result<Range<usize>, Error>, [u8; 16]);

fn first_block(buf: &[u8]) -> [u8; 16] {
    buf[..16].try_into().expect("length checked")
}

/// Where a fragment of `len` bytes' CBC region ends.
fn last_cbc_end(len: usize, order: MacOrder, mac_len: usize) -> usize {
    match order {
        MacOrder::MacThenEncrypt => len,
        MacOrder::EncryptThenMac => len - mac_len,
    }
}

/// The last block of a fragment's CBC region (before it is decrypted).
fn last_cbc_block(buf: &[u8], order: MacOrder, mac_len: usize) -> [u8; 16] {
    let end = last_cbc_end(buf.len(), order, mac_len);
    buf[end - 16..end].try_into().expect("length checked")
}

/// One record of a window, its lengths checked: what opening it needs, and
/// its secret outcome until [`Pending::finish`].
struct Pending<'a> {
    aes: &'a AesKey,
    mac: &'a HmacKey,
    prefix: [u8; 11],
    /// The CBC IV: explicit, or chained.
    iv: [u8; 16],
    /// The fragment.
    buf: &'a mut [u8],
    iv_len: usize,
    /// Out: the last ciphertext block, a mask (all ones: authentic and
    /// well padded) and the plaintext length.
    next_iv: [u8; 16],
    ok: usize,
    data_len: usize,
}

impl<'a> Pending<'a> {
    fn new(
        opener: &'a Opener,
        seq: u64,
        content_type: u8,
        iv: [u8; 16],
        buf: &'a mut [u8],
    ) -> Self {
        let (aes, mac) = opener.keys();
        let version = opener.config().version;
        Pending {
            aes: aes.raw(),
            mac,
            prefix: mac_prefix(seq, content_type, version.wire()),
            iv,
            buf,
            iv_len: version.explicit_iv_len(),
            next_iv: [0; 16],
            ok: 0,
            data_len: 0,
        }
    }

    /// The region CBC covers.
    fn cbc_end(&self, order: MacOrder) -> usize {
        last_cbc_end(self.buf.len(), order, self.mac.output_len())
    }

    /// The record's one declassification: accept, or reject and wipe.
    fn finish(&mut self, order: MacOrder) -> Outcome {
        if self.ok != usize::MAX {
            // The same wipe for every reject of this length.
            let end = self.cbc_end(order);
            self.buf[self.iv_len..end].fill(0);
            return (Err(Error::BadRecordMac), self.next_iv);
        }
        (Ok(self.iv_len..self.iv_len + self.data_len), self.next_iv)
    }
}

/// Opens every record of a window of one kind (MAC algorithm, order,
/// backend), leaving each one's secret outcome in it.
fn open_window(window: &mut [Option<Pending<'_>>; WINDOW], backend: Backend, order: MacOrder) {
    let Some(first) = window.iter().flatten().next() else {
        return;
    };
    let (alg, compressor) = (first.mac.algorithm(), *first.mac.compressor());
    with_compressor!(compressor, |c| match alg {
        MacAlgorithm::HmacSha1 => open_window_with::<Sha1, _>(c, window, backend, order),
        MacAlgorithm::HmacSha256 => open_window_with::<Sha256, _>(c, window, backend, order),
        MacAlgorithm::HmacSha384 => open_window_with::<Sha384, _>(c, window, backend, order),
        // No TLS combination has it, so no opener is keyed with it; were
        // one ever, its records are rejected like the single open's.
        MacAlgorithm::HmacSha512 => window.iter_mut().flatten().for_each(|p| p.ok = 0),
    })
}

fn open_window_with<H: BatchHash, C: DecryptAbsorb<H>>(
    c: &C,
    window: &mut [Option<Pending<'_>>; WINDOW],
    backend: Backend,
    order: MacOrder,
) {
    let jobs = window.iter().flatten().count();
    let shortest = window
        .iter()
        .flatten()
        .map(|p| p.buf.len())
        .min()
        .unwrap_or(0);
    let lanes = H::lanes_pay(backend, jobs, shortest);
    match order {
        MacOrder::MacThenEncrypt if lanes => open_mac_then_encrypt_lanes(c, window, backend),
        // Too few records to fill lanes: the single open, whose decryption
        // and hashing run in one fused pass.
        MacOrder::MacThenEncrypt => {
            for p in window.iter_mut().flatten() {
                let (ok, data_len) = open_mac_then_encrypt(
                    p.mac.states(),
                    p.mac.compressor(),
                    p.aes,
                    &p.iv,
                    &mut p.next_iv,
                    &p.prefix,
                    &mut p.buf[p.iv_len..],
                );
                (p.ok, p.data_len) = (ok, data_len);
            }
        }
        MacOrder::EncryptThenMac => open_encrypt_then_mac(c, window, backend),
    }
}

fn states_of<H: BatchHash>(mac: &HmacKey) -> &HmacStates<H> {
    H::states(mac.states()).expect("one MAC algorithm per window")
}

/// MAC-then-encrypt: decrypt and check padding record by record, hash the
/// public prefixes in lanes, finish each MAC over its secret length.
fn open_mac_then_encrypt_lanes<H: BatchHash, C: DecryptAbsorb<H>>(
    c: &C,
    window: &mut [Option<Pending<'_>>; WINDOW],
    backend: Backend,
) {
    let m = H::OUTPUT_LEN;
    let mut headers = [[0u8; 13]; WINDOW];
    let mut good = [0usize; WINDOW];
    // Every record decrypted before any padding is read: checked right
    // after its own decryption, a short record's padding check waits out
    // the latency of the AES rounds that produce its last block. Whole
    // records, not interleaved with the lane hashing: a loop running the
    // VAES rounds of the next 64 bytes of every lane between the
    // sixteen-lane SHA-1 rounds ran 1.04-1.07x the two apart in isolation,
    // but here it gained nothing (Intel family 6 model 0xA7, 16 x 16 KiB:
    // its samples matched the two kernels', and its set-up made the open
    // 4-7% slower).
    //
    // Each record in one run of blocks, as the encrypt-then-MAC path
    // does: only the single open's fused pass needs the padding span
    // decrypted apart from the rest.
    for p in window.iter_mut().flatten() {
        let mut chain = p.iv;
        let (blocks, _) = p.buf[p.iv_len..].as_chunks_mut::<16>();
        p.aes.decrypt_cbc(&mut chain, blocks);
        p.next_iv = chain;
    }
    for ((p, header), good) in window.iter_mut().zip(&mut headers).zip(&mut good) {
        let Some(p) = p else { continue };
        let diff = |tail: &[u8], first, pad| {
            padding_diff_at(backend, tail, first, pad)
                .unwrap_or_else(|| padding_diff(tail, first, pad))
        };
        (*good, p.data_len, *header) = split_record_by(&p.buf[p.iv_len..], m, &p.prefix, diff);
    }
    let mut prefixes: [Option<HashJob<'_, H>>; WINDOW] = core::array::from_fn(|_| None);
    for ((job, p), header) in prefixes.iter_mut().zip(window.iter()).zip(headers) {
        let Some(p) = p else { continue };
        let body = &p.buf[p.iv_len..];
        *job = Some(HashJob {
            states: states_of(p.mac),
            prefix: header,
            data: &body[..public_prefix_len(body.len(), m)],
            tag: None,
            engine: None,
        });
    }
    H::hash_jobs(backend, &mut prefixes, c);
    // Each record's hash finished over its secret length, all records'
    // blocks side by side in the lanes, from the engines where the prefix
    // hashes left them: copied out, they would be loaded back right after
    // the narrow stores that wrote them, which cannot be forwarded.
    let mut tags = [[0u8; MAX_TLS_TAG_LEN]; WINDOW];
    {
        let mut jobs: [Option<SecretTailJob<'_, H>>; WINDOW] = core::array::from_fn(|_| None);
        for (((job, p), prefix), tag) in jobs
            .iter_mut()
            .zip(window.iter())
            .zip(&prefixes)
            .zip(&mut tags)
        {
            let engine = prefix.as_ref().and_then(|j| j.engine.as_ref());
            if let (Some(p), Some(engine)) = (p, engine) {
                let (data, len) = secret_tail(&p.buf[p.iv_len..], m, p.data_len);
                *job = Some(SecretTailJob {
                    states: states_of(p.mac),
                    engine,
                    data,
                    len,
                    tag: &mut tag[..m],
                });
            }
        }
        H::finish_secret_len(backend, &mut jobs, c);
    }
    for ((p, tag), good) in window.iter_mut().zip(&tags).zip(good) {
        if let Some(p) = p {
            let body = &p.buf[p.iv_len..];
            let (at, d) = mac_window(body, p.data_len, m);
            let matches = mac_at(backend, at, d, &tag[..m])
                .unwrap_or_else(|| mac_matches(body, p.data_len, &tag[..m]));
            p.ok = good & matches;
        }
    }
}

/// Encrypt-then-MAC: every MAC in lanes and compared, then every record
/// decrypted and its padding checked, whatever its MAC said.
fn open_encrypt_then_mac<H: BatchHash, C: DecryptAbsorb<H>>(
    c: &C,
    window: &mut [Option<Pending<'_>>; WINDOW],
    backend: Backend,
) {
    let m = H::OUTPUT_LEN;
    let mut tags = [[0u8; MAX_TLS_TAG_LEN]; WINDOW];
    {
        let mut jobs: [Option<HashJob<'_, H>>; WINDOW] = core::array::from_fn(|_| None);
        for ((job, p), tag) in jobs.iter_mut().zip(window.iter()).zip(&mut tags) {
            let Some(p) = p else { continue };
            let end = p.buf.len() - m;
            *job = Some(HashJob {
                states: states_of(p.mac),
                prefix: mac_header_after(&p.prefix, end),
                data: &p.buf[..end],
                tag: Some(&mut tag[..m]),
                engine: None,
            });
        }
        H::hash_jobs(backend, &mut jobs, c);
    }
    for (p, tag) in window.iter_mut().zip(&tags) {
        let Some(p) = p else { continue };
        let end = p.buf.len() - m;
        let (cbc, received) = p.buf.split_at_mut(end);
        let mac_ok = ct::barrier((tag[..m].ct_eq(received).unwrap_u8() as usize).wrapping_neg());
        let body = &mut cbc[p.iv_len..];
        let mut chain = p.iv;
        let (blocks, _) = body.as_chunks_mut::<16>();
        p.aes.decrypt_cbc(&mut chain, blocks);
        p.next_iv = chain;
        let (good, padding_total) = check_padding(body, 0);
        p.ok = ct::barrier(mac_ok & good);
        p.data_len = body.len() - padding_total;
    }
}

#[cfg(test)]
mod tests {
    use super::{FEWEST_LANES, WINDOW, lanes_may_pay};
    use crate::backends::batch::BatchHash;
    use crate::primitives::hash::{Sha1, Sha256, Sha384};
    use crate::{
        Backend, Combination, MacAlgorithm, MacOrder, Opener, ProtocolVersion, RecordConfig,
        RecordKeys,
    };

    /// Fragment lengths at and either side of every length rule of
    /// `lanes_pay` (`cpu::Tuning` and the tables beside the kernels).
    const LENGTHS: [usize; 17] = [
        0, 1, 255, 256, 511, 512, 767, 768, 1023, 1024, 1408, 2047, 2048, 4095, 4096, 8192, 16384,
    ];

    /// `lanes_may_pay` lets a batch skip the windows: it must hold for
    /// every batch that has a window the lanes would take (at most as many
    /// records, none longer), and no window of fewer than `FEWEST_LANES`
    /// records may take lanes.
    #[test]
    fn lanes_may_pay_bounds_every_window() {
        let mut windows = 0;
        for backend in Backend::available() {
            for combination in Combination::ALL {
                let config = RecordConfig::new(
                    combination,
                    ProtocolVersion::Tls12,
                    MacOrder::MacThenEncrypt,
                );
                let keys = RecordKeys {
                    enc_key: &[7; 32][..combination.cipher().key_len()],
                    mac_key: &[9; 48][..combination.mac().tls_key_len()],
                    iv: None,
                };
                let opener = Opener::with_backend(config, keys, backend).expect("available");
                let pays = match combination.mac() {
                    MacAlgorithm::HmacSha1 => Sha1::lanes_pay,
                    MacAlgorithm::HmacSha256 => Sha256::lanes_pay,
                    MacAlgorithm::HmacSha384 => Sha384::lanes_pay,
                    MacAlgorithm::HmacSha512 => continue,
                };
                for count in 1..=WINDOW {
                    for (i, &shortest) in LENGTHS.iter().enumerate() {
                        if !pays(backend, count, shortest) {
                            continue;
                        }
                        assert!(count >= FEWEST_LANES, "{backend} {combination:?}");
                        windows += 1;
                        for jobs in count..=64 {
                            for &longest in &LENGTHS[i..] {
                                assert!(
                                    lanes_may_pay(&opener, jobs, longest),
                                    "{backend} {combination:?}: {count} x {shortest} take \
                                     lanes, {jobs} up to {longest} not"
                                );
                            }
                        }
                    }
                }
            }
        }
        if windows == 0 {
            eprintln!(
                "SKIPPED: no backend on this CPU gives any window lanes, so no bound to check"
            );
        }
    }
}
