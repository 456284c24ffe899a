//! The cipher suite constants.

use cbc_hmac::Combination;
use rustls::crypto::KeyExchangeAlgorithm;
use rustls::crypto::ring::cipher_suite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 as RING_SUITE;
use rustls::{
    CipherSuite, CipherSuiteCommon, SignatureScheme, SupportedCipherSuite, Tls12CipherSuite,
};

use crate::aead::CbcHmacAlgorithm;

/// A `ring` suite with the SHA-256 handshake hash and PRF: its hash and
/// PRF are those of every suite here (the `ring` provider exports its
/// suites, not its hash and HMAC objects).
const RING_SHA256: &Tls12CipherSuite = match RING_SUITE {
    SupportedCipherSuite::Tls12(suite) => suite,
    SupportedCipherSuite::Tls13(_) => panic!("a TLS 1.2 suite"),
};

static AES_128_CBC_SHA: CbcHmacAlgorithm = CbcHmacAlgorithm::new(Combination::Aes128CbcSha1);
static AES_256_CBC_SHA: CbcHmacAlgorithm = CbcHmacAlgorithm::new(Combination::Aes256CbcSha1);
static AES_128_CBC_SHA256: CbcHmacAlgorithm = CbcHmacAlgorithm::new(Combination::Aes128CbcSha256);

/// Signature schemes for ECDSA certificates, as the `ring` provider's
/// ECDSA suites list them.
static ECDSA_SCHEMES: &[SignatureScheme] = &[
    SignatureScheme::ED25519,
    SignatureScheme::ECDSA_NISTP521_SHA512,
    SignatureScheme::ECDSA_NISTP384_SHA384,
    SignatureScheme::ECDSA_NISTP256_SHA256,
];

/// Signature schemes for RSA certificates, as the `ring` provider's RSA
/// suites list them.
static RSA_SCHEMES: &[SignatureScheme] = &[
    SignatureScheme::RSA_PSS_SHA512,
    SignatureScheme::RSA_PSS_SHA384,
    SignatureScheme::RSA_PSS_SHA256,
    SignatureScheme::RSA_PKCS1_SHA512,
    SignatureScheme::RSA_PKCS1_SHA384,
    SignatureScheme::RSA_PKCS1_SHA256,
];

/// Every suite here uses the TLS 1.2 PRF and handshake hash with SHA-256
/// (RFC 5246 section 5; the `_SHA` in a suite's name is only its MAC).
const fn suite(
    suite: CipherSuite,
    sign: &'static [SignatureScheme],
    aead_alg: &'static CbcHmacAlgorithm,
) -> Tls12CipherSuite {
    Tls12CipherSuite {
        common: CipherSuiteCommon {
            suite,
            hash_provider: RING_SHA256.common.hash_provider,
            // CBC has no GCM-style forgery bound; the 128-bit block's
            // birthday bound (2^64 blocks) is far beyond any connection.
            confidentiality_limit: u64::MAX,
        },
        kx: KeyExchangeAlgorithm::ECDHE,
        sign,
        aead_alg,
        prf_provider: RING_SHA256.prf_provider,
    }
}

/// TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA (0xC009).
pub static TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA: SupportedCipherSuite =
    SupportedCipherSuite::Tls12(&suite(
        CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA,
        ECDSA_SCHEMES,
        &AES_128_CBC_SHA,
    ));

/// TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA (0xC00A).
pub static TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA: SupportedCipherSuite =
    SupportedCipherSuite::Tls12(&suite(
        CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA,
        ECDSA_SCHEMES,
        &AES_256_CBC_SHA,
    ));

/// TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA (0xC013).
pub static TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA: SupportedCipherSuite =
    SupportedCipherSuite::Tls12(&suite(
        CipherSuite::TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA,
        RSA_SCHEMES,
        &AES_128_CBC_SHA,
    ));

/// TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA (0xC014).
pub static TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA: SupportedCipherSuite =
    SupportedCipherSuite::Tls12(&suite(
        CipherSuite::TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA,
        RSA_SCHEMES,
        &AES_256_CBC_SHA,
    ));

/// TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256 (0xC023).
pub static TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256: SupportedCipherSuite =
    SupportedCipherSuite::Tls12(&suite(
        CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256,
        ECDSA_SCHEMES,
        &AES_128_CBC_SHA256,
    ));

/// TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256 (0xC027).
pub static TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256: SupportedCipherSuite =
    SupportedCipherSuite::Tls12(&suite(
        CipherSuite::TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256,
        RSA_SCHEMES,
        &AES_128_CBC_SHA256,
    ));

/// Every suite of this crate, in order of preference: the SHA-256 MAC
/// suites, then the SHA-1 ones with AES-256 before AES-128; ECDSA before
/// RSA within each.
pub static ALL_CIPHER_SUITES: &[SupportedCipherSuite] = &[
    TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256,
    TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256,
    TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA,
    TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA,
    TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA,
    TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA,
];
