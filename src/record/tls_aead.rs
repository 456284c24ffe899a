//! The AEAD-shaped interface to MAC-then-encrypt TLS CBC records, in the
//! shape of BoringSSL's and aws-lc's legacy TLS AEADs: see [`TlsAead`].

use core::fmt;
use core::str::FromStr;

use zeroize::Zeroize;

use super::opener::open_body;
use super::sealer::{check_seal_len, seal_body};
use super::{check_fragment_len, min_mac_then_encrypt_len, padded_len};
use crate::backends::Backend;
use crate::combination::Combination;
use crate::error::{Error, UnknownName};
use crate::primitives::hmac::MAX_TLS_TAG_LEN;
use crate::{AesCbcKey, HmacKey};

/// Where a [`TlsAead`] gets each record's CBC IV.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TlsAeadIv {
    /// The nonce is the IV (16 bytes), as a TLS 1.1+ or DTLS record layer
    /// sends it in front of the record (BoringSSL's `..._tls` AEADs).
    Explicit,
    /// The key ends with the first IV; each later record's IV is the last
    /// ciphertext block of the one before, as in TLS 1.0. The nonce is
    /// empty (BoringSSL's `..._tls_implicit_iv` AEADs).
    Implicit,
}

/// One of the legacy TLS AEADs: a [`Combination`] and an IV form.
///
/// The constants are named after BoringSSL's and aws-lc's functions:
/// `EVP_aead_aes_128_cbc_sha1_tls()` is
/// [`TlsAeadAlgorithm::AES_128_CBC_SHA1_TLS`],
/// `EVP_aead_aes_128_cbc_sha1_tls_implicit_iv()` is
/// [`TlsAeadAlgorithm::AES_128_CBC_SHA1_TLS_IMPLICIT_IV`], and so on.
///
/// ```
/// use cbc_hmac::{Combination, TlsAeadAlgorithm, TlsAeadIv};
///
/// let a = TlsAeadAlgorithm::AES_256_CBC_SHA384_TLS;
/// assert_eq!(a, TlsAeadAlgorithm::new(Combination::Aes256CbcSha384, TlsAeadIv::Explicit));
/// assert_eq!((a.key_len(), a.nonce_len(), a.max_overhead()), (48 + 32, 16, 48 + 16));
/// assert_eq!(a.name(), "aes-256-cbc-sha384-tls");
/// assert_eq!("EVP_aead_aes_256_cbc_sha384_tls".parse(), Ok(a));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TlsAeadAlgorithm {
    combination: Combination,
    iv: TlsAeadIv,
}

impl TlsAeadAlgorithm {
    /// `EVP_aead_aes_128_cbc_sha1_tls`.
    pub const AES_128_CBC_SHA1_TLS: Self = Self::explicit(Combination::Aes128CbcSha1);
    /// `EVP_aead_aes_128_cbc_sha1_tls_implicit_iv`.
    pub const AES_128_CBC_SHA1_TLS_IMPLICIT_IV: Self = Self::implicit(Combination::Aes128CbcSha1);
    /// `EVP_aead_aes_256_cbc_sha1_tls`.
    pub const AES_256_CBC_SHA1_TLS: Self = Self::explicit(Combination::Aes256CbcSha1);
    /// `EVP_aead_aes_256_cbc_sha1_tls_implicit_iv`.
    pub const AES_256_CBC_SHA1_TLS_IMPLICIT_IV: Self = Self::implicit(Combination::Aes256CbcSha1);
    /// `EVP_aead_aes_128_cbc_sha256_tls`.
    pub const AES_128_CBC_SHA256_TLS: Self = Self::explicit(Combination::Aes128CbcSha256);
    /// `EVP_aead_aes_128_cbc_sha256_tls_implicit_iv` (aws-lc).
    pub const AES_128_CBC_SHA256_TLS_IMPLICIT_IV: Self =
        Self::implicit(Combination::Aes128CbcSha256);
    /// `EVP_aead_aes_256_cbc_sha256_tls` (older BoringSSL releases).
    pub const AES_256_CBC_SHA256_TLS: Self = Self::explicit(Combination::Aes256CbcSha256);
    /// AES-256-CBC-SHA256 with the implicit IV (no BoringSSL or aws-lc
    /// counterpart).
    pub const AES_256_CBC_SHA256_TLS_IMPLICIT_IV: Self =
        Self::implicit(Combination::Aes256CbcSha256);
    /// `EVP_aead_aes_256_cbc_sha384_tls` (aws-lc, older BoringSSL
    /// releases).
    pub const AES_256_CBC_SHA384_TLS: Self = Self::explicit(Combination::Aes256CbcSha384);
    /// AES-256-CBC-SHA384 with the implicit IV (no BoringSSL or aws-lc
    /// counterpart).
    pub const AES_256_CBC_SHA384_TLS_IMPLICIT_IV: Self =
        Self::implicit(Combination::Aes256CbcSha384);

    /// Every algorithm: each combination, explicit IV then implicit IV.
    pub const ALL: [Self; 10] = [
        Self::AES_128_CBC_SHA1_TLS,
        Self::AES_128_CBC_SHA1_TLS_IMPLICIT_IV,
        Self::AES_256_CBC_SHA1_TLS,
        Self::AES_256_CBC_SHA1_TLS_IMPLICIT_IV,
        Self::AES_128_CBC_SHA256_TLS,
        Self::AES_128_CBC_SHA256_TLS_IMPLICIT_IV,
        Self::AES_256_CBC_SHA256_TLS,
        Self::AES_256_CBC_SHA256_TLS_IMPLICIT_IV,
        Self::AES_256_CBC_SHA384_TLS,
        Self::AES_256_CBC_SHA384_TLS_IMPLICIT_IV,
    ];

    /// The length of the additional data: `seq(8) || type(1) ||
    /// version(2)`.
    pub const AD_LEN: usize = 11;

    /// The largest [`TlsAeadAlgorithm::max_overhead`] of all: a 48-byte
    /// MAC and 16 bytes of padding.
    pub const MAX_OVERHEAD: usize = MAX_TLS_TAG_LEN + 16;

    /// The algorithm for `combination` with IVs from `iv`.
    pub const fn new(combination: Combination, iv: TlsAeadIv) -> Self {
        TlsAeadAlgorithm { combination, iv }
    }

    const fn explicit(combination: Combination) -> Self {
        Self::new(combination, TlsAeadIv::Explicit)
    }

    const fn implicit(combination: Combination) -> Self {
        Self::new(combination, TlsAeadIv::Implicit)
    }

    /// The cipher and MAC.
    pub const fn combination(self) -> Combination {
        self.combination
    }

    /// Where the IVs come from.
    pub const fn iv(self) -> TlsAeadIv {
        self.iv
    }

    /// The key length: MAC key, AES key and, for the implicit-IV form, the
    /// 16-byte first IV.
    pub const fn key_len(self) -> usize {
        let iv = match self.iv {
            TlsAeadIv::Explicit => 0,
            TlsAeadIv::Implicit => 16,
        };
        self.combination.mac().tls_key_len() + self.combination.cipher().key_len() + iv
    }

    /// The nonce length: 16 (the IV) for the explicit-IV form, 0 for the
    /// implicit-IV form.
    pub const fn nonce_len(self) -> usize {
        match self.iv {
            TlsAeadIv::Explicit => 16,
            TlsAeadIv::Implicit => 0,
        }
    }

    /// The MAC's length (BoringSSL's `max_tag_len`).
    pub const fn mac_len(self) -> usize {
        self.combination.mac().output_len()
    }

    /// The most a sealed output is longer than its plaintext: the MAC and
    /// 16 bytes of padding (BoringSSL's `EVP_AEAD_max_overhead`).
    pub const fn max_overhead(self) -> usize {
        self.mac_len() + 16
    }

    /// The exact length of the sealed output for a plaintext of
    /// `plaintext_len` bytes: plaintext, MAC and the least padding, in whole
    /// blocks (the nonce is not part of it).
    pub const fn sealed_len(self, plaintext_len: usize) -> usize {
        padded_len(plaintext_len + self.mac_len())
    }

    /// The name BoringSSL's tests use, for example
    /// `aes-128-cbc-sha1-tls-implicit-iv`.
    pub const fn name(self) -> &'static str {
        use Combination::*;
        use TlsAeadIv::*;
        match (self.combination, self.iv) {
            (Aes128CbcSha1, Explicit) => "aes-128-cbc-sha1-tls",
            (Aes128CbcSha1, Implicit) => "aes-128-cbc-sha1-tls-implicit-iv",
            (Aes256CbcSha1, Explicit) => "aes-256-cbc-sha1-tls",
            (Aes256CbcSha1, Implicit) => "aes-256-cbc-sha1-tls-implicit-iv",
            (Aes128CbcSha256, Explicit) => "aes-128-cbc-sha256-tls",
            (Aes128CbcSha256, Implicit) => "aes-128-cbc-sha256-tls-implicit-iv",
            (Aes256CbcSha256, Explicit) => "aes-256-cbc-sha256-tls",
            (Aes256CbcSha256, Implicit) => "aes-256-cbc-sha256-tls-implicit-iv",
            (Aes256CbcSha384, Explicit) => "aes-256-cbc-sha384-tls",
            (Aes256CbcSha384, Implicit) => "aes-256-cbc-sha384-tls-implicit-iv",
        }
    }
}

impl fmt::Display for TlsAeadAlgorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for TlsAeadAlgorithm {
    type Err = UnknownName;

    /// Accepts [`TlsAeadAlgorithm::name`] (`aes-128-cbc-sha1-tls`) and the
    /// function name (`EVP_aead_aes_128_cbc_sha1_tls`), case-insensitively.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bare = match s.get(..9) {
            Some(p) if p.eq_ignore_ascii_case("EVP_aead_") => &s[9..],
            _ => s,
        };
        let same = |name: &str| {
            name.len() == bare.len()
                && name.bytes().zip(bare.bytes()).all(|(a, b)| {
                    let b = if b == b'_' { b'-' } else { b };
                    a == b.to_ascii_lowercase()
                })
        };
        Self::ALL
            .into_iter()
            .find(|a| same(a.name()))
            .ok_or_else(|| UnknownName::new(s))
    }
}

/// A keyed legacy TLS AEAD: MAC-then-encrypt TLS CBC records behind an
/// AEAD-shaped interface, laid out like the legacy TLS AEADs of BoringSSL
/// and aws-lc (`EVP_aead_aes_128_cbc_sha1_tls`, `..._tls_implicit_iv`,
/// ...), for record layers and test suites written against those.
///
///
/// - **Key**: `mac_key || enc_key`, and `|| iv` (16 bytes) for the
///   implicit-IV form ([`TlsAeadAlgorithm::key_len`]).
/// - **Nonce**: the 16-byte CBC IV (explicit-IV form: the record layer
///   sends it in front of the record), or empty (implicit-IV form: the IV
///   of each record is the last ciphertext block of the one before, the
///   first one from the key, as in TLS 1.0).
/// - **Additional data**: 11 bytes, `seq(8) || type(1) || version(2)`,
///   taken as bytes: any version, with any combination.
/// - **MAC**: `HMAC(ad || len(plaintext) as 2 bytes || plaintext)`.
/// - **Sealed output**: `CBC(plaintext || MAC || padding)` without the IV,
///   [`TlsAeadAlgorithm::sealed_len`] bytes (the least padding; at most
///   [`TlsAeadAlgorithm::max_overhead`] more than the plaintext).
///
/// It is the record format of [`crate::Sealer`] and [`crate::Opener`] for
/// MAC-then-encrypt with the version taken from the additional data, and
/// runs the same code: the stitched seal and the constant-time open of
/// `ct_open` (public length checks first, with their own errors; then one
/// [`Error::BadRecordMac`] for bad padding and bad MAC alike, decided
/// without branches or memory accesses that depend on either). Nothing
/// allocates.
///
/// ```
/// use cbc_hmac::{TlsAead, TlsAeadAlgorithm};
///
/// // EVP_aead_aes_128_cbc_sha1_tls: key = mac_key (20) || enc_key (16).
/// let algorithm = TlsAeadAlgorithm::AES_128_CBC_SHA1_TLS;
/// let key = [7u8; 36];
/// let mut sealer = TlsAead::new(algorithm, &key)?;
/// let mut opener = TlsAead::new(algorithm, &key)?;
///
/// // seq 5, application_data, TLS 1.2; the nonce is the explicit IV.
/// let mut ad = [0u8; 11];
/// ad[..8].copy_from_slice(&5u64.to_be_bytes());
/// ad[8] = 23;
/// ad[9..].copy_from_slice(&[3, 3]);
/// let iv = [0x42u8; 16];
///
/// let message = b"GET / HTTP/1.1\r\n\r\n";
/// let mut record = [0u8; 128];
/// let n = sealer.seal(&iv, &ad, message, &mut record)?;
/// assert_eq!(n, algorithm.sealed_len(message.len()));
///
/// let plaintext = opener.open_in_place(&iv, &ad, &mut record[..n])?;
/// assert_eq!(plaintext, message);
///
/// // Any damage is the one authentication error.
/// let n = sealer.seal(&iv, &ad, message, &mut record)?;
/// record[3] ^= 1;
/// assert_eq!(
///     opener.open_in_place(&iv, &ad, &mut record[..n]),
///     Err(cbc_hmac::Error::BadRecordMac)
/// );
/// # Ok::<(), cbc_hmac::Error>(())
/// ```
///
/// # What is offered, and how it differs from BoringSSL and aws-lc
///
/// - **Algorithms**: all five combinations in both forms
///   ([`TlsAeadAlgorithm::ALL`]). BoringSSL has AES-128/256-CBC-SHA1 in
///   both forms and AES-128-CBC-SHA256 explicit-IV only (its older
///   releases also AES-256-CBC-SHA256 and AES-256-CBC-SHA384, explicit
///   IV); aws-lc has AES-128/256-CBC-SHA1 and AES-128-CBC-SHA256 in both
///   forms and AES-256-CBC-SHA384 explicit-IV. The two left,
///   AES-256-CBC-SHA256 and AES-256-CBC-SHA384 with the implicit IV, have
///   no counterpart there and follow the same rules. No 3DES or NULL
///   cipher.
/// - **Directions**: a BoringSSL context seals or opens, chosen at
///   initialisation; a [`TlsAead`] does both. In the implicit-IV form it
///   keeps one IV chain for sealing and one for opening, each starting at
///   the key's IV, so one object per direction behaves as BoringSSL's
///   context does.
/// - **Padding**: sealing always writes the least padding (BoringSSL's
///   seal does too); opening accepts any valid padding length, 0 to 255.
/// - **Lengths**: plaintexts up to 2^14 bytes
///   ([`Error::PlaintextTooLong`]) and ciphertexts up to 2^14 + 2048 bytes
///   ([`Error::RecordTooLong`]), the record limits of RFC 5246 section
///   6.2; BoringSSL takes up to `INT_MAX` bytes (its MAC length field then
///   wraps).
/// - **Errors**: typed. Publicly invalid ciphertexts get their own errors
///   ([`Error::RecordTooShort`], [`Error::RecordNotBlockAligned`]) where
///   BoringSSL reports `CIPHER_R_BAD_DECRYPT` for everything; bad padding
///   and bad MAC are [`Error::BadRecordMac`]. Wrong key, nonce and
///   additional-data lengths are [`Error::InvalidKeyLength`],
///   [`Error::InvalidNonceLength`] and [`Error::InvalidAdLength`].
/// - **A failed open** zeroes the bytes it decrypted (as
///   `EVP_AEAD_CTX_open` clears its output). In the implicit-IV form the
///   open chain does not advance on a failure (BoringSSL's cipher context
///   has moved on by then); after a failure a TLS connection is closed, so
///   neither chain is used again.
/// - **Buffers**: [`TlsAead::seal`] writes ciphertext and "tag" (the
///   encrypted MAC and padding) in one buffer, as `EVP_AEAD_CTX_seal`
///   does; there is no scatter form. [`TlsAead::open`] needs an output
///   buffer as long as the ciphertext, as BoringSSL does. The tag length
///   is always the MAC's (`EVP_AEAD_DEFAULT_TAG_LENGTH`).
///
/// # State
///
/// In the implicit-IV form the object carries the IV chains (one for
/// sealing, one for opening): records must be sealed and opened in order,
/// and an object should serve one direction of one connection. The
/// explicit-IV form keeps no state between calls; its nonces must be
/// unpredictable (TLS 1.1+ sends a fresh random IV per record).
///
/// Key material is wiped on drop.
pub struct TlsAead {
    algorithm: TlsAeadAlgorithm,
    aes: AesCbcKey,
    mac: HmacKey,
    /// Implicit-IV form: the IV of the next record sealed.
    seal_chain: [u8; 16],
    /// Implicit-IV form: the IV of the next record opened.
    open_chain: [u8; 16],
}

impl TlsAead {
    /// Keys `algorithm` with `key` (`mac_key || enc_key`, then `|| iv` for
    /// the implicit-IV form) on the best available backend.
    /// [`Error::InvalidKeyLength`] unless `key` is
    /// [`TlsAeadAlgorithm::key_len`] bytes.
    pub fn new(algorithm: TlsAeadAlgorithm, key: &[u8]) -> Result<Self, Error> {
        Self::with_backend(algorithm, key, Backend::detect())
    }

    /// Like [`TlsAead::new`] on a chosen backend.
    pub fn with_backend(
        algorithm: TlsAeadAlgorithm,
        key: &[u8],
        backend: Backend,
    ) -> Result<Self, Error> {
        if key.len() != algorithm.key_len() {
            return Err(Error::InvalidKeyLength {
                expected: algorithm.key_len(),
                actual: key.len(),
            });
        }
        let combination = algorithm.combination;
        let (mac_key, rest) = key.split_at(combination.mac().tls_key_len());
        let (enc_key, iv) = rest.split_at(combination.cipher().key_len());
        let aes = AesCbcKey::with_backend(combination.cipher(), enc_key, backend)?;
        let mac = HmacKey::with_backend(combination.mac(), mac_key, backend)?;
        let mut chain = [0u8; 16];
        if algorithm.iv == TlsAeadIv::Implicit {
            chain.copy_from_slice(iv);
        }
        Ok(TlsAead {
            algorithm,
            aes,
            mac,
            seal_chain: chain,
            open_chain: chain,
        })
    }

    /// The algorithm.
    pub fn algorithm(&self) -> TlsAeadAlgorithm {
        self.algorithm
    }

    /// The backend in use.
    pub fn backend(&self) -> Backend {
        self.aes.backend()
    }

    /// The exact sealed length for a plaintext of `plaintext_len` bytes:
    /// [`TlsAeadAlgorithm::sealed_len`].
    pub fn sealed_len(&self, plaintext_len: usize) -> usize {
        self.algorithm.sealed_len(plaintext_len)
    }

    /// Seals the plaintext at `buf[..plaintext_len]` in place; `buf` has
    /// room for [`TlsAead::sealed_len`] bytes. Returns that length: the
    /// sealed output is `buf[..n]`.
    pub fn seal_in_place(
        &mut self,
        nonce: &[u8],
        ad: &[u8],
        buf: &mut [u8],
        plaintext_len: usize,
    ) -> Result<usize, Error> {
        let (iv, prefix) = self.check_seal(nonce, ad, plaintext_len, buf.len())?;
        Ok(self.seal_checked(iv, &prefix, buf, plaintext_len))
    }

    /// Seals `plaintext` into `out` (at least [`TlsAead::sealed_len`]
    /// bytes); returns the sealed length, `out[..n]`.
    pub fn seal(
        &mut self,
        nonce: &[u8],
        ad: &[u8],
        plaintext: &[u8],
        out: &mut [u8],
    ) -> Result<usize, Error> {
        let len = plaintext.len();
        let (iv, prefix) = self.check_seal(nonce, ad, len, out.len())?;
        out[..len].copy_from_slice(plaintext);
        Ok(self.seal_checked(iv, &prefix, out, len))
    }

    /// Opens the sealed output `buf` in place and returns the plaintext, a
    /// sub-slice of `buf`. Length checks on public values come first and
    /// have their own errors; bad padding or a bad MAC is
    /// [`Error::BadRecordMac`], decided in constant time, and leaves `buf`
    /// zeroed.
    pub fn open_in_place<'b>(
        &mut self,
        nonce: &[u8],
        ad: &[u8],
        buf: &'b mut [u8],
    ) -> Result<&'b mut [u8], Error> {
        let (iv, prefix) = self.check_open(nonce, ad, buf.len())?;
        let data_len = self.open_checked(iv, &prefix, buf)?;
        Ok(&mut buf[..data_len])
    }

    /// Opens `ciphertext` into `out`, which must hold at least
    /// `ciphertext.len()` bytes (MAC and padding are decrypted there too);
    /// returns the plaintext length, `out[..n]`. Fails like
    /// [`TlsAead::open_in_place`], and zeroes what it wrote to `out` when
    /// the record does not authenticate.
    pub fn open(
        &mut self,
        nonce: &[u8],
        ad: &[u8],
        ciphertext: &[u8],
        out: &mut [u8],
    ) -> Result<usize, Error> {
        let len = ciphertext.len();
        let (iv, prefix) = self.check_open(nonce, ad, len)?;
        if out.len() < len {
            return Err(Error::BufferTooSmall {
                needed: len,
                actual: out.len(),
            });
        }
        let buf = &mut out[..len];
        buf.copy_from_slice(ciphertext);
        self.open_checked(iv, &prefix, buf)
    }

    /// The checks before a seal; returns the IV and the MAC header prefix.
    fn check_seal(
        &self,
        nonce: &[u8],
        ad: &[u8],
        plaintext_len: usize,
        available: usize,
    ) -> Result<([u8; 16], [u8; 11]), Error> {
        let iv = self.iv(nonce, self.seal_chain)?;
        let prefix = ad_prefix(ad)?;
        check_seal_len(plaintext_len, self.sealed_len(plaintext_len), available)?;
        Ok((iv, prefix))
    }

    fn seal_checked(
        &mut self,
        mut iv: [u8; 16],
        prefix: &[u8; 11],
        buf: &mut [u8],
        plaintext_len: usize,
    ) -> usize {
        let n = seal_body(&self.aes, &self.mac, prefix, &mut iv, buf, plaintext_len);
        if self.algorithm.iv == TlsAeadIv::Implicit {
            self.seal_chain = iv;
        }
        n
    }

    /// The checks before an open, on public values only: nonce, additional
    /// data, and the ciphertext length as [`crate::Opener::open_in_place`]
    /// checks a fragment's. Returns the IV and the MAC header prefix.
    fn check_open(
        &self,
        nonce: &[u8],
        ad: &[u8],
        len: usize,
    ) -> Result<([u8; 16], [u8; 11]), Error> {
        let iv = self.iv(nonce, self.open_chain)?;
        let prefix = ad_prefix(ad)?;
        check_fragment_len(len, min_mac_then_encrypt_len(self.mac.output_len()), 0)?;
        Ok((iv, prefix))
    }

    /// Opens the checked ciphertext `buf` in place; returns the plaintext
    /// length.
    fn open_checked(
        &mut self,
        iv: [u8; 16],
        prefix: &[u8; 11],
        buf: &mut [u8],
    ) -> Result<usize, Error> {
        let mut next_iv = [0u8; 16];
        // A reject leaves the buffer wiped (`open_body` does it after the
        // decision), so a caller that ignores the error finds no plaintext.
        let result = open_body(&self.aes, &self.mac, &iv, &mut next_iv, prefix, buf);
        if result.is_ok() && self.algorithm.iv == TlsAeadIv::Implicit {
            self.open_chain = next_iv;
        }
        result
    }

    /// The CBC IV of the next record: the nonce, checked against the form.
    fn iv(&self, nonce: &[u8], chain: [u8; 16]) -> Result<[u8; 16], Error> {
        let wrong = Error::InvalidNonceLength {
            expected: self.algorithm.nonce_len(),
            actual: nonce.len(),
        };
        match self.algorithm.iv {
            TlsAeadIv::Explicit => nonce.try_into().map_err(|_| wrong),
            TlsAeadIv::Implicit if nonce.is_empty() => Ok(chain),
            TlsAeadIv::Implicit => Err(wrong),
        }
    }
}

/// The additional data, checked: the MAC header before the length.
fn ad_prefix(ad: &[u8]) -> Result<[u8; 11], Error> {
    ad.try_into().map_err(|_| Error::InvalidAdLength {
        expected: TlsAeadAlgorithm::AD_LEN,
        actual: ad.len(),
    })
}

impl Drop for TlsAead {
    fn drop(&mut self) {
        // The first IV comes from the key block.
        self.seal_chain.zeroize();
        self.open_chain.zeroize();
    }
}

impl fmt::Debug for TlsAead {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsAead")
            .field("algorithm", &self.algorithm)
            .field("backend", &self.backend())
            .finish_non_exhaustive()
    }
}
