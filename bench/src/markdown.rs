//! `--markdown FILE.md`: a results page for the README: the machine, the
//! headline table (every combination, seal and open, at 16 KiB and 64 B,
//! cbc-hmac against OpenSSL when comparing), the MACs, hashes and ciphers, and the
//! `--plot` picture.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::machine::Cpu;
use crate::output::{Row, RunInfo, Section};
use crate::plot::size_label;

/// The payloads of the headline tables, when measured.
pub const HEADLINE: [usize; 2] = [16384, 64];

/// Everything around the figures.
pub struct Page<'a> {
    /// Backend, plan, OpenSSL version.
    pub info: &'a RunInfo,
    /// The CPU measured on.
    pub cpu: &'a Cpu,
    /// The arguments of this run (without the program name).
    pub args: &'a [String],
    /// Load average before and after the run.
    pub load: (Option<String>, Option<String>),
    /// Where the Markdown goes (for the picture's relative link).
    pub path: &'a Path,
    /// The `--plot` file, if any.
    pub plot: Option<&'a Path>,
}

/// The command that reproduces the run, from the workspace root.
pub fn command(args: &[String], compare: bool) -> String {
    let features = if compare { " --features openssl" } else { "" };
    let quoted: Vec<String> = args.iter().map(|a| shell_word(a)).collect();
    format!(
        "cargo run --release -p cbc-hmac-bench{features} -- {}",
        quoted.join(" ")
    )
}

fn shell_word(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=,:@%+".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// The picture's path relative to the Markdown file's folder, when it lies
/// under it; else as given.
fn relative_link(markdown: &Path, plot: &Path) -> String {
    let dir = markdown.parent().unwrap_or(Path::new(""));
    let rel: PathBuf = plot
        .strip_prefix(dir)
        .map(Path::to_path_buf)
        .unwrap_or_else(|_| plot.to_path_buf());
    rel.to_string_lossy().replace('\\', "/")
}

/// `1.60 GB/s`, with the time per operation for small payloads.
fn figure(gb: f64, ns: Option<f64>) -> String {
    match ns {
        Some(ns) => format!("{gb:.2} GB/s ({ns:.0} ns)"),
        None => format!("{gb:.2} GB/s"),
    }
}

/// The cells of one row: cbc-hmac, and OpenSSL and the ratio when
/// comparing.
fn cells(row: &Row, compare: bool) -> Vec<String> {
    let p = row.payload;
    let o = &row.outcome;
    let show_ns = p <= 1024;
    let one = |f: &crate::driver::Figures| {
        let m = f.total();
        let ns = (show_ns && f.many.is_none()).then(|| m.ns_per_op());
        figure(m.gb_per_s(p), ns)
    };
    let mut out = vec![one(&o.ours)];
    if compare {
        match (&o.theirs, o.ratio(p)) {
            (Some(theirs), Some(ratio)) => {
                out.push(one(theirs));
                out.push(match o.ratio_per_cpu(p) {
                    Some(r) => format!("**{ratio:.2}** ({r:.2})"),
                    None => format!("**{ratio:.2}**"),
                });
            }
            _ => out.extend(["-".to_string(), "-".to_string()]),
        }
    }
    out
}

/// The page.
pub fn render(rows: &[Row], page: &Page<'_>) -> String {
    let info = page.info;
    let compare = info.openssl_version.is_some();
    let plan = &info.plan;
    let mut measured: Vec<usize> = rows.iter().map(|r| r.payload).collect();
    measured.sort_unstable_by(|a, b| b.cmp(a));
    measured.dedup();
    let mut headline: Vec<usize> = HEADLINE
        .into_iter()
        .filter(|p| measured.contains(p))
        .collect();
    if headline.is_empty() {
        headline = measured.clone();
    }

    let mut s = String::new();
    let title = if compare {
        "# Throughput: cbc-hmac and OpenSSL"
    } else {
        "# Throughput of cbc-hmac"
    };
    let _ = writeln!(s, "{title}\n");
    let _ = writeln!(
        s,
        "Produced, with the plot, by one command from the workspace root:\n\n```sh\n{}\n```\n",
        command(page.args, compare)
    );
    let threads = if plan.threads > 1 {
        format!(
            "{} threads (aggregate; one independent sealer/opener per thread)",
            plan.threads
        )
    } else {
        "one thread".into()
    };
    let _ = writeln!(
        s,
        "- **Machine:** {}, {} ({} logical CPUs); CPU flags: {}",
        page.cpu.model,
        page.cpu.id_summary(),
        page.cpu.logical_cpus,
        page.cpu.flag_summary()
    );
    let _ = writeln!(
        s,
        "- **Backend:** `{}` (uses {}); open: {}; {}",
        info.backend,
        info.backend.feature_names(),
        info.backend.open_kernel(),
        crate::output::kernel_line(info.backend)
    );
    if let Some(version) = &info.openssl_version {
        let _ = writeln!(
            s,
            "- **OpenSSL:** {version}, libcrypto linked into the same process, same buffers \
             and payloads"
        );
    }
    let rounds = if plan.round_count() > 1 {
        format!(
            ", in {} alternating rounds (order reversed every other round)",
            plan.round_count()
        )
    } else {
        String::new()
    };
    let _ = writeln!(
        s,
        "- **Method:** {threads}; {} s timed per figure{rounds}; GB = 1e9 bytes of payload",
        plan.target.as_secs_f64()
    );
    if let (Some(before), Some(after)) = &page.load {
        let _ = writeln!(
            s,
            "- **Load average** (1, 5, 15 min) before / after: {before} / {after}{}",
            if compare {
                " (on a shared machine the absolute figures move; the ratios, measured in \
                 alternating rounds, move much less)"
            } else {
                ""
            }
        );
    }
    let (mut cpu, mut wall) = (Some(0.0), 0.0);
    for f in rows
        .iter()
        .flat_map(|r| std::iter::once(r.outcome.ours).chain(r.outcome.theirs))
    {
        cpu = cpu.zip(f.one.cpu_seconds).map(|(a, b)| a + b);
        wall += f.one.seconds;
    }
    if let Some(cpu) = cpu.filter(|_| wall > 0.0) {
        let _ = writeln!(
            s,
            "- **CPU time / wall time** of the one-thread timed loops: {:.2} (1.00: the \
             measuring thread had a core to itself; less: other processes took the CPU)",
            cpu / wall
        );
    }
    s.push('\n');

    // Records.
    let _ = writeln!(s, "## Records (TLS 1.2, MAC-then-encrypt)\n");
    if compare {
        let _ = writeln!(
            s,
            "| combination | payload | seal: cbc-hmac | seal: OpenSSL | ratio (per CPU-s) \
             | open: cbc-hmac | open: OpenSSL | ratio (per CPU-s) |\n\
             |---|---:|---:|---:|---:|---:|---:|---:|"
        );
    } else {
        let _ = writeln!(
            s,
            "| combination | payload | seal | open |\n|---|---:|---:|---:|"
        );
    }
    for &p in &headline {
        let mut names: Vec<&str> = Vec::new();
        for r in rows
            .iter()
            .filter(|r| r.section == Section::Combinations && r.payload == p)
        {
            if !names.contains(&r.name.as_str()) {
                names.push(&r.name);
            }
        }
        for name in names {
            let find = |dir: &str| {
                rows.iter().find(|r| {
                    r.section == Section::Combinations
                        && r.payload == p
                        && r.name == name
                        && r.direction == dir
                })
            };
            let mut line = format!("| {name} | {} |", size_label(p as f64));
            for dir in ["seal", "open"] {
                let c = find(dir).map_or_else(
                    || vec!["-".to_string(); if compare { 3 } else { 1 }],
                    |r| cells(r, compare),
                );
                for cell in c {
                    let _ = write!(line, " {cell} |");
                }
            }
            let _ = writeln!(s, "{line}");
        }
    }
    s.push('\n');

    // MACs, hashes and ciphers.
    let others: Vec<&Row> = headline
        .iter()
        .flat_map(|&p| {
            rows.iter()
                .filter(move |r| r.section != Section::Combinations && r.payload == p)
        })
        .collect();
    if !others.is_empty() {
        let _ = writeln!(s, "## MACs, hashes and ciphers\n");
        if compare {
            let _ = writeln!(
                s,
                "| algorithm | payload | cbc-hmac | OpenSSL | ratio (per CPU-s) |\n\
                 |---|---:|---:|---:|---:|"
            );
        } else {
            let _ = writeln!(s, "| algorithm | payload | cbc-hmac |\n|---|---:|---:|");
        }
        for r in others {
            let what = match r.section {
                Section::Ciphers | Section::Hashes => format!("{} {}", r.name, r.direction),
                _ => r.name.clone(),
            };
            let mut line = format!("| {what} | {} |", size_label(r.payload as f64));
            for cell in cells(r, compare) {
                let _ = write!(line, " {cell} |");
            }
            let _ = writeln!(s, "{line}");
        }
        s.push('\n');
    }

    if let Some(plot) = page.plot {
        let _ = writeln!(
            s,
            "![Throughput against payload size, every combination and direction{}]({})\n",
            if compare {
                " (solid: cbc-hmac, dashed: OpenSSL)"
            } else {
                ""
            },
            relative_link(page.path, plot)
        );
    }

    let _ = writeln!(
        s,
        "What is timed: seal = `seal_in_place` on a preallocated buffer with increasing \
         sequence numbers (cbc-hmac draws a fresh explicit IV per record); open = copy the \
         record into the work buffer and open it in place (constant-time); HMAC with the key \
         prepared once; the hash of one message; AES-CBC with the key expanded once, in place. \
         Every figure is checked after it is timed (the records open, the tags verify, the \
         hashes match, decryption inverts encryption)."
    );
    if compare {
        let _ = writeln!(
            s,
            "\nOpenSSL runs: for SHA-1 and SHA-256, its stitched \
             `AES-*-CBC-HMAC-SHA*` EVP ciphers in TLS record mode (`EVP_CTRL_AEAD_TLS1_AAD`: \
             MAC, padding and explicit IV included; sealed as libssl does, without timing \
             libssl's `RAND_bytes` for the IV); for SHA-384, where it has no stitched cipher, \
             EVP AES-CBC plus `HMAC_CTX` over the same record layout (its open checks padding \
             and MAC in variable time, less work than a constant-time open); for the MACs \
             `HMAC_CTX` and for the ciphers EVP AES-CBC, keyed once; for the hashes the \
             low-level `SHA*_Init/Update/Final` (the same assembly as its EVP digests, \
             without their lookup). Before timing, each \
             comparison checks that both seal the same record for the same IV and that each \
             opens the other's records. ratio = cbc-hmac / OpenSSL throughput (above 1: cbc-hmac \
             is faster); in parentheses, the same per CPU-second of the measuring thread, which \
             other processes on a shared machine disturb less than wall time."
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::{Figures, Outcome, Plan};
    use crate::measure::Measurement;
    use cbc_hmac::Backend;
    use std::time::Duration;

    fn row(section: Section, name: &str, direction: &'static str, payload: usize) -> Row {
        let f = |ops| Figures {
            one: Measurement::wall(ops, 1.0),
            many: None,
        };
        Row {
            section,
            name: name.into(),
            direction,
            payload,
            outcome: Outcome {
                ours: f(2_000_000),
                theirs: Some(f(1_000_000)),
            },
            openssl_impl: None,
        }
    }

    #[test]
    fn page() {
        let info = RunInfo {
            backend: Backend::Portable,
            plan: Plan {
                threads: 1,
                compare: true,
                rounds: 4,
                target: Duration::from_secs(1),
            },
            openssl_version: Some("OpenSSL 3.0.0".into()),
            cpu: "Test CPU, unknown".into(),
        };
        let cpu = Cpu::parse("processor : 0\nmodel name : Test CPU\nflags : aes avx2\n");
        let args: Vec<String> = ["--compare", "openssl", "--plot", "docs/results/x y.svg"]
            .map(String::from)
            .to_vec();
        let mut rows = Vec::new();
        for p in [64, 256, 16384] {
            rows.push(row(Section::Combinations, "AES-128-CBC-SHA1", "seal", p));
            rows.push(row(Section::Combinations, "AES-128-CBC-SHA1", "open", p));
            rows.push(row(Section::Macs, "HMAC-SHA1", "mac", p));
        }
        let plot = Path::new("docs/results/x y.svg");
        let text = render(
            &rows,
            &Page {
                info: &info,
                cpu: &cpu,
                args: &args,
                load: (Some("1.00 2.00 3.00".into()), Some("1 1 1".into())),
                path: Path::new("docs/results/RESULTS.md"),
                plot: Some(plot),
            },
        );
        assert!(text.contains(
            "cargo run --release -p cbc-hmac-bench --features openssl -- --compare openssl \
             --plot 'docs/results/x y.svg'"
        ));
        assert!(
            text.contains("Test CPU, unknown (1 logical CPUs); CPU flags: aes, no sha_ni, avx2")
        );
        assert!(text.contains("Hash kernels: SHA-1 the sha1 crate; "));
        assert!(text.contains(
            "| AES-128-CBC-SHA1 | 16 KiB | 32.77 GB/s | 16.38 GB/s | **2.00** | 32.77 GB/s | \
             16.38 GB/s | **2.00** |"
        ));
        assert!(text.contains("| AES-128-CBC-SHA1 | 64 B | 0.13 GB/s (500 ns) |"));
        assert!(!text.contains("| 256 B |"), "only the headline payloads");
        assert!(text.contains("| HMAC-SHA1 | 64 B |"));
        assert!(text.contains("](x y.svg)"));
    }
}
