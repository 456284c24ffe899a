//! `CBC_HMAC_TUNING_CPU`: the row of the per-CPU kernel table is chosen
//! once per process, so each value is tried in a child process (this test
//! binary re-run on one test, with the variable set). The child reports
//! the kernels it would run and seals and opens the known-answer records
//! of every combination on every available backend, so that each CPU's
//! code paths are checked on whatever machine runs the tests; the parent
//! checks the kernels against what the table says for that CPU.

mod common;

use cbc_hmac::{Backend, CpuModel, MacAlgorithm, tuning_cpu_override};
use common::child;
use common::tls_records::check_all;

/// Set in the children only.
const CHILD: &str = "CBC_HMAC_TUNING_TEST_CHILD";
const VAR: &str = "CBC_HMAC_TUNING_CPU";

/// The kernels the detected backend runs for SHA-1 and SHA-384, one line.
fn kernels() -> String {
    let b = Backend::detect();
    format!(
        "KERNELS: {b} | SHA-1 {} | SHA-384 {} | open {}",
        b.hash_kernel(MacAlgorithm::HmacSha1),
        b.hash_kernel(MacAlgorithm::HmacSha384),
        b.open_kernel()
    )
}

/// SHA-1's kernel name when its schedule runs on AVX-512VL.
const SHA1_VL: &str = "SHA-1 SHA-NI rounds, AVX-512VL schedule";

/// The child: runs only with `CBC_HMAC_TUNING_TEST_CHILD=1` (set by
/// `rows_choose_kernels`); in a plain test run it has nothing to check.
#[test]
fn tuning_child() {
    if std::env::var_os(CHILD).is_none() {
        eprintln!("tuning_child: runs as a child of rows_choose_kernels");
        return;
    }
    let value = std::env::var(VAR).expect("the parent sets the variable");
    let parsed = tuning_cpu_override();
    match value.as_str() {
        "" => assert_eq!(parsed, Ok(None)),
        "zz" => {
            let e = parsed.expect_err("an unparsable value is an error");
            assert_eq!((e.variable(), e.value()), (VAR, "zz"));
        }
        v => {
            let cpu = parsed
                .expect("the parent passes valid values")
                .expect("set");
            assert_eq!(
                format!("{}:{:#x}:{:#x}", &v[..12], cpu.family, cpu.model),
                v
            );
        }
    }
    println!("{}", kernels());
    let backends: Vec<Backend> = Backend::available().collect();
    let mut n = 0;
    for &backend in &backends {
        n = check_all(backend);
    }
    eprintln!(
        "{VAR}={value:?}: {n} known-answer records sealed and opened on each of {backends:?}"
    );
}

/// Runs the child with `VAR=value` and returns its kernels line.
fn child(value: &str) -> String {
    let (stdout, stderr) = child::run("tuning_child", CHILD, VAR, value);
    assert!(
        stderr.contains("known-answer records"),
        "child with {VAR}={value} did not check the vectors:\n{stdout}"
    );
    // The test harness may print its "test ... " prefix on the same line.
    let line = stdout
        .lines()
        .find_map(|l| l.find("KERNELS: ").map(|i| l[i..].to_string()))
        .unwrap_or_else(|| panic!("no kernels line:\n{stdout}"));
    eprintln!("{VAR}={value:?}: {line}");
    line
}

#[test]
fn rows_choose_kernels() {
    if std::env::var_os(CHILD).is_some() {
        return;
    }
    eprintln!("this CPU: {}", CpuModel::this_cpu());
    let own = child("");
    // An unparsable value leaves this CPU's choices.
    assert_eq!(child("zz"), own);
    let backend = Backend::detect();
    // Our SHA-512 kernels (AVX2 here, so the Zen 5 row picks that one).
    let avx2_sha384 = matches!(
        backend,
        Backend::Vaes512ShaNi | Backend::AesNiShaNi | Backend::AesNiAvx2
    ) && !backend
        .hash_kernel(MacAlgorithm::HmacSha384)
        .contains("crate");
    if !avx2_sha384 {
        eprintln!("SKIPPED: kernel names by row ({backend} has no SHA-512 kernel of ours here)");
    }
    // What each row's SHA-384 kernel and open say ("" for: neither the
    // rolled nor the four-block loop, no SHA-384 clause); Zen 2's depend
    // on whether AVX-512 is here (its table row assumes none), so only its
    // vectors are checked. Intel models 0xA7 and 0xCF name the four-block
    // loop when AVX-512 is allowed, else the rolled two-block loop; model
    // 0xA7 runs them on the four-step rounds, and runs of two and three
    // blocks on the two-block loop.
    let avx512 = backend == Backend::Vaes512ShaNi;
    let (cf, a7) = if avx512 {
        (
            "four-block AVX-512 loop",
            "four-block AVX-512 loop, rolled two-block loop for two and three blocks, \
             four-step rounds",
        )
    } else {
        (
            "rolled two-block loop",
            "rolled two-block loop from two blocks, four-step rounds",
        )
    };
    // Zen 3's open runs beside the pair loop on the AVX2 kernel, which its
    // row picks only where AVX-512 is not here.
    let zen3_open = if avx512 {
        "decrypted, then hashed"
    } else {
        "beside the two-block"
    };
    for (value, expect) in [
        ("AuthenticAMD:0x17:0x31", None),
        (
            "AuthenticAMD:0x19:0x1",
            Some(("rolled two-block loop", zen3_open)),
        ),
        ("AuthenticAMD:0x19:0x11", Some(("", ""))),
        (
            "AuthenticAMD:0x1a:0x2",
            Some((
                "AVX2 schedule, BMI2 rounds, rolled two-block loop, four-step rounds",
                "beside the two-block",
            )),
        ),
        (
            "GenuineIntel:0x6:0xa7",
            Some((a7, "decrypted, then hashed")),
        ),
        (
            "GenuineIntel:0x6:0xcf",
            Some((cf, "decrypted, then hashed")),
        ),
        // An Intel model the table has not measured.
        (
            "GenuineIntel:0x6:0x8f",
            Some(("", "decrypted, then hashed")),
        ),
        // A CPU the table does not know.
        ("HygonGenuine:0x18:0x1", Some(("", ""))),
    ] {
        let line = child(value);
        // Only Intel models 0xA7 and 0xCF take SHA-1's schedule to
        // AVX-512VL, where the backend has both SHA-NI and AVX-512.
        let sha1_vl = avx512 && matches!(value, "GenuineIntel:0x6:0xa7" | "GenuineIntel:0x6:0xcf");
        assert_eq!(line.contains(SHA1_VL), sha1_vl, "{value}: {line}");
        let Some((sha384, open)) = expect.filter(|_| avx2_sha384) else {
            continue;
        };
        let (kernel, opened) = line.split_once(" | open ").expect("the child's format");
        if sha384.is_empty() {
            assert!(
                !kernel.contains("rolled") && !kernel.contains("four-block"),
                "{value}: {line}"
            );
        } else {
            assert!(kernel.contains(sha384), "{value}: {line}");
        }
        // The round form is named exactly where the row takes it (model
        // 0xCF's name is a prefix of model 0xA7's).
        assert_eq!(
            kernel.contains("four-step"),
            sha384.contains("four-step"),
            "{value}: {line}"
        );
        // Zen 3's row alone sends runs from two blocks through the AVX2
        // kernel's loop and single blocks through its code, and says so.
        let zen3_avx2 = value == "AuthenticAMD:0x19:0x1" && !avx512;
        assert_eq!(
            kernel.contains("from two blocks, single blocks on its code"),
            zen3_avx2,
            "{value}: {line}"
        );
        if open.is_empty() {
            assert!(!opened.contains("SHA-384"), "{value}: {line}");
        } else {
            assert!(opened.contains(open), "{value}: {line}");
        }
    }
}
