//! Runs the built `cbc-hmac-bench` binary briefly, so CI exercises every
//! measurement and its checks.

use std::path::PathBuf;
use std::process::{Command, Output};

use cbc_hmac::Combination;

fn bench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cbc-hmac-bench"))
        .args(args)
        .output()
        .expect("the benchmark binary runs")
}

/// A short run of one combination at 16 bytes with `var=value`.
fn bench_with(var: &str, value: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cbc-hmac-bench"))
        .args([
            "--seconds",
            "0.01",
            "--payload",
            "16",
            "--combination",
            "AES-128-CBC-SHA1",
        ])
        .env(var, value)
        .output()
        .expect("the benchmark binary runs")
}

fn stdout_of(args: &[&str]) -> String {
    let out = bench(args);
    assert!(
        out.status.success(),
        "cbc-hmac-bench {args:?} failed: {}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

/// What a text result line measured (`SHA384`, `SHA384 hash`, ...), if it
/// is one.
fn label(line: &str) -> Option<&str> {
    let (before, _) = line.split_once(" GB/sec")?;
    let (label, _) = before.trim_end().rsplit_once(' ')?;
    Some(label.trim())
}

/// The GB/sec figure of a result line, if it is one.
fn gb_per_sec(line: &str) -> Option<f64> {
    let (before, _) = line.split_once(" GB/sec")?;
    before.split_whitespace().last()?.parse().ok()
}

#[test]
fn text_report_covers_every_combination_at_every_payload() {
    let text = stdout_of(&["--seconds", "0.05", "--payload", "16", "--payload", "1000"]);
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("Backend: "), "{text}");

    for payload in [16, 1000] {
        for section in [
            "cipher-MAC combinations",
            "MAC algorithms",
            "hash functions",
            "ciphers",
        ] {
            let header = format!("Checking {section}, payload size: {payload}");
            assert!(lines.contains(&header.as_str()), "no {header:?} in\n{text}");
        }
    }
    for c in Combination::ALL {
        for direction in ["seal", "open"] {
            let label = format!("{c} {direction} ");
            let found: Vec<&str> = lines
                .iter()
                .copied()
                .filter(|l| l.trim_start().starts_with(&label))
                .collect();
            assert_eq!(found.len(), 2, "{label:?} once per payload in\n{text}");
            for line in found {
                let gb = gb_per_sec(line).unwrap_or_else(|| panic!("no GB/sec in {line:?}"));
                assert!(gb.is_finite() && gb >= 0.0, "{line:?}");
            }
        }
    }
    for name in [
        "SHA1",
        "SHA256",
        "SHA384",
        "SHA512",
        "SHA1 hash",
        "SHA256 hash",
        "SHA384 hash",
        "SHA512 hash",
        "AES-128-CBC encrypt",
        "AES-128-CBC decrypt",
        "AES-256-CBC encrypt",
        "AES-256-CBC decrypt",
    ] {
        let n = lines
            .iter()
            .filter(|l| label(l) == Some(name) && gb_per_sec(l).is_some())
            .count();
        assert_eq!(n, 2, "{name:?} once per payload in\n{text}");
    }
}

#[test]
fn json_lines_only() {
    let text = stdout_of(&[
        "--json",
        "--seconds",
        "0.02",
        "--payload",
        "64",
        "--combination",
        "AES128-SHA",
        "--combination",
        "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384",
    ]);
    let lines: Vec<&str> = text.lines().collect();
    // Two combinations (seal, open), their two MACs and HMAC-SHA512, the
    // three hashes, their two ciphers (encrypt, decrypt).
    assert_eq!(lines.len(), 4 + 3 + 3 + 4, "{text}");
    for line in &lines {
        assert!(line.starts_with('{') && line.ends_with('}'), "{line:?}");
        for field in [
            "\"section\":",
            "\"name\":",
            "\"direction\":",
            "\"payload\":64,",
            "\"backend\":",
            "\"cpu\":",
            "\"sha1_kernel\":",
            "\"sha256_kernel\":",
            "\"sha512_kernel\":",
            "\"bytes\":",
            "\"seconds\":",
            "\"gb_per_s\":",
            "\"ops\":",
        ] {
            assert!(line.contains(field), "{field} missing from {line:?}");
        }
    }
    assert!(lines[0].contains("\"name\":\"AES-128-CBC-SHA1\",\"direction\":\"seal\""));
    assert!(lines[3].contains("\"name\":\"AES-256-CBC-SHA384\",\"direction\":\"open\""));
    assert!(lines[7].contains("\"section\":\"hash\",\"name\":\"SHA1\",\"direction\":\"hash\""));
}

#[test]
fn unknown_backend_is_an_error() {
    let out = bench(&["--backend", "nonsense", "--seconds", "0.01"]);
    assert!(!out.status.success());
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("nonsense") && stderr.contains("available"),
        "{stderr}"
    );
}

#[test]
fn unparsable_override_is_an_error() {
    let out = bench_with("CBC_HMAC_CPUID_OVERRIDE", "zz");
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("\"zz\"") && stderr.contains("0x10"),
        "{stderr}"
    );
    // A valid override selects what it says.
    let out = bench_with("CBC_HMAC_CPUID_OVERRIDE", "0x1");
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("Backend: portable"));
}

#[test]
fn tuning_cpu_is_named_or_an_error() {
    let out = bench_with("CBC_HMAC_TUNING_CPU", "AMD:1a:2");
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("CBC_HMAC_TUNING_CPU") && stderr.contains("\"AMD:1a:2\""),
        "{stderr}"
    );
    // A valid one is named beside the CPU, so that figures say which
    // choices they measured.
    let out = bench_with("CBC_HMAC_TUNING_CPU", "AuthenticAMD:0x1a:0x2");
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("kernels chosen as on AuthenticAMD family 0x1a model 0x2"),
        "{stdout}"
    );
}

#[test]
fn bad_options_are_errors() {
    for args in [
        &["--payload", "0"][..],
        &["--payload", "20000"],
        &["--seconds", "-1"],
        &["--combination", "AES128-GCM-SHA256"],
        &["--threads", "0"],
        &["--compare", "boringssl"],
        &["--sweep", "--payload", "64"],
        &["--records", "2", "--payload", "16385"],
        &["--format", "esp", "--payload", "65536"],
        &["--format", "ssh", "--payload", "262121"],
        &["--format", "jwe", "--payload", "262145"],
        &["--format", "ssh", "--suite", "aes192-cbc"],
        &["--format", "ssh", "--suite", "AES-128-CBC"],
        &["--suite", "aes128-cbc"],
    ] {
        let out = bench(args);
        assert!(!out.status.success(), "{args:?} was accepted");
        assert!(!out.stderr.is_empty(), "{args:?} gave no message");
    }
}

/// A path for an output file of this test run.
fn temp_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("{}-{name}", std::process::id()))
}

#[test]
fn threads_report_aggregate_and_efficiency() {
    let text = stdout_of(&[
        "--threads",
        "2",
        "--seconds",
        "0.05",
        "--payload",
        "1024",
        "--combination",
        "AES128-SHA",
    ]);
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[1].starts_with("CPU: "), "{text}");
    assert!(lines[2].starts_with("Hash kernels: SHA-1 "), "{text}");
    assert!(lines[3].starts_with("Threads: 2 "), "{text}");
    let results: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| gb_per_sec(l).is_some())
        .collect();
    // seal, open, HMAC-SHA1, SHA-1, AES-128-CBC encrypt and decrypt.
    assert_eq!(results.len(), 6, "{text}");
    for line in results {
        assert!(line.contains(" on 2 threads "), "{line:?}");
        let (_, efficiency) = line.split_once("efficiency").expect("an efficiency");
        let first = efficiency.split_whitespace().next().unwrap();
        let pct: f64 = first.trim_end_matches('%').parse().unwrap();
        assert!(pct > 0.0 && pct.is_finite(), "{line:?}");
        assert!(line.contains("per CPU-second"), "{line:?}");
    }
}

#[test]
fn json_with_several_payloads() {
    let text = stdout_of(&[
        "--json",
        "--seconds",
        "0.01",
        "--payload",
        "16,256",
        "--payload",
        "4096",
        "--combination",
        "AES128-SHA",
    ]);
    let lines: Vec<&str> = text.lines().collect();
    // Per payload: seal, open, HMAC-SHA1, SHA-1, AES-128-CBC encrypt and
    // decrypt.
    assert_eq!(lines.len(), 3 * 6, "{text}");
    for (i, payload) in [16, 256, 4096].into_iter().enumerate() {
        for line in &lines[i * 6..(i + 1) * 6] {
            assert!(
                line.contains(&format!("\"payload\":{payload},")),
                "{line:?}"
            );
            assert!(line.contains("\"threads\":1,"), "{line:?}");
            assert!(!line.contains("openssl"), "{line:?}");
        }
    }
}

#[test]
fn plot_is_an_svg_with_labels() {
    let path = temp_path("throughput.svg");
    let text = stdout_of(&[
        "--seconds",
        "0.01",
        "--payload",
        "16,1024",
        "--combination",
        "AES128-SHA",
        "--combination",
        "AES-256-CBC-SHA384",
        "--plot",
        path.to_str().unwrap(),
    ]);
    assert!(text.contains("payload size: 1024"), "{text}");
    let svg = std::fs::read_to_string(&path).expect("the plot was written");
    std::fs::remove_file(&path).unwrap();
    assert!(svg.trim_start().starts_with("<svg"), "{}", &svg[..100]);
    assert!(svg.trim_end().ends_with("</svg>"));
    for label in [
        "payload (bytes, log scale)",
        "throughput (GB/s)",
        "Record seal",
        "Record open",
        "HMAC",
        "AES-CBC",
        "AES-128-CBC-SHA1",
        "AES-256-CBC-SHA384",
        "AES-256-CBC decrypt",
        "1 KiB",
        "16 B",
    ] {
        assert!(svg.contains(label), "{label:?} not in the SVG");
    }
}

#[test]
fn markdown_results_page() {
    let md = temp_path("RESULTS.md");
    let svg = temp_path("plot.svg");
    stdout_of(&[
        "--seconds",
        "0.01",
        "--payload",
        "64",
        "--combination",
        "AES128-SHA",
        "--markdown",
        md.to_str().unwrap(),
        "--plot",
        svg.to_str().unwrap(),
    ]);
    let text = std::fs::read_to_string(&md).expect("the page was written");
    std::fs::remove_file(&md).unwrap();
    std::fs::remove_file(&svg).unwrap();
    assert!(text.contains("cargo run --release -p cbc-hmac-bench -- --seconds 0.01"));
    assert!(text.contains("**Backend:**") && text.contains("CPU flags"));
    assert!(text.contains("| AES-128-CBC-SHA1 | 64 B |"), "{text}");
    assert!(text.contains("plot.svg)"), "{text}");
}

#[cfg(not(feature = "openssl"))]
#[test]
fn compare_without_the_feature_says_how_to_enable_it() {
    let out = bench(&["--compare", "openssl", "--seconds", "0.01"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "cargo run --release -p cbc-hmac-bench --features openssl -- --compare openssl"
        ),
        "{stderr}"
    );
}

#[cfg(feature = "openssl")]
#[test]
fn compare_with_openssl() {
    let args = [
        "--compare",
        "openssl",
        "--seconds",
        "0.01",
        "--rounds",
        "2",
        "--payload",
        "64",
    ];
    let text = stdout_of(&args);
    // Backend, CPU and hash kernels come first.
    assert!(
        text.lines()
            .nth(3)
            .unwrap()
            .starts_with("Compared with: OpenSSL"),
        "{text}"
    );
    let labels = Combination::ALL
        .iter()
        .flat_map(|c| ["seal", "open"].map(|d| format!("{c} {d}")))
        .chain(["SHA1 hash", "SHA512 hash", "SHA512"].map(String::from));
    for wanted in labels {
        let line = text
            .lines()
            .find(|l| label(l) == Some(wanted.as_str()))
            .unwrap_or_else(|| panic!("no {wanted:?} in\n{text}"));
        let (_, theirs) = line.split_once("OpenSSL").expect("OpenSSL's figure");
        assert!(gb_per_sec(theirs).is_some(), "{line:?}");
        let (_, after) = line.split_once("ratio").unwrap();
        let ratio: f64 = after.split_whitespace().next().unwrap().parse().unwrap();
        assert!(ratio > 0.0 && ratio.is_finite(), "{line:?}");
    }

    let json = stdout_of(&[&args[..], &["--json", "--threads", "2"]].concat());
    let lines: Vec<&str> = json.lines().collect();
    // Records, MACs (HMAC-SHA512 with SHA-384), hashes, ciphers.
    assert_eq!(lines.len(), 10 + 4 + 4 + 4, "{json}");
    for line in lines {
        for field in [
            "\"openssl_version\":\"OpenSSL",
            "\"openssl_impl\":",
            "\"openssl_gb_per_s\":",
            "\"openssl_scaling_efficiency\":",
            "\"scaling_efficiency\":",
            "\"ratio\":",
        ] {
            assert!(line.contains(field), "{field} missing from {line:?}");
        }
        if cfg!(target_os = "linux") {
            assert!(line.contains("\"ratio_per_cpu\":"), "{line:?}");
        }
    }
}

#[test]
fn multi_record_section() {
    for (records, connections) in [("4", "1"), ("3", "3")] {
        let text = stdout_of(&[
            "--records",
            records,
            "--connections",
            connections,
            "--seconds",
            "0.02",
            "--rounds",
            "2",
            "--payload",
            "100,2000",
        ]);
        let conn = if connections == "1" {
            "1 connection".to_string()
        } else {
            format!("{connections} connections")
        };
        for payload in ["100", "2000"] {
            let header =
                format!("Checking multi-record seal, {records} records x {payload} bytes, {conn}");
            assert!(
                text.lines().any(|l| l == header),
                "no {header:?} in\n{text}"
            );
        }
        for c in Combination::ALL {
            let lines: Vec<&str> = text
                .lines()
                .filter(|l| l.trim_start().starts_with(&format!("{c} batch ")))
                .collect();
            assert_eq!(lines.len(), 2, "{c} once per payload in\n{text}");
            for l in lines {
                assert!(
                    gb_per_sec(l).is_some_and(|g| g.is_finite() && g >= 0.0),
                    "{l:?}"
                );
                assert!(l.contains("one by one"), "{l:?}");
            }
        }
    }
    let json = stdout_of(&[
        "--records",
        "2",
        "--json",
        "--seconds",
        "0.02",
        "--rounds",
        "2",
        "--payload",
        "64",
        "--combination",
        "AES128-SHA",
    ]);
    let line = json.trim();
    for key in [
        "\"records\":2",
        "\"connections\":1",
        "\"single_ratio\":",
        "\"cpu\":",
    ] {
        assert!(line.contains(key), "{key} in {line}");
    }
    // Connections must be 1 or the record count.
    let out = bench(&["--records", "4", "--connections", "2"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--connections 2"));
}

#[test]
fn multi_record_open_section() {
    for (records, connections) in [("5", "1"), ("16", "16")] {
        let text = stdout_of(&[
            "--records",
            records,
            "--connections",
            connections,
            "--open",
            "--seconds",
            "0.02",
            "--rounds",
            "2",
            "--payload",
            "100,2000",
            "--combination",
            "AES128-SHA",
            "--combination",
            "AES-256-CBC-SHA384",
        ]);
        assert!(text.contains("(open: "), "no open kernel in\n{text}");
        for payload in ["100", "2000"] {
            let prefix = format!("Checking multi-record open, {records} records x {payload} bytes");
            assert!(
                text.lines().any(|l| l.starts_with(&prefix)),
                "no {prefix:?} in\n{text}"
            );
        }
        let lines: Vec<&str> = text
            .lines()
            .filter(|l| l.contains(" batch ") && l.contains("GB/sec"))
            .collect();
        assert_eq!(lines.len(), 4, "two combinations x two payloads in\n{text}");
        for l in lines {
            assert!(
                gb_per_sec(l).is_some_and(|g| g.is_finite() && g >= 0.0),
                "{l:?}"
            );
            assert!(l.contains("one by one"), "{l:?}");
        }
    }
    let json = stdout_of(&[
        "--records",
        "3",
        "--open",
        "--json",
        "--seconds",
        "0.02",
        "--rounds",
        "2",
        "--payload",
        "64",
        "--combination",
        "AES128-SHA",
    ]);
    for key in [
        "\"direction\":\"open\"",
        "\"open_kernel\":",
        "\"single_ratio\":",
    ] {
        assert!(json.contains(key), "{key} in {json}");
    }
    // --open needs --records.
    assert!(!bench(&["--open"]).status.success());
}

#[test]
fn format_sections_cover_every_algorithm_and_check_results() {
    let cases: [(&str, Vec<String>); 3] = [
        (
            "esp",
            ["AES-128-CBC", "AES-256-CBC"]
                .iter()
                .flat_map(|c| {
                    [
                        "HMAC-SHA1-96",
                        "HMAC-SHA-256-128",
                        "HMAC-SHA-384-192",
                        "HMAC-SHA-512-256",
                    ]
                    .iter()
                    .flat_map(move |i| ["seal", "open"].map(|d| format!("ESP {c} {i} {d}")))
                })
                .collect(),
        ),
        (
            "jwe",
            ["A128CBC-HS256", "A256CBC-HS512"]
                .iter()
                .flat_map(|a| ["encrypt", "decrypt"].map(|d| format!("JWE {a} {d}")))
                .collect(),
        ),
        ("ssh", ssh_labels()),
    ];
    for (format, labels) in cases {
        let text = stdout_of(&[
            "--format",
            format,
            "--seconds",
            "0.02",
            "--rounds",
            "2",
            "--payload",
            "64,1408",
        ]);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("Backend: "), "{text}");
        assert!(lines[1].starts_with("CPU: "), "{text}");
        assert!(lines[2].starts_with("Hash kernels: "), "{text}");
        for label in &labels {
            for payload in [64, 1408] {
                let tail = format!("{label} {payload:>6} B ");
                let line = lines
                    .iter()
                    .find(|l| l.trim_start().starts_with(&tail))
                    .unwrap_or_else(|| panic!("no {tail:?} in\n{text}"));
                let gb = gb_per_sec(line).unwrap_or_else(|| panic!("no GB/sec in {line:?}"));
                assert!(gb.is_finite() && gb >= 0.0, "{line:?}");
                assert!(line.contains(" ns/packet"), "{line:?}");
            }
        }
        assert_eq!(lines.len(), 4 + 2 * labels.len(), "{text}");
    }
}

/// The 12 SSH suites, seal and open.
fn ssh_labels() -> Vec<String> {
    let mut labels = Vec::new();
    for c in ["aes128-cbc", "aes256-cbc"] {
        for m in ["hmac-sha1", "hmac-sha2-256", "hmac-sha2-512"] {
            for m in [m.to_string(), format!("{m}-etm@openssh.com")] {
                labels.extend(["seal", "open"].map(|d| format!("SSH {c} {m} {d}")));
            }
        }
    }
    labels
}

/// The case titles of a format section's output, in order, with their
/// payloads.
fn format_cases(text: &str) -> Vec<(String, usize)> {
    text.lines()
        .filter_map(|l| {
            let (title, _) = l.trim_start().split_once(" B ")?;
            let (title, payload) = title.trim_end().rsplit_once(' ')?;
            Some((title.trim_end().to_string(), payload.parse().ok()?))
        })
        .collect()
}

#[test]
fn format_defaults_and_large_payloads() {
    // The default payloads of each format; JWE and SSH past the TLS limit.
    for (format, payloads) in [
        ("esp", &[64, 1400][..]),
        ("jwe", &[1024, 65536]),
        ("ssh", &[1024, 32768]),
    ] {
        let suite = match format {
            "esp" => "AES-128-CBC HMAC-SHA1-96",
            "jwe" => "A128CBC-HS256",
            _ => "aes128-cbc hmac-sha2-256-etm@openssh.com",
        };
        let text = stdout_of(&[
            "--format",
            format,
            "--suite",
            suite,
            "--seconds",
            "0.02",
            "--rounds",
            "2",
        ]);
        let got: Vec<usize> = format_cases(&text).iter().map(|&(_, p)| p).collect();
        let want: Vec<usize> = payloads.iter().flat_map(|&p| [p, p]).collect();
        assert_eq!(got, want, "{text}");
    }
    let text = stdout_of(&[
        "--format",
        "ssh",
        "--suite",
        "aes256-cbc hmac-sha1",
        "--seconds",
        "0.02",
        "--rounds",
        "2",
        "--payload",
        "262120",
    ]);
    assert_eq!(
        format_cases(&text),
        [
            ("SSH aes256-cbc hmac-sha1 seal".to_string(), 262120),
            ("SSH aes256-cbc hmac-sha1 open".to_string(), 262120)
        ],
        "{text}"
    );
}

#[test]
fn suite_filter() {
    let text = stdout_of(&[
        "--format",
        "ssh",
        "--suite",
        "hmac-sha2-512-etm@openssh.com",
        "--suite",
        "aes128-cbc hmac-sha1",
        "--seconds",
        "0.02",
        "--rounds",
        "2",
        "--payload",
        "100",
    ]);
    let titles: Vec<String> = format_cases(&text).into_iter().map(|(t, _)| t).collect();
    let want: Vec<String> = ssh_labels()
        .into_iter()
        .filter(|l| l.contains("hmac-sha2-512-etm") || l.starts_with("SSH aes128-cbc hmac-sha1 "))
        .collect();
    assert_eq!(want.len(), 6);
    assert_eq!(titles, want, "{text}");
    // Words of one filter all have to match.
    let out = bench(&["--format", "jwe", "--suite", "A128CBC-HS256 A256CBC-HS512"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("the names: A128CBC-HS256, A256CBC-HS512"),
        "{out:?}"
    );
}

#[test]
fn format_sections_compare_with_openssl() {
    if !cfg!(feature = "openssl") {
        println!("SKIPPED: --format with --compare openssl (built without the `openssl` feature)");
        return;
    }
    for format in ["esp", "jwe", "ssh"] {
        let text = stdout_of(&[
            "--format",
            format,
            "--seconds",
            "0.02",
            "--rounds",
            "2",
            "--payload",
            "64",
            "--compare",
            "openssl",
        ]);
        // Past the backend, CPU, hash-kernel and method lines.
        let rows: Vec<&str> = text.lines().skip(4).collect();
        assert!(!rows.is_empty(), "{text}");
        for line in rows {
            let (_, ratio) = line
                .rsplit_once("| ratio ")
                .unwrap_or_else(|| panic!("no ratio in {line:?}"));
            let ratio: f64 = ratio.trim().parse().expect("a ratio");
            assert!(ratio.is_finite() && ratio > 0.0, "{line:?}");
        }
    }
}
