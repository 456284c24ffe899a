//! A small, safe wrapper over intel-ipsec-mb's job manager (Debian's
//! `libipsec-mb-dev`, version 1.3): the reference that `cbc-hmac`'s
//! multi-record benchmarks compare against. Not published; all of its FFI
//! lives in `ffi.rs` and the C shim `shim/shim.c` (each `unsafe` block
//! carries a `// SAFETY:` comment), so its users need none.
//!
//! - [`Manager`]: an `IMB_MGR` initialised for the best architecture this
//!   CPU runs ([`Arch`], as `init_mb_mgr_auto` picks it) or a chosen one.
//! - [`AesKey`]: an AES key expanded once (`IMB_AES_KEYEXP_*`).
//! - [`HmacKey`]: an HMAC key as its precomputed inner and outer states
//!   (one `IMB_SHA*_ONE_BLOCK` each), for [`Hash::Sha1`], [`Hash::Sha256`]
//!   and [`Hash::Sha384`].
//! - [`CbcHmacJob`] and [`Manager::cbc_hmac_batch`]: AES-CBC encryption
//!   (or decryption, [`Direction`]) and HMAC jobs, in place, in either
//!   order ([`Order`]), submitted together and flushed; each job gets its
//!   own result. Decrypt jobs check no padding and nothing in constant
//!   time.
//!
//! The library does only what a job names: it encrypts the cipher region
//! and MACs the hash region. It knows nothing of TLS: no record header, no
//! sequence number, no padding, no explicit IV; the caller lays those out.
//! (See [`Manager`] for an example; without the `ffi` feature the crate is
//! empty.)
#![cfg(feature = "ffi")]

mod error;
mod ffi;
mod job;
mod keys;
#[cfg(test)]
mod tests;

pub use error::{Error, Result};
pub use job::{CbcHmacJob, Direction, Order};
pub use keys::{AesKey, Hash, HmacKey};

use std::fmt;

/// The instruction set a [`Manager`] runs (`IMB_ARCH`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Arch {
    /// No AES-NI: the library's software AES.
    NoAesni,
    /// SSE (AES-NI; SHA extensions where the CPU has them).
    Sse,
    /// AVX.
    Avx,
    /// AVX2.
    Avx2,
    /// AVX-512 (with VAES, 16-lane CBC, where the CPU has it).
    Avx512,
}

impl Arch {
    fn from_imb(v: i32) -> Option<Arch> {
        Some(match v {
            1 => Arch::NoAesni,
            2 => Arch::Sse,
            3 => Arch::Avx,
            4 => Arch::Avx2,
            5 => Arch::Avx512,
            _ => return None,
        })
    }

    fn to_imb(self) -> i32 {
        match self {
            Arch::NoAesni => 1,
            Arch::Sse => 2,
            Arch::Avx => 3,
            Arch::Avx2 => 4,
            Arch::Avx512 => 5,
        }
    }

    /// The name, for example `AVX512`.
    pub fn name(self) -> &'static str {
        match self {
            Arch::NoAesni => "NO-AESNI",
            Arch::Sse => "SSE",
            Arch::Avx => "AVX",
            Arch::Avx2 => "AVX2",
            Arch::Avx512 => "AVX512",
        }
    }
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// intel-ipsec-mb's version string, for example `1.3.0`.
pub fn version() -> &'static str {
    ffi::version()
}

/// One intel-ipsec-mb multi-buffer manager (`IMB_MGR`): owns the lanes
/// and the job queue. Every [`Manager::cbc_hmac_batch`] call leaves it
/// empty (all jobs flushed).
///
/// ```
/// use ipsec_mb_ref::{AesKey, CbcHmacJob, Hash, HmacKey, Manager, Order};
///
/// let mut mgr = Manager::new()?;
/// let aes = AesKey::new(&mut mgr, &[1; 16])?;
/// let mac = HmacKey::new(&mut mgr, Hash::Sha256, &[2; 32])?;
/// let mut packet = [7u8; 16 + 64];
/// // Encrypt-then-MAC: encrypt bytes 16.., then MAC the IV and ciphertext.
/// let mut jobs = [CbcHmacJob::new(&aes, &mac, [3; 16], &mut packet, 16..80, 0..80, Order::CipherThenHash)];
/// mgr.cbc_hmac_batch(&mut jobs)?;
/// assert_eq!(jobs[0].tag().len(), 32);
/// # Ok::<(), ipsec_mb_ref::Error>(())
/// ```
pub struct Manager {
    mgr: ffi::Mgr,
    arch: Arch,
}

/// The `IMB_FEATURE_*` bits [`Manager::description`] names.
const FEATURE_NAMES: [(u64, &str); 5] = [
    (1 << 0, "SHA-NI"),
    (1 << 1, "AES-NI"),
    (1 << 12, "VAES"),
    (1 << 13, "VPCLMULQDQ"),
    (1 << 16, "GFNI"),
];

impl Manager {
    /// A manager for the best architecture this CPU runs, as
    /// `init_mb_mgr_auto` picks it (see [`Manager::arch`]).
    pub fn new() -> Result<Manager> {
        Self::init(0, "the automatically chosen manager")
    }

    /// A manager for `arch` (`init_mb_mgr_sse`, `_avx`, `_avx2` or
    /// `_avx512`); [`Error::Unavailable`] if this CPU cannot run it.
    pub fn with_arch(arch: Arch) -> Result<Manager> {
        if arch == Arch::NoAesni {
            return Err(Error::InvalidInput(
                "the no-AES-NI manager has no init function of its own in 1.3",
            ));
        }
        Self::init(arch.to_imb(), arch.name())
    }

    fn init(arch: i32, what: &'static str) -> Result<Manager> {
        let (mgr, picked) = ffi::Mgr::new(arch, what)?;
        let arch = Arch::from_imb(picked).ok_or(Error::Unavailable { what, errno: -1 })?;
        Ok(Manager { mgr, arch })
    }

    /// The architecture the manager runs.
    pub fn arch(&self) -> Arch {
        self.arch
    }

    /// The manager's `IMB_FEATURE_*` bits (what the library detected and
    /// uses).
    pub fn features(&self) -> u64 {
        self.mgr.features()
    }

    /// The architecture and the features that matter here, for example
    /// `AVX512 (SHA-NI, AES-NI, VAES, VPCLMULQDQ, GFNI)`.
    pub fn description(&self) -> String {
        let f = self.features();
        let names: Vec<&str> = FEATURE_NAMES
            .iter()
            .filter(|(bit, _)| f & bit != 0)
            .map(|&(_, name)| name)
            .collect();
        format!("{} ({})", self.arch, names.join(", "))
    }

    pub(crate) fn raw(&mut self) -> &mut ffi::Mgr {
        &mut self.mgr
    }
}

impl fmt::Debug for Manager {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Manager")
            .field("arch", &self.arch)
            .field("features", &format_args!("{:#x}", self.features()))
            .finish()
    }
}
