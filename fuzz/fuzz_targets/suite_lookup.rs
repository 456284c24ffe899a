//! Name and code-point look-ups: never panic, agree with each other and
//! with ASCII case changes, and whatever resolves round-trips through its
//! own names and code point.
//!
//! Input: the first two bytes are also tried as a code point; the whole
//! input, decoded as UTF-8 (lossily), is tried as a name.
#![no_main]

use cbc_hmac::Combination;
use cbc_hmac::suite::{CipherSuite, combination_by_name};
use libfuzzer_sys::fuzz_target;

fn check_suite(suite: CipherSuite) {
    let c = suite.combination();
    assert_eq!(CipherSuite::from_code_point(suite.code_point()), Ok(suite));
    assert_eq!(CipherSuite::from_name(suite.iana_name()), Ok(suite));
    assert_eq!(combination_by_name(suite.iana_name()), Ok(c));
    if let Some(name) = suite.openssl_name() {
        assert_eq!(CipherSuite::from_name(name), Ok(suite));
        assert_eq!(combination_by_name(name), Ok(c));
    }
    let hex = format!("0x{:04X}", suite.code_point());
    assert_eq!(CipherSuite::from_name(&hex), Ok(suite));
    assert_eq!(combination_by_name(&hex), Ok(c));
    assert_eq!(suite.to_string(), suite.iana_name());
    check_combination(c);
}

fn check_combination(c: Combination) {
    assert_eq!(combination_by_name(c.name()), Ok(c));
    assert_eq!(c.name().parse::<Combination>(), Ok(c));
    assert_eq!(c.to_string().parse::<Combination>(), Ok(c));
}

fuzz_target!(|data: &[u8]| {
    if data.len() >= 2 {
        let code = u16::from_be_bytes([data[0], data[1]]);
        if let Ok(suite) = CipherSuite::from_code_point(code) {
            check_suite(suite);
        } else {
            let err = CipherSuite::from_code_point(code).unwrap_err();
            assert_eq!(err.input(), format!("0x{code:04X}"));
        }
    }

    let name = String::from_utf8_lossy(data);
    let name = name.as_ref();
    let by_name = combination_by_name(name);
    let parsed = name.parse::<Combination>();
    assert_eq!(by_name, parsed);
    let suite = CipherSuite::from_name(name);
    let suite_parsed = name.parse::<CipherSuite>();
    assert_eq!(suite, suite_parsed);

    // ASCII case does not matter.
    assert_eq!(
        combination_by_name(&name.to_ascii_lowercase()).ok(),
        by_name.ok()
    );
    assert_eq!(
        combination_by_name(&name.to_ascii_uppercase()).ok(),
        by_name.ok()
    );
    assert_eq!(
        CipherSuite::from_name(&name.to_ascii_lowercase()).ok(),
        suite.ok()
    );

    match (suite, by_name) {
        (Ok(s), Ok(c)) => {
            // A suite name also names its combination.
            assert_eq!(s.combination(), c);
            check_suite(s);
        }
        (Ok(s), Err(_)) => panic!("{name:?} names suite {s} but no combination"),
        (Err(e), Ok(c)) => {
            // A combination name (GnuTLS style) that is not a suite name.
            assert!(name.eq_ignore_ascii_case(c.name()), "{name:?} -> {c}");
            check_combination(c);
            check_error(&e, name);
        }
        (Err(e), Err(e2)) => {
            check_error(&e, name);
            check_error(&e2, name);
        }
    }
});

/// The error names (a prefix of at most 64 bytes of) the input.
fn check_error(e: &cbc_hmac::UnknownName, name: &str) {
    assert!(name.starts_with(e.input()), "{e:?} for {name:?}");
    assert!(e.input().len() <= 64);
    let _ = e.to_string();
}
