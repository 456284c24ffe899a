//! The cipher-suite registry: IANA TLS cipher suites built on our
//! [`Combination`]s, and look-up by name or code point.
//!
//! Every IANA TLS cipher suite whose bulk cipher is AES-128-CBC or
//! AES-256-CBC and whose MAC is HMAC-SHA1, HMAC-SHA256 or HMAC-SHA384 is
//! here, whatever its key exchange (RSA, DH, DHE, ECDH, ECDHE, PSK, SRP,
//! anonymous ...): 64 suites over five combinations. Each has its IANA name
//! (`TLS_RSA_WITH_AES_128_CBC_SHA`), its code point (`0x002F`) and its
//! OpenSSL name (`AES128-SHA`).
//!
//! Look-ups never allocate and build nothing per call. The suite table is
//! sorted by code point at compile time (by a `const fn`, and checked there
//! for duplicates and for names that disagree with their combination); a
//! code point is found by binary search. Every name is packed at compile time
//! into an upper-cased fixed-size key with a 64-bit fingerprint, and the
//! name table is sorted by fingerprint; a name is found by upper-casing the
//! input eight bytes at a time, a branch-free binary search of the
//! fingerprints and one whole-key comparison. Names are matched ASCII
//! case-insensitively; a code point may also be written as a string,
//! `"0x002F"`. Unknown input of any length or content is an [`UnknownName`]
//! error, never a panic.
//!
//! ```
//! use cbc_hmac::Combination;
//! use cbc_hmac::suite::{CipherSuite, combination_by_name};
//!
//! // OpenSSL or IANA name, any case.
//! let suite: CipherSuite = "ecdhe-rsa-aes256-sha384".parse().unwrap();
//! assert_eq!(suite.code_point(), 0xC028);
//! assert_eq!(suite.iana_name(), "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384");
//! assert_eq!(suite.to_string(), "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384");
//! assert_eq!(suite.combination(), Combination::Aes256CbcSha384);
//!
//! // By code point.
//! let suite = CipherSuite::from_code_point(0x002F).unwrap();
//! assert_eq!(suite.openssl_name(), Some("AES128-SHA"));
//! assert_eq!(suite.combination(), Combination::Aes128CbcSha1);
//!
//! // A combination by GnuTLS, OpenSSL or IANA name.
//! assert_eq!(combination_by_name("AES-256-CBC-SHA1").unwrap(), Combination::Aes256CbcSha1);
//! assert_eq!(combination_by_name("tls_psk_with_aes_128_cbc_sha256").unwrap(),
//!            Combination::Aes128CbcSha256);
//!
//! // Anything else is an error naming the input.
//! let err = combination_by_name("AES128-GCM-SHA256").unwrap_err();
//! assert_eq!(err.input(), "AES128-GCM-SHA256");
//! ```
#![forbid(unsafe_code)]

use core::fmt;
use core::str::FromStr;

use crate::combination::Combination;
use crate::error::UnknownName;

mod table;

/// One IANA TLS cipher suite whose record protection is one of our
/// combinations.
///
/// Obtained from [`CipherSuite::all`], [`CipherSuite::from_code_point`] or
/// [`CipherSuite::from_name`] (also `str::parse`). `Display` gives the IANA
/// name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CipherSuite {
    code: u16,
    iana: &'static str,
    openssl: Option<&'static str>,
    combination: Combination,
}

impl CipherSuite {
    /// The IANA code point, for example `0x002F`.
    #[must_use]
    pub const fn code_point(self) -> u16 {
        self.code
    }

    /// The IANA name, for example `TLS_RSA_WITH_AES_128_CBC_SHA`.
    #[must_use]
    pub const fn iana_name(self) -> &'static str {
        self.iana
    }

    /// The OpenSSL name, for example `Some("AES128-SHA")`, or `None` for a
    /// suite OpenSSL has never named.
    #[must_use]
    pub const fn openssl_name(self) -> Option<&'static str> {
        self.openssl
    }

    /// The record protection: cipher and MAC.
    #[must_use]
    pub const fn combination(self) -> Combination {
        self.combination
    }

    /// Every suite, sorted by code point.
    #[must_use]
    pub fn all() -> &'static [CipherSuite] {
        &SUITES
    }

    /// The suite with IANA code point `code`.
    ///
    /// # Errors
    ///
    /// [`UnknownName`] (naming the code point as `0xHHHH`) if no suite in
    /// the table has that code point.
    pub fn from_code_point(code: u16) -> Result<CipherSuite, UnknownName> {
        match SUITES.binary_search_by_key(&code, |s| s.code) {
            Ok(i) => Ok(SUITES[i]),
            Err(_) => Err(UnknownName::code_point(code)),
        }
    }

    /// The suite with OpenSSL or IANA name `name`, ASCII case-insensitive.
    /// A code point written `0x` and one to four hex digits is also
    /// accepted.
    ///
    /// GnuTLS-style combination names (`AES-128-CBC-SHA1`) name no single
    /// suite and are rejected here; [`combination_by_name`] accepts them.
    ///
    /// # Errors
    ///
    /// [`UnknownName`] naming the input if it names no suite.
    pub fn from_name(name: &str) -> Result<CipherSuite, UnknownName> {
        match find_name(name) {
            Some(Target::Suite(i)) => Ok(SUITES[i as usize]),
            Some(Target::Combination(_)) => Err(UnknownName::new(name)),
            None => match parse_code_point(name) {
                Some(code) => {
                    CipherSuite::from_code_point(code).map_err(|_| UnknownName::new(name))
                }
                None => Err(UnknownName::new(name)),
            },
        }
    }
}

impl fmt::Display for CipherSuite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.iana)
    }
}

impl FromStr for CipherSuite {
    type Err = UnknownName;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        CipherSuite::from_name(s)
    }
}

/// The combination named by a GnuTLS-style combination name
/// (`AES-128-CBC-SHA1`, `AES-256-CBC-SHA384`, ...), or by any OpenSSL or
/// IANA suite name in the table (`ECDHE-RSA-AES128-SHA`,
/// `TLS_RSA_WITH_AES_256_CBC_SHA256`, ...), or by a code point written
/// `0x002F`. Names are ASCII case-insensitive.
///
/// # Errors
///
/// [`UnknownName`] naming the input if it names no combination or suite.
pub fn combination_by_name(name: &str) -> Result<Combination, UnknownName> {
    match find_name(name) {
        Some(Target::Suite(i)) => Ok(SUITES[i as usize].combination),
        Some(Target::Combination(c)) => Ok(c),
        None => match parse_code_point(name) {
            Some(code) => match CipherSuite::from_code_point(code) {
                Ok(suite) => Ok(suite.combination),
                Err(_) => Err(UnknownName::new(name)),
            },
            None => Err(UnknownName::new(name)),
        },
    }
}

// ---------------------------------------------------------------------------
// Compile-time tables.
//
// The suites are sorted by code point at compile time. Every name (GnuTLS,
// IANA, OpenSSL) is turned at compile time into a fixed-size key: its
// length, then its bytes upper-cased and packed big-endian into 64-bit words,
// zero-padded; and each key into a 64-bit fingerprint. The table is sorted
// by fingerprint at compile time (fingerprints are checked unique there). A
// look-up packs and upper-cases the input the same way, eight bytes at a
// time, binary-searches the fingerprints branch-free, and confirms the hit by
// comparing the whole key: no allocation, no per-call set-up, no
// data-dependent branches in the search.

const SUITE_COUNT: usize = table::UNSORTED.len();

/// The suites, sorted by code point at compile time.
const SORTED_SUITES: [CipherSuite; SUITE_COUNT] = sort_suites(table::UNSORTED);
static SUITES: [CipherSuite; SUITE_COUNT] = SORTED_SUITES;

/// What a name denotes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Target {
    /// A GnuTLS-style combination name.
    Combination(Combination),
    /// A suite name: index into [`SUITES`].
    Suite(u16),
}

#[derive(Clone, Copy)]
struct NameEntry {
    name: &'static str,
    target: Target,
}

const NAME_COUNT: usize =
    Combination::ALL.len() + SUITE_COUNT + count_openssl_names(&SORTED_SUITES);

/// Every name with what it denotes, in table order (unsorted).
const NAME_ENTRIES: [NameEntry; NAME_COUNT] = collect_names();

/// The longest name: longer inputs are rejected without a search.
const MAX_NAME_LEN: usize = max_name_len(&NAME_ENTRIES);

/// Words in a key: the length, then the name's bytes, 8 to a word.
const KEY_WORDS: usize = 1 + MAX_NAME_LEN.div_ceil(8);

/// A name's search key: two names have equal keys exactly when they are
/// equal ignoring ASCII case.
type Key = [u64; KEY_WORDS];

/// Fingerprints, keys and targets, sorted by fingerprint at compile time.
const SORTED_TABLE: NameTable = build_table();
static FINGERPRINTS: [u64; NAME_COUNT] = SORTED_TABLE.fingerprints;
static KEYS: [Key; NAME_COUNT] = SORTED_TABLE.keys;
static TARGETS: [Target; NAME_COUNT] = SORTED_TABLE.targets;

/// The name look-up table, as built at compile time.
struct NameTable {
    fingerprints: [u64; NAME_COUNT],
    keys: [Key; NAME_COUNT],
    targets: [Target; NAME_COUNT],
}

/// ASCII upper-case of the eight bytes of `x` at once; other bytes
/// (including non-ASCII ones) are unchanged.
const fn upper8(x: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = ONES * 0x80;
    let low7 = x & !HIGH;
    // High bit of each byte set iff its low seven bits are >= b'a' / > b'z';
    // neither sum carries into the next byte.
    let ge_a = low7 + ONES * (0x80 - b'a' as u64);
    let gt_z = low7 + ONES * (0x80 - b'z' as u64 - 1);
    let lower = ge_a & !gt_z & !x & HIGH;
    x - (lower >> 2)
}

/// The key of a table name (compile time; `name.len() <= MAX_NAME_LEN`).
const fn const_key(name: &[u8]) -> Key {
    let mut key = [0u64; KEY_WORDS];
    key[0] = name.len() as u64;
    let mut i = 0;
    while i < name.len() {
        key[1 + i / 8] |= (name[i] as u64) << (8 * (7 - i % 8));
        i += 1;
    }
    let mut w = 1;
    while w < KEY_WORDS {
        key[w] = upper8(key[w]);
        w += 1;
    }
    key
}

/// The key of an input, or `None` if it is empty or too long to be a name.
/// Agrees with [`const_key`].
#[inline]
fn input_key(name: &[u8]) -> Option<Key> {
    if name.is_empty() || name.len() > MAX_NAME_LEN {
        return None;
    }
    let mut key = [0u64; KEY_WORDS];
    key[0] = name.len() as u64;
    let (chunks, tail) = name.as_chunks::<8>();
    let (_, words) = key.split_at_mut(1);
    for (word, chunk) in words.iter_mut().zip(chunks) {
        *word = upper8(u64::from_be_bytes(*chunk));
    }
    let mut last = 0u64;
    for (i, &b) in tail.iter().enumerate() {
        last |= u64::from(b) << (56 - 8 * i);
    }
    if let Some(word) = words.get_mut(chunks.len()) {
        *word = upper8(last);
    }
    Some(key)
}

/// Per-word multipliers of [`fingerprint`] (odd, from SplitMix64).
const FINGERPRINT_MUL: [u64; KEY_WORDS] = {
    let mut out = [0u64; KEY_WORDS];
    let mut state = 0x243F_6A88_85A3_08D3_u64;
    let mut i = 0;
    while i < KEY_WORDS {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        out[i] = (z ^ (z >> 31)) | 1;
        i += 1;
    }
    out
};

/// A 64-bit fingerprint of a key: folded 64x64->128 multiplies, one per
/// word, independent of each other. Unique over the table (checked at
/// compile time); any value for other inputs.
#[inline(always)]
const fn fingerprint(key: &Key) -> u64 {
    let mut h = 0u64;
    let mut i = 0;
    while i < KEY_WORDS {
        let p =
            (key[i] ^ FINGERPRINT_MUL[(i + 1) % KEY_WORDS]) as u128 * FINGERPRINT_MUL[i] as u128;
        h = h.wrapping_add((p as u64) ^ ((p >> 64) as u64));
        i += 1;
    }
    h
}

/// Look a name up: binary search of the fingerprints, then a whole-key
/// comparison.
fn find_name(name: &str) -> Option<Target> {
    let key = input_key(name.as_bytes())?;
    let fp = fingerprint(&key);
    // Branch-free search for the last fingerprint <= `fp`; `NAME_COUNT` is
    // a constant, so the loop runs a fixed number of times.
    let mut base = 0usize;
    let mut size = NAME_COUNT;
    while size > 1 {
        let half = size / 2;
        let mid = base + half;
        base = if FINGERPRINTS[mid] <= fp { mid } else { base };
        size -= half;
    }
    if FINGERPRINTS[base] == fp && KEYS[base] == key {
        Some(TARGETS[base])
    } else {
        None
    }
}

/// `0x` or `0X` followed by one to four hex digits.
fn parse_code_point(s: &str) -> Option<u16> {
    let hex = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X"))?;
    if hex.is_empty() || hex.len() > 4 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u16::from_str_radix(hex, 16).ok()
}

const fn sort_suites(src: &[CipherSuite]) -> [CipherSuite; SUITE_COUNT] {
    let mut out = [src[0]; SUITE_COUNT];
    let mut i = 0;
    while i < SUITE_COUNT {
        out[i] = src[i];
        i += 1;
    }
    // Insertion sort by code point.
    let mut i = 1;
    while i < SUITE_COUNT {
        let mut j = i;
        while j > 0 && out[j - 1].code > out[j].code {
            let tmp = out[j - 1];
            out[j - 1] = out[j];
            out[j] = tmp;
            j -= 1;
        }
        i += 1;
    }
    out
}

const fn count_openssl_names(suites: &[CipherSuite]) -> usize {
    let mut n = 0;
    let mut i = 0;
    while i < suites.len() {
        if suites[i].openssl.is_some() {
            n += 1;
        }
        i += 1;
    }
    n
}

const fn collect_names() -> [NameEntry; NAME_COUNT] {
    let placeholder = NameEntry {
        name: "",
        target: Target::Combination(Combination::Aes128CbcSha1),
    };
    let mut out = [placeholder; NAME_COUNT];
    let mut n = 0;
    let mut i = 0;
    while i < Combination::ALL.len() {
        let c = Combination::ALL[i];
        out[n] = NameEntry {
            name: c.name(),
            target: Target::Combination(c),
        };
        n += 1;
        i += 1;
    }
    let mut i = 0;
    while i < SUITE_COUNT {
        let suite = SORTED_SUITES[i];
        out[n] = NameEntry {
            name: suite.iana,
            target: Target::Suite(i as u16),
        };
        n += 1;
        if let Some(openssl) = suite.openssl {
            out[n] = NameEntry {
                name: openssl,
                target: Target::Suite(i as u16),
            };
            n += 1;
        }
        i += 1;
    }
    assert!(n == NAME_COUNT);
    out
}

const fn build_table() -> NameTable {
    let mut fingerprints = [0u64; NAME_COUNT];
    let mut keys = [[0u64; KEY_WORDS]; NAME_COUNT];
    let mut targets = [Target::Combination(Combination::Aes128CbcSha1); NAME_COUNT];
    let mut i = 0;
    while i < NAME_COUNT {
        keys[i] = const_key(NAME_ENTRIES[i].name.as_bytes());
        fingerprints[i] = fingerprint(&keys[i]);
        targets[i] = NAME_ENTRIES[i].target;
        i += 1;
    }
    // Insertion sort by fingerprint.
    let mut i = 1;
    while i < NAME_COUNT {
        let mut j = i;
        while j > 0 && fingerprints[j] < fingerprints[j - 1] {
            let f = fingerprints[j - 1];
            fingerprints[j - 1] = fingerprints[j];
            fingerprints[j] = f;
            let k = keys[j - 1];
            keys[j - 1] = keys[j];
            keys[j] = k;
            let t = targets[j - 1];
            targets[j - 1] = targets[j];
            targets[j] = t;
            j -= 1;
        }
        i += 1;
    }
    NameTable {
        fingerprints,
        keys,
        targets,
    }
}

const fn max_name_len(names: &[NameEntry]) -> usize {
    let mut max = 0;
    let mut i = 0;
    while i < names.len() {
        if names[i].name.len() > max {
            max = names[i].name.len();
        }
        i += 1;
    }
    max
}

const fn starts_with(s: &str, prefix: &str) -> bool {
    let (s, p) = (s.as_bytes(), prefix.as_bytes());
    if p.len() > s.len() {
        return false;
    }
    let mut i = 0;
    while i < p.len() {
        if s[i] != p[i] {
            return false;
        }
        i += 1;
    }
    true
}

const fn ends_with(s: &str, suffix: &str) -> bool {
    let (s, p) = (s.as_bytes(), suffix.as_bytes());
    if p.len() > s.len() {
        return false;
    }
    let off = s.len() - p.len();
    let mut i = 0;
    while i < p.len() {
        if s[off + i] != p[i] {
            return false;
        }
        i += 1;
    }
    true
}

const fn contains(s: &str, needle: &str) -> bool {
    let (s, p) = (s.as_bytes(), needle.as_bytes());
    let mut start = 0;
    while start + p.len() <= s.len() {
        let mut i = 0;
        while i < p.len() && s[start + i] == p[i] {
            i += 1;
        }
        if i == p.len() {
            return true;
        }
        start += 1;
    }
    false
}

/// Compile-time checks of the tables: a mistake in `table.rs` is a build
/// error, not a wrong answer at run time.
const fn validate() {
    // Code points strictly increasing: sorted, no duplicates.
    let mut i = 1;
    while i < SUITE_COUNT {
        assert!(
            SORTED_SUITES[i - 1].code < SORTED_SUITES[i].code,
            "duplicate code point in the suite table"
        );
        i += 1;
    }
    // The suite's names agree with its combination.
    let mut i = 0;
    while i < SUITE_COUNT {
        let suite = SORTED_SUITES[i];
        let (iana_suffix, aes, aes_dash, mac_suffix) = match suite.combination {
            Combination::Aes128CbcSha1 => ("_WITH_AES_128_CBC_SHA", "AES128", "AES-128", "-SHA"),
            Combination::Aes256CbcSha1 => ("_WITH_AES_256_CBC_SHA", "AES256", "AES-256", "-SHA"),
            Combination::Aes128CbcSha256 => {
                ("_WITH_AES_128_CBC_SHA256", "AES128", "AES-128", "-SHA256")
            }
            Combination::Aes256CbcSha256 => {
                ("_WITH_AES_256_CBC_SHA256", "AES256", "AES-256", "-SHA256")
            }
            Combination::Aes256CbcSha384 => {
                ("_WITH_AES_256_CBC_SHA384", "AES256", "AES-256", "-SHA384")
            }
        };
        assert!(
            starts_with(suite.iana, "TLS_") && ends_with(suite.iana, iana_suffix),
            "IANA name disagrees with the combination"
        );
        if let Some(openssl) = suite.openssl {
            assert!(
                (contains(openssl, aes) || contains(openssl, aes_dash))
                    && ends_with(openssl, mac_suffix),
                "OpenSSL name disagrees with the combination"
            );
        }
        i += 1;
    }
    // Names: non-empty printable ASCII.
    let mut i = 0;
    while i < NAME_COUNT {
        let name = NAME_ENTRIES[i].name.as_bytes();
        assert!(!name.is_empty(), "empty name");
        let mut j = 0;
        while j < name.len() {
            assert!(name[j].is_ascii_graphic(), "name not printable ASCII");
            j += 1;
        }
        i += 1;
    }
    // Fingerprints strictly increasing. Equal names (in any case) have
    // equal keys and so equal fingerprints: this also rejects a name that
    // denotes two things. (Should two different names ever collide, change
    // the seed of `FINGERPRINT_MUL`.)
    let mut i = 1;
    while i < NAME_COUNT {
        assert!(
            SORTED_TABLE.fingerprints[i - 1] < SORTED_TABLE.fingerprints[i],
            "duplicate name (case-insensitive) or fingerprint collision in the suite table"
        );
        i += 1;
    }
    assert!(SUITE_COUNT <= u16::MAX as usize);
}

const _: () = validate();

#[cfg(test)]
mod tests {
    extern crate std;

    use std::format;
    use std::string::ToString;

    use super::*;

    #[test]
    fn tables_are_sorted_and_complete() {
        assert_eq!(SUITES.len(), 64);
        assert_eq!(NAME_COUNT, 5 + 64 + 64);
        assert_eq!(
            MAX_NAME_LEN,
            "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA384".len()
        );
        for w in FINGERPRINTS.windows(2) {
            assert!(w[0] < w[1]);
        }
        for (key, fp) in KEYS.iter().zip(&FINGERPRINTS) {
            assert_eq!(fingerprint(key), *fp);
        }
        for w in SUITES.windows(2) {
            assert!(w[0].code < w[1].code);
        }
    }

    #[test]
    fn every_name_is_found() {
        for entry in &NAME_ENTRIES {
            for name in [
                entry.name.to_string(),
                entry.name.to_ascii_lowercase(),
                entry.name.to_ascii_uppercase(),
            ] {
                assert_eq!(find_name(&name), Some(entry.target), "{name}");
            }
        }
    }

    #[test]
    fn upper8_is_ascii_uppercase() {
        for b in 0..=255u8 {
            for pos in 0..8 {
                let x = (b as u64) << (8 * pos);
                let y = 0x7a60_7b40_5a41_615b_u64;
                let mixed = (y & !(0xff << (8 * pos))) | x;
                let expected =
                    u64::from_le_bytes(mixed.to_le_bytes().map(|c| c.to_ascii_uppercase()));
                assert_eq!(upper8(mixed), expected, "{b:#x} at {pos}");
            }
        }
    }

    #[test]
    fn input_key_agrees_with_const_key() {
        let samples = [
            "a",
            "AES128-SHA",
            "aes128-sha",
            "ÄES",
            "\u{7f}\u{80}zZ{`@[",
            "x".repeat(MAX_NAME_LEN).leak(),
        ];
        for s in samples
            .iter()
            .copied()
            .chain(NAME_ENTRIES.iter().map(|e| e.name))
        {
            assert_eq!(
                input_key(s.as_bytes()),
                Some(const_key(s.as_bytes())),
                "{s:?}"
            );
        }
        assert_eq!(input_key(b""), None);
        assert_eq!(input_key("x".repeat(MAX_NAME_LEN + 1).as_bytes()), None);
    }

    #[test]
    fn near_misses_are_not_found() {
        for entry in &NAME_ENTRIES {
            let name = entry.name;
            let mut shorter = name.to_string();
            shorter.pop();
            let longer = format!("{name}A");
            let nul = format!("{name}\0");
            for miss in [shorter, longer, nul] {
                assert_eq!(
                    find_name(&miss).is_some(),
                    NAME_ENTRIES
                        .iter()
                        .any(|e| e.name.eq_ignore_ascii_case(&miss)),
                    "{miss:?}"
                );
            }
        }
    }

    #[test]
    fn code_point_strings() {
        assert_eq!(parse_code_point("0x002F"), Some(0x002F));
        assert_eq!(parse_code_point("0Xc028"), Some(0xC028));
        assert_eq!(parse_code_point("0x2f"), Some(0x002F));
        assert_eq!(parse_code_point("0x"), None);
        assert_eq!(parse_code_point("0x+2F"), None);
        assert_eq!(parse_code_point("0x10000"), None);
        assert_eq!(parse_code_point("002F"), None);
        assert_eq!(
            CipherSuite::from_name("0x002f").unwrap().iana_name(),
            "TLS_RSA_WITH_AES_128_CBC_SHA"
        );
        assert_eq!(
            combination_by_name("0xC028").unwrap(),
            Combination::Aes256CbcSha384
        );
        assert_eq!(combination_by_name("0x009C").unwrap_err().input(), "0x009C");
    }

    #[test]
    fn combination_names_are_not_suites() {
        for c in Combination::ALL {
            assert!(CipherSuite::from_name(c.name()).is_err());
            assert_eq!(combination_by_name(c.name()).unwrap(), c);
        }
    }
}
