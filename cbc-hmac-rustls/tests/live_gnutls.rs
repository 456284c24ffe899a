//! Live interop with GnuTLS's command-line tools on loopback, every suite:
//! a rustls client with only that suite against `gnutls-serv --echo`, and
//! a rustls server against `gnutls-cli`, each peer held by its priority
//! string to that one suite, TLS 1.2 and `%NO_ETM`, 1 MiB each way; and
//! through a proxy that flips a bit of one record each way, rustls's
//! decrypt error and the alert at the peer.
//!
//! Skipped, with a `SKIPPED:` line, where the tools (package gnutls-bin)
//! or `openssl` (which makes the certificates) are not installed.

mod common;

use std::net::TcpListener;
use std::path::Path;

use common::drive::{
    PeerIo, alert_seen, client_against, client_gets_tampered, retried, server_against,
    server_gets_tampered,
};
use common::ports::free_tcp_port;
use common::proxy::{Direction, Proxy};
use common::{
    Case, Certs, Peer, TempDir, cases, client_config, have_tool, make_certs, provider_with,
};

fn have_tools(program: &str, what: &str) -> bool {
    have_tool(program, &["--version"], "gnutls-bin", what)
        && have_tool("openssl", &["version"], "openssl", what)
}

/// `gnutls-serv` echoing on `port`, held to the case's suite.
fn gnutls_serv_args(case: &Case, certs: &Certs, port: u16) -> Vec<String> {
    vec![
        "--echo".to_string(),
        "-p".to_string(),
        port.to_string(),
        format!("--x509certfile={}", certs.cert.display()),
        format!("--x509keyfile={}", certs.key.display()),
        format!("--priority={}", case.gnutls_priority()),
    ]
}

/// Starts `gnutls-cli` against `port`, held to the case's suite, its
/// status lines in `log` (emptied first), so its stdout holds only the
/// data.
fn gnutls_cli(case: &Case, certs: &Certs, port: u16, log: &Path, dir: &Path) -> Peer {
    let args = vec![
        "-p".to_string(),
        port.to_string(),
        "127.0.0.1".to_string(),
        format!("--x509cafile={}", certs.ca.display()),
        format!("--priority={}", case.gnutls_priority()),
        format!("--logfile={}", log.display()),
    ];
    let _ = std::fs::remove_file(log);
    Peer::spawn("gnutls-cli", "gnutls-cli", &args, dir).with_log(log)
}

#[test]
fn rustls_client_against_gnutls_serv() {
    if !have_tools("gnutls-serv", "rustls client against gnutls-serv") {
        return;
    }
    let dir = TempDir::new("cbc-hmac-rustls-gnutls-server");
    for case in cases() {
        let certs = make_certs(dir.path(), case.key);
        let port = free_tcp_port();
        let args = gnutls_serv_args(&case, &certs, port);
        let spawn = || Peer::spawn("gnutls-serv", "gnutls-serv", &args, dir.path());
        let config = client_config(provider_with(&[case.suite]), &certs);
        client_against(&case, config, port, &spawn, PeerIo::Echo);
        eprintln!(
            "PASSED: rustls client -> gnutls-serv, {}: 1 MiB each way",
            case.name()
        );
    }
}

#[test]
fn gnutls_cli_against_rustls_server() {
    if !have_tools("gnutls-cli", "gnutls-cli against rustls server") {
        return;
    }
    let dir = TempDir::new("cbc-hmac-rustls-gnutls-client");
    for case in cases() {
        let certs = make_certs(dir.path(), case.key);
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let log = dir.path().join("gnutls-cli.log");
        let spawn = || gnutls_cli(&case, &certs, port, &log, dir.path());
        let config = common::server_config(
            std::sync::Arc::new(cbc_hmac_rustls::default_provider()),
            &certs,
        );
        server_against(&case, config, &listener, &spawn);
        eprintln!(
            "PASSED: gnutls-cli -> rustls server, {}: 1 MiB each way",
            case.name()
        );
    }
}

/// Whether the peer reports the alert it was sent: `needle` in its
/// output or its log file.
fn saw_alert(peer: &mut Peer, needle: &str) -> bool {
    peer.wait_said(needle, std::time::Duration::from_secs(20))
}

#[test]
fn tampered_records_from_gnutls_are_rejected() {
    if !have_tools("gnutls-serv", "tampered records from GnuTLS")
        || !have_tools("gnutls-cli", "tampered records from GnuTLS")
    {
        return;
    }
    let dir = TempDir::new("cbc-hmac-rustls-gnutls-tamper");
    for case in cases() {
        let certs = make_certs(dir.path(), case.key);

        retried(&format!("{}, tampered, gnutls-serv", case.name()), || {
            // A port of its own each time: a proxy left from a dropped
            // run may still be trying the last one.
            let port = free_tcp_port();
            let args = gnutls_serv_args(&case, &certs, port);
            let mut peer = Peer::spawn("gnutls-serv", "gnutls-serv", &args, dir.path());
            // The proxy connects once the server listens.
            let proxy = Proxy::start(port, Direction::ToClient);
            let config = client_config(provider_with(&[case.suite]), &certs);
            let err = client_gets_tampered(config, proxy.port, &mut peer, PeerIo::Echo)?;
            assert_eq!(err, rustls::Error::DecryptError, "{}", case.name());
            // gnutls-serv does not name the alert.
            let seen = saw_alert(&mut peer, "A TLS fatal alert has been received");
            alert_seen(seen, &case, &mut peer)?;
            assert!(proxy.tampered());
            Ok(())
        });

        let log = dir.path().join("gnutls-cli-tamper.log");
        retried(&format!("{}, tampered, gnutls-cli", case.name()), || {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let proxy = Proxy::start(listener.local_addr().unwrap().port(), Direction::ToServer);
            let mut peer = gnutls_cli(&case, &certs, proxy.port, &log, dir.path());
            let config = common::server_config(
                std::sync::Arc::new(cbc_hmac_rustls::default_provider()),
                &certs,
            );
            let err = server_gets_tampered(config, &listener, &mut peer)?;
            assert_eq!(err, rustls::Error::DecryptError, "{}", case.name());
            let seen = saw_alert(&mut peer, "Bad record MAC");
            alert_seen(seen, &case, &mut peer)?;
            assert!(proxy.tampered());
            Ok(())
        });
        eprintln!(
            "PASSED: tampered records from gnutls-serv and gnutls-cli rejected, alert seen by both peers, {}",
            case.name()
        );
    }
}
