//! The multi-record section (`--records N`): N records of `payload` bytes
//! sealed per call, from one connection (`--connections 1`:
//! `Sealer::seal_many_in_place`) or from N connections with distinct keys
//! (`--connections N`: `seal_batch`), TLS 1.2 MAC-then-encrypt.
//!
//! Every side seals the same records, in alternating rounds (the order
//! flips every round); each round gives each side's throughput and the
//! report gives the median over the rounds. After the timing every side's
//! output is checked: ours and OpenSSL's records are opened by our
//! `Opener`, intel-ipsec-mb's ciphertext and tags are compared with our
//! primitives'.
//!
//! - `batch`: the multi-record API under test.
//! - `one by one`: the same records through the single-record seal.
//! - `OpenSSL multi-block` (`--compare openssl`, one connection): the
//!   stitched ciphers' `EVP_CTRL_TLS1_1_MULTIBLOCK_ENCRYPT`, 8 records per
//!   call where N allows (else 4).
//! - `intel-ipsec-mb` (`--compare ipsec-mb`): the same records as CBC +
//!   HMAC jobs with precomputed HMAC states; it does no TLS framing (no
//!   sequence number or header in the MAC, no padding, no explicit IV).

use std::time::Duration;

use cbc_hmac::{
    Backend, Combination, MacOrder, Opener, ProtocolVersion, RecordConfig, RecordKeys, SealJob,
    SealRecord, Sealer, seal_batch,
};

use crate::measure::{self, Measurement};
use crate::workload::{CONTENT_TYPE, Failure};

/// What one multi-record measurement seals or opens.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    pub combination: Combination,
    pub records: usize,
    pub connections: usize,
    pub payload: usize,
    /// Open (`--open`) rather than seal.
    pub open: bool,
    /// Each record buffer on its own page (`--page-aligned`).
    pub page_aligned: bool,
}

impl Shape {
    /// Payload bytes per call.
    pub fn bytes_per_call(&self) -> usize {
        self.records * self.payload
    }

    /// The section header.
    pub fn title(&self) -> String {
        let c = match self.connections {
            1 => "1 connection".to_string(),
            n => format!("{n} connections"),
        };
        format!(
            "Checking multi-record {}, {} records x {} bytes, {c}{}",
            self.direction(),
            self.records,
            self.payload,
            if self.page_aligned {
                ", page-aligned buffers"
            } else {
                ""
            }
        )
    }

    /// `seal` or `open`.
    pub fn direction(&self) -> &'static str {
        if self.open { "open" } else { "seal" }
    }
}

/// One implementation sealing a shape's records.
pub trait Side {
    /// Its name in the report.
    fn name(&self) -> &'static str;
    /// The JSON key prefix of its figures.
    fn key(&self) -> &'static str;
    /// For a side whose calls consume their input (an open decrypts in
    /// place): restores the input of the next calls, untimed, and says how
    /// many calls it serves. `None` (the default): the calls repeat on the
    /// same buffers.
    fn stage(&mut self) -> Option<u64> {
        None
    }
    /// Seals (or opens) every record once: the timed operation.
    fn run_all(&mut self) -> Result<(), Failure>;
    /// Checks the result of a fresh run.
    fn check(&mut self) -> Result<(), Failure>;
}

/// The record buffers of one side, laid out alike for every side: one
/// allocation, the first buffer on a page boundary and each next one a
/// cache line past the end of the one before (or, page-aligned, on the
/// next page boundary). Left to the allocator, one
/// side's 256-byte buffer may straddle a page where the other side's does
/// not, which alone costs that side about 5% of a 256-byte open on Intel
/// family 6 model 0xA7.
pub struct Buffers {
    store: Vec<u8>,
    base: usize,
    stride: usize,
    len: usize,
    count: usize,
}

impl Buffers {
    const PAGE: usize = 4096;

    /// `count` zeroed buffers of `len` bytes, each on its own page if
    /// `page_aligned`.
    pub fn new(count: usize, len: usize, page_aligned: bool) -> Self {
        let stride = if page_aligned {
            len.max(1).next_multiple_of(Self::PAGE)
        } else {
            len.next_multiple_of(64) + 64
        };
        let store = vec![0u8; count * stride + Self::PAGE];
        let base = store.as_ptr().align_offset(Self::PAGE);
        Buffers {
            store,
            base,
            stride,
            len,
            count,
        }
    }

    /// Buffers holding copies of `records`, which are all of one length.
    pub fn copied(records: &[Vec<u8>], page_aligned: bool) -> Self {
        let len = records.first().map_or(0, Vec::len);
        let mut bufs = Buffers::new(records.len(), len, page_aligned);
        for (b, r) in bufs.iter_mut().zip(records) {
            b.copy_from_slice(r);
        }
        bufs
    }

    /// How many buffers.
    pub fn count(&self) -> usize {
        self.count
    }

    pub fn iter(&self) -> impl Iterator<Item = &[u8]> {
        let len = self.len;
        self.store[self.base..]
            .chunks(self.stride)
            .take(self.count)
            .map(move |c| &c[..len])
    }

    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut [u8]> {
        let len = self.len;
        self.store[self.base..]
            .chunks_mut(self.stride)
            .take(self.count)
            .map(move |c| &mut c[..len])
    }
}

/// Runs `f` on the `n` items of `items` gathered in one slice: on the
/// stack for 1 to 4, 8 or 16 items, else in a `Vec`. Neither the library
/// nor intel-ipsec-mb allocates per batch, so the common batches are timed
/// without an allocation of the bench's own (which would cost a 256-byte
/// record several percent); for other counts it is lost in the work.
pub fn gathered<T, R>(
    n: usize,
    mut items: impl Iterator<Item = T>,
    f: impl FnOnce(&mut [T]) -> R,
) -> R {
    use core::array::from_fn;
    let mut next = |_| items.next().expect("n items");
    match n {
        1 => f(&mut from_fn::<T, 1, _>(&mut next)),
        2 => f(&mut from_fn::<T, 2, _>(&mut next)),
        3 => f(&mut from_fn::<T, 3, _>(&mut next)),
        4 => f(&mut from_fn::<T, 4, _>(&mut next)),
        8 => f(&mut from_fn::<T, 8, _>(&mut next)),
        16 => f(&mut from_fn::<T, 16, _>(&mut next)),
        _ => f(&mut items.collect::<Vec<T>>()),
    }
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(29).wrapping_add(seed) ^ (i >> 7) as u8)
        .collect()
}

/// Keys of connection `i`.
pub fn keys(combination: Combination, i: usize) -> (Vec<u8>, Vec<u8>) {
    let seed = (i as u8).wrapping_mul(7);
    (
        pattern(combination.cipher().key_len(), 0x31 ^ seed),
        pattern(combination.mac().tls_key_len(), 0x52 ^ seed),
    )
}

/// The plaintext of record `r`.
pub fn plaintext(shape: &Shape, r: usize) -> Vec<u8> {
    pattern(shape.payload, 0x60 ^ r as u8)
}

pub fn config(combination: Combination) -> RecordConfig {
    RecordConfig::new(
        combination,
        ProtocolVersion::Tls12,
        MacOrder::MacThenEncrypt,
    )
}

fn check(ok: bool, msg: impl FnOnce() -> String) -> Result<(), Failure> {
    if ok {
        Ok(())
    } else {
        Err(Failure::Check(msg()))
    }
}

/// Opens `fragment` as record `r` of `shape` (sealed with sequence value
/// `seq`) with our opener of its connection and compares the plaintext.
pub fn opens_to(shape: &Shape, r: usize, seq: u64, fragment: &mut [u8]) -> Result<(), Failure> {
    let conn = r % shape.connections;
    let (enc, mac) = keys(shape.combination, conn);
    let keys = RecordKeys {
        enc_key: &enc,
        mac_key: &mac,
        iv: None,
    };
    let mut opener = Opener::with_backend(config(shape.combination), keys, Backend::Portable)?;
    let want = plaintext(shape, r);
    match opener.open_in_place(seq, CONTENT_TYPE, fragment) {
        Ok(p) => check(p == want.as_slice(), || {
            format!("record {r} opened to the wrong plaintext")
        }),
        Err(e) => Err(Failure::Check(format!("record {r} does not open: {e}"))),
    }
}

/// cbc-hmac: the multi-record API (`batch`) or the single-record seal
/// (`one by one`).
pub struct Ours {
    shape: Shape,
    batch: bool,
    sealers: Vec<Sealer>,
    bufs: Buffers,
    seq: u64,
}

impl Ours {
    pub fn new(shape: Shape, backend: Backend, batch: bool) -> Result<Self, Failure> {
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
                backend,
            )?);
        }
        let len = sealers[0].sealed_len(shape.payload);
        let mut ours = Ours {
            shape,
            batch,
            sealers,
            bufs: Buffers::new(shape.records, len, shape.page_aligned),
            seq: 0,
        };
        ours.fill();
        Ok(ours)
    }

    fn fill(&mut self) {
        let offset = self.sealers[0].payload_offset();
        for (r, buf) in self.bufs.iter_mut().enumerate() {
            buf[offset..offset + self.shape.payload].copy_from_slice(&plaintext(&self.shape, r));
        }
    }

    /// Seals every record once; returns the sequence value of record 0 of
    /// each connection.
    fn seal(&mut self) -> Result<u64, Failure> {
        let p = self.shape.payload;
        let seq = self.seq;
        self.seq += self.shape.records as u64;
        let per_conn = self.shape.records / self.shape.connections;
        if !self.batch {
            for (r, buf) in self.bufs.iter_mut().enumerate() {
                let sealer = &mut self.sealers[r % self.shape.connections];
                let s = seq + (r / self.shape.connections) as u64;
                sealer.seal_in_place(s, CONTENT_TYPE, buf, p)?;
            }
        } else if self.shape.connections == 1 {
            let records = self.bufs.iter_mut().map(|b| SealRecord::new(b, p));
            let sealer = &mut self.sealers[0];
            gathered(self.shape.records, records, |records| {
                sealer.seal_many_in_place(seq, CONTENT_TYPE, records);
                records
                    .iter()
                    .try_for_each(|r| r.result().expect("sealed").map(drop))
            })?;
        } else {
            debug_assert_eq!(per_conn, 1);
            let jobs = self
                .sealers
                .iter_mut()
                .zip(self.bufs.iter_mut())
                .map(|(s, b)| SealJob::new(s, seq, CONTENT_TYPE, b, p));
            gathered(self.shape.records, jobs, |jobs| {
                seal_batch(jobs);
                jobs.iter()
                    .try_for_each(|j| j.result().expect("sealed").map(drop))
            })?;
        }
        Ok(seq)
    }
}

impl Side for Ours {
    fn name(&self) -> &'static str {
        if self.batch { "batch" } else { "one by one" }
    }

    fn key(&self) -> &'static str {
        if self.batch { "" } else { "single_" }
    }

    fn run_all(&mut self) -> Result<(), Failure> {
        self.seal().map(|_| ())
    }

    fn check(&mut self) -> Result<(), Failure> {
        self.fill();
        let seq = self.seal()?;
        let shape = self.shape;
        let len = self.sealers[0].sealed_len(shape.payload);
        for (r, buf) in self.bufs.iter_mut().enumerate() {
            let s = seq + (r / shape.connections) as u64;
            opens_to(&shape, r, s, &mut buf[..len])?;
        }
        Ok(())
    }
}

/// Each side's throughput (GB/s) per round, in the sides' order.
pub struct Figures {
    pub per_round: Vec<Vec<f64>>,
    pub total: Vec<Measurement>,
}

impl Figures {
    /// The median over the rounds of side `i`.
    pub fn median(&self, i: usize) -> f64 {
        let mut v = self.per_round[i].clone();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        }
    }
}

/// Times every side in `rounds` alternating rounds of `target / rounds`
/// each, then checks every side.
pub fn measure(
    sides: &mut [Box<dyn Side>],
    shape: &Shape,
    rounds: usize,
    target: Duration,
) -> Result<Figures, Failure> {
    let n = sides.len();
    let per_round = target / rounds.max(1) as u32;
    let mut figures = Figures {
        per_round: vec![Vec::new(); n],
        total: vec![Measurement::ZERO; n],
    };
    for round in 0..rounds.max(1) {
        let order: Vec<usize> = if round % 2 == 0 {
            (0..n).collect()
        } else {
            (0..n).rev().collect()
        };
        for i in order {
            let side = &mut sides[i];
            let m = if side.stage().is_some() {
                let stage = |s: &mut Box<dyn Side>| Ok(s.stage().unwrap_or(1));
                measure::run_staged(per_round, side, stage, |s| s.run_all())?
            } else {
                measure::run(per_round, || side.run_all())?
            };
            figures.per_round[i].push(m.gb_per_s(shape.bytes_per_call()));
            figures.total[i] = figures.total[i].then(m);
        }
    }
    for side in sides.iter_mut() {
        side.check()?;
    }
    Ok(figures)
}

/// The text line of one shape: the batch figure, then each other side
/// with the batch's ratio to it.
pub fn text_line(shape: &Shape, sides: &[Box<dyn Side>], f: &Figures) -> String {
    let ours = f.median(0);
    let mut line = format!(
        "{:>26} {:>6.2} GB/sec {:>10.1} ns/record",
        format!("{} batch", shape.combination),
        ours,
        shape.payload as f64 / ours
    );
    for (i, side) in sides.iter().enumerate().skip(1) {
        let theirs = f.median(i);
        line += &format!(
            "   {} {:.2} GB/sec, ratio {:.2}",
            side.name(),
            theirs,
            ours / theirs
        );
    }
    line
}

/// The JSON object of one shape, on one line.
pub fn json_line(
    shape: &Shape,
    backend: Backend,
    cpu: &str,
    sides: &[Box<dyn Side>],
    f: &Figures,
) -> String {
    let ours = f.median(0);
    let mut fields = vec![
        ("section".to_string(), "\"multi\"".to_string()),
        ("name".into(), format!("\"{}\"", shape.combination)),
        ("direction".into(), format!("\"{}\"", shape.direction())),
        ("payload".into(), shape.payload.to_string()),
        ("records".into(), shape.records.to_string()),
        ("page_aligned".into(), shape.page_aligned.to_string()),
        ("connections".into(), shape.connections.to_string()),
        ("backend".into(), format!("\"{}\"", backend.name())),
        (
            "open_kernel".into(),
            format!("\"{}\"", backend.open_kernel()),
        ),
        ("cpu".into(), format!("\"{}\"", cpu.replace('"', "'"))),
    ];
    fields.extend(crate::output::kernel_fields(backend));
    fields.extend([
        ("rounds".into(), f.per_round[0].len().to_string()),
        ("gb_per_s".into(), format!("{ours:.4}")),
    ]);
    let mut first_reference = true;
    for (i, side) in sides.iter().enumerate().skip(1) {
        let theirs = f.median(i);
        let ratio = ours / theirs;
        fields.push((format!("{}gb_per_s", side.key()), format!("{theirs:.4}")));
        fields.push((format!("{}ratio", side.key()), format!("{ratio:.4}")));
        if first_reference && !side.key().starts_with("single") {
            fields.push(("ratio".into(), format!("{ratio:.4}")));
            first_reference = false;
        }
    }
    let body: Vec<String> = fields
        .into_iter()
        .map(|(k, v)| format!("\"{k}\":{v}"))
        .collect();
    format!("{{{}}}", body.join(","))
}
