//! Fast, constant-time AES-CBC + HMAC record protection for the CBC cipher
//! suites of TLS 1.0, 1.1, 1.2 and DTLS 1.0, 1.2, SSH, IPsec ESP and JWE, and the
//! standalone primitives (AES-CBC, HMAC-SHA1/SHA256/SHA384/SHA512) at full
//! machine speed.
//!
//! A record layer owns sockets, handshakes and fragmentation; this crate
//! owns "turn plaintext and a sequence number into a protected record
//! fragment, and back":
//!
//! ```
//! use cbc_hmac::{Combination, MacOrder, Opener, ProtocolVersion, RecordConfig, RecordKeys, Sealer};
//!
//! let suite: Combination = "ECDHE-RSA-AES128-SHA".parse()?;
//! let config = RecordConfig::new(suite, ProtocolVersion::Tls12, MacOrder::EncryptThenMac);
//! let keys = RecordKeys { enc_key: &[7; 16], mac_key: &[9; 20], iv: None };
//! let mut sealer = Sealer::new(config, keys)?;
//! let mut opener = Opener::new(config, keys)?;
//!
//! let mut record = [0u8; 256];
//! let n = sealer.seal(42, 23, b"hello", &mut record)?;
//! assert_eq!(opener.open_in_place(42, 23, &mut record[..n])?, b"hello");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Layers
//!
//! - [`record`]: TLS/DTLS record formats, sequence numbers, padding, MAC
//!   order, and the constant-time open; [`TlsAead`], the same records behind
//!   the AEAD-shaped interface of BoringSSL's legacy TLS AEADs.
//! - Primitives: [`AesCbcKey`] (key schedule expanded once), [`HmacKey`]
//!   (inner and outer states precomputed once), [`digest`].
//! - [`esp`]: IPsec ESP packets over the same kernels, and
//!   [`ReplayWindow`], the anti-replay window for ESP and DTLS.
//! - [`ssh`]: SSH binary packets (RFC 4253, OpenSSH's encrypt-then-MAC
//!   forms) with OpenSSH's defence against the CBC length oracle.
//! - [`jose`]: JWE's AES_CBC_HMAC_SHA2 AEAD (`A128CBC-HS256`).
//! - [`Backend`]: the implementation chosen once per keyed object.
//!
//! Keyed objects wipe their key material on drop. No operation on an
//! existing object allocates; the core builds without `std` (disable the
//! default `std` feature).
#![cfg_attr(not(feature = "std"), no_std)]
// `unsafe` is allowed only in `backends::x86_64`, the CPU kernels.
#![deny(unsafe_code)]
#![warn(missing_docs)]

mod backends;
mod combination;
mod error;
pub mod esp;
pub mod jose;
pub mod key_schedule;
mod primitives;
pub mod record;
pub mod replay;
pub mod ssh;
pub mod suite;

pub use backends::Backend;
pub use backends::cpu::{CpuModel, OverrideError, cpu_override, tuning_cpu_override};
pub use combination::{Cipher, Combination, MacAlgorithm};
pub use error::{Error, UnknownName};
pub use key_schedule::{KeyBlock, MasterSecret, Prf};
pub use primitives::aes_cbc::AesCbcKey;
pub use primitives::hmac::{HmacContext, HmacKey, Tag, digest, digest_with_backend};
pub use record::{
    MacOrder, Opener, ProtocolVersion, RecordConfig, RecordKeys, SealJob, SealRecord, Sealer,
    TlsAead, TlsAeadAlgorithm, TlsAeadIv, dtls_sequence, seal_batch,
};
pub use replay::ReplayWindow;

/// The README's examples run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
