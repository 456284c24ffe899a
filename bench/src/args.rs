//! Command-line options.

use std::path::PathBuf;

use cbc_hmac::{Backend, Combination};
use clap::{Parser, ValueEnum};

/// The largest payload of the TLS sections (cipher-MAC combinations, MACs,
/// ciphers, multi-record): the TLS record plaintext limit (2^14 bytes).
pub const MAX_PAYLOAD: usize = cbc_hmac::record::MAX_PLAINTEXT_LEN;

/// The largest payload `--payload` takes at all: 256 KiB, for the format
/// sections ([`Format::max_payload`] is each one's limit).
pub const MAX_FORMAT_PAYLOAD: usize = 256 * 1024;

/// The payload of a plain run: a full record, as `gnutls-cli
/// --benchmark-ciphers` uses.
pub const DEFAULT_PAYLOAD: usize = 16384;

/// The payload sizes of `--sweep` (and of `--plot` or `--markdown` without
/// `--payload`): 16 B to 16 KiB.
pub const SWEEP: [usize; 6] = [16, 64, 256, 1024, 4096, 16384];

/// The most worker threads `--threads` takes.
pub const MAX_THREADS: usize = 256;

/// Throughput of cbc-hmac's record protection and primitives, in the style
/// of `gnutls-cli --benchmark-ciphers`.
#[derive(Debug, Parser)]
#[command(
    name = "cbc-hmac-bench",
    version,
    about,
    long_about = None,
    after_help = "\
Figures are bytes of payload per second, GB = 1e9 bytes.

Sections, per payload size:
  cipher-MAC combinations  TLS 1.2, MAC-then-encrypt. seal: seal_in_place on a
                           preallocated buffer, increasing sequence numbers.
                           open: one record sealed once; each iteration copies it
                           into the work buffer (open decrypts in place) and opens
                           it, so the copy is part of the figure.
  MAC algorithms           HMAC with a key prepared once (with SHA-384, SHA-512 too:
                           they share their kernel).
  hash functions           The hash of one message, for the hashes of the MACs.
  ciphers                  AES-CBC with a key expanded once, in place; payloads
                           that are not whole 16-byte blocks are rounded up.

Keyed objects are built once, outside the timed loop. After each measurement
the result of its last operation is checked with independent objects on the
portable backend (sealed records open to the exact plaintext, opens return it,
tags verify, hashes match, decrypt(encrypt(x)) == x); a mismatch is an error (exit status 1).

--compare openssl (needs the `openssl` feature: from the workspace root,
`cargo run --release -p cbc-hmac-bench --features openssl -- --compare openssl`)
measures OpenSSL's libcrypto in the same process on the same buffers, in
alternating rounds (cbc-hmac, OpenSSL | OpenSSL, cbc-hmac | ...: the order flips
every round so that neither always goes first), after checking that the two
agree (equal records for the same IV, each opens the other's):
  SHA-1, SHA-256 records   OpenSSL's stitched AES-CBC-HMAC-SHA* EVP ciphers in TLS
                           record mode (EVP_CTRL_AEAD_TLS1_AAD; MAC, padding and
                           explicit IV included, driven as libssl drives them)
  SHA-384 records          EVP AES-CBC plus HMAC over the same record layout
                           (no stitched cipher exists; its open is variable-time)
  MACs, ciphers            HMAC_CTX keyed once; EVP AES-CBC keyed once
  hash functions           the low-level SHA*_Init/Update/Final (the same assembly as
                           EVP's digests, without their lookup)
ratio = cbc-hmac / OpenSSL throughput (above 1: cbc-hmac is faster); \"per CPU-s\"
is the same ratio per CPU-second of the measuring thread (Linux), which other
processes on a busy machine disturb much less than wall time.

--threads N runs N independent workers (own keys, buffers and objects; nothing
shared on the hot path), alternating rounds on one thread and on N threads, and
reports the aggregate of the N threads and the scaling efficiency:
aggregate / (N x one thread)."
)]
pub struct Args {
    /// Payload size in bytes, 1 to 16384 (with --format: esp to 65535, jwe
    /// to 262144, ssh to 262120); repeat or separate with commas for several
    /// sizes, each gets a full set of sections [default: 16384, or the
    /// --sweep sizes with --plot or --markdown; with --format see there]
    #[arg(
        long = "payload",
        value_name = "N",
        value_delimiter = ',',
        value_parser = parse_payload
    )]
    pub payloads: Vec<usize>,

    /// Sweep the payload sizes 16, 64, 256, 1024, 4096 and 16384 bytes.
    #[arg(long, conflicts_with = "payloads")]
    pub sweep: bool,

    /// Timed wall time of each measurement, in seconds (after a short
    /// warm-up); with --compare or --threads, for each side, split over the
    /// rounds.
    #[arg(long, value_name = "S", default_value_t = 1.0, value_parser = parse_seconds)]
    pub seconds: f64,

    /// Backend to measure (default: the best available one).
    #[arg(long, value_name = "NAME")]
    pub backend: Option<String>,

    /// One JSON object per line per measurement, and nothing else on stdout.
    #[arg(long)]
    pub json: bool,

    /// Only these cipher-MAC combinations (GnuTLS, OpenSSL or IANA names, or
    /// code points); repeatable. The MAC and cipher sections then cover
    /// only the algorithms these combinations use.
    #[arg(long = "combination", value_name = "NAME", value_parser = parse_combination)]
    pub combinations: Vec<Combination>,

    /// Measure this implementation too, side by side in alternating rounds,
    /// and print its figures and the ratio (needs the `openssl` feature).
    #[arg(long, value_name = "WHAT")]
    pub compare: Option<CompareWith>,

    /// Independent workers, one per thread; reports their aggregate and the
    /// scaling efficiency against one thread.
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u16).range(1..=MAX_THREADS as i64))]
    pub threads: u16,

    /// Alternating rounds per measurement with --compare or --threads (the
    /// order of the phases flips every round; keep it even).
    #[arg(long, value_name = "R", default_value_t = 4,
          value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub rounds: u16,

    /// Draw throughput against payload size (log scale) to this SVG file.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,

    /// Write a results page (machine, headline table at 64 B and 16 KiB,
    /// link to the --plot file) to this Markdown file.
    #[arg(long, value_name = "FILE.md")]
    pub markdown: Option<PathBuf>,

    /// Multi-record seal instead of the other sections: N records per call
    /// (TLS 1.2, MAC-then-encrypt), against the same records sealed one by
    /// one and, with --compare, the reference's multi-record seal.
    #[arg(long, value_name = "N",
          value_parser = clap::value_parser!(u16).range(1..=64))]
    pub records: Option<u16>,

    /// With --records N: the records come from 1 connection
    /// (`Sealer::seal_many_in_place`) or from N connections with distinct
    /// keys (`seal_batch`, one record each).
    #[arg(long, value_name = "K", default_value_t = 1, requires = "records",
          value_parser = clap::value_parser!(u16).range(1..=64))]
    pub connections: u16,

    /// With --records N: open the records (`Opener::open_many_in_place`,
    /// `open_batch`) instead of sealing them, against the single-record
    /// open and, with --compare, the reference opening them.
    #[arg(long, requires = "records")]
    pub open: bool,

    /// With --records N: every side's record buffers start on page
    /// boundaries, all at one page offset (and so in the same L1 cache
    /// sets), instead of a cache line apart.
    #[arg(long, requires = "records")]
    pub page_aligned: bool,

    /// Packet formats instead of the other sections: IPsec ESP seal and
    /// open (every integrity algorithm, AES-128 and AES-256; payloads
    /// default: 64, 1400), JWE A128CBC-HS256 / A256CBC-HS512 encrypt and
    /// decrypt (1024, 65536) or SSH packets, every aes*-cbc and hmac-sha*
    /// suite, plain and -etm@openssh.com (1024, 32768).
    #[arg(long, value_name = "FORMAT", conflicts_with = "records")]
    pub format: Option<Format>,

    /// With --format: only the suites named here, repeatable. A suite is
    /// kept when every space-separated word of NAME is one of its names:
    /// `aes128-cbc`, `hmac-sha2-256-etm@openssh.com` or `"aes256-cbc
    /// hmac-sha1"` (ssh), `AES-128-CBC` or `HMAC-SHA1-96` (esp),
    /// `A256CBC-HS512` (jwe). Exact, case-sensitive.
    #[arg(long = "suite", value_name = "NAME", requires = "format")]
    pub suites: Vec<String>,
}

/// What `--format` measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// IPsec ESP packets (`cbc_hmac::esp`).
    Esp,
    /// JWE AES_CBC_HMAC_SHA2 content encryption (`cbc_hmac::jose`).
    Jwe,
    /// SSH binary packets (`cbc_hmac::ssh`).
    Ssh,
}

impl Format {
    /// The name `--format` takes.
    pub fn name(self) -> &'static str {
        match self {
            Format::Esp => "esp",
            Format::Jwe => "jwe",
            Format::Ssh => "ssh",
        }
    }

    /// The payload sizes without `--payload` or `--sweep`: ESP's small
    /// packet and a full-MTU one, JWE's 1 KiB and 64 KiB messages, SSH's
    /// interactive-sized and bulk-transfer (32 KiB, OpenSSH's channel
    /// packet) packets.
    pub fn default_payloads(self) -> &'static [usize] {
        match self {
            Format::Esp => &[64, 1400],
            Format::Jwe => &[1024, 65536],
            Format::Ssh => &[1024, 32768],
        }
    }

    /// The largest payload the section takes, and why.
    pub fn max_payload(self) -> (usize, &'static str) {
        match self {
            Format::Esp => (
                cbc_hmac::esp::MAX_PAYLOAD_LEN,
                "what one IP datagram carries",
            ),
            Format::Jwe => (MAX_FORMAT_PAYLOAD, "the benchmark's limit"),
            Format::Ssh => (
                cbc_hmac::ssh::MAX_PAYLOAD_LEN,
                "the payload of a 256 KiB packet, OpenSSH's limit",
            ),
        }
    }
}

/// What `--compare` measures against.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum CompareWith {
    /// OpenSSL's libcrypto, linked into this process.
    Openssl,
    /// intel-ipsec-mb's job API, linked into this process (with
    /// --records only; needs the `ipsec-mb` feature).
    IpsecMb,
}

impl Args {
    /// The payload sizes to measure, in the order given.
    pub fn payload_sizes(&self) -> Vec<usize> {
        if !self.payloads.is_empty() {
            let mut sizes = Vec::new();
            for &p in &self.payloads {
                if !sizes.contains(&p) {
                    sizes.push(p);
                }
            }
            sizes
        } else if self.sweep || self.plot.is_some() || self.markdown.is_some() {
            SWEEP.to_vec()
        } else {
            vec![DEFAULT_PAYLOAD]
        }
    }

    /// Checks the payload sizes against the limit of the sections that
    /// run: 16384 bytes (the TLS record limit) without `--format`, the
    /// format's own with it.
    pub fn check_payloads(&self) -> Result<(), String> {
        let Some(&largest) = self.payloads.iter().max() else {
            return Ok(());
        };
        match self.format {
            None if largest > MAX_PAYLOAD => Err(format!(
                "--payload {largest}: the cipher-MAC, MAC, cipher and multi-record sections take \
                 at most {MAX_PAYLOAD} bytes (the TLS record limit); larger payloads are for \
                 --format esp (to {}), jwe (to {}) and ssh (to {})",
                Format::Esp.max_payload().0,
                Format::Jwe.max_payload().0,
                Format::Ssh.max_payload().0,
            )),
            Some(format) if largest > format.max_payload().0 => {
                let (max, why) = format.max_payload();
                Err(format!(
                    "--payload {largest}: --format {} takes at most {max} bytes ({why})",
                    format.name()
                ))
            }
            _ => Ok(()),
        }
    }

    /// The multi-record shape, if `--records` was given: records per call
    /// and connections. Connections must be 1 or the record count.
    pub fn multi(&self) -> Result<Option<(usize, usize)>, String> {
        let Some(records) = self.records else {
            if self.compare == Some(CompareWith::IpsecMb) {
                return Err("--compare ipsec-mb needs --records".into());
            }
            return Ok(None);
        };
        let (n, k) = (usize::from(records), usize::from(self.connections));
        if k != 1 && k != n {
            return Err(format!(
                "--connections {k}: must be 1 (one connection's records) or {n} (one \
                 record from each of {n} connections)"
            ));
        }
        Ok(Some((n, k)))
    }

    /// The number of worker threads.
    pub fn thread_count(&self) -> usize {
        usize::from(self.threads)
    }

    /// The combinations to measure, in [`Combination::ALL`] order, without
    /// duplicates.
    pub fn selected_combinations(&self) -> Vec<Combination> {
        Combination::ALL
            .into_iter()
            .filter(|c| self.combinations.is_empty() || self.combinations.contains(c))
            .collect()
    }

    /// The backend named by `--backend`, or the detected one. The error
    /// lists the backends that can run here.
    pub fn resolve_backend(&self) -> Result<Backend, String> {
        let Some(name) = self.backend.as_deref() else {
            return Ok(Backend::detect());
        };
        let available = list(Backend::available());
        match Backend::from_name(name) {
            None => Err(format!(
                "unknown backend \"{name}\"; known backends: {}; available here: {available}",
                list(Backend::ALL.into_iter())
            )),
            Some(backend) if !backend.is_available() => Err(format!(
                "backend \"{backend}\" is not available on this CPU (or is masked by \
                 CBC_HMAC_CPUID_OVERRIDE); available here: {available}"
            )),
            Some(backend) => Ok(backend),
        }
    }
}

fn list(backends: impl Iterator<Item = Backend>) -> String {
    backends.map(Backend::name).collect::<Vec<_>>().join(", ")
}

fn parse_payload(s: &str) -> Result<usize, String> {
    let n: usize = s
        .trim()
        .parse()
        .map_err(|_| format!("\"{s}\" is not a byte count"))?;
    // The limit of the sections that run is checked once all options are
    // known (`Args::check_payloads`).
    if (1..=MAX_FORMAT_PAYLOAD).contains(&n) {
        Ok(n)
    } else {
        Err(format!(
            "payload must be 1 to {MAX_PAYLOAD} bytes (the TLS record limit), or with \
             --format up to {MAX_FORMAT_PAYLOAD}"
        ))
    }
}

fn parse_seconds(s: &str) -> Result<f64, String> {
    let t: f64 = s
        .parse()
        .map_err(|_| format!("\"{s}\" is not a number of seconds"))?;
    if t.is_finite() && t > 0.0 && t <= 3600.0 {
        Ok(t)
    } else {
        Err("seconds must be greater than 0 and at most 3600".into())
    }
}

fn parse_combination(s: &str) -> Result<Combination, String> {
    s.parse::<Combination>().map_err(|e| {
        let known = Combination::ALL.map(Combination::name).join(", ");
        format!("{e} (combinations: {known}, or an OpenSSL or IANA suite name)")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    fn parse(argv: &[&str]) -> Args {
        Args::try_parse_from(std::iter::once("cbc-hmac-bench").chain(argv.iter().copied())).unwrap()
    }

    #[test]
    fn command_is_well_formed() {
        Args::command().debug_assert();
    }

    #[test]
    fn defaults() {
        let args = parse(&[]);
        assert_eq!(args.payload_sizes(), [16384]);
        assert_eq!(args.seconds, 1.0);
        assert!(!args.json);
        assert_eq!(args.compare, None);
        assert_eq!(args.thread_count(), 1);
        assert_eq!(args.rounds, 4);
        assert_eq!(args.selected_combinations(), Combination::ALL);
        assert_eq!(args.resolve_backend(), Ok(Backend::detect()));
    }

    #[test]
    fn filters_and_repeats() {
        let args = parse(&[
            "--payload",
            "16",
            "--payload",
            "1000,64",
            "--payload",
            "16",
            "--combination",
            "AES256-SHA",
            "--combination",
            "TLS_RSA_WITH_AES_128_CBC_SHA",
            "--combination",
            "aes-128-cbc-sha1",
        ]);
        assert_eq!(args.payload_sizes(), [16, 1000, 64]);
        assert_eq!(
            args.selected_combinations(),
            [Combination::Aes128CbcSha1, Combination::Aes256CbcSha1]
        );
    }

    #[test]
    fn sweep_by_default_when_plotting() {
        assert_eq!(parse(&["--sweep"]).payload_sizes(), SWEEP);
        assert_eq!(parse(&["--plot", "x.svg"]).payload_sizes(), SWEEP);
        assert_eq!(parse(&["--markdown", "x.md"]).payload_sizes(), SWEEP);
        assert_eq!(
            parse(&["--plot", "x.svg", "--payload", "64"]).payload_sizes(),
            [64]
        );
    }

    #[test]
    fn format_payload_limits_and_defaults() {
        for argv in [
            &["--payload", "16384"][..],
            &["--format", "esp", "--payload", "65535"],
            &["--format", "jwe", "--payload", "1024,65536,262144"],
            &["--format", "ssh", "--payload", "262120"],
        ] {
            assert_eq!(parse(argv).check_payloads(), Ok(()), "{argv:?}");
        }
        assert_eq!(Format::Esp.default_payloads(), [64, 1400]);
        assert_eq!(Format::Jwe.default_payloads(), [1024, 65536]);
        assert_eq!(Format::Ssh.default_payloads(), [1024, 32768]);
        for f in [Format::Esp, Format::Jwe, Format::Ssh] {
            let (max, _) = f.max_payload();
            assert!(f.default_payloads().iter().all(|&p| p <= max));
            assert!(max <= MAX_FORMAT_PAYLOAD);
        }
        let args = parse(&["--format", "ssh", "--suite", "aes128-cbc", "--suite", "a b"]);
        assert_eq!(args.format, Some(Format::Ssh));
        assert_eq!(args.suites, ["aes128-cbc", "a b"]);
    }

    #[test]
    fn compare_and_threads() {
        let args = parse(&["--compare", "openssl", "--threads", "2", "--rounds", "6"]);
        assert_eq!(args.compare, Some(CompareWith::Openssl));
        assert_eq!(args.thread_count(), 2);
        assert_eq!(args.rounds, 6);
    }

    #[test]
    fn rejects_bad_values() {
        for bad in [
            &["--payload", "0"][..],
            &["--payload", "262145"],
            &["--payload", "16,x"],
            &["--seconds", "0"],
            &["--seconds", "nan"],
            &["--combination", "AES128-GCM-SHA256"],
            &["--compare", "gnutls"],
            &["--threads", "0"],
            &["--threads", "257"],
            &["--rounds", "0"],
            &["--sweep", "--payload", "64"],
            &["--suite", "aes128-cbc"],
            &["--format", "tls"],
        ] {
            let argv = std::iter::once("cbc-hmac-bench").chain(bad.iter().copied());
            assert!(Args::try_parse_from(argv).is_err(), "{bad:?}");
        }
        for (argv, max) in [
            (&["--payload", "16385"][..], "at most 16384 bytes"),
            (
                &["--records", "2", "--payload", "16,20000"],
                "at most 16384 bytes",
            ),
            (
                &["--format", "esp", "--payload", "65536"],
                "at most 65535 bytes",
            ),
            (
                &["--format", "ssh", "--payload", "262121"],
                "at most 262120 bytes",
            ),
        ] {
            let e = parse(argv).check_payloads().unwrap_err();
            assert!(e.contains(max), "{argv:?}: {e}");
        }
        let args = parse(&["--backend", "nonsense"]);
        assert!(
            args.resolve_backend()
                .unwrap_err()
                .contains("available here")
        );
    }
}
