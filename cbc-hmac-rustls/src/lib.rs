//! TLS 1.2 AES-CBC + HMAC cipher suites for [rustls], on the constant-time
//! record protection of [`cbc_hmac`].
//!
//! # When to use it
//!
//! Only to reach a peer that speaks nothing better: an old server,
//! appliance or device whose TLS 1.2 stack offers CBC suites and no AEAD
//! suite. CBC suites are MAC-then-encrypt, a construction with a long
//! history of padding-oracle attacks (Lucky Thirteen among them);
//! `cbc_hmac` opens records in constant time, but the AEAD suites are
//! still the better choice wherever the peer has them. [`with_cbc_suites`]
//! therefore appends the CBC suites *after* a provider's own suites, so a
//! peer that offers both still gets an AEAD suite.
//!
//! # The suites
//!
//! | suite | code point |
//! |---|---|
//! | [`TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256`] | 0xC023 |
//! | [`TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256`] | 0xC027 |
//! | [`TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA`] | 0xC00A |
//! | [`TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA`] | 0xC009 |
//! | [`TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA`] | 0xC014 |
//! | [`TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA`] | 0xC013 |
//!
//! Key exchange, signatures, the handshake hash and the PRF are the `ring`
//! provider's; only the record protection is this crate's.
//!
//! # What it cannot do
//!
//! - **No SHA-384 suites** (`..._AES_256_CBC_SHA384`): rustls hands each
//!   direction its key material in an `AeadKey`, which holds at most 32
//!   bytes, and the HMAC-SHA-384 key is 48.
//! - **No static-RSA suites** (`TLS_RSA_WITH_...`): rustls does only
//!   ECDHE key exchange (and FFDHE, which the `ring` provider lacks, so no
//!   `TLS_DHE_...` suites either).
//! - **No encrypt-then-MAC** (RFC 7366): rustls has no hook to negotiate
//!   the extension, so records are always MAC-then-encrypt; a peer must
//!   not insist on encrypt-then-MAC.
//! - **TLS 1.2 only**: rustls has no TLS 1.0, TLS 1.1 or DTLS.
//! - No kTLS export: [`rustls::ConnectionTrafficSecrets`] has no CBC
//!   variant, so secret extraction reports an unsupported operation.
//!
//! # Allocation
//!
//! The AES key schedule, the HMAC inner and outer states and the
//! explicit-IV generator are built once per connection direction. Opening
//! works in place in rustls's receive buffer and does not allocate.
//! Sealing allocates one buffer per record, of the exact record size,
//! because rustls's `MessageEncrypter::encrypt` must return an owned
//! record; the plaintext is copied into it once and sealed there in place.
//!
//! # Example
//!
//! ```
//! use std::sync::Arc;
//!
//! let provider = Arc::new(cbc_hmac_rustls::default_provider());
//! let roots = rustls::RootCertStore::empty();
//! let config = rustls::ClientConfig::builder_with_provider(provider)
//!     .with_safe_default_protocol_versions()?
//!     .with_root_certificates(roots)
//!     .with_no_client_auth();
//! # let _ = config;
//! # Ok::<(), rustls::Error>(())
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod aead;
mod suites;

use rustls::crypto::CryptoProvider;

pub use suites::{
    ALL_CIPHER_SUITES, TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA,
    TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256, TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA,
    TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA, TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256,
    TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA,
};

/// `provider` with this crate's CBC suites appended after its own suites
/// (any it already lists are not repeated), so that a peer offering an AEAD
/// suite as well still negotiates the AEAD suite.
///
/// The provider's key exchange groups must include an ECDHE group the
/// peer supports, and its signature verification the peer's certificate
/// type: the CBC suites bring neither.
///
/// ```
/// let provider = cbc_hmac_rustls::with_cbc_suites(rustls::crypto::ring::default_provider());
/// let first_cbc = provider
///     .cipher_suites
///     .iter()
///     .position(|s| *s == cbc_hmac_rustls::ALL_CIPHER_SUITES[0])
///     .unwrap();
/// assert_eq!(first_cbc, rustls::crypto::ring::DEFAULT_CIPHER_SUITES.len());
/// ```
pub fn with_cbc_suites(mut provider: CryptoProvider) -> CryptoProvider {
    for suite in ALL_CIPHER_SUITES {
        if !provider.cipher_suites.contains(suite) {
            provider.cipher_suites.push(*suite);
        }
    }
    provider
}

/// The `ring` provider's default suites followed by this crate's CBC
/// suites: [`with_cbc_suites`] of [`rustls::crypto::ring::default_provider`].
pub fn default_provider() -> CryptoProvider {
    with_cbc_suites(rustls::crypto::ring::default_provider())
}
