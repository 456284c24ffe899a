//! Interop with GnuTLS on loopback: `gnutls-serv --echo` and `gnutls-cli`
//! (key log through `SSLKEYLOGFILE`) with the crate's proxy between them,
//! for every CBC combination on TLS 1.0, 1.1, 1.2 and DTLS 1.0, 1.2 (over a
//! UDP proxy), with encrypt-then-MAC negotiated and refused by the server
//! (`%NO_ETM`). See `tests/interop/mod.rs` for the checks.
//!
//! Skipped, with a `SKIPPED:` line, where `gnutls-serv`/`gnutls-cli`
//! (Debian package gnutls-bin) or `openssl` (for the certificate) are not
//! installed.

mod interop;

use std::time::Duration;

use cbc_hmac::ProtocolVersion;

use interop::{Case, Cmd, PeerRun, Setup};

/// The GnuTLS priority string for one case: exactly one version, cipher,
/// MAC and key exchange; `%NO_ETM` when encrypt-then-MAC is refused.
fn priority(case: &Case, refuse_etm: bool) -> String {
    let version = match case.version {
        ProtocolVersion::Tls10 => "VERS-TLS1.0",
        ProtocolVersion::Tls11 => "VERS-TLS1.1",
        ProtocolVersion::Tls12 => "VERS-TLS1.2",
        ProtocolVersion::Dtls10 => "VERS-DTLS1.0",
        ProtocolVersion::Dtls12 => "VERS-DTLS1.2",
    };
    let (cipher, mac, kx) = match case.suite {
        "AES128-SHA" => ("AES-128-CBC", "SHA1", "RSA"),
        "AES256-SHA" => ("AES-256-CBC", "SHA1", "RSA"),
        "AES128-SHA256" => ("AES-128-CBC", "SHA256", "RSA"),
        "AES256-SHA256" => ("AES-256-CBC", "SHA256", "RSA"),
        "ECDHE-RSA-AES256-SHA384" => ("AES-256-CBC", "SHA384", "ECDHE-RSA"),
        other => panic!("no GnuTLS priority for {other}"),
    };
    let mut p =
        format!("NORMAL:-VERS-ALL:+{version}:-CIPHER-ALL:+{cipher}:-MAC-ALL:+{mac}:-KX-ALL:+{kx}");
    if refuse_etm {
        p.push_str(":%NO_ETM");
    }
    p
}

/// `stdbuf -oL` makes the tools' stdout line-buffered on a pipe, so the
/// "listening" line and received data show up at once.
fn line_buffered(program: &str, args: Vec<String>, stdbuf: bool) -> (String, Vec<String>) {
    if stdbuf {
        let mut a = vec!["-oL".to_string(), program.to_string()];
        a.extend(args);
        ("stdbuf".to_string(), a)
    } else {
        (program.to_string(), args)
    }
}

fn build(case: &Case, setup: &Setup<'_>, stdbuf: bool) -> PeerRun {
    let dtls = case.version.is_dtls();
    let s = |x: &str| x.to_string();
    let mut server = vec![
        s("--echo"),
        s("-p"),
        setup.ports.server.to_string(),
        s("--x509certfile"),
        setup.cert.display().to_string(),
        s("--x509keyfile"),
        setup.key.display().to_string(),
        format!("--priority={}", priority(case, !case.etm)),
    ];
    let mut client = vec![
        s("-p"),
        setup.ports.proxy.to_string(),
        s("127.0.0.1"),
        s("--insecure"),
        format!("--priority={}", priority(case, false)),
    ];
    if dtls {
        server.push(s("-u"));
        client.push(s("-u"));
    }
    let (server_program, server) = line_buffered("gnutls-serv", server, stdbuf);
    let (client_program, client) = line_buffered("gnutls-cli", client, stdbuf);
    PeerRun {
        server: Cmd {
            program: server_program,
            args: server,
            env: Vec::new(),
        },
        client: Cmd {
            program: client_program,
            args: client,
            env: vec![(s("SSLKEYLOGFILE"), setup.key_log.display().to_string())],
        },
        // Without it, a TCP proxy retries until the server listens and a DTLS
        // client retransmits its ClientHello (after a second).
        server_ready: stdbuf.then(|| s("listening on IPv4")),
        server_reads_stdin: false,
        server_prints_data: false,
        client_prints_data: stdbuf,
        dtls_bad_mac_alert: false,
    }
}

#[test]
fn gnutls_matrix() {
    let mut missing: Vec<&str> = [
        ("gnutls-serv", "gnutls-bin"),
        ("gnutls-cli", "gnutls-bin"),
        ("openssl", "openssl"),
    ]
    .into_iter()
    .filter(|(tool, _)| {
        !interop::process::tool_runs(tool, &["--version"])
            && !interop::process::tool_runs(tool, &["version"])
    })
    .map(|(_, package)| package)
    .collect();
    missing.dedup();
    if !missing.is_empty() {
        interop::report(&format!(
            "SKIPPED: GnuTLS interop: gnutls-serv, gnutls-cli or openssl is missing; install package {}\n",
            missing.join(" and ")
        ));
        return;
    }
    let stdbuf = interop::process::tool_runs("stdbuf", &["--version"]);
    let dir = interop::process::TempDir::new("cbc-hmac-gnutls-cert").unwrap();
    let (cert, key) = interop::process::make_rsa_certificate(dir.path()).unwrap();
    let peer = interop::tool_version("gnutls-cli", &["--version"]).replace("gnutls-cli", "GnuTLS");
    let cases = interop::cases(&peer, &ProtocolVersion::ALL);
    let build = move |case: &Case, setup: &Setup<'_>| build(case, setup, stdbuf);
    let outcomes = interop::run_matrix(
        &format!("Interop with {peer} (gnutls-serv --echo / gnutls-cli)"),
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
