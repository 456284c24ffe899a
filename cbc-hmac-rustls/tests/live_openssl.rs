//! Live interop with the `openssl` command line on loopback, every suite:
//! a rustls client with only that suite against `openssl s_server`, and a
//! rustls server against `openssl s_client`, each peer held to that one
//! suite, TLS 1.2 and no encrypt-then-MAC (`-no_etm`), 1 MiB each way;
//! and through a proxy that flips a bit of one record each way, rustls's
//! decrypt error and the `bad record mac` alert at the peer.
//!
//! Skipped, with a `SKIPPED:` line, where `openssl` is not installed.

mod common;

use std::net::TcpListener;

use common::drive::{
    PeerIo, alert_seen, client_against, client_gets_tampered, retried, server_against,
    server_gets_tampered,
};
use common::ports::free_tcp_port;
use common::proxy::{Direction, Proxy};
use common::{Peer, TempDir, cases, client_config, have_tool, make_certs, provider_with};

fn have_openssl(what: &str) -> bool {
    have_tool("openssl", &["version"], "openssl", what)
}

fn s_server_args(case: &common::Case, certs: &common::Certs, port: u16) -> Vec<String> {
    let s = |x: &str| x.to_string();
    vec![
        s("s_server"),
        s("-accept"),
        format!("127.0.0.1:{port}"),
        s("-cert"),
        certs.cert.display().to_string(),
        s("-key"),
        certs.key.display().to_string(),
        s("-tls1_2"),
        s("-cipher"),
        s(case.openssl),
        s("-no_etm"),
        s("-quiet"),
        s("-naccept"),
        s("1"),
    ]
}

fn s_client_args(case: &common::Case, certs: &common::Certs, port: u16) -> Vec<String> {
    let s = |x: &str| x.to_string();
    vec![
        s("s_client"),
        s("-connect"),
        format!("127.0.0.1:{port}"),
        s("-servername"),
        s("localhost"),
        s("-CAfile"),
        certs.ca.display().to_string(),
        s("-verify_return_error"),
        s("-tls1_2"),
        s("-cipher"),
        s(case.openssl),
        s("-no_etm"),
        s("-quiet"),
    ]
}

/// Whether the peer reports the `bad_record_mac` alert it was sent.
fn saw_bad_record_mac(peer: &mut Peer) -> bool {
    peer.wait_said("alert bad record mac", ALERT_WAIT)
}

/// How long a peer may take to report an alert on a loaded host.
const ALERT_WAIT: std::time::Duration = std::time::Duration::from_secs(20);

#[test]
fn tampered_records_from_openssl_are_rejected() {
    if !have_openssl("tampered records from openssl") {
        return;
    }
    let dir = TempDir::new("cbc-hmac-rustls-openssl-tamper");
    for case in cases() {
        let certs = make_certs(dir.path(), case.key);

        let name = format!("{}, tampered, openssl s_server", case.name());
        retried(&name, || {
            // A port of its own each time: a proxy left from a dropped
            // run may still be trying the last one.
            let port = free_tcp_port();
            let args = s_server_args(&case, &certs, port);
            let mut peer = Peer::spawn("openssl s_server", "openssl", &args, dir.path());
            let proxy = Proxy::start(port, Direction::ToClient);
            let config = client_config(provider_with(&[case.suite]), &certs);
            let err = client_gets_tampered(config, proxy.port, &mut peer, PeerIo::StdinStdout)?;
            assert_eq!(err, rustls::Error::DecryptError, "{}", case.name());
            let seen = saw_bad_record_mac(&mut peer);
            alert_seen(seen, &case, &mut peer)?;
            assert!(proxy.tampered());
            Ok(())
        });

        let name = format!("{}, tampered, openssl s_client", case.name());
        retried(&name, || {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let proxy = Proxy::start(listener.local_addr().unwrap().port(), Direction::ToServer);
            let args = s_client_args(&case, &certs, proxy.port);
            let mut peer = Peer::spawn("openssl s_client", "openssl", &args, dir.path());
            let config = common::server_config(
                std::sync::Arc::new(cbc_hmac_rustls::default_provider()),
                &certs,
            );
            let err = server_gets_tampered(config, &listener, &mut peer)?;
            assert_eq!(err, rustls::Error::DecryptError, "{}", case.name());
            let seen = saw_bad_record_mac(&mut peer);
            alert_seen(seen, &case, &mut peer)?;
            assert!(proxy.tampered());
            Ok(())
        });
        eprintln!(
            "PASSED: tampered records from openssl s_server and s_client rejected with bad_record_mac, {}",
            case.name()
        );
    }
}

#[test]
fn rustls_client_against_openssl_s_server() {
    if !have_openssl("rustls client against openssl s_server") {
        return;
    }
    let dir = TempDir::new("cbc-hmac-rustls-openssl-server");
    for case in cases() {
        let certs = make_certs(dir.path(), case.key);
        let port = free_tcp_port();
        let args = s_server_args(&case, &certs, port);
        let spawn = || Peer::spawn("openssl s_server", "openssl", &args, dir.path());
        let config = client_config(provider_with(&[case.suite]), &certs);
        client_against(&case, config, port, &spawn, PeerIo::StdinStdout);
        eprintln!(
            "PASSED: rustls client -> openssl s_server, {}: 1 MiB each way",
            case.name()
        );
    }
}

#[test]
fn openssl_s_client_against_rustls_server() {
    if !have_openssl("openssl s_client against rustls server") {
        return;
    }
    let dir = TempDir::new("cbc-hmac-rustls-openssl-client");
    for case in cases() {
        let certs = make_certs(dir.path(), case.key);
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let args = s_client_args(&case, &certs, port);
        let spawn = || Peer::spawn("openssl s_client", "openssl", &args, dir.path());
        // The server offers everything it has; the client picks the suite.
        let config = common::server_config(
            std::sync::Arc::new(cbc_hmac_rustls::default_provider()),
            &certs,
        );
        server_against(&case, config, &listener, &spawn);
        eprintln!(
            "PASSED: openssl s_client -> rustls server, {}: 1 MiB each way",
            case.name()
        );
    }
}
