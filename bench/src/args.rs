//! Command-line options.

use cbc_hmac::{Backend, Combination};
use clap::Parser;

/// The largest payload: the TLS record plaintext limit (2^14 bytes).
pub const MAX_PAYLOAD: usize = cbc_hmac::record::MAX_PLAINTEXT_LEN;

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
  MAC algorithms           HMAC with a key prepared once.
  ciphers                  AES-CBC with a key expanded once, in place; payloads
                           that are not whole 16-byte blocks are rounded up.

Keyed objects are built once, outside the timed loop. After each measurement
the result of its last operation is checked with independent objects on the
portable backend (sealed records open to the exact plaintext, opens return it,
tags verify, decrypt(encrypt(x)) == x); a mismatch is an error (exit status 1)."
)]
pub struct Args {
    /// Payload size in bytes, 1 to 16384; repeat for several sizes, each
    /// gets a full set of sections.
    #[arg(
        long = "payload",
        value_name = "N",
        default_value = "16384",
        value_parser = parse_payload
    )]
    pub payloads: Vec<usize>,

    /// Wall time of each measurement, in seconds (after a short warm-up).
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
}

impl Args {
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
        .parse()
        .map_err(|_| format!("\"{s}\" is not a byte count"))?;
    if (1..=MAX_PAYLOAD).contains(&n) {
        Ok(n)
    } else {
        Err(format!(
            "payload must be 1 to {MAX_PAYLOAD} bytes (the TLS record limit)"
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

    #[test]
    fn command_is_well_formed() {
        Args::command().debug_assert();
    }

    #[test]
    fn defaults() {
        let args = Args::try_parse_from(["cbc-hmac-bench"]).unwrap();
        assert_eq!(args.payloads, [16384]);
        assert_eq!(args.seconds, 1.0);
        assert!(!args.json);
        assert_eq!(args.selected_combinations(), Combination::ALL);
        assert_eq!(args.resolve_backend(), Ok(Backend::detect()));
    }

    #[test]
    fn filters_and_repeats() {
        let args = Args::try_parse_from([
            "cbc-hmac-bench",
            "--payload",
            "16",
            "--payload",
            "1000",
            "--combination",
            "AES256-SHA",
            "--combination",
            "TLS_RSA_WITH_AES_128_CBC_SHA",
            "--combination",
            "aes-128-cbc-sha1",
        ])
        .unwrap();
        assert_eq!(args.payloads, [16, 1000]);
        assert_eq!(
            args.selected_combinations(),
            [Combination::Aes128CbcSha1, Combination::Aes256CbcSha1]
        );
    }

    #[test]
    fn rejects_bad_values() {
        for bad in [
            &["--payload", "0"][..],
            &["--payload", "16385"],
            &["--seconds", "0"],
            &["--seconds", "nan"],
            &["--combination", "AES128-GCM-SHA256"],
        ] {
            let argv = std::iter::once("cbc-hmac-bench").chain(bad.iter().copied());
            assert!(Args::try_parse_from(argv).is_err(), "{bad:?}");
        }
        let args = Args::try_parse_from(["cbc-hmac-bench", "--backend", "nonsense"]).unwrap();
        assert!(
            args.resolve_backend()
                .unwrap_err()
                .contains("available here")
        );
    }
}
