//! Decrypts a recorded TLS 1.0-1.2 or DTLS 1.0/1.2 session that used an
//! AES-CBC + HMAC suite, from the client's key log and a capture of both
//! directions, and prints the application data of each direction: what a
//! user debugging a legacy peer wants to see.
//!
//! ```text
//! cargo run --example decrypt_session -- CAPTURE_DIR
//! cargo run --example decrypt_session -- KEYLOG CLIENT_TO_SERVER SERVER_TO_CLIENT
//! ```
//!
//! `CAPTURE_DIR` holds `keylog.txt`, `client_to_server.bin` and
//! `server_to_client.bin`.
//!
//! # The capture format
//!
//! One file per direction, each the raw bytes that direction carried,
//! from the first byte of the ClientHello record on: TLS records back to
//! back as they appear in the TCP stream (5-byte headers), or DTLS records
//! back to back as they appeared in the datagrams (13-byte headers;
//! datagram boundaries do not matter). Wireshark writes exactly this with
//! Follow > TCP Stream, one direction selected, "Show data as: Raw", Save
//! as. The interop tests write it for every case when
//! `CBC_HMAC_INTEROP_CAPTURE_DIR` is set.
//!
//! The key log is the NSS format (`CLIENT_RANDOM <client random>
//! <master secret>` lines) that `openssl s_client -keylogfile FILE`,
//! GnuTLS, NSS and the browsers (`SSLKEYLOGFILE=FILE`) write.
//!
//! Only full handshakes are followed (not resumption or renegotiation).

#[allow(dead_code)]
#[path = "../tests/interop/wire.rs"]
mod wire;

#[allow(dead_code)]
#[path = "../tests/interop/session.rs"]
mod session;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use cbc_hmac::key_schedule::key_log;
use session::{Dir, Event};

fn usage() -> ExitCode {
    eprintln!(
        "usage: decrypt_session CAPTURE_DIR\n       \
         decrypt_session KEYLOG CLIENT_TO_SERVER SERVER_TO_CLIENT\n\n\
         CAPTURE_DIR holds keylog.txt, client_to_server.bin and server_to_client.bin:\n\
         the raw bytes of each direction (TLS or DTLS records back to back)."
    );
    ExitCode::from(2)
}

fn read(path: &Path) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))
}

/// `"text\n"` for printable data, with escapes for the rest.
fn printable(data: &[u8]) -> String {
    data.escape_ascii().to_string()
}

fn main() -> ExitCode {
    let args: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    let (key_log_path, c2s_path, s2c_path) = match args.as_slice() {
        [dir] => (
            dir.join("keylog.txt"),
            dir.join("client_to_server.bin"),
            dir.join("server_to_client.bin"),
        ),
        [k, c, s] => (k.clone(), c.clone(), s.clone()),
        _ => return usage(),
    };
    match run(&key_log_path, &c2s_path, &s2c_path) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

/// Decrypts and prints; `Ok(false)` if some record did not open.
fn run(key_log_path: &Path, c2s_path: &Path, s2c_path: &Path) -> Result<bool, String> {
    let log = String::from_utf8(read(key_log_path)?)
        .map_err(|_| format!("{}: not UTF-8 text", key_log_path.display()))?;
    let c2s = read(c2s_path)?;
    let s2c = read(s2c_path)?;
    let mut keys = |client_random: &[u8; 32]| {
        key_log::find_master_secret(&log, client_random)
            .map_err(|e| format!("{}: {e}", key_log_path.display()))?
            .ok_or_else(|| {
                format!(
                    "{} has no CLIENT_RANDOM line for client random {}",
                    key_log_path.display(),
                    hex(client_random)
                )
            })
    };
    let (tracker, events) = session::decrypt_capture(&c2s, &s2c, &mut keys);

    let mut clean = true;
    for event in &events {
        match event {
            Event::Hello(n) => {
                println!(
                    "{} {} ({}), {}{}",
                    n.version,
                    n.suite,
                    n.suite.combination(),
                    match n.mac_order {
                        cbc_hmac::MacOrder::EncryptThenMac => "encrypt-then-MAC",
                        cbc_hmac::MacOrder::MacThenEncrypt => "MAC-then-encrypt",
                    },
                    if n.extended_master_secret {
                        ", extended master secret"
                    } else {
                        ""
                    }
                );
                println!("client random {}", hex(&n.client_random));
                println!("server random {}", hex(&n.server_random));
            }
            Event::ChangeCipherSpec(dir) => println!("{:<17} change_cipher_spec", dir.name()),
            Event::Finished { dir, verified } => println!(
                "{:<17} Finished: {}",
                dir.name(),
                match verified {
                    Some(true) => "verify_data matches the handshake",
                    Some(false) => "verify_data DOES NOT match the handshake",
                    None => "not checked (not a full handshake)",
                }
            ),
            Event::Record {
                dir,
                seq,
                content_type,
                plaintext,
            } => {
                let what = match *content_type {
                    wire::ALERT if plaintext.len() == 2 => format!(
                        "alert: {} {}",
                        if plaintext[0] == 2 {
                            "fatal"
                        } else {
                            "warning"
                        },
                        alert_name(plaintext[1])
                    ),
                    wire::HANDSHAKE => format!("handshake, {} bytes", plaintext.len()),
                    t => format!(
                        "{}, {} bytes: {}",
                        wire::content_type_name(t),
                        plaintext.len(),
                        printable(plaintext)
                    ),
                };
                println!(
                    "{:<17} {} {what}",
                    dir.name(),
                    seq_name(*seq, tracker.is_dtls())
                );
            }
            Event::OpenFailed {
                dir,
                seq,
                content_type,
                error,
            } => {
                clean = false;
                println!(
                    "{:<17} {} {} record did not open: {error}{}",
                    dir.name(),
                    seq_name(*seq, tracker.is_dtls()),
                    wire::content_type_name(*content_type),
                    if tracker.is_dtls() {
                        ""
                    } else {
                        " (nothing after it in this direction can be opened)"
                    }
                );
            }
            Event::Problem(p) => {
                clean = false;
                println!("problem: {p}");
            }
        }
    }
    for dir in Dir::BOTH {
        let data = tracker.app_data(dir);
        println!(
            "\n== {} application data, {} bytes ==",
            dir.name(),
            data.len()
        );
        println!("{}", String::from_utf8_lossy(data));
    }
    Ok(clean)
}

/// `seq 5`, or for DTLS `epoch 1 seq 5`.
fn seq_name(seq: u64, dtls: bool) -> String {
    if dtls {
        format!("epoch {} seq {:<3}", seq >> 48, seq & 0xffff_ffff_ffff)
    } else {
        format!("seq {seq:<3}")
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn alert_name(description: u8) -> String {
    match description {
        0 => "close_notify".into(),
        10 => "unexpected_message".into(),
        20 => "bad_record_mac".into(),
        21 => "decryption_failed".into(),
        22 => "record_overflow".into(),
        40 => "handshake_failure".into(),
        47 => "illegal_parameter".into(),
        50 => "decode_error".into(),
        51 => "decrypt_error".into(),
        70 => "protocol_version".into(),
        80 => "internal_error".into(),
        90 => "user_canceled".into(),
        100 => "no_renegotiation".into(),
        d => format!("description {d}"),
    }
}
