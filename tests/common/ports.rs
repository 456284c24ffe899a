//! Loopback ports for peers that must be told where to listen before they
//! start (`openssl s_server -accept`, `gnutls-serv -p`, `sshd -p`).
//!
//! A port found free by binding port 0 and closing the socket comes from
//! the kernel's ephemeral range, and before the peer binds it another test
//! thread binding port 0 (a listener, a proxy) or connecting out can be
//! handed the same port: the peer then fails to bind and the test's client
//! reaches the other test's server. Ports here come from below the
//! ephemeral range, which neither port-0 binds nor outgoing connections
//! use, and each is handed out once per process.
//!
//! Shared by the crate's tests and the rustls provider's (by `#[path]`).
#![allow(dead_code)]

use std::net::{TcpListener, UdpSocket};
use std::sync::atomic::{AtomicU32, Ordering};

/// Where the ports start: above the well-known and most registered ones.
const LOW: u32 = 10_000;

/// Ports handed out so far in this process.
static HANDED_OUT: AtomicU32 = AtomicU32::new(0);

/// A TCP port on 127.0.0.1 that is free and no other caller in this
/// process gets.
pub fn free_tcp_port() -> u16 {
    pick(|port| TcpListener::bind(("127.0.0.1", port)).is_ok())
}

/// A UDP port on 127.0.0.1 that is free and no other caller in this
/// process gets.
pub fn free_udp_port() -> u16 {
    pick(|port| UdpSocket::bind(("127.0.0.1", port)).is_ok())
}

fn pick(free: impl Fn(u16) -> bool) -> u16 {
    let high = ephemeral_low().max(LOW + 1_000);
    let span = high - LOW;
    // Test processes running at once start at different places.
    let start = std::process::id() % span;
    for _ in 0..span {
        let n = HANDED_OUT.fetch_add(1, Ordering::Relaxed);
        let port = u16::try_from(LOW + (start + n) % span).expect("below 65536");
        if free(port) {
            return port;
        }
    }
    panic!("no free port on 127.0.0.1 in {LOW}..{high}");
}

/// The first port of the kernel's ephemeral range (Linux's default where
/// it cannot be read).
fn ephemeral_low() -> u32 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(32_768)
        .min(65_535)
}
