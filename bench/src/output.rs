//! Printing results: readable text in the style of `gnutls-cli
//! --benchmark-ciphers`, or one JSON object per line; and the progress line
//! on a terminal's stderr.

use std::io::{self, IsTerminal, Write};
use std::time::Instant;

use cbc_hmac::{Backend, MacAlgorithm};

use crate::driver::{Figures, Outcome, Plan};
use crate::measure::Measurement;

/// The four sections, printed in this order for each payload size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Section {
    /// Record seal and open per cipher-MAC combination.
    Combinations,
    /// HMAC per hash function.
    Macs,
    /// The plain hash functions.
    Hashes,
    /// AES-CBC encrypt and decrypt per key size.
    Ciphers,
}

impl Section {
    /// The `section` value of the JSON lines.
    pub fn key(self) -> &'static str {
        match self {
            Section::Combinations => "combination",
            Section::Macs => "mac",
            Section::Hashes => "hash",
            Section::Ciphers => "cipher",
        }
    }

    fn title(self) -> &'static str {
        match self {
            Section::Combinations => "cipher-MAC combinations",
            Section::Macs => "MAC algorithms",
            Section::Hashes => "hash functions",
            Section::Ciphers => "ciphers",
        }
    }
}

/// One finished measurement.
#[derive(Clone, Debug)]
pub struct Row {
    /// Its section.
    pub section: Section,
    /// What was measured: `AES-128-CBC-SHA1`, `HMAC-SHA1`, `AES-128-CBC`.
    pub name: String,
    /// `seal`, `open`, `mac`, `encrypt` or `decrypt`.
    pub direction: &'static str,
    /// Payload bytes per operation.
    pub payload: usize,
    /// The figures.
    pub outcome: Outcome,
    /// What OpenSSL ran, when comparing.
    pub openssl_impl: Option<String>,
}

/// How the run was made, for the headers and the JSON fields.
#[derive(Clone, Debug)]
pub struct RunInfo {
    /// The backend under test.
    pub backend: Backend,
    /// The plan of every measurement.
    pub plan: Plan,
    /// OpenSSL's version string, when comparing.
    pub openssl_version: Option<String>,
    /// The CPU, as [`crate::machine::Cpu::id_summary`] gives it (kernels
    /// tuned on one model can be slow on another, so every figure names it).
    pub cpu: String,
}

/// The hashes whose kernels reports name, with their JSON keys.
const HASH_KERNELS: [(&str, &str, MacAlgorithm); 3] = [
    ("SHA-1", "sha1_kernel", MacAlgorithm::HmacSha1),
    ("SHA-256", "sha256_kernel", MacAlgorithm::HmacSha256),
    ("SHA-384/512", "sha512_kernel", MacAlgorithm::HmacSha384),
];

/// `Hash kernels: SHA-1 SHA-NI; ...; SHA-384/512 ...; CBC decryption: ...`:
/// what `backend` hashes and decrypts with on this CPU, for text headers.
pub fn kernel_line(backend: Backend) -> String {
    let kernels: Vec<String> = HASH_KERNELS
        .iter()
        .map(|&(hash, _, mac)| format!("{hash} {}", backend.hash_kernel(mac)))
        .collect();
    format!(
        "Hash kernels: {}; CBC decryption: {}",
        kernels.join("; "),
        backend.cbc_decrypt_kernel()
    )
}

/// The same as JSON members (`"sha1_kernel":"SHA-NI",...`), keys first.
pub fn kernel_fields(backend: Backend) -> Vec<(String, String)> {
    let mut fields: Vec<(String, String)> = HASH_KERNELS
        .iter()
        .map(|&(_, key, mac)| (key.to_string(), json_string(backend.hash_kernel(mac))))
        .collect();
    fields.push((
        "cbc_decrypt_kernel".into(),
        json_string(backend.cbc_decrypt_kernel()),
    ));
    fields
}

/// Writes rows to `out` as text or JSON lines.
pub struct Reporter<W: Write> {
    out: W,
    json: bool,
    info: RunInfo,
    in_section: bool,
}

impl<W: Write> Reporter<W> {
    /// A reporter for a run described by `info`.
    pub fn new(out: W, json: bool, info: RunInfo) -> Self {
        Reporter {
            out,
            json,
            info,
            in_section: false,
        }
    }

    /// The first lines of a text report: the backend, and what threads and
    /// the comparison mean.
    pub fn start(&mut self) -> io::Result<()> {
        if self.json {
            return Ok(());
        }
        writeln!(
            self.out,
            "Backend: {} (open: {})",
            self.info.backend,
            self.info.backend.open_kernel()
        )?;
        writeln!(self.out, "CPU: {}", self.info.cpu)?;
        writeln!(self.out, "{}", kernel_line(self.info.backend))?;
        let plan = &self.info.plan;
        if plan.threads > 1 {
            writeln!(
                self.out,
                "Threads: {n} (independent workers; GB/sec is the aggregate of {n} threads, \
                 efficiency = aggregate / ({n} x one thread))",
                n = plan.threads
            )?;
        }
        if let Some(version) = &self.info.openssl_version {
            writeln!(
                self.out,
                "Compared with: {version} (libcrypto in this process, same buffers, {} \
                 alternating rounds; ratio = cbc-hmac / OpenSSL throughput, per wall-second \
                 and per CPU-second of the measuring thread)",
                plan.round_count()
            )?;
        }
        self.out.flush()
    }

    /// A section header (text only), after a blank line if a section came
    /// before.
    pub fn section(&mut self, section: Section, payload: usize) -> io::Result<()> {
        if self.json {
            return Ok(());
        }
        if self.in_section {
            writeln!(self.out)?;
        }
        self.in_section = true;
        writeln!(
            self.out,
            "Checking {}, payload size: {payload}",
            section.title()
        )?;
        self.out.flush()
    }

    /// One result line.
    pub fn row(&mut self, row: &Row) -> io::Result<()> {
        let line = if self.json {
            json_line(row, &self.info)
        } else {
            text_line(row)
        };
        writeln!(self.out, "{line}")?;
        self.out.flush()
    }
}

/// The text line of `row`: cbc-hmac's figure first (as `gnutls-cli` prints
/// it), then OpenSSL's and the ratio, then the thread scaling.
fn text_line(row: &Row) -> String {
    // The MAC section names the hash alone, as gnutls-cli does.
    let label = match row.section {
        Section::Macs => row.name.trim_start_matches("HMAC-").to_string(),
        _ => format!("{} {}", row.name, row.direction),
    };
    let p = row.payload;
    let o = &row.outcome;
    let mut line = format!("{label:>26}");
    let figure = |f: &Figures| {
        let m = f.total();
        if f.many.is_some() {
            format!(" {:>6.2} GB/sec", m.gb_per_s(p))
        } else {
            format!(
                " {:>6.2} GB/sec  {:>10.1} ns/op",
                m.gb_per_s(p),
                m.ns_per_op()
            )
        }
    };
    line += &figure(&o.ours);
    if let (Some(theirs), Some(ratio)) = (&o.theirs, o.ratio(p)) {
        line += "   OpenSSL";
        line += &figure(theirs);
        line += &format!("   ratio {ratio:>5.2}");
        if let Some(r) = o.ratio_per_cpu(p) {
            line += &format!(" (per CPU-s {r:.2})");
        }
    }
    if let Some((n, _)) = o.ours.many {
        let pct = |x: Option<f64>| x.map_or("?".to_string(), |e| format!("{:.0}%", e * 100.0));
        let cores = |m: Measurement| {
            m.cpu_per_wall()
                .map_or("?".to_string(), |c| format!("{c:.2}"))
        };
        match &o.theirs {
            None => {
                let f = &o.ours;
                line += &format!(
                    " on {n} threads   1 thread {:>6.2} GB/sec   efficiency {:>4}   \
                     [CPU/wall {} vs {}; per CPU-second {}]",
                    f.one.gb_per_s(p),
                    pct(f.efficiency(p)),
                    cores(f.total()),
                    cores(f.one),
                    pct(f.efficiency_per_cpu(p)),
                );
            }
            Some(theirs) => {
                line += &format!(
                    "   1 thread {:.2} / {:.2} GB/sec   efficiency {} / {}   \
                     [per CPU-second {} / {}]",
                    o.ours.one.gb_per_s(p),
                    theirs.one.gb_per_s(p),
                    pct(o.ours.efficiency(p)),
                    pct(theirs.efficiency(p)),
                    pct(o.ours.efficiency_per_cpu(p)),
                    pct(theirs.efficiency_per_cpu(p)),
                );
            }
        }
    }
    line
}

/// The JSON object of `row`, on one line.
fn json_line(row: &Row, info: &RunInfo) -> String {
    let p = row.payload;
    let o = &row.outcome;
    let mut fields: Vec<(String, String)> = [
        ("section", json_string(row.section.key())),
        ("name", json_string(&row.name)),
        ("direction", json_string(row.direction)),
        ("payload", p.to_string()),
        ("backend", json_string(info.backend.name())),
        ("cpu", json_string(&info.cpu)),
        ("open_kernel", json_string(info.backend.open_kernel())),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    fields.extend(kernel_fields(info.backend));
    fields.push(("threads".into(), info.plan.threads.to_string()));
    let add = |fields: &mut Vec<(String, String)>, prefix: &str, f: &Figures| {
        let m: Measurement = f.total();
        let mut put = |key: &str, value: String| fields.push((format!("{prefix}{key}"), value));
        put("bytes", m.bytes(p).to_string());
        put("seconds", json_number(m.seconds));
        put("gb_per_s", json_number(m.gb_per_s(p)));
        put("ops", m.ops.to_string());
        if let Some(c) = m.cpu_per_wall() {
            put("cpu_per_wall", json_number(c));
        }
        if let Some(b) = m.bytes_per_cpu_second(p) {
            put("gb_per_cpu_s", json_number(b / 1e9));
        }
        if f.many.is_some() {
            put("one_thread_gb_per_s", json_number(f.one.gb_per_s(p)));
            if let Some(c) = f.one.cpu_per_wall() {
                put("one_thread_cpu_per_wall", json_number(c));
            }
            let e = f.efficiency(p).unwrap_or(f64::NAN);
            put("scaling_efficiency", json_number(e));
            if let Some(e) = f.efficiency_per_cpu(p) {
                put("scaling_efficiency_per_cpu", json_number(e));
            }
        }
    };
    add(&mut fields, "", &o.ours);
    if let (Some(theirs), Some(ratio)) = (&o.theirs, o.ratio(p)) {
        let version = info.openssl_version.as_deref().unwrap_or("OpenSSL");
        fields.push(("openssl_version".into(), json_string(version)));
        let what = row.openssl_impl.as_deref().unwrap_or("");
        fields.push(("openssl_impl".into(), json_string(what)));
        add(&mut fields, "openssl_", theirs);
        fields.push(("ratio".into(), json_number(ratio)));
        if let Some(r) = o.ratio_per_cpu(p) {
            fields.push(("ratio_per_cpu".into(), json_number(r)));
        }
    }
    let body: Vec<String> = fields
        .into_iter()
        .map(|(k, v)| format!("{}:{v}", json_string(&k)))
        .collect();
    format!("{{{}}}", body.join(","))
}

/// A JSON number with six decimals, or `null` for NaN and infinities.
fn json_number(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.6}")
    } else {
        "null".into()
    }
}

/// A JSON string literal.
fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The progress line on stderr, only when stderr is a terminal: which
/// measurement runs, how many are done, and about how long is left.
pub struct Progress {
    enabled: bool,
    total: usize,
    done: usize,
    started: Instant,
}

impl Progress {
    /// Progress over `total` measurements, shown if stderr is a terminal.
    pub fn new(total: usize) -> Self {
        Progress {
            enabled: io::stderr().is_terminal(),
            total,
            done: 0,
            started: Instant::now(),
        }
    }

    /// Shows that `what` starts.
    pub fn start(&mut self, what: &str) {
        if !self.enabled {
            return;
        }
        let per = self.started.elapsed().as_secs_f64() / self.done.max(1) as f64;
        let secs = per * (self.total - self.done) as f64;
        let left = if self.done > 0 && secs >= 1.0 {
            format!(", about {secs:.0} s left")
        } else {
            String::new()
        };
        eprint!("\r\x1b[2K[{}/{}] {what}{left}", self.done + 1, self.total);
        let _ = io::stderr().flush();
    }

    /// The measurement finished: clears the line (so that a report on the
    /// same terminal is not mixed with it).
    pub fn finish_one(&mut self) {
        self.done += 1;
        self.clear();
    }

    /// Clears the progress line.
    pub fn clear(&self) {
        if self.enabled {
            eprint!("\r\x1b[2K");
            let _ = io::stderr().flush();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::Plan;
    use std::time::Duration;

    fn m(ops: u64, seconds: f64) -> Measurement {
        Measurement::wall(ops, seconds)
    }

    fn cpu(ops: u64, cpu_seconds: f64) -> Measurement {
        Measurement {
            ops,
            seconds: 1.0,
            cpu_seconds: Some(cpu_seconds),
        }
    }

    fn plan(threads: usize, compare: bool) -> Plan {
        Plan {
            threads,
            compare,
            rounds: 4,
            target: Duration::from_secs(1),
        }
    }

    fn info(threads: usize, compare: bool) -> RunInfo {
        RunInfo {
            backend: Backend::Portable,
            plan: plan(threads, compare),
            openssl_version: compare.then(|| "OpenSSL 3.0.0".to_string()),
            cpu: "GenuineIntel family 6 model 207 (0x6/0xcf)".into(),
        }
    }

    fn row(section: Section, name: &str, direction: &'static str, outcome: Outcome) -> Row {
        Row {
            section,
            name: name.into(),
            direction,
            payload: 16,
            outcome,
            openssl_impl: outcome.theirs.map(|_| "stitched".to_string()),
        }
    }

    fn plain(ops: u64) -> Outcome {
        Outcome {
            ours: Figures {
                one: m(ops, 0.5),
                many: None,
            },
            theirs: None,
        }
    }

    fn report(json: bool) -> String {
        let mut r = Reporter::new(Vec::new(), json, info(1, false));
        r.start().unwrap();
        r.section(Section::Combinations, 16).unwrap();
        r.row(&row(
            Section::Combinations,
            "AES-128-CBC-SHA1",
            "seal",
            plain(1000),
        ))
        .unwrap();
        r.section(Section::Macs, 16).unwrap();
        r.row(&row(Section::Macs, "HMAC-SHA1", "mac", plain(1000)))
            .unwrap();
        String::from_utf8(r.out).unwrap()
    }

    #[test]
    fn text() {
        let text = report(false);
        let lines: Vec<&str> = text.lines().collect();
        let open = Backend::Portable.open_kernel();
        assert_eq!(lines[0], format!("Backend: portable (open: {open})"));
        assert_eq!(lines[1], "CPU: GenuineIntel family 6 model 207 (0x6/0xcf)");
        assert_eq!(
            lines[2],
            "Hash kernels: SHA-1 the sha1 crate; SHA-256 the sha2 crate; \
             SHA-384/512 the sha2 crate; CBC decryption: the aes/cbc crates"
        );
        assert_eq!(
            lines[3],
            "Checking cipher-MAC combinations, payload size: 16"
        );
        assert_eq!(
            lines[4].trim(),
            "AES-128-CBC-SHA1 seal   0.00 GB/sec    500000.0 ns/op"
        );
        assert_eq!(lines[5], "");
        assert_eq!(lines[6], "Checking MAC algorithms, payload size: 16");
        assert!(lines[7].trim_start().starts_with("SHA1 "));
    }

    #[test]
    fn json_lines() {
        let open = json_string(Backend::Portable.open_kernel());
        let cpu = json_string("GenuineIntel family 6 model 207 (0x6/0xcf)");
        assert_eq!(
            report(true),
            format!(
                "{{\"section\":\"combination\",\"name\":\"AES-128-CBC-SHA1\",\"direction\":\"seal\",\
                 \"payload\":16,\"backend\":\"portable\",\"cpu\":{cpu},\"open_kernel\":{open},\
                 \"sha1_kernel\":\"the sha1 crate\",\"sha256_kernel\":\"the sha2 crate\",\
                 \"sha512_kernel\":\"the sha2 crate\",\
                 \"cbc_decrypt_kernel\":\"the aes/cbc crates\",\"threads\":1,\
                 \"bytes\":16000,\"seconds\":0.500000,\"gb_per_s\":0.000032,\"ops\":1000}}\n\
                 {{\"section\":\"mac\",\"name\":\"HMAC-SHA1\",\"direction\":\"mac\",\
                 \"payload\":16,\"backend\":\"portable\",\"cpu\":{cpu},\"open_kernel\":{open},\
                 \"sha1_kernel\":\"the sha1 crate\",\"sha256_kernel\":\"the sha2 crate\",\
                 \"sha512_kernel\":\"the sha2 crate\",\
                 \"cbc_decrypt_kernel\":\"the aes/cbc crates\",\"threads\":1,\
                 \"bytes\":16000,\"seconds\":0.500000,\"gb_per_s\":0.000032,\"ops\":1000}}\n"
            )
        );
        assert_eq!(json_string("a\"b\\c\n"), "\"a\\\"b\\\\c\\u000a\"");
        assert_eq!(json_number(f64::NAN), "null");
    }

    #[test]
    fn comparison_and_threads() {
        let outcome = Outcome {
            ours: Figures {
                one: cpu(1000, 0.5),
                many: Some((2, cpu(1900, 1.9))),
            },
            theirs: Some(Figures {
                one: m(500, 1.0),
                many: Some((2, m(1000, 1.0))),
            }),
        };
        let r = row(Section::Combinations, "AES-128-CBC-SHA1", "seal", outcome);
        let text = text_line(&r);
        assert!(text.contains("OpenSSL"), "{text}");
        assert!(text.contains("ratio  1.90   1 thread"), "{text}");
        assert!(text.contains("efficiency 95% / 100%"), "{text}");
        assert!(text.contains("[per CPU-second 50% / ?]"), "{text}");
        let json = json_line(&r, &info(2, true));
        for field in [
            "\"threads\":2,",
            "\"gb_per_s\":0.000030,",
            "\"one_thread_gb_per_s\":0.000016,",
            "\"cpu_per_wall\":1.900000,",
            "\"one_thread_cpu_per_wall\":0.500000,",
            "\"scaling_efficiency\":0.950000,",
            "\"scaling_efficiency_per_cpu\":0.500000,",
            "\"openssl_version\":\"OpenSSL 3.0.0\",",
            "\"openssl_impl\":\"stitched\",",
            "\"openssl_gb_per_s\":0.000016,",
            "\"openssl_scaling_efficiency\":1.000000,",
            "\"ratio\":1.900000}",
        ] {
            assert!(json.contains(field), "{field} not in {json}");
        }
    }
}
