//! `CBC_HMAC_CPUID_OVERRIDE`: the mask is read once per process, so each
//! value is tried in a child process (this test binary re-run on one test,
//! with the variable set). The child checks that `Backend::detect()` is the
//! backend the mask implies on this CPU (features detected here with
//! `std::arch`, independently of the library) and seals and opens the
//! known-answer records of every combination on it.

mod common;

use cbc_hmac::Backend;
use common::child;
use common::tls_records::check_all;

/// Set in the children only.
const CHILD: &str = "CBC_HMAC_OVERRIDE_TEST_CHILD";
const VAR: &str = "CBC_HMAC_CPUID_OVERRIDE";

/// The backend a mask should select here, from the CPU's features as
/// `std::arch` sees them.
fn expected_backend(mask: u32) -> Backend {
    #[cfg(target_arch = "x86_64")]
    {
        let aes = std::arch::is_x86_feature_detected!("aes")
            && std::arch::is_x86_feature_detected!("ssse3")
            && std::arch::is_x86_feature_detected!("sse4.1");
        let sha = std::arch::is_x86_feature_detected!("sha")
            && std::arch::is_x86_feature_detected!("ssse3")
            && std::arch::is_x86_feature_detected!("sse4.1");
        let avx2 = std::arch::is_x86_feature_detected!("avx")
            && std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("bmi1")
            && std::arch::is_x86_feature_detected!("bmi2")
            && std::arch::is_x86_feature_detected!("ssse3")
            && std::arch::is_x86_feature_detected!("sse4.1");
        let vaes = std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512vl")
            && std::arch::is_x86_feature_detected!("vaes");
        let allow = |bit: u32| mask == 0 || mask & bit != 0;
        let aes = aes && allow(0x2);
        let sha = sha && allow(0x8);
        let avx2 = avx2 && allow(0x4);
        let vaes = vaes && allow(0x10);
        if aes && sha && vaes {
            Backend::Vaes512ShaNi
        } else if aes && sha {
            Backend::AesNiShaNi
        } else if aes && avx2 {
            Backend::AesNiAvx2
        } else if aes {
            Backend::AesNi
        } else {
            Backend::Portable
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = mask;
        Backend::Portable
    }
}

/// The child: runs only with `CBC_HMAC_OVERRIDE_TEST_CHILD=1` (set by
/// `masks_select_backends`); in a plain test run it has nothing to check.
#[test]
fn override_child() {
    if std::env::var_os(CHILD).is_none() {
        eprintln!("override_child: runs as a child of masks_select_backends");
        return;
    }
    let value = std::env::var(VAR).expect("the parent sets the override");
    let detected = Backend::detect();
    let parsed = cbc_hmac::cpu_override();
    eprintln!("override {value:?}: parsed {parsed:?}, detected backend {detected}");
    match u32::from_str_radix(value.trim_start_matches("0x"), 16) {
        Ok(mask) => {
            assert_eq!(parsed, Ok(Some(mask)));
            assert_eq!(detected, expected_backend(mask), "mask {value}");
            for b in Backend::available() {
                let needed = b.required_features();
                assert!(
                    mask == 0 || needed & !mask == 0,
                    "{b} is available but needs bits {needed:#x} outside {value}"
                );
            }
        }
        Err(_) => {
            let err = parsed.expect_err("an unparsable value is an error");
            assert_eq!(err.value(), value);
            let message = err.to_string();
            for bit in ["0x1", "0x2", "0x4", "0x8", "0x10"] {
                assert!(message.contains(bit), "message lists {bit}: {message}");
            }
            assert_eq!(detected, Backend::Portable, "unparsable => portable");
            assert_eq!(
                Backend::available().collect::<Vec<_>>(),
                [Backend::Portable]
            );
        }
    }
    let n = check_all(detected);
    eprintln!("override {value:?}: {n} known-answer records sealed and opened on {detected}");
}

#[test]
fn masks_select_backends() {
    if std::env::var_os(CHILD).is_some() {
        return;
    }
    for value in [
        "0x1", "0x2", "0x4", "0x6", "0xa", "0xe", "0x1e", "0", "1e", "zz",
    ] {
        let (stdout, stderr) = child::run("override_child", CHILD, VAR, value);
        eprintln!("--- child with {VAR}={value}:\n{stderr}");
        assert!(
            stderr.contains("known-answer records"),
            "child with {VAR}={value} did not check the vectors:\n{stdout}"
        );
    }
}
