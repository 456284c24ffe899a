//! The SSH cipher and MAC names this crate implements.
//!
//! SSH negotiates the cipher (`encryption_algorithms`) and the MAC
//! (`mac_algorithms`) separately (RFC 4253 section 7.1); a suite is one of
//! each. Names are compared exactly: SSH names are case-sensitive.

use core::fmt;

use crate::combination::{Cipher, MacAlgorithm};

/// The ciphers, by SSH name.
const CIPHERS: [(&str, Cipher); 2] = [
    ("aes128-cbc", Cipher::Aes128Cbc),
    ("aes256-cbc", Cipher::Aes256Cbc),
];

/// The MACs: SSH name, its encrypt-then-MAC name, the HMAC underneath.
/// A new HMAC is one more line here.
const MACS: [(&str, &str, MacAlgorithm); 3] = [
    (
        "hmac-sha1",
        "hmac-sha1-etm@openssh.com",
        MacAlgorithm::HmacSha1,
    ),
    (
        "hmac-sha2-256",
        "hmac-sha2-256-etm@openssh.com",
        MacAlgorithm::HmacSha256,
    ),
    (
        "hmac-sha2-512",
        "hmac-sha2-512-etm@openssh.com",
        MacAlgorithm::HmacSha512,
    ),
];

/// One negotiated cipher and MAC: the protection of one direction of an
/// SSH connection.
///
/// ```
/// use cbc_hmac::ssh::SshSuite;
/// use cbc_hmac::{Cipher, MacAlgorithm};
///
/// let suite = SshSuite::from_names("aes256-cbc", "hmac-sha1-etm@openssh.com").unwrap();
/// assert_eq!(suite.cipher(), Cipher::Aes256Cbc);
/// assert_eq!(suite.mac(), MacAlgorithm::HmacSha1);
/// assert!(suite.encrypt_then_mac());
/// assert_eq!(suite.mac_name(), "hmac-sha1-etm@openssh.com");
/// // SSH names are case-sensitive.
/// assert!(SshSuite::from_names("AES256-CBC", "hmac-sha1").is_none());
/// assert_eq!(SshSuite::ALL.len(), 12);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SshSuite {
    cipher: u8,
    mac: u8,
    etm: bool,
}

impl SshSuite {
    /// Every suite: each cipher with each MAC, plain then EtM.
    pub const ALL: [SshSuite; 2 * CIPHERS.len() * MACS.len()] = {
        let mut all = [SshSuite {
            cipher: 0,
            mac: 0,
            etm: false,
        }; 2 * CIPHERS.len() * MACS.len()];
        let mut i = 0;
        while i < all.len() {
            all[i] = SshSuite {
                cipher: (i / (2 * MACS.len())) as u8,
                mac: (i / 2 % MACS.len()) as u8,
                etm: i % 2 == 1,
            };
            i += 1;
        }
        all
    };

    /// The suite for a cipher name and a MAC name as SSH negotiates them
    /// (`"aes128-cbc"`, `"hmac-sha2-256-etm@openssh.com"`), compared
    /// exactly; `None` for a name this crate does not implement. Does not
    /// allocate.
    pub fn from_names(cipher: &str, mac: &str) -> Option<SshSuite> {
        let cipher = CIPHERS.iter().position(|&(name, _)| name == cipher)?;
        MACS.iter().enumerate().find_map(|(i, &(plain, etm, _))| {
            let etm = if mac == plain {
                false
            } else if mac == etm {
                true
            } else {
                return None;
            };
            Some(SshSuite {
                cipher: cipher as u8,
                mac: i as u8,
                etm,
            })
        })
    }

    /// The cipher.
    pub const fn cipher(self) -> Cipher {
        CIPHERS[self.cipher as usize].1
    }

    /// The HMAC.
    pub const fn mac(self) -> MacAlgorithm {
        MACS[self.mac as usize].2
    }

    /// Whether this is an `-etm@openssh.com` MAC: the length in clear and
    /// the MAC over the ciphertext.
    pub const fn encrypt_then_mac(self) -> bool {
        self.etm
    }

    /// The cipher's SSH name, for example `aes128-cbc`.
    pub const fn cipher_name(self) -> &'static str {
        CIPHERS[self.cipher as usize].0
    }

    /// The MAC's SSH name, for example `hmac-sha2-256-etm@openssh.com`.
    pub const fn mac_name(self) -> &'static str {
        let (plain, etm, _) = MACS[self.mac as usize];
        if self.etm { etm } else { plain }
    }

    /// The MAC's length on the wire, and its key length (RFC 4253
    /// section 6.4, RFC 6668: the hash output length).
    pub const fn mac_len(self) -> usize {
        self.mac().output_len()
    }

    /// The integrity key length: the MAC length.
    pub const fn mac_key_len(self) -> usize {
        self.mac_len()
    }
}

impl fmt::Display for SshSuite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.cipher_name(), self.mac_name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_suite_found_by_its_names() {
        for suite in SshSuite::ALL {
            assert_eq!(
                SshSuite::from_names(suite.cipher_name(), suite.mac_name()),
                Some(suite)
            );
        }
        let mut names: Vec<_> = SshSuite::ALL.iter().map(|s| s.to_string()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), SshSuite::ALL.len());
        for (c, m) in [
            ("aes128-cbc", "hmac-sha1-96"),
            ("aes128-ctr", "hmac-sha1"),
            ("aes128-cbc", "HMAC-SHA1"),
            ("aes128-cbc ", "hmac-sha1"),
            ("aes128-cbc", "hmac-sha1-etm@openssh.co"),
            ("", ""),
        ] {
            assert_eq!(SshSuite::from_names(c, m), None, "{c} {m}");
        }
    }
}
