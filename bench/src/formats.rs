//! `--format esp|jwe|ssh`: seal and open of whole IPsec ESP packets (every
//! integrity algorithm, AES-128 and AES-256), JWE AES_CBC_HMAC_SHA2
//! encryptions or SSH packets (in [`ssh`]), instead of the other sections;
//! with `--compare openssl`, against the same bytes through OpenSSL's EVP
//! AES-CBC plus HMAC composed by hand, in alternating rounds. `--suite`
//! picks suites by name ([`Filter`]).
//!
//! Seals work in place on one buffer (the previous ciphertext is the next
//! plaintext: the same work). ESP and JWE opens copy one sealed packet into
//! the work buffer first, as the record section does, so the copy is in the
//! figure. Our seals draw a fresh IV per packet; the composed reference
//! takes a fixed one (generating IVs is not its timed work).

use std::io::{self, Write};
use std::process::ExitCode;
use std::time::Duration;

use cbc_hmac::esp::{self, EspConfig, EspIntegrity, EspKeys, EspOpener, EspSealer};
use cbc_hmac::jose::{CbcHmacAead, ContentEncryption};
use cbc_hmac::{Backend, Cipher};

use crate::args::{Args, Format};
use crate::machine;
use crate::measure::{self, Measurement};

mod ssh;

/// The width of the case titles in the text output (the longest SSH one).
const TITLE_WIDTH: usize = 49;

/// The JWE content encryptions measured (`A192CBC-HS384` needs AES-192,
/// which the crate does not have).
const JWE_ALGORITHMS: [ContentEncryption; 2] = [
    ContentEncryption::A128CbcHs256,
    ContentEncryption::A256CbcHs512,
];

/// The SPI of the measured SA.
const SPI: u32 = 0x1000_0001;
/// Next header of the measured packets (4: IPv4).
const NEXT_HEADER: u8 = 4;
/// The JWE additional data: the base64url protected header
/// `{"alg":"dir","enc":"A128CBC-HS256"}`.
const AAD: &[u8] = b"eyJhbGciOiJkaXIiLCJlbmMiOiJBMTI4Q0JDLUhTMjU2In0";
/// The fixed IV of the reference's seals and of the agreement check.
const IV: [u8; 16] = [0x5c; 16];

/// One side of a case: runs its operation for about `target` and counts.
trait Timed {
    fn run(&mut self, target: Duration) -> Result<Measurement, String>;
}

impl<T: Timed + ?Sized> Timed for &mut T {
    fn run(&mut self, target: Duration) -> Result<Measurement, String> {
        (**self).run(target)
    }
}

/// An operation that repeats on the same buffers ([`measure::run`]).
struct Repeat<F>(F);

impl<F: FnMut() -> Result<(), String>> Timed for Repeat<F> {
    fn run(&mut self, target: Duration) -> Result<Measurement, String> {
        measure::run(target, &mut self.0)
    }
}

type Op<'a> = Box<dyn Timed + 'a>;

/// A case side that repeats `op`.
fn repeat<'a>(op: impl FnMut() -> Result<(), String> + 'a) -> Op<'a> {
    Box::new(Repeat(op))
}

/// `--suite`: the suites to measure. A suite is named by its parts (ESP:
/// cipher and integrity algorithm; JWE: the `enc` value; SSH: cipher and
/// MAC), and kept when every word of some filter is one of them.
struct Filter<'a> {
    filters: &'a [String],
}

impl Filter<'_> {
    fn keeps(&self, names: &[&str]) -> bool {
        self.filters.is_empty() || self.filters.iter().any(|f| names_match(f, names))
    }

    /// Each filter has a word and keeps some suite of `format`, or the
    /// error lists the names.
    fn check(&self, format: Format) -> Result<(), String> {
        let suites = suite_names(format);
        for f in self.filters {
            let empty = f.split_whitespace().next().is_none();
            if empty || !suites.iter().any(|names| names_match(f, names)) {
                let mut known: Vec<&str> = suites.iter().flatten().copied().collect();
                known.sort_unstable();
                known.dedup();
                return Err(format!(
                    "--suite {f:?} names no {} suite; the names: {}",
                    format.name(),
                    known.join(", ")
                ));
            }
        }
        Ok(())
    }
}

/// Whether every word of `filter` is one of a suite's `names`.
fn names_match(filter: &str, names: &[&str]) -> bool {
    filter.split_whitespace().all(|word| names.contains(&word))
}

/// Every suite of `format`, by the names [`Filter`] matches.
fn suite_names(format: Format) -> Vec<Vec<&'static str>> {
    match format {
        Format::Esp => Cipher::ALL
            .iter()
            .flat_map(|c| EspIntegrity::ALL.map(|i| vec![c.name(), i.name()]))
            .collect(),
        Format::Jwe => JWE_ALGORITHMS.iter().map(|a| vec![a.name()]).collect(),
        Format::Ssh => cbc_hmac::ssh::SshSuite::ALL
            .iter()
            .map(|s| vec![s.cipher_name(), s.mac_name()])
            .collect(),
    }
}

/// One measured case: our operation and, with `--compare`, the reference's.
struct Case<'a> {
    title: String,
    ours: Op<'a>,
    reference: Option<Op<'a>>,
}

/// Medians over the rounds of one side.
struct Figures {
    gb_per_s: f64,
    ns_per_op: f64,
}

/// Runs the format section; the exit status says whether every
/// measurement and check passed (2: a `--suite` that names nothing).
pub fn run(args: &Args, backend: Backend, format: Format) -> ExitCode {
    let filter = Filter {
        filters: &args.suites,
    };
    if let Err(e) = filter.check(format) {
        eprintln!("cbc-hmac-bench: error: {e}");
        return ExitCode::from(2);
    }
    let cpu = machine::Cpu::here();
    let payloads = if args.payloads.is_empty() && !args.sweep {
        format.default_payloads().to_vec()
    } else {
        args.payload_sizes()
    };
    let compare = args.compare.is_some();
    let mut out = io::stdout().lock();
    if !args.json {
        let _ = writeln!(out, "Backend: {backend}");
        let _ = writeln!(out, "CPU: {}, {}", cpu.model, cpu.id_summary());
        let _ = writeln!(out, "{}", crate::output::kernel_line(backend));
        let _ = writeln!(
            out,
            "{}; {} alternating rounds, medians; ratio = cbc-hmac / OpenSSL EVP AES-CBC + HMAC",
            match format {
                Format::Esp => "IPsec ESP packets (RFC 4303), no ESN",
                Format::Jwe => "JWE AES_CBC_HMAC_SHA2 (RFC 7518 5.2)",
                Format::Ssh =>
                    "SSH packets (RFC 4253 6, OpenSSH -etm@openssh.com), least padding, \
                     opened in order",
            },
            args.rounds
        );
    }
    let target = Duration::from_secs_f64(args.seconds);
    let rounds = usize::from(args.rounds);
    for &payload in &payloads {
        let mut each =
            |case: Case<'_>| report(&mut out, args, backend, &cpu, payload, case, rounds, target);
        let result = match format {
            Format::Esp => esp_cases(backend, payload, compare, &filter, &mut each),
            Format::Jwe => jwe_cases(backend, payload, compare, &filter, &mut each),
            Format::Ssh => ssh::cases(backend, payload, compare, &filter, &mut each),
        };
        if let Err(e) = result {
            // Empty: the reader went away (`| head`); stop quietly.
            if !e.is_empty() {
                eprintln!("cbc-hmac-bench: error: payload {payload}, backend {backend}: {e}");
            }
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}

/// Measures one case and prints its line.
#[allow(clippy::too_many_arguments)]
fn report(
    out: &mut impl Write,
    args: &Args,
    backend: Backend,
    cpu: &machine::Cpu,
    payload: usize,
    mut case: Case<'_>,
    rounds: usize,
    target: Duration,
) -> Result<(), String> {
    let (ours, reference, ratio) = measure_case(&mut case, rounds, target, payload)?;
    let line = if args.json {
        let mut s = format!(
            "{{\"section\":\"format\",\"case\":\"{}\",\"payload\":{payload},\"backend\":\"{backend}\",\
             \"cpu\":\"{}\",{},\"gb_per_s\":{:.4},\"ns_per_op\":{:.1}",
            case.title,
            cpu.id_summary(),
            crate::output::kernel_fields(backend)
                .iter()
                .map(|(k, v)| format!("\"{k}\":{v}"))
                .collect::<Vec<_>>()
                .join(","),
            ours.gb_per_s,
            ours.ns_per_op
        );
        if let (Some(r), Some(ratio)) = (&reference, ratio) {
            s += &format!(
                ",\"openssl_gb_per_s\":{:.4},\"openssl_ns_per_op\":{:.1},\"ratio\":{ratio:.3}",
                r.gb_per_s, r.ns_per_op
            );
        }
        s + "}"
    } else {
        let mut s = format!(
            "{:>TITLE_WIDTH$} {payload:>6} B {:>7.2} GB/sec {:>11.1} ns/packet",
            case.title, ours.gb_per_s, ours.ns_per_op
        );
        if let (Some(r), Some(ratio)) = (&reference, ratio) {
            s += &format!(
                " | OpenSSL {:>7.2} GB/sec {:>11.1} ns/packet | ratio {ratio:.2}",
                r.gb_per_s, r.ns_per_op
            );
        }
        s
    };
    writeln!(out, "{line}")
        .and_then(|()| out.flush())
        .map_err(|e| match e.kind() {
            io::ErrorKind::BrokenPipe => String::new(),
            _ => format!("writing the report: {e}"),
        })
}

/// Alternating rounds (the order flips every round), each side
/// `target / rounds` per round; medians of throughput, time per packet
/// and the per-round ratio.
fn measure_case(
    case: &mut Case<'_>,
    rounds: usize,
    target: Duration,
    payload: usize,
) -> Result<(Figures, Option<Figures>, Option<f64>), String> {
    let per_round = target / rounds as u32;
    let mut ours = Vec::new();
    let mut reference = Vec::new();
    for round in 0..rounds {
        let ours_first = round % 2 == 0;
        if ours_first || case.reference.is_none() {
            ours.push(case.ours.run(per_round)?);
        }
        if let Some(r) = case.reference.as_mut() {
            reference.push(r.run(per_round)?);
            if !ours_first {
                ours.push(case.ours.run(per_round)?);
            }
        }
    }
    let ratio = (!reference.is_empty()).then(|| {
        median(
            ours.iter()
                .zip(&reference)
                .map(|(o, r)| o.gb_per_s(payload) / r.gb_per_s(payload))
                .collect(),
        )
    });
    let reference = (!reference.is_empty()).then(|| figures(&reference, payload));
    Ok((figures(&ours, payload), reference, ratio))
}

fn figures(runs: &[Measurement], payload: usize) -> Figures {
    Figures {
        gb_per_s: median(runs.iter().map(|m| m.gb_per_s(payload)).collect()),
        ns_per_op: median(runs.iter().map(Measurement::ns_per_op).collect()),
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

fn plaintext(payload: usize) -> Vec<u8> {
    (0..payload).map(|i| (i * 7 + 3) as u8).collect()
}

/// Every ESP case at one payload size, handed to `each` one at a time.
fn esp_cases(
    backend: Backend,
    payload: usize,
    compare: bool,
    filter: &Filter<'_>,
    each: &mut dyn FnMut(Case<'_>) -> Result<(), String>,
) -> Result<(), String> {
    for cipher in Cipher::ALL {
        for integrity in EspIntegrity::ALL {
            if !filter.keeps(&[cipher.name(), integrity.name()]) {
                continue;
            }
            let config = EspConfig {
                cipher,
                integrity,
                spi: SPI,
                esn: false,
            };
            let enc_key = vec![0x11; cipher.key_len()];
            let auth_key = vec![0x22; integrity.key_len()];
            let keys = EspKeys {
                enc_key: &enc_key,
                auth_key: &auth_key,
            };
            let mut sealer = EspSealer::with_backend(config, keys, backend).map_err(err)?;
            let opener = EspOpener::with_backend(config, keys, backend).map_err(err)?;
            let text = plaintext(payload);
            let n = config.sealed_len(payload);
            let mut packet = vec![0u8; n];
            sealer
                .seal(1, NEXT_HEADER, &text, &mut packet)
                .map_err(err)?;
            let mut reference = if compare {
                let mut r = reference::Esp::new(config, &enc_key, &auth_key)?;
                // The reference and we produce the same packet for the
                // same IV, and each opens the other's.
                let mut ours = vec![0u8; n];
                ours[esp::HEADER_LEN..][..payload].copy_from_slice(&text);
                sealer
                    .seal_in_place_with_iv(1, NEXT_HEADER, &mut ours, payload, &IV)
                    .map_err(err)?;
                let mut theirs = vec![0u8; n];
                theirs[esp::HEADER_LEN..][..payload].copy_from_slice(&text);
                r.seal(1, &mut theirs, payload)?;
                if ours != theirs {
                    return Err(format!(
                        "ESP {} {}: OpenSSL's packet differs from ours",
                        cipher.name(),
                        integrity.name()
                    ));
                }
                let mut work = packet.clone();
                if r.open(1, &mut work)? != text {
                    return Err("ESP: OpenSSL does not open our packet to the plaintext".into());
                }
                Some(r)
            } else {
                None
            };
            let name = format!("ESP {} {}", cipher.name(), integrity.name());

            // Seal.
            let mut buf = vec![0u8; n];
            buf[esp::HEADER_LEN..][..payload].copy_from_slice(&text);
            let mut ref_buf = buf.clone();
            let mut seq = 1u64;
            let seal_ours = repeat(|| {
                seq = if seq == u32::MAX as u64 { 1 } else { seq + 1 };
                sealer
                    .seal_in_place(seq, NEXT_HEADER, &mut buf, payload)
                    .map(drop)
                    .map_err(err)
            });
            let seal_ref = reference
                .as_mut()
                .map(|r| repeat(move || r.seal(1, &mut ref_buf, payload)));
            each(Case {
                title: format!("{name} seal"),
                ours: seal_ours,
                reference: seal_ref,
            })?;
            // The last timed seal opens to the plaintext.
            let mut check = vec![0u8; n];
            check[esp::HEADER_LEN..][..payload].copy_from_slice(&text);
            let last = sealer
                .seal_in_place(2, NEXT_HEADER, &mut check, payload)
                .map_err(err)?;
            let opened = opener.open_in_place(2, &mut check[..last]).map_err(err)?;
            if *opened.payload != text[..] || opened.next_header != NEXT_HEADER {
                return Err(format!(
                    "{name}: a sealed packet does not open to its payload"
                ));
            }

            // Open.
            let mut work = vec![0u8; n];
            let mut ref_work = vec![0u8; n];
            let mut opened_len = 0;
            let open_ours = repeat(|| {
                work.copy_from_slice(&packet);
                let p = opener.open_in_place(1, &mut work).map_err(err)?;
                opened_len = p.payload.len();
                Ok(())
            });
            let open_ref = reference.as_mut().map(|r| {
                let packet = &packet;
                repeat(move || {
                    ref_work.copy_from_slice(packet);
                    r.open(1, &mut ref_work).map(drop)
                })
            });
            each(Case {
                title: format!("{name} open"),
                ours: open_ours,
                reference: open_ref,
            })?;
            // After timing: the last open returned the plaintext.
            let mut work = packet.clone();
            let p = opener.open_in_place(1, &mut work).map_err(err)?;
            if *p.payload != text[..] || opened_len != payload {
                return Err(format!(
                    "{name}: the opened packet differs from the plaintext"
                ));
            }
        }
    }
    Ok(())
}

/// Every JWE case at one payload size.
fn jwe_cases(
    backend: Backend,
    payload: usize,
    compare: bool,
    filter: &Filter<'_>,
    each: &mut dyn FnMut(Case<'_>) -> Result<(), String>,
) -> Result<(), String> {
    for algorithm in JWE_ALGORITHMS {
        if !filter.keeps(&[algorithm.name()]) {
            continue;
        }
        let key: Vec<u8> = (0..algorithm.key_len()).map(|i| i as u8).collect();
        let mut aead = CbcHmacAead::with_backend(algorithm, &key, backend).map_err(err)?;
        let text = plaintext(payload);
        let n = CbcHmacAead::ciphertext_len(payload);
        let t = algorithm.tag_len();
        let mut sealed = vec![0u8; n];
        sealed[..payload].copy_from_slice(&text);
        let mut iv = [0u8; 16];
        let mut tag = vec![0u8; t];
        aead.seal_in_place(AAD, &mut sealed, payload, &mut iv, &mut tag)
            .map_err(err)?;
        let mut reference = if compare {
            let mut r = reference::Jwe::new(algorithm, &key)?;
            let mut ours = vec![0u8; n];
            ours[..payload].copy_from_slice(&text);
            let mut our_tag = vec![0u8; t];
            aead.seal_in_place_with_iv(&IV, AAD, &mut ours, payload, &mut our_tag)
                .map_err(err)?;
            let mut theirs = vec![0u8; n];
            theirs[..payload].copy_from_slice(&text);
            let mut their_tag = vec![0u8; t];
            r.seal(&IV, &mut theirs, payload, &mut their_tag)?;
            if ours != theirs || our_tag != their_tag {
                return Err(format!(
                    "JWE {}: OpenSSL's ciphertext or tag differs from ours",
                    algorithm.name()
                ));
            }
            let mut work = sealed.clone();
            if r.open(&iv, &mut work, &tag)? != text {
                return Err("JWE: OpenSSL does not decrypt ours to the plaintext".into());
            }
            Some(r)
        } else {
            None
        };
        let name = format!("JWE {}", algorithm.name());

        // Encrypt.
        let mut buf = vec![0u8; n];
        buf[..payload].copy_from_slice(&text);
        let mut ref_buf = buf.clone();
        let (mut seal_iv, mut seal_tag) = ([0u8; 16], vec![0u8; t]);
        let seal_ours = repeat(|| {
            aead.seal_in_place(AAD, &mut buf, payload, &mut seal_iv, &mut seal_tag)
                .map(drop)
                .map_err(err)
        });
        let mut ref_tag = vec![0u8; t];
        let seal_ref = reference
            .as_mut()
            .map(|r| repeat(move || r.seal(&IV, &mut ref_buf, payload, &mut ref_tag)));
        each(Case {
            title: format!("{name} encrypt"),
            ours: seal_ours,
            reference: seal_ref,
        })?;
        // A fresh encryption decrypts to the plaintext.
        let mut check = vec![0u8; n];
        check[..payload].copy_from_slice(&text);
        let (mut civ, mut ctag) = ([0u8; 16], vec![0u8; t]);
        aead.seal_in_place(AAD, &mut check, payload, &mut civ, &mut ctag)
            .map_err(err)?;
        if aead
            .open_in_place(&civ, AAD, &mut check, &ctag)
            .map_err(err)?
            != text
        {
            return Err(format!(
                "{name}: an encryption does not decrypt to its plaintext"
            ));
        }

        // Decrypt.
        let mut work = vec![0u8; n];
        let mut ref_work = vec![0u8; n];
        let open_ours = repeat(|| {
            work.copy_from_slice(&sealed);
            aead.open_in_place(&iv, AAD, &mut work, &tag)
                .map(drop)
                .map_err(err)
        });
        let open_ref = reference.as_mut().map(|r| {
            let (sealed, tag) = (&sealed, &tag);
            repeat(move || {
                ref_work.copy_from_slice(sealed);
                r.open(&iv, &mut ref_work, tag).map(drop)
            })
        });
        each(Case {
            title: format!("{name} decrypt"),
            ours: open_ours,
            reference: open_ref,
        })?;
        let mut work = sealed.clone();
        if aead.open_in_place(&iv, AAD, &mut work, &tag).map_err(err)? != text {
            return Err(format!("{name}: the decryption differs from the plaintext"));
        }
    }
    Ok(())
}

#[cfg(feature = "openssl")]
mod reference {
    //! ESP and JWE composed from OpenSSL's EVP AES-CBC and HMAC_CTX.

    use cbc_hmac::esp::{EspConfig, EspIntegrity, HEADER_LEN};
    use cbc_hmac::jose::ContentEncryption;
    use openssl_ref::{Digest, EvpAesCbc, Hmac};

    use super::{AAD, IV, NEXT_HEADER};

    fn e(e: openssl_ref::Error) -> String {
        format!("OpenSSL: {e}")
    }

    /// One ESP SA, both directions, no ESN.
    pub struct Esp {
        config: EspConfig,
        aes: EvpAesCbc,
        hmac: Hmac,
    }

    impl Esp {
        pub fn new(config: EspConfig, enc_key: &[u8], auth_key: &[u8]) -> Result<Self, String> {
            let digest = match config.integrity {
                EspIntegrity::HmacSha1_96 => Digest::Sha1,
                EspIntegrity::HmacSha256_128 => Digest::Sha256,
                EspIntegrity::HmacSha384_192 => Digest::Sha384,
                _ => Digest::Sha512,
            };
            Ok(Esp {
                config,
                aes: EvpAesCbc::new(enc_key).map_err(e)?,
                hmac: Hmac::new(digest, auth_key).map_err(e)?,
            })
        }

        /// Seals the payload at `out[HEADER_LEN..][..len]` in place (`out`
        /// is the sealed length) with [`IV`].
        pub fn seal(&mut self, seq: u32, out: &mut [u8], len: usize) -> Result<(), String> {
            let icv = self.config.integrity.icv_len();
            let end = out.len() - icv;
            out[..4].copy_from_slice(&self.config.spi.to_be_bytes());
            out[4..8].copy_from_slice(&seq.to_be_bytes());
            out[8..HEADER_LEN].copy_from_slice(&IV);
            let body = &mut out[HEADER_LEN..end];
            let pad = body.len() - len - 2;
            for (i, b) in body[len..][..pad].iter_mut().enumerate() {
                *b = i as u8 + 1;
            }
            body[pad + len] = pad as u8;
            body[pad + len + 1] = NEXT_HEADER;
            self.aes.encrypt(&IV, body).map_err(e)?;
            let tag = self.hmac.mac(&out[..end]).map_err(e)?;
            out[end..].copy_from_slice(&tag.as_slice()[..icv]);
            Ok(())
        }

        /// Opens `packet` in place; returns the payload.
        pub fn open<'a>(&mut self, seq: u32, packet: &'a mut [u8]) -> Result<&'a [u8], String> {
            let icv = self.config.integrity.icv_len();
            let end = packet.len() - icv;
            if packet[4..8] != seq.to_be_bytes() {
                return Err("OpenSSL side: wrong sequence number".into());
            }
            let tag = self.hmac.mac(&packet[..end]).map_err(e)?;
            if tag.as_slice()[..icv] != packet[end..] {
                return Err("OpenSSL side: ICV mismatch".into());
            }
            let mut iv = [0u8; 16];
            iv.copy_from_slice(&packet[8..HEADER_LEN]);
            let body = &mut packet[HEADER_LEN..end];
            self.aes.decrypt(&iv, body).map_err(e)?;
            let pad = usize::from(body[body.len() - 2]);
            let len = body
                .len()
                .checked_sub(pad + 2)
                .ok_or("OpenSSL side: bad padding")?;
            if (0..pad).any(|i| body[len + i] != i as u8 + 1) {
                return Err("OpenSSL side: bad padding".into());
            }
            Ok(&body[..len])
        }
    }

    /// One JWE content encryption key.
    pub struct Jwe {
        tag_len: usize,
        aes: EvpAesCbc,
        hmac: Hmac,
    }

    impl Jwe {
        pub fn new(algorithm: ContentEncryption, key: &[u8]) -> Result<Self, String> {
            let digest = match algorithm {
                ContentEncryption::A128CbcHs256 => Digest::Sha256,
                _ => Digest::Sha512,
            };
            let (mac_key, enc_key) = key.split_at(key.len() / 2);
            Ok(Jwe {
                tag_len: algorithm.tag_len(),
                aes: EvpAesCbc::new(enc_key).map_err(e)?,
                hmac: Hmac::new(digest, mac_key).map_err(e)?,
            })
        }

        fn tag(&mut self, iv: &[u8; 16], ciphertext: &[u8]) -> Result<[u8; 32], String> {
            let al = (AAD.len() as u64 * 8).to_be_bytes();
            let full = self
                .hmac
                .mac_parts(&[AAD, iv, ciphertext, &al])
                .map_err(e)?;
            let mut tag = [0u8; 32];
            tag[..self.tag_len].copy_from_slice(&full.as_slice()[..self.tag_len]);
            Ok(tag)
        }

        /// PKCS#7-pads and encrypts `buf[..len]` in place (`buf` is the
        /// padded length); writes the tag to `tag`.
        pub fn seal(
            &mut self,
            iv: &[u8; 16],
            buf: &mut [u8],
            len: usize,
            tag: &mut [u8],
        ) -> Result<(), String> {
            let pad = buf.len() - len;
            buf[len..].fill(pad as u8);
            self.aes.encrypt(iv, buf).map_err(e)?;
            tag.copy_from_slice(&self.tag(iv, buf)?[..self.tag_len]);
            Ok(())
        }

        /// Checks the tag, decrypts in place and unpads.
        pub fn open<'a>(
            &mut self,
            iv: &[u8; 16],
            buf: &'a mut [u8],
            tag: &[u8],
        ) -> Result<&'a [u8], String> {
            if self.tag(iv, buf)?[..self.tag_len] != *tag {
                return Err("OpenSSL side: tag mismatch".into());
            }
            self.aes.decrypt(iv, buf).map_err(e)?;
            let pad = usize::from(buf[buf.len() - 1]);
            if pad == 0
                || pad > 16
                || buf[buf.len() - pad..]
                    .iter()
                    .any(|&b| usize::from(b) != pad)
            {
                return Err("OpenSSL side: bad padding".into());
            }
            let len = buf.len() - pad;
            Ok(&buf[..len])
        }
    }
}

#[cfg(not(feature = "openssl"))]
mod reference {
    //! Without the `openssl` feature nothing can be built (main refuses
    //! `--compare openssl` first).

    use cbc_hmac::esp::EspConfig;
    use cbc_hmac::jose::ContentEncryption;

    pub enum Esp {}
    pub enum Jwe {}

    impl Esp {
        pub fn new(_: EspConfig, _: &[u8], _: &[u8]) -> Result<Self, String> {
            Err(crate::reference::HOW_TO_ENABLE.into())
        }
        pub fn seal(&mut self, _: u32, _: &mut [u8], _: usize) -> Result<(), String> {
            match *self {}
        }
        pub fn open<'a>(&mut self, _: u32, _: &'a mut [u8]) -> Result<&'a [u8], String> {
            match *self {}
        }
    }

    impl Jwe {
        pub fn new(_: ContentEncryption, _: &[u8]) -> Result<Self, String> {
            Err(crate::reference::HOW_TO_ENABLE.into())
        }
        pub fn seal(
            &mut self,
            _: &[u8; 16],
            _: &mut [u8],
            _: usize,
            _: &mut [u8],
        ) -> Result<(), String> {
            match *self {}
        }
        pub fn open<'a>(
            &mut self,
            _: &[u8; 16],
            _: &'a mut [u8],
            _: &[u8],
        ) -> Result<&'a [u8], String> {
            match *self {}
        }
    }
}
