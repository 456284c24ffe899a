//! A TCP proxy on loopback that forwards TLS records both ways and flips
//! one bit in the first application-data record going one way.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// Which way the tampered record goes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Direction {
    ToClient,
    ToServer,
}

/// A proxy waiting for one connection, to be forwarded to `server_port`.
pub struct Proxy {
    pub port: u16,
    handle: Option<JoinHandle<bool>>,
}

impl Proxy {
    pub fn start(server_port: u16, tamper: Direction) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let handle = thread::spawn(move || run(listener, server_port, tamper));
        Proxy {
            port,
            handle: Some(handle),
        }
    }

    /// Whether a record was tampered with (waits for the proxy to finish).
    pub fn tampered(mut self) -> bool {
        self.handle.take().unwrap().join().unwrap_or(false)
    }
}

fn run(listener: TcpListener, server_port: u16, tamper: Direction) -> bool {
    listener.set_nonblocking(true).unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let client = loop {
        match listener.accept() {
            Ok((s, _)) => break s,
            Err(_) if Instant::now() < deadline => thread::sleep(Duration::from_millis(10)),
            Err(_) => return false,
        }
    };
    client.set_nonblocking(false).unwrap();
    let server = loop {
        match TcpStream::connect(("127.0.0.1", server_port)) {
            Ok(s) => break s,
            Err(_) if Instant::now() < deadline => thread::sleep(Duration::from_millis(20)),
            Err(_) => return false,
        }
    };
    for s in [&client, &server] {
        s.set_read_timeout(Some(super::TIMEOUT)).unwrap();
    }
    let (c2, s2) = (client.try_clone().unwrap(), server.try_clone().unwrap());
    let up = thread::spawn(move || forward(c2, s2, tamper == Direction::ToServer));
    let down = forward(server, client, tamper == Direction::ToClient);
    let up = up.join().unwrap_or(false);
    up || down
}

/// Copies records from `from` to `to`; flips the last bit of the first
/// application-data record (its padding-length byte) if `tamper`.
fn forward(mut from: TcpStream, mut to: TcpStream, tamper: bool) -> bool {
    let mut tampered = false;
    let mut header = [0u8; 5];
    loop {
        if from.read_exact(&mut header).is_err() {
            break;
        }
        let len = usize::from(u16::from_be_bytes([header[3], header[4]]));
        let mut body = vec![0u8; len];
        if from.read_exact(&mut body).is_err() {
            break;
        }
        if tamper && !tampered && header[0] == 23 && len > 0 {
            body[len - 1] ^= 1;
            tampered = true;
        }
        if to
            .write_all(&header)
            .and_then(|()| to.write_all(&body))
            .is_err()
        {
            break;
        }
    }
    let _ = to.shutdown(Shutdown::Write);
    tampered
}
