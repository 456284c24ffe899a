//! OpenSSL's libcrypto as the comparison (`--compare openssl`), through the
//! workspace's safe wrapper `openssl-ref`; behind the `openssl` feature.
//! Without it, the same names exist but nothing can be built: the types are
//! uninhabited and [`AVAILABLE`] is `false`.

/// How to build with the comparison, for the error message without it.
pub const HOW_TO_ENABLE: &str = "\
--compare openssl needs the `openssl` feature of cbc-hmac-bench, which links \
the system OpenSSL (libssl-dev and pkg-config on Debian/Ubuntu). From the \
workspace root:
    cargo run --release -p cbc-hmac-bench --features openssl -- --compare openssl";

#[cfg(feature = "openssl")]
pub use with_openssl::*;
#[cfg(not(feature = "openssl"))]
pub use without_openssl::*;

#[cfg(feature = "openssl")]
mod with_openssl {
    use cbc_hmac::{Combination, MacAlgorithm};
    use openssl_ref::{
        ComposedTls, Digest, EvpAesCbc, Hmac, MacOrder, StitchedTlsCipher, TLS1_2, TlsParams,
    };

    use crate::workload::{CONTENT_TYPE, CbcImpl, Failure, MacImpl, RecordImpl};

    /// This build can compare with OpenSSL.
    pub const AVAILABLE: bool = true;

    /// OpenSSL's version string.
    pub fn version() -> &'static str {
        openssl_ref::version()
    }

    fn failure(e: openssl_ref::Error) -> Failure {
        Failure::OpenSsl(e.to_string())
    }

    fn digest(m: MacAlgorithm) -> Digest {
        match m {
            MacAlgorithm::HmacSha1 => Digest::Sha1,
            MacAlgorithm::HmacSha256 => Digest::Sha256,
            MacAlgorithm::HmacSha384 => Digest::Sha384,
            MacAlgorithm::HmacSha512 => Digest::Sha512,
        }
    }

    /// The explicit IV of [`Records::Composed`]'s timed seals (the
    /// composition takes the IV as given; generating one is not timed).
    const COMPOSED_IV: [u8; 16] = [0x5c; 16];

    /// OpenSSL's TLS 1.2 MAC-then-encrypt record protection for one
    /// combination: the stitched cipher where OpenSSL has one (SHA-1,
    /// SHA-256), else EVP AES-CBC plus HMAC over the same layout (SHA-384).
    pub enum Records {
        /// `AES-{128,256}-CBC-HMAC-SHA{1,256}` in TLS record mode.
        Stitched(StitchedTlsCipher),
        /// EVP AES-CBC + HMAC laid out by hand.
        Composed(ComposedTls),
    }

    impl Records {
        /// Keys both directions. For SHA-1 and SHA-256 the stitched cipher
        /// is required (no silent fallback to a composition: that would
        /// not be the work libssl does).
        pub fn new(
            combination: Combination,
            enc_key: &[u8],
            mac_key: &[u8],
        ) -> Result<Self, Failure> {
            let digest = digest(combination.mac());
            let params = TlsParams {
                enc_key,
                mac_key,
                digest,
                version: TLS1_2,
                mac_order: MacOrder::MacThenEncrypt,
                tls10_iv: None,
            };
            match StitchedTlsCipher::cipher_name(enc_key.len(), digest) {
                Some(name) => StitchedTlsCipher::new(&params)
                    .map(Records::Stitched)
                    .map_err(|e| {
                        Failure::OpenSsl(format!(
                            "OpenSSL's stitched {name} cannot be used here (it needs x86-64 \
                             with AES-NI): {e}"
                        ))
                    }),
                None => ComposedTls::new(&params)
                    .map(Records::Composed)
                    .map_err(failure),
            }
        }
    }

    impl RecordImpl for Records {
        #[inline]
        fn seal_in_place(
            &mut self,
            seq: u64,
            buf: &mut [u8],
            payload: usize,
        ) -> Result<usize, Failure> {
            match self {
                Records::Stitched(s) => s.seal_in_place_libssl(seq, CONTENT_TYPE, buf, payload),
                Records::Composed(c) => {
                    c.seal_in_place(seq, CONTENT_TYPE, Some(&COMPOSED_IV), buf, payload)
                }
            }
            .map_err(failure)
        }

        fn seal_with_iv(
            &mut self,
            seq: u64,
            iv: &[u8; 16],
            plaintext: &[u8],
        ) -> Result<Vec<u8>, Failure> {
            let mut out = Vec::new();
            match self {
                Records::Stitched(s) => s.seal(seq, CONTENT_TYPE, Some(iv), plaintext, &mut out),
                Records::Composed(c) => c.seal(seq, CONTENT_TYPE, Some(iv), plaintext, &mut out),
            }
            .map_err(failure)?;
            Ok(out)
        }

        #[inline]
        fn open_in_place(
            &mut self,
            seq: u64,
            record: &mut [u8],
        ) -> Result<Option<(usize, usize)>, Failure> {
            let base = record.as_ptr() as usize;
            let opened = match self {
                Records::Stitched(s) => s.open(seq, CONTENT_TYPE, record),
                Records::Composed(c) => c.open(seq, CONTENT_TYPE, record),
            };
            match opened {
                Ok(p) => Ok(Some((p.as_ptr() as usize - base, p.len()))),
                Err(openssl_ref::Error::BadRecord) => Ok(None),
                Err(e) => Err(failure(e)),
            }
        }
    }

    /// OpenSSL's HMAC (`HMAC_CTX`) keyed once.
    pub struct Mac(Hmac);

    impl Mac {
        /// Keys HMAC with `key`.
        pub fn new(algorithm: MacAlgorithm, key: &[u8]) -> Result<Self, Failure> {
            Hmac::new(digest(algorithm), key).map(Mac).map_err(failure)
        }
    }

    impl MacImpl for Mac {
        #[inline]
        fn mac(&mut self, message: &[u8], out: &mut [u8; 64]) -> Result<usize, Failure> {
            let tag = self.0.mac(message).map_err(failure)?;
            let tag = tag.as_slice();
            out[..tag.len()].copy_from_slice(tag);
            Ok(tag.len())
        }
    }

    /// OpenSSL's plain hash, through its low-level `SHA*_Init/Update/Final`.
    pub struct Hash(Digest);

    impl Hash {
        /// The hash under `algorithm`.
        pub fn new(algorithm: MacAlgorithm) -> Result<Self, Failure> {
            Ok(Hash(digest(algorithm)))
        }
    }

    impl MacImpl for Hash {
        #[inline]
        fn mac(&mut self, message: &[u8], out: &mut [u8; 64]) -> Result<usize, Failure> {
            let h = openssl_ref::hash(self.0, message).map_err(failure)?;
            let h = h.as_slice();
            out[..h.len()].copy_from_slice(h);
            Ok(h.len())
        }
    }

    /// OpenSSL's EVP AES-CBC keyed once (padding off).
    pub struct Cbc(EvpAesCbc);

    impl Cbc {
        /// Expands `key` for both directions.
        pub fn new(key: &[u8]) -> Result<Self, Failure> {
            EvpAesCbc::new(key).map(Cbc).map_err(failure)
        }
    }

    impl CbcImpl for Cbc {
        #[inline]
        fn encrypt(&mut self, iv: &[u8; 16], data: &mut [u8]) -> Result<(), Failure> {
            self.0.encrypt(iv, data).map_err(failure)
        }

        #[inline]
        fn decrypt(&mut self, iv: &[u8; 16], data: &mut [u8]) -> Result<(), Failure> {
            self.0.decrypt(iv, data).map_err(failure)
        }
    }
}

#[cfg(not(feature = "openssl"))]
mod without_openssl {
    use cbc_hmac::{Combination, MacAlgorithm};

    use super::HOW_TO_ENABLE;
    use crate::workload::{CbcImpl, Failure, MacImpl, RecordImpl};

    /// This build cannot compare with OpenSSL.
    pub const AVAILABLE: bool = false;

    /// No OpenSSL in this build.
    pub fn version() -> &'static str {
        "(not built with the openssl feature)"
    }

    fn unavailable<T>() -> Result<T, Failure> {
        Err(Failure::OpenSsl(HOW_TO_ENABLE.into()))
    }

    /// Uninhabited without the `openssl` feature.
    pub enum Records {}

    impl Records {
        /// Always an error without the `openssl` feature.
        pub fn new(_: Combination, _: &[u8], _: &[u8]) -> Result<Self, Failure> {
            unavailable()
        }
    }

    impl RecordImpl for Records {
        fn seal_in_place(&mut self, _: u64, _: &mut [u8], _: usize) -> Result<usize, Failure> {
            match *self {}
        }

        fn seal_with_iv(&mut self, _: u64, _: &[u8; 16], _: &[u8]) -> Result<Vec<u8>, Failure> {
            match *self {}
        }

        fn open_in_place(
            &mut self,
            _: u64,
            _: &mut [u8],
        ) -> Result<Option<(usize, usize)>, Failure> {
            match *self {}
        }
    }

    /// Uninhabited without the `openssl` feature.
    pub enum Mac {}

    impl Mac {
        /// Always an error without the `openssl` feature.
        pub fn new(_: MacAlgorithm, _: &[u8]) -> Result<Self, Failure> {
            unavailable()
        }
    }

    impl MacImpl for Mac {
        fn mac(&mut self, _: &[u8], _: &mut [u8; 64]) -> Result<usize, Failure> {
            match *self {}
        }
    }

    /// Uninhabited without the `openssl` feature.
    pub enum Hash {}

    impl Hash {
        /// Always an error without the `openssl` feature.
        pub fn new(_: MacAlgorithm) -> Result<Self, Failure> {
            unavailable()
        }
    }

    impl MacImpl for Hash {
        fn mac(&mut self, _: &[u8], _: &mut [u8; 64]) -> Result<usize, Failure> {
            match *self {}
        }
    }

    /// Uninhabited without the `openssl` feature.
    pub enum Cbc {}

    impl Cbc {
        /// Always an error without the `openssl` feature.
        pub fn new(_: &[u8]) -> Result<Self, Failure> {
            unavailable()
        }
    }

    impl CbcImpl for Cbc {
        fn encrypt(&mut self, _: &[u8; 16], _: &mut [u8]) -> Result<(), Failure> {
            match *self {}
        }

        fn decrypt(&mut self, _: &[u8; 16], _: &mut [u8]) -> Result<(), Failure> {
            match *self {}
        }
    }
}
