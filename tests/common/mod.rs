//! Helpers shared by the integration tests (each test binary uses a subset).
#![allow(dead_code)]

pub mod tls_records;
pub mod vectors;
