//! Opening batches of records: `open_batch` and `Opener::open_many_in_place`
//! never panic, give each record what `Opener::open_in_place` gives for it,
//! and accept a record only if it is byte for byte one that was sealed
//! under the batch's key at that record's sequence value (the fuzzer cannot
//! compute an HMAC: any other acceptance would be a forgery).
//!
//! Each input is a batch of 1 to 20 fragments under one fixed key: records
//! sealed from input-chosen plaintexts and IVs then damaged by the input
//! (bits flipped, truncated), and raw input bytes.
//!
//! | bytes | meaning |
//! | --- | --- |
//! | 0 | configuration selector (`fuzz_support::config_from`) |
//! | 1..9 | sequence value of the first record, little-endian |
//! | 9 | content type |
//! | 10 | record count (1 + byte % 20) |
//! | 11 | backend of the `open_many_in_place` opener |
//! | 12.. | one descriptor per record (missing bytes read as zero) |
//!
//! A descriptor starts with a byte whose bit 0 says raw (1) or sealed (0)
//! and whose other bits pick the backend of the record's `open_batch`
//! opener, then a 2-byte length. Raw: that many bytes (mod 2048) follow.
//! Sealed: a plaintext length (bit 15 clear: mod 300; set: mod 2^14 + 1),
//! an IV byte, a plaintext byte, a mutation count (mod 4), and per
//! mutation a 2-byte position and a byte to XOR there (0: truncate there).
#![no_main]

use std::ops::Range;

use cbc_hmac::record::{OpenJob, OpenRecord, open_batch};
use cbc_hmac::{
    Backend, Error, MacOrder, Opener, ProtocolVersion, RecordConfig, RecordKeys, Sealer,
};
use fuzz_support::config_from;
use libfuzzer_sys::fuzz_target;

const ENC_KEY: [u8; 32] = [0x5a; 32];
const MAC_KEY: [u8; 48] = [0xc3; 48];
const TLS10_IV: [u8; 16] = [0x17; 16];
const MAX_RECORDS: usize = 20;

/// Reads the input front to back; past its end every byte is zero.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn byte(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        }
    }

    fn u16(&mut self) -> usize {
        u16::from_le_bytes([self.byte(), self.byte()]) as usize
    }

    fn bytes(&mut self, n: usize) -> &'a [u8] {
        let (taken, rest) = self.0.split_at(n.min(self.0.len()));
        self.0 = rest;
        taken
    }
}

fn keys(config: RecordConfig) -> RecordKeys<'static> {
    let c = config.combination;
    RecordKeys {
        enc_key: &ENC_KEY[..c.cipher().key_len()],
        mac_key: &MAC_KEY[..c.mac().tls_key_len()],
        iv: (config.version == ProtocolVersion::Tls10).then_some(&TLS10_IV[..]),
    }
}

/// A record the fuzz target sealed: its fragment, sequence value and
/// plaintext.
struct Sealed {
    fragment: Vec<u8>,
    seq: u64,
    plaintext: Vec<u8>,
}

/// `open_in_place` on a copy, as a range of the buffer like the batch
/// opens report it.
fn open_one(
    opener: &mut Opener,
    seq: u64,
    content_type: u8,
    fragment: &[u8],
) -> Result<Range<usize>, Error> {
    let mut buf = fragment.to_vec();
    let base = buf.as_ptr() as usize;
    opener.open_in_place(seq, content_type, &mut buf).map(|p| {
        let start = p.as_ptr() as usize - base;
        start..start + p.len()
    })
}

/// An accepted record must be one the target sealed, at this sequence
/// value, and open to its plaintext. Except that TLS 1.0 encrypt-then-MAC
/// authenticates the ciphertext but not the chained IV it was decrypted
/// from (RFC 7366), so a sealed record opened from another IV (a fresh
/// opener, or after a rejected record) may pass with a different first
/// block: there only the bytes and sequence value are checked.
fn check_accepted(
    config: RecordConfig,
    sealed: &[Sealed],
    pristine: &[u8],
    seq: u64,
    plaintext: &[u8],
    api: &str,
) {
    let iv_unauthenticated =
        config.version == ProtocolVersion::Tls10 && config.mac_order == MacOrder::EncryptThenMac;
    assert!(
        sealed.iter().any(|s| s.fragment == pristine
            && s.seq == seq
            && (iv_unauthenticated || s.plaintext == plaintext)),
        "{api} accepted a record that was not sealed under the key (seq {seq})"
    );
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 12 {
        return;
    }
    let config = config_from(data[0]);
    let first_seq = u64::from_le_bytes(data[1..9].try_into().unwrap());
    let content_type = data[9];
    let count = 1 + data[10] as usize % MAX_RECORDS;
    let backends: Vec<Backend> = Backend::available().collect();
    let many_backend = backends[data[11] as usize % backends.len()];
    let mut input = Reader(&data[12..]);

    // Build the batch. One sealer seals in record order, so TLS 1.0's
    // chained IVs line up for `open_many_in_place`.
    let mut sealer = Sealer::new(config, keys(config)).unwrap();
    let mut sealed: Vec<Sealed> = Vec::new();
    let mut fragments: Vec<Vec<u8>> = Vec::with_capacity(count);
    let mut job_backends: Vec<Backend> = Vec::with_capacity(count);
    for i in 0..count {
        let kind = input.byte();
        job_backends.push(backends[(kind >> 1) as usize % backends.len()]);
        let len = input.u16();
        if kind & 1 == 1 {
            fragments.push(input.bytes(len % 2048).to_vec());
            continue;
        }
        let text_len = if len & 0x8000 == 0 {
            len % 300
        } else {
            len % (cbc_hmac::record::MAX_PLAINTEXT_LEN + 1)
        };
        let iv = [input.byte(); 16];
        let fill = input.byte();
        let plaintext: Vec<u8> = (0..text_len).map(|j| fill.wrapping_add(j as u8)).collect();
        let seq = first_seq.wrapping_add(i as u64);
        let mut buf = vec![0u8; sealer.sealed_len(text_len)];
        buf[sealer.payload_offset()..][..text_len].copy_from_slice(&plaintext);
        let n = if config.version == ProtocolVersion::Tls10 {
            sealer.seal_in_place(seq, content_type, &mut buf, text_len)
        } else {
            sealer.seal_in_place_with_iv(seq, content_type, &mut buf, text_len, &iv)
        }
        .unwrap();
        buf.truncate(n);
        sealed.push(Sealed {
            fragment: buf.clone(),
            seq,
            plaintext,
        });
        for _ in 0..input.byte() % 4 {
            let pos = input.u16();
            let x = input.byte();
            if x == 0 {
                buf.truncate(pos % (buf.len() + 1));
            } else if !buf.is_empty() {
                let at = pos % buf.len();
                buf[at] ^= x;
            }
        }
        fragments.push(buf);
    }

    // open_batch, each job with its own fresh opener, against
    // open_in_place with another fresh opener of the same backend.
    let mut openers: Vec<Opener> = job_backends
        .iter()
        .map(|&b| Opener::with_backend(config, keys(config), b).unwrap())
        .collect();
    let mut bufs = fragments.clone();
    let mut jobs: Vec<OpenJob<'_>> = openers
        .iter_mut()
        .zip(&mut bufs)
        .enumerate()
        .map(|(i, (o, b))| OpenJob::new(o, first_seq.wrapping_add(i as u64), content_type, b))
        .collect();
    open_batch(&mut jobs);
    for (i, job) in jobs.iter().enumerate() {
        let seq = first_seq.wrapping_add(i as u64);
        let mut reference = Opener::with_backend(config, keys(config), job_backends[i]).unwrap();
        let expected = open_one(&mut reference, seq, content_type, &fragments[i]);
        assert_eq!(
            job.result(),
            Some(expected),
            "open_batch job {i} of {count} ({}) disagrees with open_in_place on {config:?}",
            job_backends[i]
        );
        if let Some(p) = job.plaintext() {
            check_accepted(config, &sealed, &fragments[i], seq, p, "open_batch");
        }
    }
    drop(jobs);

    // open_many_in_place against open_in_place of the same records in
    // order on one opener. TLS 1.0: after a rejected record the batch goes
    // on as though it had been accepted (its chained IV), the single open
    // does not, so the two are compared up to the first rejection.
    let mut opener = Opener::with_backend(config, keys(config), many_backend).unwrap();
    let mut reference = Opener::with_backend(config, keys(config), many_backend).unwrap();
    let mut bufs = fragments.clone();
    let mut records: Vec<OpenRecord<'_>> = bufs
        .iter_mut()
        .map(|b| OpenRecord::new(content_type, b))
        .collect();
    opener.open_many_in_place(first_seq, &mut records);
    let mut comparable = true;
    for (i, r) in records.iter().enumerate() {
        let got = r.result().expect("every record gets a result");
        let Some(seq) = first_seq.checked_add(i as u64) else {
            assert_eq!(
                got,
                Err(Error::SequenceOverflow),
                "record {i} past u64::MAX"
            );
            continue;
        };
        if comparable {
            let expected = open_one(&mut reference, seq, content_type, &fragments[i]);
            assert_eq!(
                got, expected,
                "open_many_in_place record {i} of {count} ({many_backend}) disagrees with open_in_place on {config:?}"
            );
            if config.version == ProtocolVersion::Tls10 && expected == Err(Error::BadRecordMac) {
                comparable = false;
            }
        }
        if let Some(p) = r.plaintext() {
            check_accepted(config, &sealed, &fragments[i], seq, p, "open_many_in_place");
        }
    }
});
