//! Key derivation for a record layer: the TLS PRFs, the master secret and
//! the key block, split into the keys a [`Sealer`](crate::Sealer) and an
//! [`Opener`](crate::Opener) are built from; and the NSS key log format,
//! which is how a user gets the master secret of a live session.
//!
//! - [`Prf`]: `P_SHA256` and `P_SHA384` (TLS 1.2, DTLS 1.2; RFC 5246
//!   section 5) and the TLS 1.0/1.1 PRF, `P_MD5` xor `P_SHA1` (RFC 2246
//!   section 5; also DTLS 1.0). [`Prf::for_connection`] picks the one a
//!   connection uses.
//! - [`MasterSecret`]: from the pre-master secret and the hello randoms
//!   (RFC 5246 section 8.1) or, with the `extended_master_secret`
//!   extension, from the session hash (RFC 7627 section 4); the Finished
//!   messages' `verify_data` (RFC 5246 section 7.4.9).
//! - [`KeyBlock`]: `PRF(master_secret, "key expansion", server_random +
//!   client_random)` (RFC 5246 section 6.3), split into the client and
//!   server MAC keys, encryption keys and, for TLS 1.0 only, the initial
//!   IVs; [`KeyBlock::client_write_keys`] and
//!   [`KeyBlock::server_write_keys`] hand them out as [`RecordKeys`].
//! - [`key_log`]: `CLIENT_RANDOM <client_random> <master_secret>` lines,
//!   as written by OpenSSL (`-keylogfile`), GnuTLS, NSS and browsers
//!   (`SSLKEYLOGFILE`).
//!
//! Everything here is `no_std` and allocation-free (fixed-size arrays);
//! secrets ([`MasterSecret`], [`KeyBlock`]) are wiped on drop.
//!
//! ```
//! use cbc_hmac::key_schedule::{KeyBlock, key_log};
//! use cbc_hmac::{Combination, MacOrder, Opener, ProtocolVersion, Sealer};
//!
//! // From the ClientHello and ServerHello of the connection:
//! let client_random = [0x11; 32];
//! let server_random = [0x22; 32];
//! let combination = Combination::Aes128CbcSha1; // TLS_RSA_WITH_AES_128_CBC_SHA
//! let version = ProtocolVersion::Tls12;
//!
//! // From the key log the client wrote:
//! let log = format!(
//!     "# SSL/TLS secrets log file\nCLIENT_RANDOM {} {}\n",
//!     "11".repeat(32),
//!     "33".repeat(48),
//! );
//! let master = key_log::find_master_secret(&log, &client_random)?.expect("in the log");
//!
//! let keys = KeyBlock::derive(combination, version, master.as_bytes(), &client_random, &server_random)?;
//! let config = keys.record_config(MacOrder::MacThenEncrypt);
//! let mut client_sealer = Sealer::new(config, keys.client_write_keys())?;
//! let mut server_opener = Opener::new(config, keys.client_write_keys())?;
//!
//! let mut record = [0u8; 128];
//! let n = client_sealer.seal(1, 23, b"ping", &mut record)?;
//! assert_eq!(server_opener.open_in_place(1, 23, &mut record[..n])?, b"ping");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use core::fmt;

use subtle::ConstantTimeEq;
use zeroize::Zeroize;

use crate::backends::Backend;
use crate::combination::Combination;
use crate::error::Error;
use crate::record::{MacOrder, ProtocolVersion, RecordConfig, RecordKeys};

pub mod key_log;
mod prf;

pub use key_log::{KeyLogEntry, KeyLogError, KeyLogErrorKind};
pub use prf::Prf;

/// Length of a TLS master secret in bytes.
pub const MASTER_SECRET_LEN: usize = 48;

/// Length of a ClientHello or ServerHello random in bytes.
pub const RANDOM_LEN: usize = 32;

/// Length of the `verify_data` of a Finished message for every CBC suite
/// here.
pub const VERIFY_DATA_LEN: usize = 12;

/// The largest key block: two 48-byte MAC keys, two 32-byte AES keys and
/// two 16-byte IVs.
const MAX_KEY_BLOCK_LEN: usize = 2 * 48 + 2 * 32 + 2 * 16;

/// Which side of a connection: the sender of a Finished message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Side {
    /// The client.
    Client,
    /// The server.
    Server,
}

/// A 48-byte TLS master secret, wiped on drop.
///
/// `PartialEq` is constant-time; `Debug` does not print the bytes.
#[derive(Clone)]
pub struct MasterSecret([u8; MASTER_SECRET_LEN]);

impl MasterSecret {
    /// Wraps the bytes of a master secret (for example from a key log).
    pub const fn from_bytes(bytes: [u8; MASTER_SECRET_LEN]) -> Self {
        MasterSecret(bytes)
    }

    /// The bytes.
    pub fn as_bytes(&self) -> &[u8; MASTER_SECRET_LEN] {
        &self.0
    }

    /// `PRF(pre_master_secret, "master secret", client_random +
    /// server_random)[0..48]` (RFC 5246 section 8.1, RFC 2246 section 8.1).
    pub fn derive(
        prf: Prf,
        pre_master_secret: &[u8],
        client_random: &[u8; RANDOM_LEN],
        server_random: &[u8; RANDOM_LEN],
    ) -> Result<Self, Error> {
        let mut out = MasterSecret([0; MASTER_SECRET_LEN]);
        prf.derive(
            pre_master_secret,
            b"master secret",
            &[client_random, server_random],
            &mut out.0,
        )?;
        Ok(out)
    }

    /// The extended master secret (RFC 7627 section 4):
    /// `PRF(pre_master_secret, "extended master secret",
    /// session_hash)[0..48]`, where `session_hash` is the handshake hash up
    /// to and including the ClientKeyExchange (`MD5 || SHA-1` for the
    /// TLS 1.0 PRF, else the PRF's hash; see [`Prf::handshake_hash_len`]).
    pub fn derive_extended(
        prf: Prf,
        pre_master_secret: &[u8],
        session_hash: &[u8],
    ) -> Result<Self, Error> {
        let mut out = MasterSecret([0; MASTER_SECRET_LEN]);
        prf.derive(
            pre_master_secret,
            b"extended master secret",
            &[session_hash],
            &mut out.0,
        )?;
        Ok(out)
    }

    /// The `verify_data` of the Finished message `sender` sends:
    /// `PRF(master_secret, "client finished" | "server finished",
    /// handshake_hash)[0..12]` (RFC 5246 section 7.4.9).
    pub fn verify_data(
        &self,
        prf: Prf,
        sender: Side,
        handshake_hash: &[u8],
    ) -> Result<[u8; VERIFY_DATA_LEN], Error> {
        let label: &[u8] = match sender {
            Side::Client => b"client finished",
            Side::Server => b"server finished",
        };
        let mut out = [0u8; VERIFY_DATA_LEN];
        prf.derive(&self.0, label, &[handshake_hash], &mut out)?;
        Ok(out)
    }

    /// The key block of a connection with this master secret (see
    /// [`KeyBlock::derive`]).
    pub fn key_block(
        &self,
        combination: Combination,
        version: ProtocolVersion,
        client_random: &[u8; RANDOM_LEN],
        server_random: &[u8; RANDOM_LEN],
    ) -> Result<KeyBlock, Error> {
        KeyBlock::derive(combination, version, &self.0, client_random, server_random)
    }
}

impl PartialEq for MasterSecret {
    fn eq(&self, other: &Self) -> bool {
        self.0.ct_eq(&other.0).into()
    }
}

impl Eq for MasterSecret {}

impl Drop for MasterSecret {
    fn drop(&mut self) {
        self.0.zeroize();
    }
}

impl fmt::Debug for MasterSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("MasterSecret(..)")
    }
}

/// The key block of a connection, split into the keys of each direction.
///
/// Derived once per connection (RFC 5246 section 6.3):
/// `PRF(master_secret, "key expansion", server_random + client_random)`,
/// cut into `client_write_MAC_key`, `server_write_MAC_key`,
/// `client_write_key`, `server_write_key` and, for TLS 1.0 only,
/// `client_write_IV` and `server_write_IV` (later versions and DTLS send
/// an explicit IV with each record). Wiped on drop; `Debug` prints no key.
///
/// ```
/// use cbc_hmac::key_schedule::KeyBlock;
/// use cbc_hmac::{Combination, ProtocolVersion};
///
/// let keys = KeyBlock::derive(
///     Combination::Aes256CbcSha1,
///     ProtocolVersion::Tls10,
///     &[7; 48],
///     &[1; 32],
///     &[2; 32],
/// )?;
/// assert_eq!(keys.as_bytes().len(), 2 * 20 + 2 * 32 + 2 * 16);
/// let client = keys.client_write_keys();
/// assert_eq!((client.mac_key.len(), client.enc_key.len()), (20, 32));
/// assert_eq!(client.iv.map(<[u8]>::len), Some(16)); // TLS 1.0 only
/// # Ok::<(), cbc_hmac::Error>(())
/// ```
pub struct KeyBlock {
    combination: Combination,
    version: ProtocolVersion,
    bytes: [u8; MAX_KEY_BLOCK_LEN],
}

impl KeyBlock {
    /// Derives the key block of a connection of `version` with
    /// `combination` from its master secret and the ClientHello and
    /// ServerHello randoms, with the PRF [`Prf::for_connection`] names.
    ///
    /// Fails with [`Error::UnsupportedVersion`] for a SHA-256 or SHA-384
    /// combination before TLS 1.2 (the same rule as the sealer's).
    pub fn derive(
        combination: Combination,
        version: ProtocolVersion,
        master_secret: &[u8; MASTER_SECRET_LEN],
        client_random: &[u8; RANDOM_LEN],
        server_random: &[u8; RANDOM_LEN],
    ) -> Result<Self, Error> {
        Self::derive_with_backend(
            combination,
            version,
            master_secret,
            client_random,
            server_random,
            Backend::detect(),
        )
    }

    /// Like [`KeyBlock::derive`] with the PRF's HMACs on a chosen backend.
    pub fn derive_with_backend(
        combination: Combination,
        version: ProtocolVersion,
        master_secret: &[u8; MASTER_SECRET_LEN],
        client_random: &[u8; RANDOM_LEN],
        server_random: &[u8; RANDOM_LEN],
        backend: Backend,
    ) -> Result<Self, Error> {
        if !combination.allows(version) {
            return Err(Error::UnsupportedVersion {
                combination,
                version,
            });
        }
        let mut block = KeyBlock {
            combination,
            version,
            bytes: [0; MAX_KEY_BLOCK_LEN],
        };
        let len = Self::len_for(combination, version);
        Prf::for_connection(combination, version).derive_with_backend(
            master_secret,
            b"key expansion",
            &[server_random, client_random],
            &mut block.bytes[..len],
            backend,
        )?;
        Ok(block)
    }

    /// The number of key-block bytes a connection of `version` with
    /// `combination` uses: two MAC keys, two encryption keys and, for
    /// TLS 1.0, two IVs.
    pub const fn len_for(combination: Combination, version: ProtocolVersion) -> usize {
        let iv = match version {
            ProtocolVersion::Tls10 => 16,
            _ => 0,
        };
        2 * (combination.mac().tls_key_len() + combination.cipher().key_len() + iv)
    }

    /// The combination the block was derived for.
    pub fn combination(&self) -> Combination {
        self.combination
    }

    /// The version the block was derived for.
    pub fn version(&self) -> ProtocolVersion {
        self.version
    }

    /// The PRF the block was derived with.
    pub fn prf(&self) -> Prf {
        Prf::for_connection(self.combination, self.version)
    }

    /// The derived key block, [`KeyBlock::len_for`] bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..Self::len_for(self.combination, self.version)]
    }

    /// The record configuration of this connection for a MAC order (the
    /// same for both directions).
    pub fn record_config(&self, mac_order: MacOrder) -> RecordConfig {
        RecordConfig::new(self.combination, self.version, mac_order)
    }

    /// The keys the client seals with (and the server opens with).
    pub fn client_write_keys(&self) -> RecordKeys<'_> {
        self.keys(0)
    }

    /// The keys the server seals with (and the client opens with).
    pub fn server_write_keys(&self) -> RecordKeys<'_> {
        self.keys(1)
    }

    /// The keys of side `index` (0 client, 1 server).
    fn keys(&self, index: usize) -> RecordKeys<'_> {
        let m = self.combination.mac().tls_key_len();
        let k = self.combination.cipher().key_len();
        let mac_at = index * m;
        let key_at = 2 * m + index * k;
        let iv = match self.version {
            ProtocolVersion::Tls10 => {
                let iv_at = 2 * (m + k) + index * 16;
                Some(&self.bytes[iv_at..iv_at + 16])
            }
            _ => None,
        };
        RecordKeys {
            enc_key: &self.bytes[key_at..key_at + k],
            mac_key: &self.bytes[mac_at..mac_at + m],
            iv,
        }
    }
}

impl Drop for KeyBlock {
    fn drop(&mut self) {
        self.bytes.zeroize();
    }
}

impl fmt::Debug for KeyBlock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyBlock")
            .field("combination", &self.combination)
            .field("version", &self.version)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests;
