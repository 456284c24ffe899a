//! Keyed primitives: AES-CBC with a cached key schedule, HMAC with
//! precomputed states, and the constant-time pieces the record opener is
//! built from. Independent of any record format.

pub(crate) mod aes_cbc;
pub(crate) mod ct;
pub(crate) mod ct_digest;
pub(crate) mod ct_padding;
pub(crate) mod explicit_iv;
pub(crate) mod hash;
pub(crate) mod hmac;
