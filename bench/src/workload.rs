//! What is measured, and how each result is checked.
//!
//! A [`Job`] builds, on the thread that measures it, a [`Bench`]: the keyed
//! objects of cbc-hmac on the backend under test (and, with `--compare`,
//! OpenSSL's) plus the buffers both work on. [`Bench::time`] times one
//! implementation with [`measure::run`] and then checks the result of its
//! last operation against independent objects on the [`REFERENCE`] backend,
//! so that a broken code path is reported instead of timed.
//! [`Bench::agree`] checks, before any timing, that cbc-hmac and OpenSSL
//! give the same results for the same inputs, so that a comparison never
//! compares different work.

use std::fmt;
use std::hint::black_box;
use std::time::Duration;

use cbc_hmac::{
    AesCbcKey, Backend, Cipher, Combination, HmacKey, MacAlgorithm, MacOrder, Opener,
    ProtocolVersion, RecordConfig, RecordKeys, Sealer, digest_with_backend,
};

use crate::measure::{self, Measurement};
use crate::output::Section;
use crate::reference;

/// The backend the checks run on: the RustCrypto crates, always available.
pub const REFERENCE: Backend = Backend::Portable;

/// Record content type: application data.
pub const CONTENT_TYPE: u8 = 23;

/// Why a measurement has no result.
#[derive(Debug)]
pub enum Failure {
    /// cbc-hmac returned an error.
    Library(cbc_hmac::Error),
    /// OpenSSL (through `openssl-ref`) returned an error.
    OpenSsl(String),
    /// The result of the measured operation was wrong, or the two
    /// implementations disagree.
    Check(String),
}

impl From<cbc_hmac::Error> for Failure {
    fn from(e: cbc_hmac::Error) -> Self {
        Failure::Library(e)
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Library(e) => write!(f, "library error: {e}"),
            Failure::OpenSsl(e) => write!(f, "OpenSSL error: {e}"),
            Failure::Check(msg) => write!(f, "check failed: {msg}"),
        }
    }
}

fn check(ok: bool, msg: impl FnOnce() -> String) -> Result<(), Failure> {
    if ok {
        Ok(())
    } else {
        Err(Failure::Check(msg()))
    }
}

/// Deterministic, non-constant test bytes.
fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed) ^ (i >> 8) as u8)
        .collect()
}

/// Encryption and MAC keys for `combination`.
fn record_keys(combination: Combination) -> (Vec<u8>, Vec<u8>) {
    (
        pattern(combination.cipher().key_len(), 0x11),
        pattern(combination.mac().tls_key_len(), 0x22),
    )
}

fn record_config(combination: Combination) -> RecordConfig {
    RecordConfig::new(
        combination,
        ProtocolVersion::Tls12,
        MacOrder::MacThenEncrypt,
    )
}

/// Which implementation a measurement times.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// cbc-hmac on the backend under test.
    Ours,
    /// OpenSSL's libcrypto (`--compare openssl`).
    OpenSsl,
}

impl Side {
    /// `cbc-hmac` or `OpenSSL`.
    pub fn name(self) -> &'static str {
        match self {
            Side::Ours => "cbc-hmac",
            Side::OpenSsl => "OpenSSL",
        }
    }
}

/// The keyed objects and buffers of one job on one thread.
pub trait Bench {
    /// Checks that cbc-hmac and OpenSSL agree on this job's work (only
    /// built with `compare`): same outputs for the same inputs, and each
    /// opens what the other sealed.
    fn agree(&mut self) -> Result<(), Failure>;

    /// Times `side` for about `target`, then checks the result of its last
    /// operation (untimed).
    fn time(&mut self, side: Side, target: Duration) -> Result<Measurement, Failure>;
}

/// TLS 1.2 MAC-then-encrypt record protection of one combination, both
/// directions, keyed once: cbc-hmac's [`OurRecords`] or OpenSSL's
/// [`reference::Records`].
pub trait RecordImpl {
    /// Seals the plaintext at the payload offset of `buf` in place (as the
    /// implementation does per record in real use); returns the record
    /// length.
    fn seal_in_place(&mut self, seq: u64, buf: &mut [u8], payload: usize)
    -> Result<usize, Failure>;

    /// Seals `plaintext` with the explicit IV `iv` (for the checks).
    fn seal_with_iv(
        &mut self,
        seq: u64,
        iv: &[u8; 16],
        plaintext: &[u8],
    ) -> Result<Vec<u8>, Failure>;

    /// Opens `record` in place: the plaintext's start and length in
    /// `record`, or `None` when the record is rejected (bad MAC or padding).
    fn open_in_place(
        &mut self,
        seq: u64,
        record: &mut [u8],
    ) -> Result<Option<(usize, usize)>, Failure>;
}

/// cbc-hmac's sealer and opener for one combination on one backend.
pub struct OurRecords {
    sealer: Sealer,
    opener: Opener,
}

impl OurRecords {
    /// Keys both directions of `combination` on `backend`.
    pub fn new(combination: Combination, backend: Backend) -> Result<Self, Failure> {
        let config = record_config(combination);
        let (enc_key, mac_key) = record_keys(combination);
        let keys = RecordKeys {
            enc_key: &enc_key,
            mac_key: &mac_key,
            iv: None,
        };
        Ok(OurRecords {
            sealer: Sealer::with_backend(config, keys, backend)?,
            opener: Opener::with_backend(config, keys, backend)?,
        })
    }
}

impl RecordImpl for OurRecords {
    #[inline]
    fn seal_in_place(
        &mut self,
        seq: u64,
        buf: &mut [u8],
        payload: usize,
    ) -> Result<usize, Failure> {
        Ok(self.sealer.seal_in_place(seq, CONTENT_TYPE, buf, payload)?)
    }

    fn seal_with_iv(
        &mut self,
        seq: u64,
        iv: &[u8; 16],
        plaintext: &[u8],
    ) -> Result<Vec<u8>, Failure> {
        let offset = self.sealer.payload_offset();
        let mut record = vec![0u8; self.sealer.sealed_len(plaintext.len())];
        record[offset..offset + plaintext.len()].copy_from_slice(plaintext);
        let n = self.sealer.seal_in_place_with_iv(
            seq,
            CONTENT_TYPE,
            &mut record,
            plaintext.len(),
            iv,
        )?;
        record.truncate(n);
        Ok(record)
    }

    #[inline]
    fn open_in_place(
        &mut self,
        seq: u64,
        record: &mut [u8],
    ) -> Result<Option<(usize, usize)>, Failure> {
        let base = record.as_ptr() as usize;
        match self.opener.open_in_place(seq, CONTENT_TYPE, record) {
            Ok(plaintext) => Ok(Some((plaintext.as_ptr() as usize - base, plaintext.len()))),
            Err(cbc_hmac::Error::BadRecordMac) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }
}

/// A function of one message into at most 64 bytes: HMAC keyed once
/// (cbc-hmac's [`HmacKey`], OpenSSL's [`reference::Mac`]) or a plain hash
/// ([`OurHash`], [`reference::Hash`]).
pub trait MacImpl {
    /// The tag (or digest) of `message` into `out`; returns its length.
    fn mac(&mut self, message: &[u8], out: &mut [u8; 64]) -> Result<usize, Failure>;
}

impl MacImpl for HmacKey {
    #[inline]
    fn mac(&mut self, message: &[u8], out: &mut [u8; 64]) -> Result<usize, Failure> {
        Ok(HmacKey::mac(self, message, out)?)
    }
}

/// [`digest_with_backend`] with one algorithm on one backend.
pub struct OurHash {
    algorithm: MacAlgorithm,
    backend: Backend,
}

impl MacImpl for OurHash {
    #[inline]
    fn mac(&mut self, message: &[u8], out: &mut [u8; 64]) -> Result<usize, Failure> {
        Ok(digest_with_backend(
            self.algorithm,
            message,
            out,
            self.backend,
        )?)
    }
}

/// AES-CBC keyed once, in place on whole blocks: cbc-hmac's [`AesCbcKey`]
/// or OpenSSL's [`reference::Cbc`].
pub trait CbcImpl {
    /// Encrypts `data` in place with `iv`.
    fn encrypt(&mut self, iv: &[u8; 16], data: &mut [u8]) -> Result<(), Failure>;
    /// Decrypts `data` in place with `iv`.
    fn decrypt(&mut self, iv: &[u8; 16], data: &mut [u8]) -> Result<(), Failure>;

    /// [`CbcImpl::encrypt`] or [`CbcImpl::decrypt`].
    fn apply(
        &mut self,
        direction: Direction,
        iv: &[u8; 16],
        data: &mut [u8],
    ) -> Result<(), Failure> {
        match direction {
            Direction::Encrypt => self.encrypt(iv, data),
            Direction::Decrypt => self.decrypt(iv, data),
        }
    }
}

impl CbcImpl for AesCbcKey {
    #[inline]
    fn encrypt(&mut self, iv: &[u8; 16], data: &mut [u8]) -> Result<(), Failure> {
        black_box(AesCbcKey::encrypt(self, iv, data)?);
        Ok(())
    }

    #[inline]
    fn decrypt(&mut self, iv: &[u8; 16], data: &mut [u8]) -> Result<(), Failure> {
        black_box(AesCbcKey::decrypt(self, iv, data)?);
        Ok(())
    }
}

/// One measurement of the report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Job {
    /// Seal records of a combination ([`SealBench`]).
    Seal(Combination),
    /// Open records of a combination ([`OpenBench`]).
    Open(Combination),
    /// HMAC with an algorithm ([`MacBench`]).
    Mac(MacAlgorithm),
    /// The plain hash under an HMAC algorithm ([`HashBench`]).
    Hash(MacAlgorithm),
    /// AES-CBC in one direction ([`CipherBench`]).
    Cipher(Cipher, Direction),
}

impl Job {
    /// The jobs of the report's four sections for `combinations`: seal
    /// and open of each, then the MACs, hash functions and ciphers they
    /// use. SHA-384 brings SHA-512 along (HMAC-SHA512 and the hash): the
    /// two share their kernel, and SSH and JOSE use SHA-512.
    pub fn sections(combinations: &[Combination]) -> [(Section, Vec<Job>); 4] {
        let records = combinations
            .iter()
            .flat_map(|&c| [Job::Seal(c), Job::Open(c)])
            .collect();
        let used = |m: MacAlgorithm| {
            combinations.iter().any(|c| {
                c.mac() == m
                    || (m == MacAlgorithm::HmacSha512 && c.mac() == MacAlgorithm::HmacSha384)
            })
        };
        let macs = MacAlgorithm::ALL
            .into_iter()
            .filter(|&m| used(m))
            .map(Job::Mac)
            .collect();
        let hashes = MacAlgorithm::ALL
            .into_iter()
            .filter(|&m| used(m))
            .map(Job::Hash)
            .collect();
        let ciphers = Cipher::ALL
            .into_iter()
            .filter(|&x| combinations.iter().any(|c| c.cipher() == x))
            .flat_map(|x| Direction::ALL.map(|d| Job::Cipher(x, d)))
            .collect();
        [
            (Section::Combinations, records),
            (Section::Macs, macs),
            (Section::Hashes, hashes),
            (Section::Ciphers, ciphers),
        ]
    }

    /// What is measured: `AES-128-CBC-SHA1`, `HMAC-SHA1`, `SHA1` or
    /// `AES-128-CBC`.
    pub fn name(self) -> String {
        match self {
            Job::Seal(c) | Job::Open(c) => c.name().to_string(),
            Job::Mac(m) => m.to_string(),
            Job::Hash(m) => hash_name(m).to_string(),
            Job::Cipher(c, _) => c.name().to_string(),
        }
    }

    /// `seal`, `open`, `mac`, `hash`, `encrypt` or `decrypt`.
    pub fn direction(self) -> &'static str {
        match self {
            Job::Seal(_) => "seal",
            Job::Open(_) => "open",
            Job::Mac(_) => "mac",
            Job::Hash(_) => "hash",
            Job::Cipher(_, d) => d.name(),
        }
    }

    /// What OpenSSL runs for this job with `--compare openssl`.
    pub fn openssl_impl(self) -> String {
        match self {
            Job::Seal(c) | Job::Open(c) => match c.mac() {
                MacAlgorithm::HmacSha384 => format!(
                    "EVP {} + HMAC-SHA384 over the TLS record layout",
                    c.cipher().name()
                ),
                _ => format!(
                    "stitched {}-HMAC-{} in TLS record mode (EVP_CTRL_AEAD_TLS1_AAD)",
                    c.cipher().name(),
                    hash_name(c.mac())
                ),
            },
            Job::Mac(m) => format!("HMAC-{} (HMAC_CTX keyed once)", hash_name(m)),
            Job::Hash(m) => format!(
                "{0}_Init/Update/Final (the low-level API, no EVP lookup)",
                hash_name(m)
            ),
            Job::Cipher(c, _) => format!("EVP {} (keyed once)", c.name()),
        }
    }

    /// Builds the keyed objects and buffers of this job on the calling
    /// thread: cbc-hmac's on `backend`, and OpenSSL's when `compare`.
    pub fn bench(
        self,
        backend: Backend,
        payload: usize,
        compare: bool,
    ) -> Result<Box<dyn Bench>, Failure> {
        Ok(match self {
            Job::Seal(c) => Box::new(SealBench::new(c, backend, payload, compare)?),
            Job::Open(c) => Box::new(OpenBench::new(c, backend, payload, compare)?),
            Job::Mac(m) => Box::new(MacBench::new(m, backend, payload, compare)?),
            Job::Hash(m) => Box::new(HashBench::new(m, backend, payload, compare)?),
            Job::Cipher(c, d) => Box::new(CipherBench::new(c, d, backend, payload, compare)?),
        })
    }
}

/// `SHA1`, `SHA256`, `SHA384` or `SHA512`.
fn hash_name(m: MacAlgorithm) -> &'static str {
    m.name()
}

fn theirs<T>(t: &mut Option<T>) -> Result<&mut T, Failure> {
    t.as_mut()
        .ok_or_else(|| Failure::Check("OpenSSL was not set up for this run".into()))
}

/// `opener` (named `who`) must open `record` to exactly `plaintext`.
fn opens_to(
    opener: &mut dyn RecordImpl,
    who: &str,
    what: &str,
    seq: u64,
    record: &[u8],
    plaintext: &[u8],
) -> Result<(), Failure> {
    let mut copy = record.to_vec();
    match opener.open_in_place(seq, &mut copy)? {
        Some((start, len)) => check(copy[start..start + len] == *plaintext, || {
            format!(
                "{what} opens with {who} to {len} bytes that differ from the {} bytes sealed",
                plaintext.len()
            )
        }),
        None => Err(Failure::Check(format!("{who} rejects {what}"))),
    }
}

/// Seals `payload`-byte records in place with increasing sequence numbers,
/// both implementations on the same buffer.
///
/// The buffer is sealed over and over without restoring the plaintext (as
/// `openssl speed` and `gnutls-cli --benchmark-ciphers` do), so after the
/// timed loop the sealer seals one more record, untimed, from a copy of its
/// input kept for the check: independent openers (the portable backend's,
/// and with `--compare` the other implementation's) must open that record
/// to exactly that input.
///
/// cbc-hmac draws a fresh explicit IV per record from its IV generator;
/// OpenSSL's stitched cipher is driven as libssl drives it
/// ([`openssl_ref::StitchedTlsCipher::seal_in_place_libssl`]: the IV block
/// already in the buffer is encrypted in the chain; libssl's `RAND_bytes`
/// for it is not timed).
pub struct SealBench {
    payload: usize,
    ours: OurRecords,
    reference: OurRecords,
    theirs: Option<reference::Records>,
    buf: Vec<u8>,
    offset: usize,
    sealed_len: usize,
    seq: u64,
}

impl SealBench {
    fn new(
        combination: Combination,
        backend: Backend,
        payload: usize,
        compare: bool,
    ) -> Result<Self, Failure> {
        let ours = OurRecords::new(combination, backend)?;
        let reference = OurRecords::new(combination, REFERENCE)?;
        let theirs = if compare {
            let (enc_key, mac_key) = record_keys(combination);
            Some(reference::Records::new(combination, &enc_key, &mac_key)?)
        } else {
            None
        };
        let offset = ours.sealer.payload_offset();
        let sealed_len = ours.sealer.sealed_len(payload);
        let mut buf = vec![0u8; sealed_len];
        buf[offset..offset + payload].copy_from_slice(&pattern(payload, 0x33));
        Ok(SealBench {
            payload,
            ours,
            reference,
            theirs,
            buf,
            offset,
            sealed_len,
            seq: 0,
        })
    }
}

/// The timed loop of [`SealBench`], monomorphic in the implementation.
fn time_seal<R: RecordImpl>(
    r: &mut R,
    buf: &mut [u8],
    payload: usize,
    seq: &mut u64,
    target: Duration,
) -> Result<Measurement, Failure> {
    measure::run(target, || {
        *seq += 1;
        let n = r.seal_in_place(black_box(*seq), buf, payload)?;
        black_box(n);
        Ok::<(), Failure>(())
    })
}

impl Bench for SealBench {
    fn agree(&mut self) -> Result<(), Failure> {
        let theirs = theirs(&mut self.theirs)?;
        let plaintext = pattern(self.payload, 0x5a);
        let (seq, iv) = (0x1122_3344_5566_7788, [0xa5; 16]);
        let a = self.ours.seal_with_iv(seq, &iv, &plaintext)?;
        let b = theirs.seal_with_iv(seq, &iv, &plaintext)?;
        check(a == b, || {
            format!(
                "for the same IV, cbc-hmac and OpenSSL seal different records ({} and {} bytes)",
                a.len(),
                b.len()
            )
        })?;
        opens_to(theirs, "OpenSSL", "cbc-hmac's record", seq, &a, &plaintext)?;
        opens_to(
            &mut self.ours,
            "cbc-hmac",
            "OpenSSL's record",
            seq,
            &b,
            &plaintext,
        )
    }

    fn time(&mut self, side: Side, target: Duration) -> Result<Measurement, Failure> {
        let (buf, payload, seq) = (&mut self.buf, self.payload, &mut self.seq);
        let m = match side {
            Side::Ours => time_seal(&mut self.ours, buf, payload, seq, target)?,
            Side::OpenSsl => time_seal(theirs(&mut self.theirs)?, buf, payload, seq, target)?,
        };

        self.seq += 1;
        let seq = self.seq;
        let (offset, payload) = (self.offset, self.payload);
        let plaintext = self.buf[offset..offset + payload].to_vec();
        let n = match side {
            Side::Ours => self.ours.seal_in_place(seq, &mut self.buf, payload)?,
            Side::OpenSsl => {
                theirs(&mut self.theirs)?.seal_in_place(seq, &mut self.buf, payload)?
            }
        };
        let sealed_len = self.sealed_len;
        check(n == sealed_len, || {
            format!("sealed {n} bytes, sealed_len() says {sealed_len}")
        })?;
        let record = self.buf[..n].to_vec();
        // (Short payloads may match their ciphertext by chance: 1 in 256 for
        // one byte.)
        check(
            payload < 16 || record[offset..offset + payload] != plaintext[..],
            || "the sealed record carries the plaintext in clear".into(),
        )?;
        let what = format!("the last record sealed by {}", side.name());
        opens_to(
            &mut self.reference,
            "an independent opener (portable backend)",
            &what,
            seq,
            &record,
            &plaintext,
        )?;
        match side {
            Side::Ours => {
                if let Some(theirs) = self.theirs.as_mut() {
                    opens_to(theirs, "OpenSSL", &what, seq, &record, &plaintext)?;
                }
            }
            Side::OpenSsl => opens_to(&mut self.ours, "cbc-hmac", &what, seq, &record, &plaintext)?,
        }
        Ok(m)
    }
}

/// Opens one `payload`-byte record over and over: each operation copies the
/// sealed record into the work buffer (opening decrypts in place) and opens
/// it there, so the copy is part of the measured work. Both implementations
/// open the same record from the same buffers.
///
/// The record is sealed once by an independent sealer (portable backend);
/// after the timed loop the last open must have returned exactly the
/// plaintext, and a tampered copy must be rejected.
pub struct OpenBench {
    ours: OurRecords,
    theirs: Option<reference::Records>,
    plaintext: Vec<u8>,
    sealed: Vec<u8>,
    work: Vec<u8>,
    seq: u64,
}

impl OpenBench {
    fn new(
        combination: Combination,
        backend: Backend,
        payload: usize,
        compare: bool,
    ) -> Result<Self, Failure> {
        let ours = OurRecords::new(combination, backend)?;
        let mut reference = OurRecords::new(combination, REFERENCE)?;
        let theirs = if compare {
            let (enc_key, mac_key) = record_keys(combination);
            Some(reference::Records::new(combination, &enc_key, &mac_key)?)
        } else {
            None
        };
        let plaintext = pattern(payload, 0x44);
        let seq = 0x0123_4567_89ab_cdef;
        let sealed = reference.seal_with_iv(seq, &[0x3c; 16], &plaintext)?;
        let work = vec![0u8; sealed.len()];
        Ok(OpenBench {
            ours,
            theirs,
            plaintext,
            sealed,
            work,
            seq,
        })
    }
}

/// The timed loop of [`OpenBench`], monomorphic in the implementation;
/// returns the measurement and where the last open found the plaintext.
fn time_open<R: RecordImpl>(
    r: &mut R,
    sealed: &[u8],
    work: &mut [u8],
    seq: u64,
    target: Duration,
) -> Result<(Measurement, (usize, usize)), Failure> {
    let mut last = (0, 0);
    let m = measure::run(target, || {
        work.copy_from_slice(black_box(sealed));
        last = r
            .open_in_place(seq, work)?
            .ok_or_else(|| Failure::Check("a valid record was rejected".into()))?;
        Ok::<(), Failure>(())
    })?;
    Ok((m, last))
}

impl Bench for OpenBench {
    fn agree(&mut self) -> Result<(), Failure> {
        let theirs = theirs(&mut self.theirs)?;
        let what = "the record sealed by the portable backend";
        opens_to(
            theirs,
            "OpenSSL",
            what,
            self.seq,
            &self.sealed,
            &self.plaintext,
        )?;
        let seq = self.seq.wrapping_add(1);
        let record = theirs.seal_with_iv(seq, &[0xc3; 16], &self.plaintext)?;
        opens_to(
            &mut self.ours,
            "cbc-hmac",
            "OpenSSL's record",
            seq,
            &record,
            &self.plaintext,
        )
    }

    fn time(&mut self, side: Side, target: Duration) -> Result<Measurement, Failure> {
        let (sealed, work, seq) = (&self.sealed[..], &mut self.work[..], self.seq);
        let r: &mut dyn RecordImpl;
        let (m, (start, len)) = match side {
            Side::Ours => {
                let out = time_open(&mut self.ours, sealed, work, seq, target)?;
                r = &mut self.ours;
                out
            }
            Side::OpenSsl => {
                let theirs = theirs(&mut self.theirs)?;
                let out = time_open(theirs, sealed, work, seq, target)?;
                r = theirs;
                out
            }
        };

        let payload = self.plaintext.len();
        check(work[start..start + len] == self.plaintext[..], || {
            format!(
                "the last open by {} returned {len} bytes at offset {start} that differ from \
                 the {payload} bytes sealed",
                side.name()
            )
        })?;
        work.copy_from_slice(sealed);
        *work.last_mut().expect("a record is never empty") ^= 1;
        let tampered = r.open_in_place(seq, work)?;
        check(tampered.is_none(), || {
            format!("{} did not reject a tampered record", side.name())
        })?;
        Ok(m)
    }
}

/// HMAC over a `payload`-byte message with a key prepared once; the last tag
/// must equal HMAC computed from the plain hash function
/// (`H(K ^ opad || H(K ^ ipad || m))`) on the reference backend.
pub struct MacBench {
    algorithm: MacAlgorithm,
    key_bytes: Vec<u8>,
    ours: HmacKey,
    theirs: Option<reference::Mac>,
    message: Vec<u8>,
    expected: Vec<u8>,
}

impl MacBench {
    fn new(
        algorithm: MacAlgorithm,
        backend: Backend,
        payload: usize,
        compare: bool,
    ) -> Result<Self, Failure> {
        let key_bytes = pattern(algorithm.tls_key_len(), 0x55);
        let ours = HmacKey::with_backend(algorithm, &key_bytes, backend)?;
        let theirs = if compare {
            Some(reference::Mac::new(algorithm, &key_bytes)?)
        } else {
            None
        };
        let message = pattern(payload, 0x66);
        let expected = hmac_from_hash(algorithm, &key_bytes, &message)?;
        Ok(MacBench {
            algorithm,
            key_bytes,
            ours,
            theirs,
            message,
            expected,
        })
    }
}

fn time_mac<M: MacImpl>(
    m: &mut M,
    message: &[u8],
    target: Duration,
) -> Result<(Measurement, [u8; 64], usize), Failure> {
    let mut tag = [0u8; 64];
    let mut len = 0;
    let measurement = measure::run(target, || {
        len = m.mac(black_box(message), &mut tag)?;
        black_box(&tag);
        Ok::<(), Failure>(())
    })?;
    Ok((measurement, tag, len))
}

impl Bench for MacBench {
    fn agree(&mut self) -> Result<(), Failure> {
        let mut a = [0u8; 64];
        let mut b = [0u8; 64];
        let n = MacImpl::mac(&mut self.ours, &self.message, &mut a)?;
        let k = theirs(&mut self.theirs)?.mac(&self.message, &mut b)?;
        check(a[..n] == b[..k], || {
            format!(
                "cbc-hmac and OpenSSL compute different {} tags",
                self.algorithm
            )
        })
    }

    fn time(&mut self, side: Side, target: Duration) -> Result<Measurement, Failure> {
        let (m, tag, len) = match side {
            Side::Ours => time_mac(&mut self.ours, &self.message, target)?,
            Side::OpenSsl => time_mac(theirs(&mut self.theirs)?, &self.message, target)?,
        };
        let algorithm = self.algorithm;
        let tag = &tag[..len];
        check(tag == &self.expected[..], || {
            format!(
                "the last {algorithm} tag of {} differs from HMAC computed from the hash function",
                side.name()
            )
        })?;
        let reference = HmacKey::with_backend(algorithm, &self.key_bytes, REFERENCE)?;
        reference.verify(&self.message, tag).map_err(|e| {
            Failure::Check(format!(
                "the last {algorithm} tag of {} does not verify: {e}",
                side.name()
            ))
        })?;
        Ok(m)
    }
}

/// RFC 2104 from the hash function alone, for a key no longer than a block.
fn hmac_from_hash(algorithm: MacAlgorithm, key: &[u8], message: &[u8]) -> Result<Vec<u8>, Failure> {
    let block = algorithm.block_len();
    assert!(key.len() <= block);
    let padded = |byte: u8| -> Vec<u8> {
        let mut k = key.to_vec();
        k.resize(block, 0);
        k.iter_mut().for_each(|b| *b ^= byte);
        k
    };
    let n = algorithm.output_len();
    let mut inner = padded(0x36);
    inner.extend_from_slice(message);
    let mut digest = [0u8; 64];
    digest_with_backend(algorithm, &inner, &mut digest, REFERENCE)?;
    let mut outer = padded(0x5c);
    outer.extend_from_slice(&digest[..n]);
    digest_with_backend(algorithm, &outer, &mut digest, REFERENCE)?;
    Ok(digest[..n].to_vec())
}

/// A plain hash of a `payload`-byte message; the last digest must equal the
/// one the reference backend computes.
pub struct HashBench {
    algorithm: MacAlgorithm,
    ours: OurHash,
    theirs: Option<reference::Hash>,
    message: Vec<u8>,
    expected: Vec<u8>,
}

impl HashBench {
    fn new(
        algorithm: MacAlgorithm,
        backend: Backend,
        payload: usize,
        compare: bool,
    ) -> Result<Self, Failure> {
        let theirs = if compare {
            Some(reference::Hash::new(algorithm)?)
        } else {
            None
        };
        let message = pattern(payload, 0x77);
        let mut expected = [0u8; 64];
        let n = digest_with_backend(algorithm, &message, &mut expected, REFERENCE)?;
        // An unavailable backend fails here, as the keyed objects do.
        digest_with_backend(algorithm, &message, &mut [0; 64], backend)?;
        Ok(HashBench {
            algorithm,
            ours: OurHash { algorithm, backend },
            theirs,
            message,
            expected: expected[..n].to_vec(),
        })
    }
}

impl Bench for HashBench {
    fn agree(&mut self) -> Result<(), Failure> {
        let mut a = [0u8; 64];
        let mut b = [0u8; 64];
        let n = self.ours.mac(&self.message, &mut a)?;
        let k = theirs(&mut self.theirs)?.mac(&self.message, &mut b)?;
        check(a[..n] == b[..k], || {
            format!(
                "cbc-hmac and OpenSSL compute different {} hashes",
                hash_name(self.algorithm)
            )
        })
    }

    fn time(&mut self, side: Side, target: Duration) -> Result<Measurement, Failure> {
        let (m, out, len) = match side {
            Side::Ours => time_mac(&mut self.ours, &self.message, target)?,
            Side::OpenSsl => time_mac(theirs(&mut self.theirs)?, &self.message, target)?,
        };
        check(out[..len] == self.expected[..], || {
            format!(
                "the last {} hash of {} differs from the reference backend's",
                hash_name(self.algorithm),
                side.name()
            )
        })?;
        Ok(m)
    }
}

/// The direction of a cipher measurement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// CBC encryption.
    Encrypt,
    /// CBC decryption.
    Decrypt,
}

impl Direction {
    /// Both directions.
    pub const ALL: [Direction; 2] = [Direction::Encrypt, Direction::Decrypt];

    /// `encrypt` or `decrypt`.
    pub fn name(self) -> &'static str {
        match self {
            Direction::Encrypt => "encrypt",
            Direction::Decrypt => "decrypt",
        }
    }

    fn inverse(self) -> Direction {
        match self {
            Direction::Encrypt => Direction::Decrypt,
            Direction::Decrypt => Direction::Encrypt,
        }
    }
}

/// AES-CBC over `payload` bytes rounded up to whole blocks, in place, with a
/// key expanded once and a fixed IV, both implementations on the same
/// buffer. Like [`SealBench`], the buffer is transformed over and over;
/// after the timed loop one more call runs on a kept copy of its input, and
/// the reference backend's inverse must give that input back.
pub struct CipherBench {
    cipher: Cipher,
    direction: Direction,
    ours: AesCbcKey,
    reference: AesCbcKey,
    theirs: Option<reference::Cbc>,
    buf: Vec<u8>,
    iv: [u8; 16],
}

impl CipherBench {
    fn new(
        cipher: Cipher,
        direction: Direction,
        backend: Backend,
        payload: usize,
        compare: bool,
    ) -> Result<Self, Failure> {
        let key_bytes = pattern(cipher.key_len(), 0x77);
        let theirs = if compare {
            Some(reference::Cbc::new(&key_bytes)?)
        } else {
            None
        };
        Ok(CipherBench {
            cipher,
            direction,
            ours: AesCbcKey::with_backend(cipher, &key_bytes, backend)?,
            reference: AesCbcKey::with_backend(cipher, &key_bytes, REFERENCE)?,
            theirs,
            buf: pattern(payload.next_multiple_of(cipher.block_len()), 0x88),
            // A fixed IV. (Chaining each call's returned IV into the next
            // would make a one-block buffer a fixed point: E(c ^ c) = E(0).)
            iv: [0x99; 16],
        })
    }
}

fn time_cbc<C: CbcImpl>(
    c: &mut C,
    direction: Direction,
    iv: &[u8; 16],
    buf: &mut [u8],
    target: Duration,
) -> Result<Measurement, Failure> {
    match direction {
        Direction::Encrypt => measure::run(target, || c.encrypt(black_box(iv), buf)),
        Direction::Decrypt => measure::run(target, || c.decrypt(black_box(iv), buf)),
    }
}

impl Bench for CipherBench {
    fn agree(&mut self) -> Result<(), Failure> {
        let mut a = self.buf.clone();
        let mut b = self.buf.clone();
        self.ours.apply(self.direction, &self.iv, &mut a)?;
        theirs(&mut self.theirs)?.apply(self.direction, &self.iv, &mut b)?;
        check(a == b, || {
            format!(
                "cbc-hmac and OpenSSL {} to different results with {}",
                self.direction.name(),
                self.cipher
            )
        })
    }

    fn time(&mut self, side: Side, target: Duration) -> Result<Measurement, Failure> {
        let (direction, iv) = (self.direction, self.iv);
        let m = match side {
            Side::Ours => time_cbc(&mut self.ours, direction, &iv, &mut self.buf, target)?,
            Side::OpenSsl => time_cbc(
                theirs(&mut self.theirs)?,
                direction,
                &iv,
                &mut self.buf,
                target,
            )?,
        };

        let input = self.buf.clone();
        let mut output = input.clone();
        match side {
            Side::Ours => self.ours.apply(direction, &iv, &mut output)?,
            Side::OpenSsl => theirs(&mut self.theirs)?.apply(direction, &iv, &mut output)?,
        }
        let mut back = output.clone();
        self.reference.apply(direction.inverse(), &iv, &mut back)?;
        let (cipher, dir, who) = (self.cipher, direction.name(), side.name());
        check(output != input, || {
            format!("{cipher} {dir} by {who} left the data unchanged")
        })?;
        check(back == input, || {
            format!("{cipher} {dir} by {who}: the reference inverse does not give the input back")
        })?;
        self.buf = output;
        Ok(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHORT: Duration = Duration::from_millis(5);

    #[test]
    fn every_workload_passes_its_checks() {
        let sections = Job::sections(&Combination::ALL);
        let counts = sections.each_ref().map(|(_, jobs)| jobs.len());
        // HMAC-SHA512 and the four hashes ride along with SHA-384.
        assert_eq!(counts, [10, 4, 4, 4]);
        for backend in Backend::available() {
            for payload in [1, 16, 1000, 16384] {
                for (_, jobs) in &sections {
                    for job in jobs {
                        let mut bench = job
                            .bench(backend, payload, false)
                            .unwrap_or_else(|e| panic!("{job:?} {payload}: {e}"));
                        bench
                            .time(Side::Ours, SHORT)
                            .unwrap_or_else(|e| panic!("{job:?} {payload}: {e}"));
                    }
                }
            }
        }
    }

    /// With OpenSSL: the two agree, and each side's checks pass.
    #[cfg(feature = "openssl")]
    #[test]
    fn openssl_agrees_and_passes_the_checks() {
        let sections = Job::sections(&Combination::ALL);
        let backend = Backend::detect();
        for payload in [1, 16, 1000, 16384] {
            for (_, jobs) in &sections {
                for job in jobs {
                    let mut bench = job
                        .bench(backend, payload, true)
                        .unwrap_or_else(|e| panic!("{job:?} {payload}: {e}"));
                    bench
                        .agree()
                        .unwrap_or_else(|e| panic!("{job:?} {payload}: {e}"));
                    for side in [Side::Ours, Side::OpenSsl, Side::Ours] {
                        bench
                            .time(side, SHORT)
                            .unwrap_or_else(|e| panic!("{job:?} {payload} {side:?}: {e}"));
                    }
                }
            }
        }
    }

    #[test]
    fn sections_follow_the_selected_combinations() {
        let [records, macs, hashes, ciphers] = Job::sections(&[Combination::Aes256CbcSha384]);
        assert_eq!(records.1.len(), 2);
        let sha2 = [MacAlgorithm::HmacSha384, MacAlgorithm::HmacSha512];
        assert_eq!(macs.1, sha2.map(Job::Mac));
        assert_eq!(hashes.1, sha2.map(Job::Hash));
        let [_, macs, hashes, _] = Job::sections(&[Combination::Aes128CbcSha1]);
        assert_eq!(macs.1, [Job::Mac(MacAlgorithm::HmacSha1)]);
        assert_eq!(hashes.1, [Job::Hash(MacAlgorithm::HmacSha1)]);
        assert_eq!(
            ciphers.1,
            Direction::ALL.map(|d| Job::Cipher(Cipher::Aes256Cbc, d))
        );
        assert_eq!(Job::Mac(MacAlgorithm::HmacSha1).name(), "HMAC-SHA1");
        let sha384 = Job::Hash(MacAlgorithm::HmacSha384);
        assert_eq!(
            (sha384.name().as_str(), sha384.direction()),
            ("SHA384", "hash")
        );
        assert!(
            sha384
                .openssl_impl()
                .starts_with("SHA384_Init/Update/Final")
        );
        assert!(
            Job::Seal(Combination::Aes128CbcSha1)
                .openssl_impl()
                .starts_with("stitched AES-128-CBC-HMAC-SHA1")
        );
        assert!(
            Job::Open(Combination::Aes256CbcSha384)
                .openssl_impl()
                .starts_with("EVP AES-256-CBC + HMAC-SHA384")
        );
    }

    /// The check after timing is what stops a broken kernel from being
    /// reported as fast: a wrong expected digest must fail it.
    #[test]
    fn a_wrong_hash_fails_its_check() {
        for algorithm in MacAlgorithm::ALL {
            let mut bench = HashBench::new(algorithm, Backend::detect(), 300, false).unwrap();
            bench.time(Side::Ours, SHORT).unwrap();
            bench.expected[0] ^= 1;
            let err = bench.time(Side::Ours, SHORT).unwrap_err();
            assert!(matches!(err, Failure::Check(_)), "{algorithm}: {err}");
        }
    }

    #[test]
    fn hmac_from_hash_matches_rfc_4231_case_2() {
        let tag = hmac_from_hash(
            MacAlgorithm::HmacSha256,
            b"Jefe",
            b"what do ya want for nothing?",
        )
        .unwrap();
        assert_eq!(tag[..4], [0x5b, 0xdc, 0xc1, 0x46]);
    }
}
