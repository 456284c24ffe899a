//! The TLS record known answers (`vectors/tls-records.txt`, made with the
//! `openssl` command line by `vectors/make-tls-records.py`): parsing and
//! the checks every test that uses them runs.

use cbc_hmac::{
    Backend, Combination, Error, MacOrder, Opener, ProtocolVersion, RecordConfig, RecordKeys,
    Sealer,
};

use super::vectors::{Record, for_each_record};

pub const FILE: &str = "tls-records.txt";

/// Records in the file: 20 SHA-1 configurations (2 combinations x 5 versions
/// x 2 MAC orders) and 12 SHA-256/SHA-384 ones (3 x 2 x 2), 18 plaintext
/// lengths each.
pub const EXPECTED_RECORDS: usize = 32 * 18;

/// One record with its keys and configuration.
pub struct Vector {
    pub location: String,
    pub config: RecordConfig,
    pub enc_key: Vec<u8>,
    pub mac_key: Vec<u8>,
    pub iv: Vec<u8>,
    pub seq: u64,
    pub content_type: u8,
    pub plaintext: Vec<u8>,
    pub fragment: Vec<u8>,
}

impl Vector {
    pub fn parse(r: &mut Record) -> Vector {
        let location = r.location();
        let combination: Combination = r
            .take_str("Combination")
            .parse()
            .unwrap_or_else(|e| panic!("{location}: bad Combination: {e:?}"));
        let version = match r.take_str("Version").as_str() {
            "TLS1.0" => ProtocolVersion::Tls10,
            "TLS1.1" => ProtocolVersion::Tls11,
            "TLS1.2" => ProtocolVersion::Tls12,
            "DTLS1.0" => ProtocolVersion::Dtls10,
            "DTLS1.2" => ProtocolVersion::Dtls12,
            other => panic!("{location}: unknown Version {other:?}"),
        };
        let mac_order = match r.take_str("MacOrder").as_str() {
            "MacThenEncrypt" => MacOrder::MacThenEncrypt,
            "EncryptThenMac" => MacOrder::EncryptThenMac,
            other => panic!("{location}: unknown MacOrder {other:?}"),
        };
        let enc_key = r.take_hex("EncKey");
        let mac_key = r.take_hex("MacKey");
        let iv = r.take_hex("IV");
        let seq = r.take_u64("Seq");
        let content_type = u8::try_from(r.take_usize("ContentType"))
            .unwrap_or_else(|_| panic!("{location}: ContentType out of range"));
        let plaintext = r.take_hex("Plaintext");
        let fragment = r.take_hex("Fragment");
        assert_eq!(iv.len(), 16, "{location}: IV length");
        Vector {
            location,
            config: RecordConfig::new(combination, version, mac_order),
            enc_key,
            mac_key,
            iv,
            seq,
            content_type,
            plaintext,
            fragment,
        }
    }

    pub fn keys(&self) -> RecordKeys<'_> {
        RecordKeys {
            enc_key: &self.enc_key,
            mac_key: &self.mac_key,
            iv: (self.config.version == ProtocolVersion::Tls10).then_some(&self.iv[..]),
        }
    }

    pub fn sealer(&self, backend: Backend) -> Sealer {
        Sealer::with_backend(self.config, self.keys(), backend)
            .unwrap_or_else(|e| panic!("{}: Sealer on {backend:?}: {e}", self.location))
    }

    pub fn opener(&self, backend: Backend) -> Opener {
        Opener::with_backend(self.config, self.keys(), backend)
            .unwrap_or_else(|e| panic!("{}: Opener on {backend:?}: {e}", self.location))
    }

    /// Seals `Plaintext` and compares with `Fragment` byte for byte.
    pub fn check_seal(&self, backend: Backend) {
        let at = format!("{} ({backend:?})", self.location);
        let mut sealer = self.sealer(backend);
        let len = self.plaintext.len();
        let sealed_len = sealer.sealed_len(len);
        assert_eq!(sealed_len, self.fragment.len(), "{at}: sealed_len");
        let offset = sealer.payload_offset();
        assert_eq!(offset, self.config.version.explicit_iv_len(), "{at}");
        let mut buf = vec![0u8; sealed_len];
        buf[offset..offset + len].copy_from_slice(&self.plaintext);
        let n = if self.config.version == ProtocolVersion::Tls10 {
            // The IV is the initial chained IV given in the keys.
            sealer.seal_in_place(self.seq, self.content_type, &mut buf, len)
        } else {
            sealer.seal_in_place_with_iv(self.seq, self.content_type, &mut buf, len, &self.iv)
        }
        .unwrap_or_else(|e| panic!("{at}: seal: {e}"));
        assert_eq!(n, self.fragment.len(), "{at}: fragment length");
        if buf != self.fragment {
            let first = buf
                .iter()
                .zip(&self.fragment)
                .position(|(a, b)| a != b)
                .unwrap_or(0);
            panic!(
                "{at}: sealed fragment differs from the known answer \
                 (first difference at byte {first} of {n})"
            );
        }
    }

    /// Opens `Fragment` and compares with `Plaintext`.
    pub fn check_open(&self, backend: Backend) {
        let at = format!("{} ({backend:?})", self.location);
        let mut opener = self.opener(backend);
        let mut buf = self.fragment.clone();
        let plaintext = opener
            .open_in_place(self.seq, self.content_type, &mut buf)
            .unwrap_or_else(|e| panic!("{at}: open: {e}"));
        assert!(
            plaintext == &self.plaintext[..],
            "{at}: opened plaintext differs"
        );
    }

    /// Flips one bit at a few positions; a fresh opener must reject each.
    pub fn check_tampered(&self, backend: Backend) {
        let len = self.fragment.len();
        for (position, bit) in [(0, 0x01), (len / 2, 0x80), (len - 1, 0x01)] {
            let mut buf = self.fragment.clone();
            buf[position] ^= bit;
            let mut opener = self.opener(backend);
            let result = opener
                .open_in_place(self.seq, self.content_type, &mut buf)
                .map(|_| ());
            assert_eq!(
                result,
                Err(Error::BadRecordMac),
                "{} ({backend:?}): bit {bit:#04x} of byte {position} flipped",
                self.location
            );
        }
    }
}

/// Every record of the file, checked against an independent count of
/// its records.
pub fn load() -> Vec<Vector> {
    let mut vectors = Vec::new();
    let n = for_each_record(FILE, |r| vectors.push(Vector::parse(r)));
    assert_eq!(n, vectors.len(), "for_each_record's count");
    // An independent count, so that a parser reading too few records fails.
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("vectors")
            .join(FILE),
    )
    .expect("read the vector file");
    let in_file = text
        .lines()
        .filter(|l| l.starts_with("Combination ="))
        .count();
    assert_eq!(
        vectors.len(),
        in_file,
        "records parsed vs. records in the file"
    );
    assert_eq!(vectors.len(), EXPECTED_RECORDS, "records in {FILE}");
    vectors
}

/// Seals and opens every known-answer record on `backend`, checking that
/// the file covers every combination; returns how many records it has.
pub fn check_all(backend: Backend) -> usize {
    let vectors = load();
    let mut seen = std::collections::HashSet::new();
    for v in &vectors {
        assert_eq!(v.sealer(backend).backend(), backend);
        v.check_seal(backend);
        v.check_open(backend);
        seen.insert(v.config.combination);
    }
    assert_eq!(
        seen.len(),
        Combination::ALL.len(),
        "every combination has vectors"
    );
    vectors.len()
}
