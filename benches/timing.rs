//! A dudect-style timing test of `Opener::open_in_place` (Reparaz, Balasch
//! and Verbauwhede, "Dude, is my code constant time?", 2017): it is not a
//! CI gate, it is evidence.
//!
//! For each available backend, MAC-then-encrypt TLS 1.2 with a SHA-1 and a
//! SHA-384 combination, at 256- and 1024-byte fragments, three classes of
//! records of the same length are opened in random interleaved order:
//!
//! - `valid`: a record that opens (least padding);
//! - `bad-pad`: its padding byte claims 255 bytes (a leaky implementation
//!   would then MAC a message 255 bytes shorter: Lucky Thirteen,
//!   CVE-2013-0169);
//! - `bad-mac`: least padding, one MAC bit flipped;
//! - `valid-max`: a record that opens with the most padding that fits (up
//!   to 255 bytes), so a shorter plaintext;
//! - `bad-ct0` and `bad-ct1`: the `valid` record with one ciphertext bit
//!   flipped, in the first or the second block: both garble the plaintext
//!   and fail the MAC, with the padding intact.
//!
//! The comparison that matters for a padding oracle is `bad-pad` against
//! `bad-mac`: two rejections an attacker tries to tell apart. `valid`
//! against `valid-max` is Lucky Thirteen's own distinction among accepted
//! records. `bad-ct0` against `bad-ct1` is the control: two bad-MAC
//! classes that no implementation could tell apart except through the
//! position of a garbled block, so its |t| shows how large t gets on the
//! machine with no signal. A `valid` record against a rejected one differs in the public
//! outcome, after the one declassification: the accept branch itself (and
//! its misprediction under random interleaving) may show there.
//!
//! Each measurement times a batch of opens of one class with
//! `std::time::Instant`. Classes are compared pairwise with Welch's t-test,
//! on the whole distribution and on distributions cropped at dudect's
//! percentiles (long tails come from interrupts and the other tenants of the
//! machine); the largest |t| is reported. By dudect's convention
//! |t| > 4.5 indicates a leak. A `naive` pseudo-backend, a plain
//! variable-time open written here, is measured the same way to show that
//! the test sees the difference the constant-time code removes.
//!
//! `cargo bench --bench timing` (about 5 s per line; set
//! `TIMING_SECONDS` to change it, `TIMING_FILTER` to a substring of the
//! line, e.g. `aesni` or `SHA384`).

use std::hint::black_box;
use std::time::{Duration, Instant};

use cbc_hmac::{
    AesCbcKey, Backend, Combination, Error, HmacKey, MacOrder, Opener, ProtocolVersion,
    RecordConfig, RecordKeys,
};

const CONTENT_TYPE: u8 = 23;
const SEQ: u64 = 0x0102_0304_0506_0708;
const IV: [u8; 16] = [0x5a; 16];
/// Opens per measurement: enough to dwarf the timer's own cost.
const BATCH: usize = 8;
/// dudect's threshold.
const THRESHOLD: f64 = 4.5;
const CLASSES: [&str; 6] = [
    "valid",
    "bad-pad",
    "bad-mac",
    "valid-max",
    "bad-ct0",
    "bad-ct1",
];
const N: usize = CLASSES.len();
/// The pairs compared, in the order of the printed columns; the last is
/// the control.
const PAIRS: [(usize, usize); 5] = [(1, 2), (0, 3), (0, 1), (0, 2), (4, 5)];
/// Measurements used to place the crop thresholds, then discarded.
const CALIBRATION: usize = 2_000;

/// Welford's running mean and variance.
#[derive(Clone, Copy, Default)]
struct Stats {
    n: f64,
    mean: f64,
    m2: f64,
}

impl Stats {
    fn push(&mut self, x: f64) {
        self.n += 1.0;
        let d = x - self.mean;
        self.mean += d / self.n;
        self.m2 += d * (x - self.mean);
    }

    fn var(&self) -> f64 {
        if self.n < 2.0 {
            0.0
        } else {
            self.m2 / (self.n - 1.0)
        }
    }
}

/// Welch's t statistic of two samples.
fn welch_t(a: &Stats, b: &Stats) -> f64 {
    let se = (a.var() / a.n + b.var() / b.n).sqrt();
    if se == 0.0 {
        0.0
    } else {
        (a.mean - b.mean) / se
    }
}

/// A small PRNG (xorshift64*) for the class order.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

fn header(len: usize, version: [u8; 2]) -> [u8; 13] {
    let mut h = [0u8; 13];
    h[..8].copy_from_slice(&SEQ.to_be_bytes());
    h[8] = CONTENT_TYPE;
    h[9..11].copy_from_slice(&version);
    h[11..].copy_from_slice(&(len as u16).to_be_bytes());
    h
}

/// The records of each class (explicit IV, then `body_len` bytes of CBC
/// data).
fn records(config: RecordConfig, enc: &[u8], mac: &[u8], body_len: usize) -> [Vec<u8>; N] {
    let aes = AesCbcKey::with_backend(config.combination.cipher(), enc, Backend::Portable)
        .expect("AES key");
    let hmac =
        HmacKey::with_backend(config.combination.mac(), mac, Backend::Portable).expect("MAC key");
    let m = hmac.output_len();
    let version = config.version.wire();
    let build = |class: usize| {
        // Least padding (a multiple-of-16 body needs at least one byte), or
        // for `valid-max` the most that fits.
        let pad = if class == 3 {
            (body_len - m - 1).min(255)
        } else {
            (body_len - m - 1) % 16
        };
        let data_len = body_len - m - 1 - pad;
        let plaintext: Vec<u8> = (0..data_len).map(|i| (i % 251) as u8).collect();
        let mut body = plaintext.clone();
        let mut ctx = hmac.context();
        ctx.update(&header(data_len, version));
        ctx.update(&plaintext);
        body.extend_from_slice(ctx.finish().as_bytes());
        body.extend(std::iter::repeat_n(pad as u8, pad + 1));
        match class {
            1 => *body.last_mut().unwrap() = 255,
            2 => body[data_len] ^= 1,
            _ => {}
        }
        assert_eq!(body.len(), body_len);
        aes.encrypt(&IV, &mut body).expect("blocks");
        let mut record = IV.to_vec();
        record.extend(body);
        record
    };
    // One ciphertext bit flipped in the first or the second block.
    let flipped = |block: usize| {
        let mut r = build(0);
        r[16 + 16 * block] ^= 0x01;
        r
    };
    [
        build(0),
        build(1),
        build(2),
        build(3),
        flipped(0),
        flipped(1),
    ]
}

/// What is timed: the library's opener, or a deliberately leaky one.
enum Subject {
    Library(Opener),
    Naive { aes: AesCbcKey, mac: HmacKey },
}

impl Subject {
    fn open(&mut self, buf: &mut [u8]) -> bool {
        match self {
            Subject::Library(o) => o.open_in_place(SEQ, CONTENT_TYPE, buf).is_ok(),
            Subject::Naive { aes, mac } => naive_open(aes, mac, buf).is_ok(),
        }
    }
}

/// MAC-then-encrypt TLS 1.2 open as pre-Lucky-Thirteen implementations
/// wrote it: padding checked with early exits, then the MAC computed over
/// the plaintext length the padding implies.
fn naive_open(aes: &AesCbcKey, mac: &HmacKey, buf: &mut [u8]) -> Result<usize, Error> {
    let (iv, body) = buf.split_at_mut(16);
    aes.decrypt(iv, body)?;
    let m = mac.output_len();
    let pad = *body.last().unwrap() as usize;
    if pad + 1 + m > body.len() {
        return Err(Error::BadRecordMac);
    }
    let data_len = body.len() - pad - 1 - m;
    if body[data_len + m..].iter().any(|&b| b as usize != pad) {
        return Err(Error::BadRecordMac);
    }
    let mut ctx = mac.context();
    ctx.update(&header(data_len, ProtocolVersion::Tls12.wire()));
    ctx.update(&body[..data_len]);
    if ctx.finish().as_bytes() != &body[data_len..data_len + m] {
        return Err(Error::BadRecordMac);
    }
    Ok(data_len)
}

struct Outcome {
    n: [u64; N],
    /// Per class: median time of one open, in nanoseconds.
    median_ns: [f64; N],
    /// Per pair: largest |t| over the crops, and the crop it came from.
    max_t: [(f64, String); PAIRS.len()],
}

/// Measures `subject` on the three records for `duration`.
fn measure(
    subject: &mut Subject,
    recs: &[Vec<u8>; N],
    duration: Duration,
    rng: &mut Rng,
) -> Outcome {
    // The answers must be right, or the timing means nothing.
    for (class, rec) in recs.iter().enumerate() {
        let mut b = rec.clone();
        let valid = class == 0 || class == 3;
        // (The control classes are bad MACs: rejected.)
        assert_eq!(subject.open(&mut b), valid, "{}", CLASSES[class]);
    }
    let len = recs[0].len();
    let mut bufs = vec![0u8; len * BATCH];
    let mut sample = |rng: &mut Rng| {
        let class = (rng.next() % N as u64) as usize;
        for chunk in bufs.chunks_mut(len) {
            chunk.copy_from_slice(&recs[class]);
        }
        let start = Instant::now();
        for chunk in bufs.chunks_mut(len) {
            black_box(subject.open(black_box(chunk)));
        }
        let t = start.elapsed().as_nanos() as f64;
        (class, t)
    };

    // Warm up and place the crop thresholds: dudect's percentiles
    // 1 - 0.5^(10 (k + 1) / N) of the pooled distribution.
    let mut calib: Vec<f64> = (0..CALIBRATION).map(|_| sample(rng).1).collect();
    calib.sort_by(f64::total_cmp);
    const CROPS: usize = 10;
    let mut thresholds = vec![f64::INFINITY];
    let mut names = vec!["none".to_string()];
    for k in 0..CROPS {
        let p = 1.0 - 0.5f64.powf(10.0 * (k as f64 + 1.0) / CROPS as f64);
        thresholds.push(calib[((p * CALIBRATION as f64) as usize).min(CALIBRATION - 1)]);
        names.push(format!("p{:.1}", 100.0 * p));
    }

    let mut stats = vec![[Stats::default(); N]; thresholds.len()];
    // A reservoir per class for the medians.
    let mut kept: [Vec<f64>; N] = Default::default();
    let mut n = [0u64; N];
    let deadline = Instant::now() + duration;
    while Instant::now() < deadline {
        for _ in 0..256 {
            let (class, t) = sample(rng);
            n[class] += 1;
            if kept[class].len() < 100_000 {
                kept[class].push(t);
            }
            for (s, &limit) in stats.iter_mut().zip(&thresholds) {
                if t <= limit {
                    s[class].push(t);
                }
            }
        }
    }

    let mut max_t: [(f64, String); PAIRS.len()] = Default::default();
    for (p, &(a, b)) in PAIRS.iter().enumerate() {
        for (s, name) in stats.iter().zip(&names) {
            if s[a].n < 100.0 || s[b].n < 100.0 {
                continue;
            }
            let t = welch_t(&s[a], &s[b]);
            if t.abs() > max_t[p].0.abs() {
                max_t[p] = (t, name.clone());
            }
        }
    }
    let median_ns = kept.map(|mut v| {
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or(0.0) / BATCH as f64
    });
    Outcome {
        n,
        median_ns,
        max_t,
    }
}

fn main() {
    let seconds: f64 = std::env::var("TIMING_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5.0);
    let filter = std::env::var("TIMING_FILTER").unwrap_or_default();
    // `cargo test --benches` runs this without `--bench`: keep that short.
    let duration = if std::env::args().any(|a| a == "--bench") {
        Duration::from_secs_f64(seconds)
    } else {
        Duration::from_millis(100)
    };
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let mut rng = Rng(seed | 1);
    let enc = [0x11u8; 32];
    let mac = [0x22u8; 48];

    println!(
        "dudect-style timing of open_in_place (MAC-then-encrypt, TLS 1.2), {BATCH} opens per \
         measurement, {:.1} s per line; |t| > {THRESHOLD} indicates a leak",
        duration.as_secs_f64()
    );
    println!(
        "{:<14} {:<17} {:>5} {:>41} {:>35}  {:>16} {:>16} {:>16} {:>16} {:>16}",
        "backend",
        "combination",
        "frag",
        "n valid/pad/mac/max/ct0/ct1",
        "median ns valid/pad/mac/max/ct0/ct1",
        "bad-pad~bad-mac",
        "valid~valid-max",
        "valid~bad-pad",
        "valid~bad-mac",
        "ctl ct0~ct1"
    );
    let mut leaks = 0;
    let subjects: Vec<Option<Backend>> = Backend::available().map(Some).chain([None]).collect();
    for backend in subjects {
        for combination in [Combination::Aes128CbcSha1, Combination::Aes256CbcSha384] {
            let config = RecordConfig::new(
                combination,
                ProtocolVersion::Tls12,
                MacOrder::MacThenEncrypt,
            );
            let ek = &enc[..combination.cipher().key_len()];
            let mk = &mac[..combination.mac().tls_key_len()];
            for body_len in [256usize, 1024] {
                let name = backend.map_or("naive", Backend::name);
                let line = format!("{name} {combination} {body_len}");
                if !line.contains(&filter) {
                    continue;
                }
                let mut subject = match backend {
                    Some(b) => {
                        let keys = RecordKeys {
                            enc_key: ek,
                            mac_key: mk,
                            iv: None,
                        };
                        Subject::Library(Opener::with_backend(config, keys, b).expect("opener"))
                    }
                    None => Subject::Naive {
                        aes: AesCbcKey::new(combination.cipher(), ek).expect("key"),
                        mac: HmacKey::new(combination.mac(), mk).expect("key"),
                    },
                };
                let recs = records(config, ek, mk, body_len);
                let out = measure(&mut subject, &recs, duration, &mut rng);
                let cells: Vec<String> = out
                    .max_t
                    .iter()
                    .map(|(t, crop)| {
                        let flag = if t.abs() > THRESHOLD { "!" } else { " " };
                        format!("{t:>8.2}{flag}({crop:>5})")
                    })
                    .collect();
                // The first two pairs compare records with the same public
                // outcome: any difference there is a leak.
                if backend.is_some() && out.max_t[..2].iter().any(|(t, _)| t.abs() > THRESHOLD) {
                    leaks += 1;
                }
                let m = out.median_ns;
                println!(
                    "{:<14} {:<17} {:>5} {:>41} {:>35}  {:>16} {:>16} {:>16} {:>16} {:>16}",
                    name,
                    combination.name(),
                    recs[0].len(),
                    out.n.map(|x| x.to_string()).join("/"),
                    m.map(|x| format!("{x:.0}")).join("/"),
                    cells[0],
                    cells[1],
                    cells[2],
                    cells[3],
                    cells[4]
                );
            }
        }
    }
    println!(
        "t: Welch's t of the first class's time minus the second's, the largest |t| over the \
         uncropped and 10 cropped distributions (crop in parentheses); ! marks |t| > {THRESHOLD}. \
         `naive` is a variable-time open written in this bench, for comparison. ctl: the \
         control, two bad-MAC classes differing only in which ciphertext bit is flipped: \
         the |t| of no signal."
    );
    println!(
        "library lines over the threshold in bad-pad~bad-mac or valid~valid-max (same public \
         outcome): {leaks}"
    );
}
