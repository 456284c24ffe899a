//! The cipher-suite registry through the public API only.

use std::collections::HashSet;
use std::io::Write;
use std::process::Command;

use cbc_hmac::Combination;
use cbc_hmac::suite::{CipherSuite, combination_by_name};
use proptest::prelude::*;

/// Upper-case the odd characters, lower-case the even ones.
fn mixed_case(s: &str) -> String {
    s.chars()
        .enumerate()
        .map(|(i, c)| {
            if i % 2 == 0 {
                c.to_ascii_lowercase()
            } else {
                c.to_ascii_uppercase()
            }
        })
        .collect()
}

#[test]
fn gnutls_combination_names() {
    let expected = [
        ("AES-128-CBC-SHA1", Combination::Aes128CbcSha1),
        ("AES-256-CBC-SHA1", Combination::Aes256CbcSha1),
        ("AES-128-CBC-SHA256", Combination::Aes128CbcSha256),
        ("AES-256-CBC-SHA256", Combination::Aes256CbcSha256),
        ("AES-256-CBC-SHA384", Combination::Aes256CbcSha384),
    ];
    for (name, combination) in expected {
        assert_eq!(combination_by_name(name).unwrap(), combination, "{name}");
        assert_eq!(
            combination_by_name(&name.to_lowercase()).unwrap(),
            combination
        );
        assert_eq!(combination_by_name(&mixed_case(name)).unwrap(), combination);
        assert_eq!(name.parse::<Combination>().unwrap(), combination);
        assert_eq!(combination.to_string(), name);
        // A combination name is not a suite name.
        assert!(CipherSuite::from_name(name).is_err(), "{name}");
    }
    for combination in Combination::ALL {
        assert_eq!(
            combination_by_name(combination.name()).unwrap(),
            combination
        );
    }
}

#[test]
fn openssl_and_iana_names_in_mixed_case() {
    let cases = [
        ("AES128-SHA", Combination::Aes128CbcSha1, 0x002F),
        ("aes256-sha", Combination::Aes256CbcSha1, 0x0035),
        ("Aes128-Sha256", Combination::Aes128CbcSha256, 0x003C),
        ("aES256-sHA256", Combination::Aes256CbcSha256, 0x003D),
        ("ecdhe-rsa-AES128-sha", Combination::Aes128CbcSha1, 0xC013),
        (
            "ECDHE-ECDSA-aes256-SHA384",
            Combination::Aes256CbcSha384,
            0xC024,
        ),
        (
            "dhe-rsa-aes256-sha256",
            Combination::Aes256CbcSha256,
            0x006B,
        ),
        ("Psk-Aes128-Cbc-Sha", Combination::Aes128CbcSha1, 0x008C),
        (
            "srp-rsa-aes-128-cbc-sha",
            Combination::Aes128CbcSha1,
            0xC01E,
        ),
        ("adh-aes128-sha", Combination::Aes128CbcSha1, 0x0034),
        ("AECDH-aes256-SHA", Combination::Aes256CbcSha1, 0xC019),
        (
            "ECDH-RSA-AES256-SHA384",
            Combination::Aes256CbcSha384,
            0xC02A,
        ),
        (
            "tls_rsa_with_aes_128_cbc_sha",
            Combination::Aes128CbcSha1,
            0x002F,
        ),
        (
            "TLS_DH_ANON_WITH_AES_256_CBC_SHA256",
            Combination::Aes256CbcSha256,
            0x006D,
        ),
        (
            "tls_dh_anon_with_aes_128_cbc_sha",
            Combination::Aes128CbcSha1,
            0x0034,
        ),
        (
            "Tls_Ecdhe_Rsa_With_Aes_256_Cbc_Sha384",
            Combination::Aes256CbcSha384,
            0xC028,
        ),
        (
            "TLS_ECDHE_PSK_WITH_AES_128_CBC_SHA256",
            Combination::Aes128CbcSha256,
            0xC037,
        ),
        (
            "tls_srp_sha_dss_with_aes_256_cbc_sha",
            Combination::Aes256CbcSha1,
            0xC022,
        ),
        (
            "TLS_RSA_PSK_WITH_AES_256_CBC_SHA384",
            Combination::Aes256CbcSha384,
            0x00B7,
        ),
    ];
    for (name, combination, code) in cases {
        assert_eq!(combination_by_name(name).unwrap(), combination, "{name}");
        assert_eq!(name.parse::<Combination>().unwrap(), combination, "{name}");
        let suite = CipherSuite::from_name(name).unwrap();
        assert_eq!(suite.code_point(), code, "{name}");
        assert_eq!(suite.combination(), combination, "{name}");
        assert_eq!(name.parse::<CipherSuite>().unwrap(), suite);
    }
}

#[test]
fn code_points() {
    let cases = [
        (
            0x002F,
            Combination::Aes128CbcSha1,
            "TLS_RSA_WITH_AES_128_CBC_SHA",
            "AES128-SHA",
        ),
        (
            0x0035,
            Combination::Aes256CbcSha1,
            "TLS_RSA_WITH_AES_256_CBC_SHA",
            "AES256-SHA",
        ),
        (
            0x003C,
            Combination::Aes128CbcSha256,
            "TLS_RSA_WITH_AES_128_CBC_SHA256",
            "AES128-SHA256",
        ),
        (
            0x003D,
            Combination::Aes256CbcSha256,
            "TLS_RSA_WITH_AES_256_CBC_SHA256",
            "AES256-SHA256",
        ),
        (
            0xC028,
            Combination::Aes256CbcSha384,
            "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384",
            "ECDHE-RSA-AES256-SHA384",
        ),
        (
            0xC013,
            Combination::Aes128CbcSha1,
            "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
            "ECDHE-RSA-AES128-SHA",
        ),
        (
            0x00AF,
            Combination::Aes256CbcSha384,
            "TLS_PSK_WITH_AES_256_CBC_SHA384",
            "PSK-AES256-CBC-SHA384",
        ),
        (
            0x0030,
            Combination::Aes128CbcSha1,
            "TLS_DH_DSS_WITH_AES_128_CBC_SHA",
            "DH-DSS-AES128-SHA",
        ),
        (
            0xC01D,
            Combination::Aes128CbcSha1,
            "TLS_SRP_SHA_WITH_AES_128_CBC_SHA",
            "SRP-AES-128-CBC-SHA",
        ),
        (
            0xC038,
            Combination::Aes256CbcSha384,
            "TLS_ECDHE_PSK_WITH_AES_256_CBC_SHA384",
            "ECDHE-PSK-AES256-CBC-SHA384",
        ),
    ];
    for (code, combination, iana, openssl) in cases {
        let suite = CipherSuite::from_code_point(code).unwrap();
        assert_eq!(suite.code_point(), code);
        assert_eq!(suite.combination(), combination, "{code:#06x}");
        assert_eq!(suite.iana_name(), iana);
        assert_eq!(suite.openssl_name(), Some(openssl));
        assert_eq!(suite.to_string(), iana);
        // A code point written as a string.
        assert_eq!(
            CipherSuite::from_name(&format!("0x{code:04X}")).unwrap(),
            suite
        );
        assert_eq!(
            combination_by_name(&format!("0x{code:04x}")).unwrap(),
            combination
        );
    }
}

#[test]
fn table_size_and_order() {
    let all = CipherSuite::all();
    assert_eq!(all.len(), 64);
    for pair in all.windows(2) {
        assert!(
            pair[0].code_point() < pair[1].code_point(),
            "not sorted: {pair:?}"
        );
    }
    // Every combination is used.
    for combination in Combination::ALL {
        assert!(
            all.iter().any(|s| s.combination() == combination),
            "{combination}"
        );
    }
}

#[test]
fn unknown_inputs_are_errors_naming_the_input() {
    let long = "A".repeat(1000);
    let names: [&str; 12] = [
        "",
        "AES128-GCM-SHA256",
        "TLS_RSA_WITH_AES_128_GCM_SHA256",
        "ÄES",
        "ÄES128-SHA",
        "AES-128-CBC-SHA",
        "AES128-SHA ",
        " AES128-SHA",
        "AES128-SHA\0",
        "TLS_RSA_WITH_AES_128_CBC_SHA1",
        "0x009C",
        "0x",
    ];
    for name in names.into_iter().chain([long.as_str()]) {
        let err = combination_by_name(name).unwrap_err();
        let err2 = CipherSuite::from_name(name).unwrap_err();
        assert_eq!(err, err2);
        assert!(name.parse::<Combination>().is_err());
        assert!(name.parse::<CipherSuite>().is_err());
        if name.len() <= 64 {
            assert_eq!(err.input(), name);
        } else {
            assert!(!err.input().is_empty());
            assert!(name.starts_with(err.input()));
        }
        let shown = err.to_string();
        assert!(
            shown.contains(err.input()),
            "{shown:?} does not name {name:?}"
        );
    }
    let long_err = combination_by_name(&long).unwrap_err();
    assert_eq!(long_err.input(), &long[..64]);

    // Multi-byte characters around the 64-byte cut.
    let wide = "Ä".repeat(100);
    let err = combination_by_name(&wide).unwrap_err();
    assert!(wide.starts_with(err.input()));

    let err = CipherSuite::from_code_point(0x009C).unwrap_err();
    assert!(
        err.input().eq_ignore_ascii_case("0x009C"),
        "{}",
        err.input()
    );
    assert!(err.to_string().to_ascii_uppercase().contains("0X009C"));
    for code in [0x0000, 0x002E, 0x003B, 0x0041, 0x00FF, 0xC02B, 0xFFFF] {
        let err = CipherSuite::from_code_point(code).unwrap_err();
        assert!(err.input().eq_ignore_ascii_case(&format!("{code:#06x}")));
    }
}

#[test]
fn every_code_point_is_either_in_the_table_or_an_error() {
    let known: HashSet<u16> = CipherSuite::all().iter().map(|s| s.code_point()).collect();
    for code in 0..=u16::MAX {
        match CipherSuite::from_code_point(code) {
            Ok(suite) => {
                assert!(known.contains(&code));
                assert_eq!(suite.code_point(), code);
            }
            Err(_) => assert!(!known.contains(&code)),
        }
    }
}

#[test]
fn table_consistency() {
    let all = CipherSuite::all();
    let mut codes = HashSet::new();
    let mut names = HashSet::new();
    for combination in Combination::ALL {
        assert!(names.insert(combination.name().to_ascii_uppercase()));
    }
    for &suite in all {
        assert!(
            codes.insert(suite.code_point()),
            "duplicate code point {suite:?}"
        );
        assert!(
            names.insert(suite.iana_name().to_ascii_uppercase()),
            "duplicate name {}",
            suite.iana_name()
        );
        if let Some(openssl) = suite.openssl_name() {
            assert!(
                names.insert(openssl.to_ascii_uppercase()),
                "duplicate name {openssl}"
            );
        }

        // Round trips.
        assert_eq!(
            CipherSuite::from_code_point(suite.code_point()).unwrap(),
            suite
        );
        let iana = suite.iana_name();
        for name in [iana.to_string(), iana.to_lowercase(), mixed_case(iana)] {
            assert_eq!(CipherSuite::from_name(&name).unwrap(), suite, "{name}");
            assert_eq!(combination_by_name(&name).unwrap(), suite.combination());
        }
        let openssl = suite
            .openssl_name()
            .unwrap_or_else(|| panic!("{iana} has no OpenSSL name"));
        for name in [
            openssl.to_string(),
            openssl.to_lowercase(),
            mixed_case(openssl),
        ] {
            assert_eq!(CipherSuite::from_name(&name).unwrap(), suite, "{name}");
            assert_eq!(combination_by_name(&name).unwrap(), suite.combination());
        }
        assert_eq!(suite.to_string(), iana);

        // The IANA name's cipher and MAC agree with the combination.
        let (with, tail) = iana.split_once("_WITH_").expect("IANA name has _WITH_");
        assert!(with.starts_with("TLS_"), "{iana}");
        let expected_tail = match suite.combination() {
            Combination::Aes128CbcSha1 => "AES_128_CBC_SHA",
            Combination::Aes256CbcSha1 => "AES_256_CBC_SHA",
            Combination::Aes128CbcSha256 => "AES_128_CBC_SHA256",
            Combination::Aes256CbcSha256 => "AES_256_CBC_SHA256",
            Combination::Aes256CbcSha384 => "AES_256_CBC_SHA384",
        };
        assert_eq!(tail, expected_tail, "{iana}");
        let cipher_in_name = if tail.starts_with("AES_128") {
            "AES-128-CBC"
        } else {
            "AES-256-CBC"
        };
        assert_eq!(suite.combination().cipher().name(), cipher_in_name);
        let mac_in_name = match tail.rsplit('_').next().unwrap() {
            "SHA" => "SHA1",
            other => other,
        };
        assert_eq!(suite.combination().mac().name(), mac_in_name);

        // The OpenSSL name agrees too.
        let mac_suffix = match suite.combination().mac().name() {
            "SHA1" => "-SHA",
            "SHA256" => "-SHA256",
            _ => "-SHA384",
        };
        assert!(openssl.ends_with(mac_suffix), "{openssl}");
        let bits = if tail.starts_with("AES_128") {
            "128"
        } else {
            "256"
        };
        assert!(
            openssl.contains(&format!("AES{bits}")) || openssl.contains(&format!("AES-{bits}")),
            "{openssl}"
        );

        // SHA-256 with AES-256 only outside ECC; SHA-384 only with AES-256.
        if suite.combination() == Combination::Aes256CbcSha256 {
            assert!(!with.contains("EC"), "{iana}");
        }
    }
}

/// A slow, obviously correct reference: linear scan with
/// `eq_ignore_ascii_case`, plus code points written `0x` + 1-4 hex digits.
fn reference(name: &str) -> Option<(Option<CipherSuite>, Combination)> {
    if let Some(c) = Combination::ALL
        .into_iter()
        .find(|c| c.name().eq_ignore_ascii_case(name))
    {
        return Some((None, c));
    }
    let by_name = CipherSuite::all().iter().copied().find(|s| {
        s.iana_name().eq_ignore_ascii_case(name)
            || s.openssl_name()
                .is_some_and(|o| o.eq_ignore_ascii_case(name))
    });
    let by_code = || {
        let hex = name
            .strip_prefix("0x")
            .or_else(|| name.strip_prefix("0X"))?;
        if hex.is_empty() || hex.len() > 4 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        let code = u16::from_str_radix(hex, 16).ok()?;
        CipherSuite::all()
            .iter()
            .copied()
            .find(|s| s.code_point() == code)
    };
    by_name.or_else(by_code).map(|s| (Some(s), s.combination()))
}

fn check_against_reference(name: &str) -> Result<(), TestCaseError> {
    let expected = reference(name);
    let combination = combination_by_name(name);
    let suite = CipherSuite::from_name(name);
    match expected {
        Some((expected_suite, expected_combination)) => {
            prop_assert_eq!(combination.ok(), Some(expected_combination), "{:?}", name);
            prop_assert_eq!(suite.ok(), expected_suite, "{:?}", name);
        }
        None => {
            let err = combination.unwrap_err();
            prop_assert!(name.starts_with(err.input()), "{:?}", name);
            prop_assert!(suite.is_err(), "{:?}", name);
        }
    }
    Ok(())
}

fn every_name() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = Combination::ALL.iter().map(|c| c.name()).collect();
    for s in CipherSuite::all() {
        names.push(s.iana_name());
        names.extend(s.openssl_name());
    }
    names
}

proptest! {
    #[test]
    fn arbitrary_strings_match_the_reference(name in any::<String>()) {
        check_against_reference(&name)?;
    }

    #[test]
    fn name_like_strings_match_the_reference(name in "[-_A-Za-z0-9]{0,45}") {
        check_against_reference(&name)?;
    }

    #[test]
    fn any_case_of_every_name_is_found(index in 0usize..1000, flips in any::<u64>()) {
        let names = every_name();
        let name = names[index % names.len()];
        let flipped: String = name
            .chars()
            .enumerate()
            .map(|(i, c)| if flips >> (i % 64) & 1 == 1 { c.to_ascii_lowercase() } else { c.to_ascii_uppercase() })
            .collect();
        prop_assert!(combination_by_name(&flipped).is_ok(), "{}", flipped);
        check_against_reference(&flipped)?;
    }

    #[test]
    fn near_misses_of_every_name_match_the_reference(
        index in 0usize..1000,
        pos in 0usize..64,
        byte in any::<u8>(),
        op in 0u8..3,
    ) {
        let names = every_name();
        let mut bytes = names[index % names.len()].as_bytes().to_vec();
        let pos = pos % (bytes.len() + 1);
        match op {
            0 if pos < bytes.len() => bytes[pos] = byte,
            1 => bytes.insert(pos, byte),
            _ if pos < bytes.len() => { bytes.remove(pos); }
            _ => bytes.push(byte),
        }
        let name = String::from_utf8_lossy(&bytes);
        check_against_reference(&name)?;
    }
}

/// One line of `openssl ciphers -V`: code point, OpenSSL name, Enc=, Mac=.
struct OpensslLine {
    code: u16,
    name: String,
    enc: String,
    mac: String,
}

fn parse_openssl_line(line: &str) -> Option<OpensslLine> {
    // "0xC0,0x24 - ECDHE-ECDSA-AES256-SHA384 TLSv1.2 Kx=ECDH Au=ECDSA Enc=AES(256) Mac=SHA384"
    let mut fields = line.split_whitespace();
    let code = fields.next()?;
    let (hi, lo) = code.split_once(',')?;
    let hi = u8::from_str_radix(hi.strip_prefix("0x")?, 16).ok()?;
    let lo = u8::from_str_radix(lo.strip_prefix("0x")?, 16).ok()?;
    if fields.next()? != "-" {
        return None;
    }
    let name = fields.next()?.to_string();
    let mut enc = None;
    let mut mac = None;
    for field in fields {
        if let Some(v) = field.strip_prefix("Enc=") {
            enc = Some(v.to_string());
        } else if let Some(v) = field.strip_prefix("Mac=") {
            mac = Some(v.to_string());
        }
    }
    Some(OpensslLine {
        code: u16::from_be_bytes([hi, lo]),
        name,
        enc: enc?,
        mac: mac?,
    })
}

fn openssl_combination(enc: &str, mac: &str) -> Option<Combination> {
    match (enc, mac) {
        ("AES(128)", "SHA1") => Some(Combination::Aes128CbcSha1),
        ("AES(256)", "SHA1") => Some(Combination::Aes256CbcSha1),
        ("AES(128)", "SHA256") => Some(Combination::Aes128CbcSha256),
        ("AES(256)", "SHA256") => Some(Combination::Aes256CbcSha256),
        ("AES(256)", "SHA384") => Some(Combination::Aes256CbcSha384),
        _ => None,
    }
}

/// Independent cross-check against the system's OpenSSL.
#[test]
fn agrees_with_openssl_ciphers() {
    let output = match Command::new("openssl")
        .args(["ciphers", "-V", "ALL:COMPLEMENTOFALL:@SECLEVEL=0"])
        .output()
    {
        Ok(output) => output,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // Straight to the process's stderr, past libtest's output
            // capture, so the skip shows without `--nocapture`.
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED: openssl not found, install package openssl"
            );
            return;
        }
        Err(e) => panic!("running openssl: {e}"),
    };
    assert!(
        output.status.success(),
        "openssl ciphers failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8(output.stdout).expect("openssl output is UTF-8");

    let mut parsed = 0;
    let mut checked = HashSet::new();
    for line in stdout.lines() {
        let Some(line) = parse_openssl_line(line) else {
            continue;
        };
        parsed += 1;
        let ours = CipherSuite::from_code_point(line.code).ok();
        match openssl_combination(&line.enc, &line.mac) {
            Some(combination) => {
                let suite = ours.unwrap_or_else(|| {
                    panic!(
                        "OpenSSL's {} ({:#06x}) is missing from the table",
                        line.name, line.code
                    )
                });
                assert_eq!(
                    suite.openssl_name(),
                    Some(line.name.as_str()),
                    "{:#06x}",
                    line.code
                );
                assert_eq!(suite.combination(), combination, "{}", line.name);
                assert_eq!(CipherSuite::from_name(&line.name).unwrap(), suite);
                assert_eq!(combination_by_name(&line.name).unwrap(), combination);
                checked.insert(line.code);
            }
            None => {
                // Not an AES-CBC + SHA-x suite for OpenSSL: not ours either,
                // by code point or by name.
                assert!(
                    ours.is_none(),
                    "{:#06x} is {} {}/{} for OpenSSL but in our table",
                    line.code,
                    line.name,
                    line.enc,
                    line.mac
                );
                assert!(CipherSuite::from_name(&line.name).is_err(), "{}", line.name);
                assert!(combination_by_name(&line.name).is_err(), "{}", line.name);
            }
        }
    }
    assert!(
        parsed >= 60,
        "parsed only {parsed} lines of `openssl ciphers -V`:\n{stdout}"
    );
    // OpenSSL 3.0 compiles in 48 of our 64 suites (not fixed DH / fixed ECDH).
    assert!(
        checked.len() >= 40,
        "only {} AES-CBC suites in OpenSSL's list",
        checked.len()
    );
    eprintln!(
        "checked {} of our {} suites against `openssl ciphers` ({} lines)",
        checked.len(),
        CipherSuite::all().len(),
        parsed
    );
}
