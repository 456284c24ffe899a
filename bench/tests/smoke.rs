//! Runs the built `cbc-hmac-bench` binary briefly, so CI exercises every
//! measurement and its checks.

use std::process::{Command, Output};

use cbc_hmac::Combination;

fn bench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cbc-hmac-bench"))
        .args(args)
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
        for section in ["cipher-MAC combinations", "MAC algorithms", "ciphers"] {
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
        "AES-128-CBC encrypt",
        "AES-128-CBC decrypt",
        "AES-256-CBC encrypt",
        "AES-256-CBC decrypt",
    ] {
        let n = lines
            .iter()
            .filter(|l| l.trim_start().starts_with(&format!("{name} ")) && gb_per_sec(l).is_some())
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
    // Two combinations (seal, open), their two MACs, their two ciphers
    // (encrypt, decrypt).
    assert_eq!(lines.len(), 4 + 2 + 4, "{text}");
    for line in &lines {
        assert!(line.starts_with('{') && line.ends_with('}'), "{line:?}");
        for field in [
            "\"section\":",
            "\"name\":",
            "\"direction\":",
            "\"payload\":64,",
            "\"backend\":",
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
fn bad_options_are_errors() {
    for args in [
        &["--payload", "0"][..],
        &["--payload", "20000"],
        &["--seconds", "-1"],
        &["--combination", "AES128-GCM-SHA256"],
    ] {
        let out = bench(args);
        assert!(!out.status.success(), "{args:?} was accepted");
        assert!(!out.stderr.is_empty(), "{args:?} gave no message");
    }
}
