//! Connects to a TLS server that offers only CBC suites, prints the
//! negotiated suite, sends an HTTP request line and prints the reply.
//!
//! ```text
//! cargo run -p cbc-hmac-rustls --example legacy_client -- HOST:PORT [--cafile CA.pem]
//! ```
//!
//! The server's certificate is checked against `--cafile` if given, else
//! against the system's CA bundle (`/etc/ssl/certs/ca-certificates.crt` or
//! `/etc/pki/tls/certs/ca-bundle.crt`). The client offers rustls's AEAD
//! suites first and the CBC suites after them, on TLS 1.3 and 1.2, as a
//! real client would: a server that can do better still gets AEAD.
//!
//! A CBC-only server to try it on:
//!
//! ```text
//! openssl req -x509 -newkey rsa:2048 -nodes -keyout key.pem -out cert.pem -days 1 \
//!     -subj /CN=localhost -addext subjectAltName=DNS:localhost \
//!     -addext basicConstraints=critical,CA:FALSE
//! openssl s_server -accept 127.0.0.1:4433 -cert cert.pem -key key.pem -www \
//!     -tls1_2 -cipher ECDHE-RSA-AES128-SHA -no_etm
//! cargo run -p cbc-hmac-rustls --example legacy_client -- localhost:4433 --cafile cert.pem
//! ```

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, ClientConnection, RootCertStore, StreamOwned};

const SYSTEM_BUNDLES: &[&str] = &[
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (mut address, mut cafile) = (None, None);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--cafile" => cafile = Some(args.next().ok_or("--cafile needs a file")?),
            _ if address.is_none() => address = Some(arg),
            _ => return Err(format!("unexpected argument {arg}").into()),
        }
    }
    let address = address.ok_or("usage: legacy_client HOST:PORT [--cafile CA.pem]")?;
    let host = address
        .rsplit_once(':')
        .map(|(h, _)| h.trim_start_matches('[').trim_end_matches(']'))
        .ok_or("the address must be HOST:PORT")?;

    let bundle = match cafile {
        Some(f) => f,
        None => SYSTEM_BUNDLES
            .iter()
            .find(|p| std::path::Path::new(p).exists())
            .ok_or("no system CA bundle found: pass --cafile")?
            .to_string(),
    };
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(&bundle)? {
        // A bundle may hold certificates webpki cannot parse: skip them.
        let _ = roots.add(cert?);
    }

    let provider = Arc::new(cbc_hmac_rustls::default_provider());
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let name = ServerName::try_from(host.to_string())?;
    let conn = ClientConnection::new(Arc::new(config), name)?;
    let tcp = TcpStream::connect(&address)?;
    // A server that never closes must not hang the example.
    tcp.set_read_timeout(Some(Duration::from_secs(5)))?;
    let mut tls = StreamOwned::new(conn, tcp);

    let request = format!("GET / HTTP/1.0\r\nHost: {host}\r\n\r\n");
    tls.write_all(request.as_bytes())?;
    tls.flush()?;
    let suite = tls
        .conn
        .negotiated_cipher_suite()
        .ok_or("no suite negotiated")?;
    println!(
        "negotiated: {:?} over {:?}",
        suite.suite(),
        suite.version().version
    );

    let mut reply = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match tls.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => reply.extend_from_slice(&buf[..n]),
            // Closed without close_notify, or quiet for the time-out.
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::UnexpectedEof | ErrorKind::WouldBlock | ErrorKind::TimedOut
                ) =>
            {
                break;
            }
            Err(e) => return Err(e.into()),
        }
    }
    println!("reply ({} bytes):", reply.len());
    println!("{}", String::from_utf8_lossy(&reply));
    tls.conn.send_close_notify();
    let _ = tls.flush();
    Ok(())
}
