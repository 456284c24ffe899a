//! Differential tests against OpenSSL (through the `openssl-ref` crate):
//! every combination x protocol version x MAC order (32 configurations),
//! random records on every available backend.
//!
//! - Records we seal open with OpenSSL to the same plaintext: its stitched
//!   `AES-*-CBC-HMAC-SHA*` cipher in TLS record mode where one exists
//!   (SHA-1/SHA-256, MAC-then-encrypt, x86-64 with AES-NI), and always EVP
//!   AES-CBC + HMAC composed by `openssl-ref`; OpenSSL sealing the same
//!   plaintext with the same IV gives the same bytes.
//! - Records OpenSSL seals (both paths; the composed one sometimes with long
//!   padding) open with us to the same plaintext.
//! - Tampered records (a bit flipped anywhere, a truncated tail, forged
//!   padding re-encrypted under the right key, with a valid MAC for
//!   encrypt-then-MAC) are rejected by both.
//! - Records OpenSSL seals open in a batch (`open_batch` across sixteen
//!   connections, `Opener::open_many_in_place` on one) to its plaintext,
//!   and the damaged ones among them are rejected, by us and by OpenSSL.
//!
//! - The AEAD form (`TlsAead`, every algorithm, both IV forms): its sealed
//!   output is OpenSSL's record without the explicit IV, byte for byte,
//!   with the additional data's version bytes any of TLS 1.0 (implicit IV)
//!   or TLS 1.1/1.2 and DTLS 1.0/1.2 (explicit IV), whatever the
//!   combination; OpenSSL's records (some with long padding) open with it;
//!   flipped bits and truncations are rejected by both.
//!
//! Needs `--features openssl` (and the system OpenSSL: libssl-dev,
//! pkg-config):
//!
//! ```sh
//! cargo test --release --features openssl --test differential_openssl -- --nocapture
//! ```
//!
//! `CBC_HMAC_DIFF_SEED` (decimal or 0x-hex) replays a run;
//! `CBC_HMAC_DIFF_RECORDS` sets the records per configuration (default
//! 3200: 102,400 in all), `CBC_HMAC_DIFF_AEAD_RECORDS` per AEAD algorithm
//! (default 1000: 10,000 in all).

#[cfg(not(feature = "openssl"))]
#[test]
fn differential_openssl_skipped() {
    eprintln!(
        "SKIPPED: differential tests against OpenSSL need --features openssl (and libssl-dev)"
    );
}

#[cfg(feature = "openssl")]
mod with_openssl {
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Instant;

    use cbc_hmac::{
        Backend, Combination, Error, MacAlgorithm, MacOrder, Opener, ProtocolVersion, RecordConfig,
        RecordKeys, Sealer, TlsAead, TlsAeadAlgorithm, TlsAeadIv, dtls_sequence,
    };
    use openssl_ref::{ComposedTls, Digest, EvpAesCbc, Hmac, StitchedTlsCipher, TlsParams};

    const DEFAULT_RECORDS_PER_CONFIG: u64 = 3200;
    /// The default run covers at least 100,000 records.
    const _: () = assert!(DEFAULT_RECORDS_PER_CONFIG * 32 >= 100_000);

    // ---------------------------------------------------------------- rng

    /// xoshiro256** seeded with splitmix64: reproducible from one u64.
    struct Rng([u64; 4]);

    impl Rng {
        fn new(seed: u64) -> Self {
            let mut x = seed;
            let mut next = || {
                x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
                let mut z = x;
                z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
                z ^ (z >> 31)
            };
            Rng([next(), next(), next(), next()])
        }

        fn next_u64(&mut self) -> u64 {
            let s = &mut self.0;
            let result = s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
            let t = s[1] << 17;
            s[2] ^= s[0];
            s[3] ^= s[1];
            s[1] ^= s[2];
            s[0] ^= s[3];
            s[2] ^= t;
            s[3] = s[3].rotate_left(45);
            result
        }

        /// Uniform in `0..n` (n > 0).
        fn below(&mut self, n: u64) -> u64 {
            ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
        }

        /// Uniform in `lo..=hi`.
        fn range(&mut self, lo: usize, hi: usize) -> usize {
            lo + self.below((hi - lo + 1) as u64) as usize
        }

        fn chance(&mut self, numerator: u64, denominator: u64) -> bool {
            self.below(denominator) < numerator
        }

        fn fill(&mut self, buf: &mut [u8]) {
            for chunk in buf.chunks_mut(8) {
                let r = self.next_u64().to_le_bytes();
                chunk.copy_from_slice(&r[..chunk.len()]);
            }
        }

        fn bytes(&mut self, n: usize) -> Vec<u8> {
            let mut v = vec![0; n];
            self.fill(&mut v);
            v
        }

        fn block(&mut self) -> [u8; 16] {
            let mut b = [0; 16];
            self.fill(&mut b);
            b
        }
    }

    fn env_u64(name: &str) -> Option<u64> {
        let v = std::env::var(name).ok()?;
        let v = v.trim();
        let parsed = match v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
            Some(hex) => u64::from_str_radix(hex, 16),
            None => v.parse(),
        };
        Some(parsed.unwrap_or_else(|_| panic!("{name}={v:?} is not a number")))
    }

    // ------------------------------------------------------------- configs

    /// Every (combination, version, order) the crate defines.
    fn configs() -> Vec<RecordConfig> {
        Combination::ALL
            .into_iter()
            .flat_map(|c| {
                ProtocolVersion::ALL
                    .into_iter()
                    .filter(move |v| c.allows(*v))
                    .flat_map(move |v| MacOrder::ALL.map(|o| RecordConfig::new(c, v, o)))
            })
            .collect()
    }

    fn digest(config: RecordConfig) -> Digest {
        match config.combination.mac() {
            MacAlgorithm::HmacSha1 => Digest::Sha1,
            MacAlgorithm::HmacSha256 => Digest::Sha256,
            MacAlgorithm::HmacSha384 => Digest::Sha384,
            MacAlgorithm::HmacSha512 => Digest::Sha512,
        }
    }

    fn ref_order(config: RecordConfig) -> openssl_ref::MacOrder {
        match config.mac_order {
            MacOrder::MacThenEncrypt => openssl_ref::MacOrder::MacThenEncrypt,
            MacOrder::EncryptThenMac => openssl_ref::MacOrder::EncryptThenMac,
        }
    }

    fn name(config: RecordConfig) -> String {
        let order = match config.mac_order {
            MacOrder::MacThenEncrypt => "MtE",
            MacOrder::EncryptThenMac => "EtM",
        };
        format!(
            "{} {} {order}",
            config.combination,
            config.version.to_string().replace(' ', "")
        )
    }

    /// Whether OpenSSL's stitched cipher applies to (and exists for) this
    /// configuration.
    fn stitched_applies(config: RecordConfig) -> bool {
        config.mac_order == MacOrder::MacThenEncrypt
            && StitchedTlsCipher::is_available(
                config.combination.cipher().key_len(),
                digest(config),
            )
    }

    // ----------------------------------------------------- OpenSSL objects

    enum Reference {
        Stitched(StitchedTlsCipher),
        Composed(ComposedTls),
    }

    impl Reference {
        fn label(&self) -> &'static str {
            match self {
                Reference::Stitched(_) => "OpenSSL stitched",
                Reference::Composed(_) => "OpenSSL EVP composed",
            }
        }

        fn seal(
            &mut self,
            seq: u64,
            content_type: u8,
            iv: Option<&[u8; 16]>,
            plaintext: &[u8],
            out: &mut Vec<u8>,
        ) -> openssl_ref::Result<()> {
            match self {
                Reference::Stitched(s) => s.seal(seq, content_type, iv, plaintext, out),
                Reference::Composed(c) => c.seal(seq, content_type, iv, plaintext, out),
            }
        }

        fn open<'b>(
            &mut self,
            seq: u64,
            content_type: u8,
            fragment: &'b mut [u8],
        ) -> openssl_ref::Result<&'b mut [u8]> {
            match self {
                Reference::Stitched(s) => s.open(seq, content_type, fragment),
                Reference::Composed(c) => c.open(seq, content_type, fragment),
            }
        }
    }

    // --------------------------------------------------------------- keys

    struct Session {
        enc: Vec<u8>,
        mac: Vec<u8>,
        iv0: [u8; 16],
    }

    impl Session {
        fn new(rng: &mut Rng, config: RecordConfig) -> Self {
            Session {
                enc: rng.bytes(config.combination.cipher().key_len()),
                mac: rng.bytes(config.combination.mac().output_len()),
                iv0: rng.block(),
            }
        }

        fn ours(&self, config: RecordConfig) -> RecordKeys<'_> {
            RecordKeys {
                enc_key: &self.enc,
                mac_key: &self.mac,
                iv: (config.version == ProtocolVersion::Tls10).then_some(&self.iv0[..]),
            }
        }

        fn reference(&self, config: RecordConfig) -> TlsParams<'_> {
            TlsParams {
                enc_key: &self.enc,
                mac_key: &self.mac,
                digest: digest(config),
                version: config.version.wire(),
                mac_order: ref_order(config),
                tls10_iv: (config.version == ProtocolVersion::Tls10).then_some(&self.iv0),
            }
        }

        /// OpenSSL objects: the stitched cipher where it applies, and the
        /// composed one always.
        fn references(&self, config: RecordConfig, stitched: bool) -> Vec<Reference> {
            let params = self.reference(config);
            let mut refs = Vec::new();
            if stitched {
                refs.push(Reference::Stitched(
                    StitchedTlsCipher::new(&params).expect("stitched cipher"),
                ));
            }
            refs.push(Reference::Composed(
                ComposedTls::new(&params).expect("composed reference"),
            ));
            refs
        }
    }

    /// A first sequence number: random, with room to count up; for DTLS an
    /// epoch and a 48-bit sequence.
    fn first_seq(rng: &mut Rng, version: ProtocolVersion) -> u64 {
        if version.is_dtls() {
            dtls_sequence(rng.next_u64() as u16, rng.next_u64() >> 17)
        } else {
            rng.next_u64() >> 1
        }
    }

    fn content_type(rng: &mut Rng) -> u8 {
        if rng.chance(7, 8) {
            20 + rng.below(4) as u8
        } else {
            rng.next_u64() as u8
        }
    }

    /// Plaintext lengths in 0..=16384, weighted toward small lengths and
    /// the block, padding, hash-block and maximum boundaries.
    fn plaintext_len(rng: &mut Rng, mac_len: usize) -> usize {
        const MAX: usize = 1 << 14;
        let len = match rng.below(100) {
            0..35 => rng.range(0, 64),
            35..45 => (16 * rng.range(0, 64) + rng.range(0, 2)).saturating_sub(1),
            // MAC-then-encrypt padding wraps from 0 to 15 here.
            45..53 => (16 * rng.range(4, 64) + rng.range(0, 1)).saturating_sub(mac_len + 1),
            // Hash block boundaries of the MAC input (13-byte header, 9 bytes
            // of SHA padding).
            53..61 => (64 * rng.range(1, 32)).saturating_sub(13 + rng.range(7, 11)),
            61..71 => MAX - rng.range(0, 64),
            71..73 => MAX,
            73..75 => 0,
            _ => rng.range(0, MAX),
        };
        len.min(MAX)
    }

    // ------------------------------------------------------------ tampers

    #[derive(Clone, Copy, Debug)]
    enum Tamper {
        BitFlip,
        Truncate,
        ForgedPadding,
        /// MAC-then-encrypt: padding rewritten to another valid length, so
        /// only the MAC can tell.
        Repadded,
    }

    const TAMPER_NAMES: [&str; 4] = [
        "bit flipped",
        "tail truncated",
        "forged padding",
        "valid re-padding",
    ];

    /// What a tamperer needs to forge padding under the session keys.
    struct Forger {
        aes: EvpAesCbc,
        hmac: Hmac,
        mac_len: usize,
        version: [u8; 2],
        order: MacOrder,
        explicit: bool,
    }

    impl Forger {
        fn new(session: &Session, config: RecordConfig) -> Self {
            Forger {
                aes: EvpAesCbc::new(&session.enc).expect("EVP AES"),
                hmac: Hmac::new(digest(config), &session.mac).expect("HMAC"),
                mac_len: config.combination.mac().output_len(),
                version: config.version.wire(),
                order: config.mac_order,
                explicit: config.version != ProtocolVersion::Tls10,
            }
        }

        fn header(&self, seq: u64, content_type: u8, len: usize) -> [u8; 13] {
            openssl_ref::tls_mac_header(seq, content_type, self.version, len as u16)
        }

        /// Whether a decrypted CBC body would be accepted (RFC 5246 rules,
        /// padding 0..=255), judged here from the definitions.
        fn body_valid(&mut self, seq: u64, content_type: u8, body: &[u8]) -> bool {
            let len = body.len();
            let pad = usize::from(body[len - 1]);
            let inner_mac = match self.order {
                MacOrder::MacThenEncrypt => self.mac_len,
                MacOrder::EncryptThenMac => 0,
            };
            if pad + 1 + inner_mac > len || body[len - 1 - pad..].iter().any(|&b| b != pad as u8) {
                return false;
            }
            if self.order == MacOrder::EncryptThenMac {
                // The forger re-MACs: only the padding decides.
                return true;
            }
            let data_len = len - 1 - pad - self.mac_len;
            let header = self.header(seq, content_type, data_len);
            let tag = self
                .hmac
                .mac_parts(&[&header, &body[..data_len]])
                .expect("HMAC");
            tag.as_slice() == &body[data_len..data_len + self.mac_len]
        }

        /// Decrypts the record's CBC part with the right key and IV, changes
        /// the padding, re-encrypts (and for encrypt-then-MAC re-MACs, so
        /// the MAC is valid). Retries until the result is invalid by the
        /// definitions.
        fn forge(
            &mut self,
            rng: &mut Rng,
            kind: Tamper,
            seq: u64,
            content_type: u8,
            record: &[u8],
            chained_iv: &[u8; 16],
        ) -> Vec<u8> {
            let off = if self.explicit { 16 } else { 0 };
            let cbc_end = match self.order {
                MacOrder::MacThenEncrypt => record.len(),
                MacOrder::EncryptThenMac => record.len() - self.mac_len,
            };
            let iv: [u8; 16] = if self.explicit {
                record[..16].try_into().unwrap()
            } else {
                *chained_iv
            };
            let mut body = record[off..cbc_end].to_vec();
            self.aes.decrypt(&iv, &mut body).expect("EVP decrypt");
            let len = body.len();
            let pad = usize::from(body[len - 1]);
            for _ in 0..1000 {
                let mut forged = body.clone();
                match kind {
                    Tamper::ForgedPadding if pad > 0 && rng.chance(1, 2) => {
                        // One of the padding bytes before the length byte.
                        let i = len - 2 - rng.below(pad as u64) as usize;
                        forged[i] ^= 1 + rng.below(255) as u8;
                    }
                    Tamper::ForgedPadding => {
                        forged[len - 1] ^= 1 + rng.below(255) as u8;
                    }
                    Tamper::Repadded => {
                        let new_pad = rng.range(0, 255.min(len - 1));
                        if new_pad == pad {
                            continue;
                        }
                        forged[len - 1 - new_pad..].fill(new_pad as u8);
                    }
                    _ => unreachable!(),
                }
                if self.body_valid(seq, content_type, &forged) {
                    continue;
                }
                self.aes.encrypt(&iv, &mut forged).expect("EVP encrypt");
                let mut out = record[..off].to_vec();
                out.extend_from_slice(&forged);
                if self.order == MacOrder::EncryptThenMac {
                    let header = self.header(seq, content_type, cbc_end);
                    let tag = self
                        .hmac
                        .mac_parts(&[&header, &out[..cbc_end]])
                        .expect("HMAC");
                    out.extend_from_slice(tag.as_slice());
                }
                return out;
            }
            panic!("could not forge an invalid padding for {kind:?}");
        }
    }

    fn tampered(
        rng: &mut Rng,
        forger: &mut Forger,
        seq: u64,
        content_type: u8,
        record: &[u8],
        chained_iv: &[u8; 16],
    ) -> (Tamper, Vec<u8>) {
        let kinds: &[Tamper] = match forger.order {
            MacOrder::MacThenEncrypt => &[
                Tamper::BitFlip,
                Tamper::Truncate,
                Tamper::ForgedPadding,
                Tamper::Repadded,
            ],
            MacOrder::EncryptThenMac => &[Tamper::BitFlip, Tamper::Truncate, Tamper::ForgedPadding],
        };
        let kind = kinds[rng.below(kinds.len() as u64) as usize];
        let bad = match kind {
            Tamper::BitFlip => {
                let mut bad = record.to_vec();
                let bit = rng.below(8 * record.len() as u64) as usize;
                bad[bit / 8] ^= 1 << (bit % 8);
                bad
            }
            Tamper::Truncate => {
                let cut = if rng.chance(1, 2) {
                    16 * rng.range(1, record.len() / 16)
                } else {
                    rng.range(1, record.len())
                };
                record[..record.len() - cut].to_vec()
            }
            Tamper::ForgedPadding | Tamper::Repadded => {
                forger.forge(rng, kind, seq, content_type, record, chained_iv)
            }
        };
        (kind, bad)
    }

    // ------------------------------------------------------------- counts

    #[derive(Default, Clone, Copy)]
    struct Counts {
        records: u64,
        /// Our records opened by every applicable OpenSSL path.
        ours_opened_by_openssl: u64,
        ours_opened_by_stitched: u64,
        /// Our records byte-identical to OpenSSL's (same keys, IV, input).
        identical_to_openssl: u64,
        /// Records OpenSSL sealed that we opened (all paths).
        openssl_opened_by_us: u64,
        stitched_opened_by_us: u64,
        /// ... of which sealed the way libssl does (random IV block).
        libssl_style_opened_by_us: u64,
        long_padding_opened_by_us: u64,
        /// Tampered records rejected by us and by every OpenSSL path.
        tampered_rejected_by_both: u64,
        tamper_kinds: [u64; 4],
    }

    impl Counts {
        fn add(&mut self, o: &Counts) {
            self.records += o.records;
            self.ours_opened_by_openssl += o.ours_opened_by_openssl;
            self.ours_opened_by_stitched += o.ours_opened_by_stitched;
            self.identical_to_openssl += o.identical_to_openssl;
            self.openssl_opened_by_us += o.openssl_opened_by_us;
            self.stitched_opened_by_us += o.stitched_opened_by_us;
            self.libssl_style_opened_by_us += o.libssl_style_opened_by_us;
            self.long_padding_opened_by_us += o.long_padding_opened_by_us;
            self.tampered_rejected_by_both += o.tampered_rejected_by_both;
            for (a, b) in self.tamper_kinds.iter_mut().zip(o.tamper_kinds) {
                *a += b;
            }
        }
    }

    fn rejected_by_us(result: &Result<&mut [u8], Error>) -> bool {
        matches!(
            result,
            Err(Error::BadRecordMac
                | Error::RecordTooShort { .. }
                | Error::RecordNotBlockAligned { .. }
                | Error::RecordTooLong { .. })
        )
    }

    // -------------------------------------------------------------- a run

    /// Runs `records` records of one configuration: sessions of 1 to 16
    /// records under fresh random keys, each session on the next backend.
    fn run_config(
        config: RecordConfig,
        records: u64,
        seed: u64,
        replay_seed: u64,
        backends: &[Backend],
        session_counter: &AtomicUsize,
    ) -> Counts {
        let mut rng = Rng::new(seed);
        let stitched = stitched_applies(config);
        let explicit = config.version != ProtocolVersion::Tls10;
        let mac_len = config.combination.mac().output_len();
        let mut counts = Counts::default();
        let mut out = Vec::new();
        let mut done = 0u64;
        while done < records {
            let session_len = (1 + rng.below(16)).min(records - done);
            let backend =
                backends[session_counter.fetch_add(1, Ordering::Relaxed) % backends.len()];
            let keys = Session::new(&mut rng, config);
            let ours = keys.ours(config);
            // Stream A: we seal; OpenSSL opens (and seals the same for a
            // byte comparison); we open too (our own check, and tampers).
            let mut sealer = Sealer::with_backend(config, ours, backend).expect("sealer");
            let mut opener_a = Opener::with_backend(config, ours, backend).expect("opener");
            let mut openssl_openers = keys.references(config, stitched);
            let mut openssl_sealers = keys.references(config, stitched);
            // Streams B: OpenSSL seals (each path its own stream); we open.
            let mut streams_b: Vec<(Reference, Opener)> = keys
                .references(config, stitched)
                .into_iter()
                .map(|r| {
                    let o = Opener::with_backend(config, ours, backend).expect("opener");
                    (r, o)
                })
                .collect();
            let mut forger = Forger::new(&keys, config);
            let first_a = first_seq(&mut rng, config.version);
            let first_b = first_seq(&mut rng, config.version);
            let mut chain_a = keys.iv0;

            for k in 0..session_len {
                let (seq_a, seq_b) = (first_a + k, first_b + k);
                let context = |what: &str, len: usize, seq: u64| {
                    format!(
                        "{}: {what}: backend {backend}, plaintext {len} bytes, seq {seq:#x}, \
                         CBC_HMAC_DIFF_SEED={replay_seed:#x}",
                        name(config)
                    )
                };
                // -- stream A: seal with us.
                let len = plaintext_len(&mut rng, mac_len);
                let plaintext = rng.bytes(len);
                let ct = content_type(&mut rng);
                let iv = rng.block();
                let mut record = vec![0u8; sealer.sealed_len(len)];
                let off = sealer.payload_offset();
                record[off..off + len].copy_from_slice(&plaintext);
                let n = if explicit {
                    sealer.seal_in_place_with_iv(seq_a, ct, &mut record, len, &iv)
                } else {
                    sealer.seal_in_place(seq_a, ct, &mut record, len)
                }
                .unwrap_or_else(|e| panic!("{}: {e}", context("our seal", len, seq_a)));
                record.truncate(n);

                let record_iv = explicit.then_some(&iv);
                for s in openssl_sealers.iter_mut() {
                    s.seal(seq_a, ct, record_iv, &plaintext, &mut out)
                        .unwrap_or_else(|e| panic!("{}: {e}", context(s.label(), len, seq_a)));
                    assert!(
                        out == record,
                        "{}: our record differs from OpenSSL's",
                        context(s.label(), len, seq_a)
                    );
                }
                counts.identical_to_openssl += 1;

                // -- tampered copies first: rejected by both, no state change.
                let (kind, bad) = tampered(&mut rng, &mut forger, seq_a, ct, &record, &chain_a);
                let what = format!("{kind:?} record ({} bytes)", bad.len());
                let mut copy = bad.clone();
                let ours_result = opener_a.open_in_place(seq_a, ct, &mut copy);
                assert!(
                    rejected_by_us(&ours_result),
                    "{}: we gave {:?}",
                    context(&what, len, seq_a),
                    ours_result.map(|p| p.len())
                );
                for o in openssl_openers.iter_mut() {
                    let mut copy = bad.clone();
                    let result = o.open(seq_a, ct, &mut copy).map(|p| p.len());
                    assert!(
                        result.is_err(),
                        "{}: {} accepted it",
                        context(&what, len, seq_a),
                        o.label()
                    );
                }
                counts.tampered_rejected_by_both += 1;
                counts.tamper_kinds[kind as usize] += 1;

                // -- the genuine record opens everywhere.
                let mut copy = record.clone();
                let opened = opener_a
                    .open_in_place(seq_a, ct, &mut copy)
                    .unwrap_or_else(|e| panic!("{}: {e}", context("our own open", len, seq_a)));
                assert!(
                    opened == plaintext,
                    "{}",
                    context("our own open", len, seq_a)
                );
                for o in openssl_openers.iter_mut() {
                    let mut copy = record.clone();
                    let label = o.label();
                    let opened = o.open(seq_a, ct, &mut copy).unwrap_or_else(|e| {
                        panic!("{}: {e}", context(&format!("{label} open"), len, seq_a))
                    });
                    assert!(
                        opened == plaintext,
                        "{}: wrong plaintext",
                        context(&format!("{label} open"), len, seq_a)
                    );
                    if matches!(o, Reference::Stitched(_)) {
                        counts.ours_opened_by_stitched += 1;
                    }
                }
                counts.ours_opened_by_openssl += 1;
                let cbc_end = match config.mac_order {
                    MacOrder::MacThenEncrypt => n,
                    MacOrder::EncryptThenMac => n - mac_len,
                };
                chain_a.copy_from_slice(&record[cbc_end - 16..cbc_end]);

                // -- streams B: OpenSSL seals, we open.
                for (reference, opener) in streams_b.iter_mut() {
                    let len = plaintext_len(&mut rng, mac_len);
                    let plaintext = rng.bytes(len);
                    let ct = content_type(&mut rng);
                    let iv = rng.block();
                    let record_iv = explicit.then_some(&iv);
                    let label = reference.label();
                    let mut long_padding = false;
                    let mut libssl_style = false;
                    match &mut *reference {
                        Reference::Composed(c) if rng.chance(1, 4) => {
                            let covered = match config.mac_order {
                                MacOrder::MacThenEncrypt => len + mac_len,
                                MacOrder::EncryptThenMac => len,
                            };
                            let least = 15 - covered % 16;
                            let padding = least + 16 * rng.range(0, (255 - least) / 16);
                            long_padding = padding > least;
                            c.seal_with_padding(
                                seq_b,
                                ct,
                                record_iv,
                                &plaintext,
                                padding as u8,
                                &mut out,
                            )
                        }
                        // libssl's own way: a random IV block, encrypted
                        // under the running chain.
                        Reference::Stitched(st) if explicit && rng.chance(1, 2) => {
                            libssl_style = true;
                            out.clear();
                            out.resize(st.sealed_len(len), 0);
                            out[..16].copy_from_slice(&rng.block());
                            out[16..16 + len].copy_from_slice(&plaintext);
                            st.seal_in_place_libssl(seq_b, ct, &mut out, len)
                                .map(|n| out.truncate(n))
                        }
                        r => r.seal(seq_b, ct, record_iv, &plaintext, &mut out),
                    }
                    .unwrap_or_else(|e| {
                        panic!("{}: {e}", context(&format!("{label} seal"), len, seq_b))
                    });
                    let opened = opener
                        .open_in_place(seq_b, ct, &mut out)
                        .unwrap_or_else(|e| {
                            panic!(
                                "{}: {e}",
                                context(&format!("our open of {label}'s record"), len, seq_b)
                            )
                        });
                    assert!(
                        opened == plaintext,
                        "{}: wrong plaintext",
                        context(&format!("our open of {label}'s record"), len, seq_b)
                    );
                    counts.openssl_opened_by_us += 1;
                    if matches!(reference, Reference::Stitched(_)) {
                        counts.stitched_opened_by_us += 1;
                    }
                    if long_padding {
                        counts.long_padding_opened_by_us += 1;
                    }
                    if libssl_style {
                        counts.libssl_style_opened_by_us += 1;
                    }
                }
                counts.records += 1;
            }
            done += session_len;
        }
        counts
    }

    fn run_seed() -> u64 {
        env_u64("CBC_HMAC_DIFF_SEED").unwrap_or_else(|| {
            let t = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(0);
            t ^ u64::from(std::process::id()).rotate_left(32)
        })
    }

    #[test]
    fn differential_openssl() {
        let seed = run_seed();
        let per_config = env_u64("CBC_HMAC_DIFF_RECORDS").unwrap_or(DEFAULT_RECORDS_PER_CONFIG);
        let backends: Vec<Backend> = Backend::available().collect();
        let configs = configs();
        assert_eq!(configs.len(), 32);
        let stitched: Vec<&str> = [
            (16, Digest::Sha1),
            (32, Digest::Sha1),
            (16, Digest::Sha256),
            (32, Digest::Sha256),
        ]
        .into_iter()
        .filter(|&(k, d)| StitchedTlsCipher::is_available(k, d))
        .filter_map(|(k, d)| StitchedTlsCipher::cipher_name(k, d))
        .collect();
        eprintln!("differential test against {}", openssl_ref::version());
        eprintln!(
            "seed {seed:#x} (replay: CBC_HMAC_DIFF_SEED={seed:#x}); {per_config} records x {} \
             configurations; backends: {}",
            configs.len(),
            backends
                .iter()
                .map(|b| b.name())
                .collect::<Vec<_>>()
                .join(", ")
        );
        eprintln!(
            "OpenSSL stitched ciphers: {}",
            if stitched.is_empty() {
                "none on this CPU (EVP composed reference only)".to_string()
            } else {
                stitched.join(", ")
            }
        );

        let start = Instant::now();
        let next = AtomicUsize::new(0);
        let sessions = AtomicUsize::new(0);
        let results: Mutex<Vec<(usize, Counts)>> = Mutex::new(Vec::new());
        let workers = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
            .clamp(1, 8);
        std::thread::scope(|scope| {
            for _ in 0..workers {
                scope.spawn(|| {
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(&config) = configs.get(i) else { break };
                        let config_seed = seed ^ (i as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
                        let counts =
                            run_config(config, per_config, config_seed, seed, &backends, &sessions);
                        results.lock().unwrap().push((i, counts));
                    }
                });
            }
        });
        let elapsed = start.elapsed();
        let mut results = results.into_inner().unwrap();
        results.sort_by_key(|(i, _)| *i);

        let mut total = Counts::default();
        eprintln!(
            "{:<34} {:>8} {:>10} {:>10} {:>10} {:>10}",
            "configuration", "records", "us->ossl", "ossl->us", "stitched", "tampered"
        );
        for (i, c) in &results {
            eprintln!(
                "{:<34} {:>8} {:>10} {:>10} {:>10} {:>10}",
                name(configs[*i]),
                c.records,
                c.ours_opened_by_openssl,
                c.openssl_opened_by_us,
                if c.ours_opened_by_stitched > 0 {
                    format!("{}+{}", c.ours_opened_by_stitched, c.stitched_opened_by_us)
                } else {
                    "-".to_string()
                },
                c.tampered_rejected_by_both
            );
            total.add(c);
        }
        eprintln!(
            "total, in {:.1} s on {workers} threads:",
            elapsed.as_secs_f64()
        );
        eprintln!(
            "  records sealed by us, opened by OpenSSL:       {:>8} (stitched: {})",
            total.ours_opened_by_openssl, total.ours_opened_by_stitched
        );
        eprintln!(
            "  ... byte-identical to OpenSSL's own sealing:   {:>8}",
            total.identical_to_openssl
        );
        eprintln!(
            "  records sealed by OpenSSL, opened by us:       {:>8} (stitched: {}, of which with \
             libssl's random IV block: {}; composed with long padding: {})",
            total.openssl_opened_by_us,
            total.stitched_opened_by_us,
            total.libssl_style_opened_by_us,
            total.long_padding_opened_by_us
        );
        eprintln!(
            "  tampered records rejected by both:             {:>8} ({})",
            total.tampered_rejected_by_both,
            TAMPER_NAMES
                .iter()
                .zip(total.tamper_kinds)
                .map(|(n, c)| format!("{n}: {c}"))
                .collect::<Vec<_>>()
                .join(", ")
        );

        let target = per_config * configs.len() as u64;
        assert_eq!(total.records, target);
        assert_eq!(total.ours_opened_by_openssl, target);
        assert_eq!(total.identical_to_openssl, target);
        assert!(total.openssl_opened_by_us >= target);
        assert_eq!(total.tampered_rejected_by_both, target);
        if per_config >= 100 {
            assert!(total.tamper_kinds.iter().all(|&k| k > 0));
            assert!(total.long_padding_opened_by_us > 0);
            if !stitched.is_empty() {
                assert!(total.ours_opened_by_stitched > 0 && total.stitched_opened_by_us > 0);
                assert!(total.libssl_style_opened_by_us > 0);
            }
        }
    }

    /// Records sealed by the multi-record API (lanes where the backend has
    /// them), one connection's records and a batch across connections, open
    /// with OpenSSL to the same plaintext, for every configuration.
    #[test]
    fn batch_sealed_records_open_with_openssl() {
        use cbc_hmac::{SealJob, SealRecord, seal_batch};
        let seed = env_u64("CBC_HMAC_DIFF_SEED").unwrap_or(0xba7c_0551);
        let mut rng = Rng::new(seed);
        let mut opened = 0usize;
        for backend in Backend::available() {
            for config in configs() {
                let mac_len = config.combination.mac().output_len();
                let sessions: Vec<Session> =
                    (0..16).map(|_| Session::new(&mut rng, config)).collect();
                let seq = first_seq(&mut rng, config.version);
                let ct = content_type(&mut rng);
                let plains: Vec<Vec<u8>> = (0..16)
                    .map(|_| {
                        let n = plaintext_len(&mut rng, mac_len);
                        rng.bytes(n)
                    })
                    .collect();
                let mut sealers: Vec<Sealer> = sessions
                    .iter()
                    .map(|s| Sealer::with_backend(config, s.ours(config), backend).unwrap())
                    .collect();
                let buffers = |sealer: &Sealer| -> Vec<Vec<u8>> {
                    let o = sealer.payload_offset();
                    plains
                        .iter()
                        .map(|p| {
                            let mut b = vec![0u8; sealer.sealed_len(p.len())];
                            b[o..o + p.len()].copy_from_slice(p);
                            b
                        })
                        .collect()
                };
                // One connection, 16 records.
                let mut one = buffers(&sealers[0]);
                let mut records: Vec<SealRecord<'_>> = one
                    .iter_mut()
                    .zip(&plains)
                    .map(|(b, p)| SealRecord::new(b, p.len()))
                    .collect();
                sealers[0].seal_many_in_place(seq, ct, &mut records);
                assert!(records.iter().all(|r| matches!(r.result(), Some(Ok(_)))));
                drop(records);
                let mut reference = sessions[0].references(config, false).remove(0);
                for (i, (b, p)) in one.iter_mut().zip(&plains).enumerate() {
                    let got = reference.open(seq + i as u64, ct, b).unwrap_or_else(|e| {
                        panic!("{} on {backend}: record {i}: {e}", name(config))
                    });
                    assert_eq!(
                        &got[..],
                        &p[..],
                        "{} on {backend}: record {i}",
                        name(config)
                    );
                    opened += 1;
                }
                // Sixteen connections, one record each (fresh sealers: TLS
                // 1.0's first one has chained on).
                let mut sealers: Vec<Sealer> = sessions
                    .iter()
                    .map(|s| Sealer::with_backend(config, s.ours(config), backend).unwrap())
                    .collect();
                let mut many = buffers(&sealers[1]);
                let mut jobs: Vec<SealJob<'_>> = sealers
                    .iter_mut()
                    .zip(many.iter_mut())
                    .zip(&plains)
                    .map(|((s, b), p)| SealJob::new(s, seq, ct, b, p.len()))
                    .collect();
                seal_batch(&mut jobs);
                assert!(jobs.iter().all(|j| matches!(j.result(), Some(Ok(_)))));
                drop(jobs);
                for (i, ((b, p), session)) in
                    many.iter_mut().zip(&plains).zip(&sessions).enumerate()
                {
                    let mut reference = session.references(config, false).remove(0);
                    let got = reference
                        .open(seq, ct, b)
                        .unwrap_or_else(|e| panic!("{} on {backend}: job {i}: {e}", name(config)));
                    assert_eq!(&got[..], &p[..], "{} on {backend}: job {i}", name(config));
                    opened += 1;
                }
            }
        }
        eprintln!("batch-sealed records opened by OpenSSL: {opened} (seed {seed:#x})");
        assert!(opened >= 32 * 32);
    }

    /// Whether a batch open rejected the record with one of the errors a
    /// damaged record may get.
    fn batch_rejected(result: &Option<Result<std::ops::Range<usize>, Error>>) -> bool {
        matches!(
            result,
            Some(Err(Error::BadRecordMac
                | Error::RecordTooShort { .. }
                | Error::RecordNotBlockAligned { .. }
                | Error::RecordTooLong { .. }))
        )
    }

    /// Records OpenSSL seals (its stitched cipher where it applies, else
    /// the composed one) open in a batch, `open_batch` across sixteen
    /// connections and `Opener::open_many_in_place` on one connection, to
    /// OpenSSL's plaintext, on every backend and configuration; the damaged
    /// ones among them (a bit flipped, a truncated tail, forged padding,
    /// valid re-padding) are rejected by us and by OpenSSL without changing
    /// the others' results.
    #[test]
    fn openssl_sealed_records_open_in_a_batch() {
        use cbc_hmac::record::{OpenJob, OpenRecord, open_batch};
        let seed = env_u64("CBC_HMAC_DIFF_SEED").unwrap_or(0x0be4_ba7c);
        let mut rng = Rng::new(seed);
        let (mut opened, mut rejected) = (0usize, 0usize);
        for backend in Backend::available() {
            for config in configs() {
                let mac_len = config.combination.mac().output_len();
                let explicit = config.version != ProtocolVersion::Tls10;
                let stitched = stitched_applies(config);
                let sessions: Vec<Session> =
                    (0..16).map(|_| Session::new(&mut rng, config)).collect();
                let seq = first_seq(&mut rng, config.version);
                let ct = content_type(&mut rng);
                let plains: Vec<Vec<u8>> = (0..16)
                    .map(|_| {
                        let n = plaintext_len(&mut rng, mac_len);
                        rng.bytes(n)
                    })
                    .collect();
                let seal = |rng: &mut Rng, reference: &mut Reference, seq: u64, p: &[u8]| {
                    let iv = rng.block();
                    let mut out = Vec::new();
                    reference
                        .seal(seq, ct, explicit.then_some(&iv), p, &mut out)
                        .unwrap_or_else(|e| {
                            panic!("{}: {} seal: {e}", name(config), reference.label())
                        });
                    out
                };
                let cbc_end = |record: &[u8]| match config.mac_order {
                    MacOrder::MacThenEncrypt => record.len(),
                    MacOrder::EncryptThenMac => record.len() - mac_len,
                };

                // One connection, 16 consecutive records. TLS 1.0 chains
                // each record's IV to the one before, so only its last
                // record is damaged there.
                let mut reference = sessions[0].references(config, stitched).remove(0);
                let label = reference.label();
                let mut fragments: Vec<Vec<u8>> = plains
                    .iter()
                    .enumerate()
                    .map(|(i, p)| seal(&mut rng, &mut reference, seq + i as u64, p))
                    .collect();
                let mut forger = Forger::new(&sessions[0], config);
                let mut damaged = [false; 16];
                for i in 0..16 {
                    if (explicit || i == 15) && rng.chance(1, 4) {
                        // Only TLS 1.0 uses it; its records before this
                        // one are undamaged.
                        let chained: [u8; 16] = if explicit || i == 0 {
                            sessions[0].iv0
                        } else {
                            let prev = &fragments[i - 1];
                            prev[cbc_end(prev) - 16..cbc_end(prev)].try_into().unwrap()
                        };
                        let (_, bad) = tampered(
                            &mut rng,
                            &mut forger,
                            seq + i as u64,
                            ct,
                            &fragments[i],
                            &chained,
                        );
                        fragments[i] = bad;
                        damaged[i] = true;
                    }
                }
                // OpenSSL rejects them too (TLS 1.1+: a fresh object opens
                // any record of the stream).
                for (i, f) in fragments
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| explicit && damaged[*i])
                {
                    let mut o = sessions[0].references(config, false).remove(0);
                    let mut copy = f.clone();
                    assert!(
                        o.open(seq + i as u64, ct, &mut copy).is_err(),
                        "{}: OpenSSL accepted damaged record {i}",
                        name(config)
                    );
                }
                let mut opener =
                    Opener::with_backend(config, sessions[0].ours(config), backend).unwrap();
                let mut records: Vec<OpenRecord<'_>> = fragments
                    .iter_mut()
                    .map(|f| OpenRecord::new(ct, f))
                    .collect();
                opener.open_many_in_place(seq, &mut records);
                for (i, r) in records.iter().enumerate() {
                    let what = format!(
                        "{} on {backend}: open_many_in_place record {i} sealed by {label}, \
                         CBC_HMAC_DIFF_SEED={seed:#x}",
                        name(config)
                    );
                    if damaged[i] {
                        assert!(
                            batch_rejected(&r.result()),
                            "{what}: damaged, got {:?}",
                            r.result()
                        );
                        rejected += 1;
                    } else {
                        assert_eq!(r.plaintext(), Some(&plains[i][..]), "{what}");
                        opened += 1;
                    }
                }

                // Sixteen connections, one record each, with fresh OpenSSL
                // objects (TLS 1.0: each at its session's first IV).
                let mut fragments: Vec<Vec<u8>> = sessions
                    .iter()
                    .zip(&plains)
                    .map(|(s, p)| {
                        let mut r = s.references(config, stitched).remove(0);
                        seal(&mut rng, &mut r, seq, p)
                    })
                    .collect();
                let mut damaged = [false; 16];
                for (i, s) in sessions.iter().enumerate() {
                    if rng.chance(1, 4) {
                        let mut forger = Forger::new(s, config);
                        let (_, bad) =
                            tampered(&mut rng, &mut forger, seq, ct, &fragments[i], &s.iv0);
                        let mut o = s.references(config, false).remove(0);
                        let mut copy = bad.clone();
                        assert!(
                            o.open(seq, ct, &mut copy).is_err(),
                            "{}: OpenSSL accepted damaged job {i}",
                            name(config)
                        );
                        fragments[i] = bad;
                        damaged[i] = true;
                    }
                }
                let mut openers: Vec<Opener> = sessions
                    .iter()
                    .map(|s| Opener::with_backend(config, s.ours(config), backend).unwrap())
                    .collect();
                let mut jobs: Vec<OpenJob<'_>> = openers
                    .iter_mut()
                    .zip(fragments.iter_mut())
                    .map(|(o, f)| OpenJob::new(o, seq, ct, f))
                    .collect();
                open_batch(&mut jobs);
                for (i, j) in jobs.iter().enumerate() {
                    let what = format!(
                        "{} on {backend}: open_batch job {i}, CBC_HMAC_DIFF_SEED={seed:#x}",
                        name(config)
                    );
                    if damaged[i] {
                        assert!(
                            batch_rejected(&j.result()),
                            "{what}: damaged, got {:?}",
                            j.result()
                        );
                        rejected += 1;
                    } else {
                        assert_eq!(j.plaintext(), Some(&plains[i][..]), "{what}");
                        opened += 1;
                    }
                }
            }
        }
        eprintln!(
            "OpenSSL-sealed records opened in batches: {opened}, damaged ones rejected: \
             {rejected} (seed {seed:#x})"
        );
        assert!(opened >= 32 * 16 && rejected >= 32);
    }

    // ------------------------------------------------------- the AEAD form

    const DEFAULT_AEAD_RECORDS: u64 = 1000;

    fn digest_of(c: Combination) -> Digest {
        match c.mac() {
            MacAlgorithm::HmacSha1 => Digest::Sha1,
            MacAlgorithm::HmacSha256 => Digest::Sha256,
            MacAlgorithm::HmacSha384 => Digest::Sha384,
            MacAlgorithm::HmacSha512 => Digest::Sha512,
        }
    }

    #[derive(Default)]
    struct AeadCounts {
        records: u64,
        /// Our sealed output equal to OpenSSL's record without the IV.
        identical: u64,
        identical_stitched: u64,
        /// Ours opened by every OpenSSL path.
        ours_opened_by_openssl: u64,
        /// OpenSSL's records opened by us.
        openssl_opened_by_us: u64,
        stitched_opened_by_us: u64,
        long_padding_opened_by_us: u64,
        /// Tampered records rejected by us and every OpenSSL path.
        tampered_rejected_by_both: u64,
        /// Records whose additional data carried a version a `Sealer`
        /// would refuse with their combination.
        versions_sealer_refuses: u64,
    }

    /// Sessions of 1 to 16 records of one AEAD algorithm under fresh random
    /// keys, each on the next backend and with a random version in the
    /// additional data (TLS 1.0 for the implicit IV, any explicit-IV
    /// version otherwise, whatever the combination).
    fn run_aead(
        algorithm: TlsAeadAlgorithm,
        records: u64,
        seed: u64,
        replay_seed: u64,
        backends: &[Backend],
    ) -> AeadCounts {
        let mut rng = Rng::new(seed);
        let c = algorithm.combination();
        let implicit = algorithm.iv() == TlsAeadIv::Implicit;
        let off = if implicit { 0 } else { 16 };
        let mac_len = c.mac().output_len();
        let stitched = StitchedTlsCipher::is_available(c.cipher().key_len(), digest_of(c));
        let mut counts = AeadCounts::default();
        let mut out = Vec::new();
        let mut done = 0u64;
        let mut session = 0usize;
        while done < records {
            let session_len = (1 + rng.below(16)).min(records - done);
            let backend = backends[session % backends.len()];
            session += 1;
            let (version, pv) = if implicit {
                (openssl_ref::TLS1_0, ProtocolVersion::Tls10)
            } else {
                [
                    (openssl_ref::TLS1_1, ProtocolVersion::Tls11),
                    (openssl_ref::TLS1_2, ProtocolVersion::Tls12),
                    (openssl_ref::DTLS1_0, ProtocolVersion::Dtls10),
                    (openssl_ref::DTLS1_2, ProtocolVersion::Dtls12),
                ][rng.below(4) as usize]
            };
            let enc = rng.bytes(c.cipher().key_len());
            let mac = rng.bytes(mac_len);
            let iv0 = rng.block();
            let mut key = [mac.clone(), enc.clone()].concat();
            if implicit {
                key.extend_from_slice(&iv0);
            }
            let params = TlsParams {
                enc_key: &enc,
                mac_key: &mac,
                digest: digest_of(c),
                version,
                mac_order: openssl_ref::MacOrder::MacThenEncrypt,
                tls10_iv: implicit.then_some(&iv0),
            };
            let references = || {
                let mut refs = Vec::new();
                if stitched {
                    refs.push(Reference::Stitched(
                        StitchedTlsCipher::new(&params).expect("stitched cipher"),
                    ));
                }
                refs.push(Reference::Composed(
                    ComposedTls::new(&params).expect("composed reference"),
                ));
                refs
            };
            let aead = || TlsAead::with_backend(algorithm, &key, backend).expect("TlsAead");
            let (mut sealer, mut opener) = (aead(), aead());
            let mut openssl_sealers = references();
            let mut openssl_openers = references();
            let mut streams_b: Vec<(Reference, TlsAead)> =
                references().into_iter().map(|r| (r, aead())).collect();
            let first = rng.next_u64() >> 1;
            for k in 0..session_len {
                let seq = if pv.is_dtls() {
                    dtls_sequence(first as u16, (first >> 16) + k)
                } else {
                    first + k
                };
                let context = |what: &str, len: usize| {
                    format!(
                        "{algorithm} (version {version:02x?}): {what}: backend {backend}, \
                         plaintext {len} bytes, seq {seq:#x}, CBC_HMAC_DIFF_SEED={replay_seed:#x}"
                    )
                };
                if !c.allows(pv) {
                    counts.versions_sealer_refuses += 1;
                }
                // -- we seal; OpenSSL seals the same; OpenSSL opens ours.
                let len = plaintext_len(&mut rng, mac_len);
                let plaintext = rng.bytes(len);
                let ct = content_type(&mut rng);
                let ad: [u8; 11] = openssl_ref::tls_mac_header(seq, ct, version, 0)[..11]
                    .try_into()
                    .unwrap();
                let iv = rng.block();
                let nonce = &iv[..algorithm.nonce_len()];
                let mut sealed = vec![0u8; sealer.sealed_len(len)];
                let n = sealer
                    .seal(nonce, &ad, &plaintext, &mut sealed)
                    .unwrap_or_else(|e| panic!("{}: {e}", context("our seal", len)));
                assert_eq!(n, sealed.len());
                let record = [nonce, &sealed].concat();
                for s in openssl_sealers.iter_mut() {
                    s.seal(seq, ct, (!implicit).then_some(&iv), &plaintext, &mut out)
                        .unwrap_or_else(|e| panic!("{}: {e}", context(s.label(), len)));
                    assert!(
                        out == record,
                        "{}: our sealed output differs from OpenSSL's record",
                        context(s.label(), len)
                    );
                    if matches!(s, Reference::Stitched(_)) {
                        counts.identical_stitched += 1;
                    }
                }
                counts.identical += 1;

                // -- tampered first (no chain moves), then the genuine one.
                let bad = if rng.chance(3, 4) {
                    let mut bad = record.clone();
                    let bit = rng.below(8 * bad.len() as u64) as usize;
                    bad[bit / 8] ^= 1 << (bit % 8);
                    bad
                } else {
                    let cut = rng.range(1, sealed.len());
                    record[..record.len() - cut].to_vec()
                };
                if bad.len() >= off {
                    let (bad_nonce, bad_ct) = bad.split_at(off);
                    let mut copy = bad_ct.to_vec();
                    let ours = opener.open_in_place(bad_nonce, &ad, &mut copy);
                    assert!(
                        matches!(
                            ours,
                            Err(Error::BadRecordMac
                                | Error::RecordTooShort { .. }
                                | Error::RecordNotBlockAligned { .. })
                        ),
                        "{}: we gave {:?}",
                        context("tampered record", len),
                        ours.map(|p| p.len())
                    );
                }
                for o in openssl_openers.iter_mut() {
                    let mut copy = bad.clone();
                    assert!(
                        o.open(seq, ct, &mut copy).is_err(),
                        "{}: {} accepted it",
                        context("tampered record", len),
                        o.label()
                    );
                }
                counts.tampered_rejected_by_both += 1;
                let mut copy = sealed.clone();
                let opened = opener
                    .open_in_place(nonce, &ad, &mut copy)
                    .unwrap_or_else(|e| panic!("{}: {e}", context("our own open", len)));
                assert!(opened == plaintext, "{}", context("our own open", len));
                for o in openssl_openers.iter_mut() {
                    let mut copy = record.clone();
                    let label = o.label();
                    let opened = o.open(seq, ct, &mut copy).unwrap_or_else(|e| {
                        panic!("{}: {e}", context(&format!("{label} open"), len))
                    });
                    assert!(opened == plaintext, "{}", context(label, len));
                }
                counts.ours_opened_by_openssl += 1;

                // -- OpenSSL seals (each path its own stream); we open.
                for (reference, ours) in streams_b.iter_mut() {
                    let len = plaintext_len(&mut rng, mac_len);
                    let plaintext = rng.bytes(len);
                    let iv = rng.block();
                    let record_iv = (!implicit).then_some(&iv);
                    let label = reference.label();
                    let mut long_padding = false;
                    match &mut *reference {
                        Reference::Composed(r) if rng.chance(1, 3) => {
                            let least = 15 - (len + mac_len) % 16;
                            let padding = least + 16 * rng.range(0, (255 - least) / 16);
                            long_padding = padding > least;
                            r.seal_with_padding(
                                seq,
                                ct,
                                record_iv,
                                &plaintext,
                                padding as u8,
                                &mut out,
                            )
                        }
                        Reference::Stitched(st) if !implicit && rng.chance(1, 2) => {
                            out.clear();
                            out.resize(st.sealed_len(len), 0);
                            out[..16].copy_from_slice(&rng.block());
                            out[16..16 + len].copy_from_slice(&plaintext);
                            st.seal_in_place_libssl(seq, ct, &mut out, len)
                                .map(|n| out.truncate(n))
                        }
                        r => r.seal(seq, ct, record_iv, &plaintext, &mut out),
                    }
                    .unwrap_or_else(|e| panic!("{}: {e}", context(&format!("{label} seal"), len)));
                    let (nonce, body) = out.split_at_mut(off);
                    let mut opened = vec![0u8; body.len()];
                    let n = ours
                        .open(nonce, &ad, body, &mut opened)
                        .unwrap_or_else(|e| {
                            panic!(
                                "{}: {e}",
                                context(&format!("our open of {label}'s record"), len)
                            )
                        });
                    assert!(
                        opened[..n] == plaintext,
                        "{}: wrong plaintext",
                        context(&format!("our open of {label}'s record"), len)
                    );
                    counts.openssl_opened_by_us += 1;
                    if matches!(reference, Reference::Stitched(_)) {
                        counts.stitched_opened_by_us += 1;
                    }
                    if long_padding {
                        counts.long_padding_opened_by_us += 1;
                    }
                }
                counts.records += 1;
            }
            done += session_len;
        }
        counts
    }

    #[test]
    fn tls_aead_differential_openssl() {
        let seed = run_seed();
        let per = env_u64("CBC_HMAC_DIFF_AEAD_RECORDS").unwrap_or(DEFAULT_AEAD_RECORDS);
        let backends: Vec<Backend> = Backend::available().collect();
        eprintln!(
            "TlsAead against {}: seed {seed:#x} (replay: CBC_HMAC_DIFF_SEED={seed:#x}); {per} \
             records x {} algorithms",
            openssl_ref::version(),
            TlsAeadAlgorithm::ALL.len()
        );
        let start = Instant::now();
        let results: Vec<(TlsAeadAlgorithm, AeadCounts)> = std::thread::scope(|scope| {
            let handles: Vec<_> = TlsAeadAlgorithm::ALL
                .into_iter()
                .enumerate()
                .map(|(i, a)| {
                    let s = seed ^ (i as u64 + 101).wrapping_mul(0x9e37_79b9_7f4a_7c15);
                    let backends = &backends;
                    scope.spawn(move || (a, run_aead(a, per, s, seed, backends)))
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        eprintln!(
            "{:<36} {:>8} {:>10} {:>10} {:>10} {:>10} {:>10}",
            "algorithm", "records", "identical", "ossl->us", "stitched", "long pad", "tampered"
        );
        let mut total = AeadCounts::default();
        for (a, r) in &results {
            eprintln!(
                "{:<36} {:>8} {:>10} {:>10} {:>10} {:>10} {:>10}",
                a.name(),
                r.records,
                r.identical,
                r.openssl_opened_by_us,
                if r.identical_stitched > 0 {
                    format!("{}+{}", r.identical_stitched, r.stitched_opened_by_us)
                } else {
                    "-".to_string()
                },
                r.long_padding_opened_by_us,
                r.tampered_rejected_by_both
            );
            assert_eq!(r.records, per, "{a}");
            assert_eq!(r.identical, per, "{a}");
            assert_eq!(r.ours_opened_by_openssl, per, "{a}");
            assert_eq!(r.tampered_rejected_by_both, per, "{a}");
            assert!(r.openssl_opened_by_us >= per, "{a}");
            if per >= 100 {
                assert!(r.long_padding_opened_by_us > 0, "{a}");
                let digest = digest_of(a.combination());
                if StitchedTlsCipher::is_available(a.combination().cipher().key_len(), digest) {
                    assert!(
                        r.identical_stitched > 0 && r.stitched_opened_by_us > 0,
                        "{a}"
                    );
                }
            }
            total.records += r.records;
            total.identical_stitched += r.identical_stitched;
            total.versions_sealer_refuses += r.versions_sealer_refuses;
        }
        eprintln!(
            "total {} records in {:.1} s ({} compared with OpenSSL's stitched ciphers; {} with a \
             version a Sealer refuses for the combination)",
            total.records,
            start.elapsed().as_secs_f64(),
            total.identical_stitched,
            total.versions_sealer_refuses
        );
        if per >= 100 {
            assert!(total.versions_sealer_refuses > 0);
        }
    }
}
