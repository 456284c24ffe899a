//! One traced run's input, as the tracer sends it to the child's stdin.

use cbc_hmac::{Backend, Combination, MacAlgorithm, MacOrder, ProtocolVersion, RecordConfig};

/// What the child runs between the markers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// `Opener::open_in_place` on the record.
    Open,
    /// `record::open_batch` on [`BATCH_LANES`] records of equal length
    /// (`data` holds them back to back), one opener each; `expect` is the
    /// mask of lanes that must open.
    ///
    /// [`BATCH_LANES`]: super::matrix::BATCH_LANES
    OpenBatch,
    /// `HmacKey::verify` of `tag` over the message.
    Verify,
    /// The planted leaks of the self-test (see `leaky`).
    LeakBranch,
    LeakTable,
    LeakNaive,
}

impl Op {
    const ALL: [Op; 6] = [
        Op::Open,
        Op::OpenBatch,
        Op::Verify,
        Op::LeakBranch,
        Op::LeakTable,
        Op::LeakNaive,
    ];
}

/// A case. For [`Op::Verify`] `data` is the message and `mac_key` the
/// HMAC key; otherwise `data` is the fragment.
#[derive(Clone, Debug)]
pub struct Case {
    pub op: Op,
    pub backend: Backend,
    pub config: RecordConfig,
    pub alg: MacAlgorithm,
    pub seq: u64,
    /// `Some(plaintext length)` if the record must open (the tag verify).
    pub expect: Option<usize>,
    pub enc_key: Vec<u8>,
    pub mac_key: Vec<u8>,
    pub iv: Vec<u8>,
    pub data: Vec<u8>,
    pub tag: Vec<u8>,
}

fn index<T: PartialEq>(all: &[T], x: &T) -> u8 {
    all.iter().position(|a| a == x).expect("listed") as u8
}

impl Case {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = vec![
            index(&Op::ALL, &self.op),
            index(&Backend::ALL, &self.backend),
            index(&Combination::ALL, &self.config.combination),
            index(&ProtocolVersion::ALL, &self.config.version),
            index(&MacOrder::ALL, &self.config.mac_order),
            index(&MacAlgorithm::ALL, &self.alg),
            u8::from(self.expect.is_some()),
        ];
        out.extend_from_slice(&self.seq.to_le_bytes());
        out.extend_from_slice(&(self.expect.unwrap_or(0) as u32).to_le_bytes());
        for field in [
            &self.enc_key,
            &self.mac_key,
            &self.iv,
            &self.data,
            &self.tag,
        ] {
            out.extend_from_slice(&(field.len() as u32).to_le_bytes());
            out.extend_from_slice(field);
        }
        out
    }

    pub fn decode(input: &[u8]) -> Option<Case> {
        let mut r = Reader(input);
        let op = *Op::ALL.get(r.u8()? as usize)?;
        let backend = *Backend::ALL.get(r.u8()? as usize)?;
        let combination = *Combination::ALL.get(r.u8()? as usize)?;
        let version = *ProtocolVersion::ALL.get(r.u8()? as usize)?;
        let order = *MacOrder::ALL.get(r.u8()? as usize)?;
        let alg = *MacAlgorithm::ALL.get(r.u8()? as usize)?;
        let accept = r.u8()? == 1;
        let seq = u64::from_le_bytes(r.take(8)?.try_into().ok()?);
        let len = u32::from_le_bytes(r.take(4)?.try_into().ok()?) as usize;
        let mut field = || {
            let n = u32::from_le_bytes(r.take(4)?.try_into().ok()?) as usize;
            Some(r.take(n)?.to_vec())
        };
        Some(Case {
            op,
            backend,
            config: RecordConfig::new(combination, version, order),
            alg,
            seq,
            expect: accept.then_some(len),
            enc_key: field()?,
            mac_key: field()?,
            iv: field()?,
            data: field()?,
            tag: field()?,
        })
    }
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Some(a)
    }

    fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }
}
