//! Interop with the `openssl` command line on loopback: `s_server` and
//! `s_client -keylogfile` with the crate's proxy between them, for every
//! CBC combination on TLS 1.0, 1.1, 1.2 and DTLS 1.0, 1.2 (`-dtls1`,
//! `-dtls1_2`, over a UDP proxy), with encrypt-then-MAC negotiated and
//! refused by the server (`-no_etm`). See `tests/interop/mod.rs` for the
//! checks.
//!
//! Skipped, with a `SKIPPED:` line, where `openssl` is not installed.

mod interop;

use std::time::Duration;

use cbc_hmac::ProtocolVersion;

use interop::{Case, Cmd, PeerRun, Setup};

fn version_flag(v: ProtocolVersion) -> &'static str {
    match v {
        ProtocolVersion::Tls10 => "-tls1",
        ProtocolVersion::Tls11 => "-tls1_1",
        ProtocolVersion::Tls12 => "-tls1_2",
        ProtocolVersion::Dtls10 => "-dtls1",
        ProtocolVersion::Dtls12 => "-dtls1_2",
    }
}

fn build(case: &Case, setup: &Setup<'_>) -> PeerRun {
    // SECLEVEL=0: OpenSSL 3 refuses TLS 1.0/1.1 (SHA-1 signatures) above it.
    let cipher = format!("{}:@SECLEVEL=0", case.suite);
    let s = |x: &str| x.to_string();
    let mut server = vec![
        s("s_server"),
        s("-accept"),
        format!("127.0.0.1:{}", setup.ports.server),
        s("-cert"),
        setup.cert.display().to_string(),
        s("-key"),
        setup.key.display().to_string(),
        s(version_flag(case.version)),
        s("-cipher"),
        cipher.clone(),
        // No command letters on stdin, received data on stdout.
        s("-quiet"),
        s("-naccept"),
        s("1"),
    ];
    if !case.etm {
        server.push(s("-no_etm"));
    }
    let client = vec![
        s("s_client"),
        s("-connect"),
        format!("127.0.0.1:{}", setup.ports.proxy),
        s(version_flag(case.version)),
        s("-cipher"),
        cipher,
        s("-keylogfile"),
        setup.key_log.display().to_string(),
        s("-quiet"),
    ];
    PeerRun {
        server: Cmd {
            program: s("openssl"),
            args: server,
            env: Vec::new(),
        },
        client: Cmd {
            program: s("openssl"),
            args: client,
            env: Vec::new(),
        },
        server_ready: None,
        server_reads_stdin: true,
        server_prints_data: true,
        client_prints_data: true,
        // OpenSSL's DTLS record layer drops a MAC-then-encrypt record that
        // fails to open, but fails the connection on a bad encrypt-then-MAC
        // MAC.
        dtls_bad_mac_alert: case.etm,
    }
}

#[test]
fn openssl_matrix() {
    if !interop::process::tool_runs("openssl", &["version"]) {
        interop::report(
            "SKIPPED: openssl interop: the openssl command is missing; install package openssl\n",
        );
        return;
    }
    let dir = interop::process::TempDir::new("cbc-hmac-openssl-cert").unwrap();
    let (cert, key) = interop::process::make_rsa_certificate(dir.path()).unwrap();
    let peer = interop::tool_version("openssl", &["version"]);
    let cases = interop::cases(
        &peer
            .split_whitespace()
            .take(2)
            .collect::<Vec<_>>()
            .join(" "),
        &ProtocolVersion::ALL,
    );
    let outcomes = interop::run_matrix(
        &format!("Interop with {peer} (s_server / s_client)"),
        cases,
        4,
        Duration::from_secs(120),
        &cert,
        &key,
        &build,
    );
    let failed: Vec<String> = outcomes
        .iter()
        .filter(|o| !o.ok())
        .map(|o| o.case.label())
        .collect();
    assert!(failed.is_empty(), "failed: {failed:#?}");
}
