//! What a sealer or opener is configured with.

use crate::combination::Combination;
use crate::record::ProtocolVersion;

/// The order of MAC and encryption.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MacOrder {
    /// MAC the plaintext, then encrypt plaintext, MAC and padding (RFC 5246
    /// section 6.2.3.2; the TLS default).
    MacThenEncrypt,
    /// Encrypt plaintext and padding, then MAC the IV and ciphertext
    /// (RFC 7366, negotiated with the `encrypt_then_mac` extension).
    EncryptThenMac,
}

impl MacOrder {
    /// Both orders.
    pub const ALL: [MacOrder; 2] = [MacOrder::MacThenEncrypt, MacOrder::EncryptThenMac];
}

/// The record protection of one direction of a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RecordConfig {
    /// Cipher and MAC.
    pub combination: Combination,
    /// Protocol version: fixes the IV handling and the version bytes in the
    /// MAC input.
    pub version: ProtocolVersion,
    /// MAC-then-encrypt or encrypt-then-MAC.
    pub mac_order: MacOrder,
}

impl RecordConfig {
    /// A configuration.
    pub const fn new(
        combination: Combination,
        version: ProtocolVersion,
        mac_order: MacOrder,
    ) -> Self {
        RecordConfig {
            combination,
            version,
            mac_order,
        }
    }
}

/// The keys of one direction, as split from the TLS key block.
#[derive(Clone, Copy)]
pub struct RecordKeys<'a> {
    /// The AES key (16 or 32 bytes).
    pub enc_key: &'a [u8],
    /// The MAC key (as long as the MAC's output: 20, 32 or 48 bytes).
    pub mac_key: &'a [u8],
    /// TLS 1.0 only: the initial IV from the key block (16 bytes). `None`
    /// for every other version.
    pub iv: Option<&'a [u8]>,
}

impl core::fmt::Debug for RecordKeys<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("RecordKeys").finish_non_exhaustive()
    }
}
