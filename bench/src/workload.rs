//! What is measured, and how each result is checked.
//!
//! Every function builds its keyed objects once, times the operation with
//! [`measure::run`], and then checks the result of the operation against
//! independent objects on the [`REFERENCE`] backend, so that a broken code
//! path is reported instead of timed.

use std::fmt;
use std::hint::black_box;
use std::time::Duration;

use cbc_hmac::{
    AesCbcKey, Backend, Cipher, Combination, HmacKey, MacAlgorithm, MacOrder, Opener,
    ProtocolVersion, RecordConfig, RecordKeys, Sealer, digest_with_backend,
};

use crate::measure::{self, Measurement};
use crate::output::Section;

/// The backend the checks run on: the RustCrypto crates, always available.
const REFERENCE: Backend = Backend::Portable;

/// Record content type: application data.
const CONTENT_TYPE: u8 = 23;

/// Why a measurement has no result.
#[derive(Debug)]
pub enum Failure {
    /// The library returned an error.
    Library(cbc_hmac::Error),
    /// The result of the measured operation was wrong.
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

/// One measurement of the report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Job {
    /// [`seal`] records of a combination.
    Seal(Combination),
    /// [`open`] records of a combination.
    Open(Combination),
    /// [`mac`] with an algorithm.
    Mac(MacAlgorithm),
    /// [`cipher`] in one direction.
    Cipher(Cipher, Direction),
}

impl Job {
    /// The jobs of the report's three sections for `combinations`: seal
    /// and open of each, then the MACs and ciphers they use.
    pub fn sections(combinations: &[Combination]) -> [(Section, Vec<Job>); 3] {
        let records = combinations
            .iter()
            .flat_map(|&c| [Job::Seal(c), Job::Open(c)])
            .collect();
        let macs = MacAlgorithm::ALL
            .into_iter()
            .filter(|&m| combinations.iter().any(|c| c.mac() == m))
            .map(Job::Mac)
            .collect();
        let ciphers = Cipher::ALL
            .into_iter()
            .filter(|&x| combinations.iter().any(|c| c.cipher() == x))
            .flat_map(|x| Direction::ALL.map(|d| Job::Cipher(x, d)))
            .collect();
        [
            (Section::Combinations, records),
            (Section::Macs, macs),
            (Section::Ciphers, ciphers),
        ]
    }

    /// What is measured: `AES-128-CBC-SHA1`, `HMAC-SHA1` or `AES-128-CBC`.
    pub fn name(self) -> String {
        match self {
            Job::Seal(c) | Job::Open(c) => c.name().to_string(),
            Job::Mac(m) => m.to_string(),
            Job::Cipher(c, _) => c.name().to_string(),
        }
    }

    /// `seal`, `open`, `mac`, `encrypt` or `decrypt`.
    pub fn direction(self) -> &'static str {
        match self {
            Job::Seal(_) => "seal",
            Job::Open(_) => "open",
            Job::Mac(_) => "mac",
            Job::Cipher(_, d) => d.name(),
        }
    }

    /// Measures for about `target` and checks the result.
    pub fn run(
        self,
        backend: Backend,
        payload: usize,
        target: Duration,
    ) -> Result<Measurement, Failure> {
        match self {
            Job::Seal(c) => seal(c, backend, payload, target),
            Job::Open(c) => open(c, backend, payload, target),
            Job::Mac(m) => mac(m, backend, payload, target),
            Job::Cipher(c, d) => cipher(c, d, backend, payload, target),
        }
    }
}

/// Seals `payload`-byte records in place with increasing sequence numbers.
///
/// The buffer is sealed over and over without restoring the plaintext (as
/// `openssl speed` and `gnutls-cli --benchmark-ciphers` do), so after the
/// timed loop the sealer seals one more record, untimed, from a copy of its
/// input kept for the check: an independent opener must open that last
/// record to exactly that input.
pub fn seal(
    combination: Combination,
    backend: Backend,
    payload: usize,
    target: Duration,
) -> Result<Measurement, Failure> {
    let config = record_config(combination);
    let (enc_key, mac_key) = record_keys(combination);
    let keys = RecordKeys {
        enc_key: &enc_key,
        mac_key: &mac_key,
        iv: None,
    };
    let mut sealer = Sealer::with_backend(config, keys, backend)?;
    let mut verifier = Opener::with_backend(config, keys, REFERENCE)?;

    let offset = sealer.payload_offset();
    let sealed_len = sealer.sealed_len(payload);
    let mut buf = vec![0u8; sealed_len];
    buf[offset..offset + payload].copy_from_slice(&pattern(payload, 0x33));
    let mut seq = 0u64;
    let m = measure::run(target, || {
        seq += 1;
        let n = sealer.seal_in_place(black_box(seq), CONTENT_TYPE, &mut buf, payload)?;
        black_box(n);
        Ok::<(), Failure>(())
    })?;

    seq += 1;
    let plaintext = buf[offset..offset + payload].to_vec();
    let n = sealer.seal_in_place(seq, CONTENT_TYPE, &mut buf, payload)?;
    check(n == sealed_len, || {
        format!("sealed {n} bytes, sealed_len() says {sealed_len}")
    })?;
    let mut record = buf[..n].to_vec();
    // (Short payloads may match their ciphertext by chance: 1 in 256 for one
    // byte.)
    check(
        payload < 16 || record[offset..offset + payload] != plaintext[..],
        || "the sealed record carries the plaintext in clear".into(),
    )?;
    match verifier.open_in_place(seq, CONTENT_TYPE, &mut record) {
        Ok(opened) => check(opened == &plaintext[..], || {
            format!(
                "the last sealed record opens to {} bytes that differ from the {payload} \
                 bytes sealed",
                opened.len()
            )
        })?,
        Err(e) => {
            return Err(Failure::Check(format!(
                "the last sealed record does not open with an independent opener: {e}"
            )));
        }
    }
    Ok(m)
}

/// Opens one `payload`-byte record over and over: each operation copies the
/// sealed record into the work buffer (opening decrypts in place) and opens
/// it there, so the copy is part of the measured work.
///
/// The record is sealed once by an independent sealer; afterwards the last
/// open must have returned exactly the plaintext, and a tampered copy must
/// be rejected.
pub fn open(
    combination: Combination,
    backend: Backend,
    payload: usize,
    target: Duration,
) -> Result<Measurement, Failure> {
    let config = record_config(combination);
    let (enc_key, mac_key) = record_keys(combination);
    let keys = RecordKeys {
        enc_key: &enc_key,
        mac_key: &mac_key,
        iv: None,
    };
    let mut sealer = Sealer::with_backend(config, keys, REFERENCE)?;
    let mut opener = Opener::with_backend(config, keys, backend)?;

    let plaintext = pattern(payload, 0x44);
    let seq = 0x0123_4567_89ab_cdef;
    let mut sealed = vec![0u8; sealer.sealed_len(payload)];
    let n = sealer.seal(seq, CONTENT_TYPE, &plaintext, &mut sealed)?;
    sealed.truncate(n);

    let mut work = vec![0u8; n];
    let base = work.as_ptr() as usize;
    // Where the last open found the plaintext: (start, length) in `work`.
    let mut last = (0usize, 0usize);
    let m = measure::run(target, || {
        work.copy_from_slice(black_box(&sealed));
        let opened = opener.open_in_place(seq, CONTENT_TYPE, &mut work)?;
        last = (opened.as_ptr() as usize - base, opened.len());
        Ok::<(), Failure>(())
    })?;

    let (start, len) = last;
    check(work[start..start + len] == plaintext[..], || {
        format!(
            "the last open returned {len} bytes at offset {start} that differ from the \
             {payload} bytes sealed"
        )
    })?;
    work.copy_from_slice(&sealed);
    *work.last_mut().expect("a record is never empty") ^= 1;
    let tampered = opener.open_in_place(seq, CONTENT_TYPE, &mut work);
    check(
        matches!(tampered, Err(cbc_hmac::Error::BadRecordMac)),
        || format!("a tampered record was not rejected: {tampered:?}"),
    )?;
    Ok(m)
}

/// HMAC over a `payload`-byte message with a key prepared once; the last tag
/// must equal HMAC computed from the plain hash function
/// (`H(K ^ opad || H(K ^ ipad || m))`) on the reference backend.
pub fn mac(
    algorithm: MacAlgorithm,
    backend: Backend,
    payload: usize,
    target: Duration,
) -> Result<Measurement, Failure> {
    let key_bytes = pattern(algorithm.tls_key_len(), 0x55);
    let key = HmacKey::with_backend(algorithm, &key_bytes, backend)?;
    let message = pattern(payload, 0x66);
    let mut tag = [0u8; 64];
    let m = measure::run(target, || {
        key.mac(black_box(&message), &mut tag)?;
        black_box(&tag);
        Ok::<(), Failure>(())
    })?;

    let tag = &tag[..algorithm.output_len()];
    let expected = hmac_from_hash(algorithm, &key_bytes, &message)?;
    check(tag == &expected[..], || {
        format!("the last {algorithm} tag differs from HMAC computed from the hash function")
    })?;
    let reference = HmacKey::with_backend(algorithm, &key_bytes, REFERENCE)?;
    reference
        .verify(&message, tag)
        .map_err(|e| Failure::Check(format!("the last {algorithm} tag does not verify: {e}")))?;
    Ok(m)
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
}

/// AES-CBC over `payload` bytes rounded up to whole blocks, in place, with a
/// key expanded once and a fixed IV. Like [`seal`], the buffer is
/// transformed over and over; after the timed loop one more call runs on a
/// kept copy of its input, and the reference backend's inverse must give
/// that input back.
pub fn cipher(
    cipher: Cipher,
    direction: Direction,
    backend: Backend,
    payload: usize,
    target: Duration,
) -> Result<Measurement, Failure> {
    let key_bytes = pattern(cipher.key_len(), 0x77);
    let key = AesCbcKey::with_backend(cipher, &key_bytes, backend)?;
    let reference = AesCbcKey::with_backend(cipher, &key_bytes, REFERENCE)?;
    let len = payload.next_multiple_of(cipher.block_len());
    let mut buf = pattern(len, 0x88);
    // A fixed IV. (Chaining each call's returned IV into the next would
    // make a one-block buffer a fixed point: E(c ^ c) = E(0).)
    let iv = [0x99u8; 16];

    let m = match direction {
        Direction::Encrypt => measure::run(target, || {
            black_box(key.encrypt(black_box(&iv), &mut buf)?);
            Ok::<(), Failure>(())
        })?,
        Direction::Decrypt => measure::run(target, || {
            black_box(key.decrypt(black_box(&iv), &mut buf)?);
            Ok::<(), Failure>(())
        })?,
    };

    let input = buf.clone();
    let mut output = buf;
    let back = match direction {
        Direction::Encrypt => {
            key.encrypt(&iv, &mut output)?;
            let mut back = output.clone();
            reference.decrypt(&iv, &mut back)?;
            back
        }
        Direction::Decrypt => {
            key.decrypt(&iv, &mut output)?;
            let mut back = output.clone();
            reference.encrypt(&iv, &mut back)?;
            back
        }
    };
    check(output != input, || {
        format!("{cipher} {} left the data unchanged", direction.name())
    })?;
    check(back == input, || {
        format!(
            "{cipher} {}: the reference inverse does not give the input back",
            direction.name()
        )
    })?;
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHORT: Duration = Duration::from_millis(5);

    #[test]
    fn every_workload_passes_its_checks() {
        let sections = Job::sections(&Combination::ALL);
        let counts = sections.each_ref().map(|(_, jobs)| jobs.len());
        assert_eq!(counts, [10, 3, 4]);
        for backend in Backend::available() {
            for payload in [1, 16, 1000, 16384] {
                for (_, jobs) in &sections {
                    for job in jobs {
                        job.run(backend, payload, SHORT)
                            .unwrap_or_else(|e| panic!("{job:?} {payload}: {e}"));
                    }
                }
            }
        }
    }

    #[test]
    fn sections_follow_the_selected_combinations() {
        let [records, macs, ciphers] = Job::sections(&[Combination::Aes256CbcSha384]);
        assert_eq!(records.1.len(), 2);
        assert_eq!(macs.1, [Job::Mac(MacAlgorithm::HmacSha384)]);
        assert_eq!(
            ciphers.1,
            Direction::ALL.map(|d| Job::Cipher(Cipher::Aes256Cbc, d))
        );
        assert_eq!(Job::Mac(MacAlgorithm::HmacSha1).name(), "HMAC-SHA1");
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
