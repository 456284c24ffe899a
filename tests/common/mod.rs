//! Helpers shared by the integration tests (each test binary uses a subset).
#![allow(dead_code)]

pub mod child;
pub mod ports;
pub mod rng;
pub mod sshd;
pub mod tls_records;
pub mod vectors;

use cbc_hmac::Backend;

/// Every available backend, printed once per test.
pub fn backends() -> Vec<Backend> {
    let list: Vec<Backend> = Backend::available().collect();
    let names: Vec<&str> = list.iter().map(|b| b.name()).collect();
    eprintln!("backends: {}", names.join(", "));
    assert!(!list.is_empty(), "no backend available");
    list
}

/// Lower-case hex, for messages.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
