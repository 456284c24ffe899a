//! rustls client and server in one process over in-memory buffers, every
//! suite: handshake, 1 MiB each way, exact record lengths, the AEAD
//! preference, and tampered records rejected with rustls's decrypt error
//! (and a `bad_record_mac` alert to the sender).
//!
//! The certificates come from the `openssl` command line: skipped, with a
//! `SKIPPED:` line, where it is not installed.

mod common;

use std::io::{Read, Write};
use std::sync::Arc;

use rustls::{AlertDescription, ClientConnection, ConnectionCommon, Error, ServerConnection};

use common::{
    Case, TRANSFER_LEN, TempDir, cases, client_config, first_difference, have_tool, make_certs,
    provider_with, server_config, test_data,
};

/// Moves everything `from` wants to send into `to` and lets `to` process it.
fn pump<A, B>(from: &mut ConnectionCommon<A>, to: &mut ConnectionCommon<B>) -> Result<(), Error> {
    let mut wire = Vec::new();
    while from.wants_write() {
        from.write_tls(&mut wire).unwrap();
    }
    feed(&wire, to)
}

/// Gives `wire` to `to`, processing as its buffer fills.
fn feed<B>(mut wire: &[u8], to: &mut ConnectionCommon<B>) -> Result<(), Error> {
    while !wire.is_empty() {
        to.read_tls(&mut wire).unwrap();
        to.process_new_packets()?;
    }
    to.process_new_packets().map(|_| ())
}

fn connect(
    client_suites: &[rustls::SupportedCipherSuite],
    case: &Case,
    dir: &TempDir,
) -> (ClientConnection, ServerConnection) {
    let certs = make_certs(dir.path(), case.key);
    let client = client_config(provider_with(client_suites), &certs);
    let server = server_config(Arc::new(cbc_hmac_rustls::default_provider()), &certs);
    let mut c = ClientConnection::new(client, common::server_name()).unwrap();
    let mut s = ServerConnection::new(server).unwrap();
    for _ in 0..10 {
        if !c.is_handshaking() && !s.is_handshaking() {
            break;
        }
        pump(&mut c, &mut s).unwrap();
        pump(&mut s, &mut c).unwrap();
    }
    assert!(
        !c.is_handshaking() && !s.is_handshaking(),
        "handshake did not finish"
    );
    (c, s)
}

/// Sends `data` from one side to the other and checks what arrives.
fn transfer<A, B>(data: &[u8], from: &mut ConnectionCommon<A>, to: &mut ConnectionCommon<B>)
where
    ConnectionCommon<A>: std::ops::DerefMut,
{
    let mut got = Vec::with_capacity(data.len());
    let mut sent = 0;
    let mut buf = vec![0u8; 1 << 16];
    while got.len() < data.len() {
        // Small steps: the receiver buffers at most 16 KiB of plaintext.
        if sent < data.len() {
            let end = data.len().min(sent + 8192);
            sent += from.writer().write(&data[sent..end]).unwrap();
        }
        pump(from, to).unwrap();
        loop {
            match to.reader().read(&mut buf) {
                Ok(0) => panic!("connection closed"),
                Ok(n) => got.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) => panic!("read: {e}"),
            }
        }
    }
    assert!(got == data, "{}", first_difference(&got, data));
}

fn have_openssl(what: &str) -> bool {
    have_tool("openssl", &["version"], "openssl", what)
}

#[test]
fn every_suite_moves_data_both_ways() {
    if !have_openssl("rustls to rustls over every suite (certificates)") {
        return;
    }
    let dir = TempDir::new("cbc-hmac-rustls-memory");
    for case in cases() {
        let (mut c, mut s) = connect(&[case.suite], &case, &dir);
        assert_eq!(c.negotiated_cipher_suite(), Some(case.suite));
        assert_eq!(s.negotiated_cipher_suite(), Some(case.suite));
        transfer(&test_data(TRANSFER_LEN, 5), &mut c, &mut s);
        transfer(&test_data(TRANSFER_LEN, 6), &mut s, &mut c);
        eprintln!("PASSED: rustls <-> rustls, {}: 1 MiB each way", case.name());
    }
}

/// The MAC length of a case's suite.
fn mac_len(case: &Case) -> usize {
    match case.gnutls.1 {
        "SHA1" => 20,
        "SHA256" => 32,
        other => panic!("{other}"),
    }
}

#[test]
fn records_have_the_announced_length() {
    if !have_openssl("record lengths (certificates)") {
        return;
    }
    let dir = TempDir::new("cbc-hmac-rustls-lengths");
    for case in cases() {
        let (mut c, mut s) = connect(&[case.suite], &case, &dir);
        for len in (1..=80).chain([1000, 16383, 16384]) {
            let data = test_data(len, len as u8);
            c.writer().write_all(&data).unwrap();
            let mut wire = Vec::new();
            while c.wants_write() {
                c.write_tls(&mut wire).unwrap();
            }
            // One application-data record: explicit IV, then plaintext,
            // MAC and the least padding (1..=16 bytes) in whole blocks.
            let expected = 16 + (len + mac_len(&case)) / 16 * 16 + 16;
            assert_eq!(wire[0], 23, "{}: content type", case.name());
            let body = usize::from(u16::from_be_bytes([wire[3], wire[4]]));
            assert_eq!(body, expected, "{} plaintext {len}", case.name());
            assert_eq!(
                wire.len(),
                5 + body,
                "{} plaintext {len}: one record",
                case.name()
            );
            feed(&wire, &mut s).unwrap();
            let mut got = vec![0u8; len];
            s.reader().read_exact(&mut got).unwrap();
            assert_eq!(got, data);
        }
    }
}

#[test]
fn aead_suites_win_when_both_sides_have_them() {
    if !have_openssl("suite preference (certificates)") {
        return;
    }
    let dir = TempDir::new("cbc-hmac-rustls-preference");
    for case in cases() {
        let provider = cbc_hmac_rustls::default_provider();
        let (c, _s) = connect(&provider.cipher_suites, &case, &dir);
        let negotiated = c.negotiated_cipher_suite().unwrap();
        assert!(
            !cbc_hmac_rustls::ALL_CIPHER_SUITES.contains(&negotiated),
            "{:?} negotiated although both offer AEAD suites",
            negotiated.suite()
        );
    }
}

/// A record from the server with `tamper` applied on the wire.
fn tampered_record(case: &Case, dir: &TempDir, tamper: &dyn Fn(&mut Vec<u8>)) {
    let (mut c, mut s) = connect(&[case.suite], case, dir);
    s.writer().write_all(&test_data(200, 9)).unwrap();
    let mut wire = Vec::new();
    while s.wants_write() {
        s.write_tls(&mut wire).unwrap();
    }
    tamper(&mut wire);
    assert_eq!(
        feed(&wire, &mut c),
        Err(Error::DecryptError),
        "{}",
        case.name()
    );
    // The client answers with a bad_record_mac alert.
    assert_eq!(
        pump(&mut c, &mut s),
        Err(Error::AlertReceived(AlertDescription::BadRecordMac)),
        "{}",
        case.name()
    );
}

#[test]
fn tampered_records_give_the_decrypt_error() {
    if !have_openssl("tampered records (certificates)") {
        return;
    }
    let dir = TempDir::new("cbc-hmac-rustls-tamper");
    for case in cases() {
        let body_len = |w: &Vec<u8>| usize::from(u16::from_be_bytes([w[3], w[4]]));
        // The explicit IV, the first ciphertext block (plaintext), the
        // block holding the MAC, and the last byte (padding length).
        for at in [0usize, 16, 200 + 16 - 8, usize::MAX] {
            tampered_record(&case, &dir, &|w| {
                let i = if at == usize::MAX {
                    5 + body_len(w) - 1
                } else {
                    5 + at
                };
                w[i] ^= 0x01;
            });
        }
        // A whole block cut off the end: still block-aligned, so only the
        // padding and MAC checks can reject it.
        tampered_record(&case, &dir, &|w| {
            let n = body_len(w) - 16;
            w[3..5].copy_from_slice(&(n as u16).to_be_bytes());
            w.truncate(5 + n);
        });
        // Not a whole number of blocks: a public length check.
        tampered_record(&case, &dir, &|w| {
            let n = body_len(w) - 1;
            w[3..5].copy_from_slice(&(n as u16).to_be_bytes());
            w.truncate(5 + n);
        });
        eprintln!("PASSED: tampered records rejected, {}", case.name());
    }
}
