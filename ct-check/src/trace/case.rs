//! One traced run's input, as the tracer sends it to the child's stdin.

use cbc_hmac::esp::{EspConfig, EspIntegrity};
use cbc_hmac::jose::ContentEncryption;
use cbc_hmac::ssh::SshSuite;
use cbc_hmac::{
    Backend, Cipher, Combination, MacAlgorithm, MacOrder, ProtocolVersion, RecordConfig,
};

/// What the child runs between the markers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// `Opener::open_in_place` on the record.
    Open,
    /// `record::open_batch` on `tag[0]` (at most [`BATCH_LANES`]) records
    /// of equal length (`data` holds them back to back), one opener each;
    /// `expect` is the mask of lanes that must open.
    ///
    /// [`BATCH_LANES`]: super::matrix::BATCH_LANES
    OpenBatch,
    /// `HmacKey::verify` of `tag` over the message.
    Verify,
    /// `SshOpener::open_length` on the packet's first bytes, then
    /// `SshOpener::open` on as many bytes as that answers (`data`: the
    /// packet as received; `iv`: the initial IV; `seq`: the packet's
    /// sequence number).
    SshOpen,
    /// `EspOpener::open_in_place` as sequence number `seq` (`data`: the
    /// packet from the SPI on; `mac_key`: the integrity key).
    EspOpen,
    /// `CbcHmacAead::open_in_place` (`enc_key`: the whole key `K`;
    /// `data`: the ciphertext; `iv`, `aad` and `tag` as sent).
    JoseOpen,
    /// The planted leaks of the self-test (see `leaky`).
    LeakBranch,
    LeakTable,
    LeakNaive,
}

impl Op {
    const ALL: [Op; 9] = [
        Op::Open,
        Op::OpenBatch,
        Op::Verify,
        Op::SshOpen,
        Op::EspOpen,
        Op::JoseOpen,
        Op::LeakBranch,
        Op::LeakTable,
        Op::LeakNaive,
    ];
}

/// The format and suite of a case: the record configuration is
/// [`Case::config`]; the other formats name theirs here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Suite {
    Record,
    Ssh(SshSuite),
    Esp(EspConfig),
    Jose(ContentEncryption),
}

/// The SPI of every traced ESP packet.
pub const ESP_SPI: u32 = 0x0100_0001;

/// Every ESP configuration a case can name: each cipher with each
/// integrity algorithm, without and with ESN.
fn esp_configs() -> Vec<EspConfig> {
    let mut out = Vec::new();
    for cipher in [Cipher::Aes128Cbc, Cipher::Aes256Cbc] {
        for integrity in EspIntegrity::ALL {
            for esn in [false, true] {
                out.push(EspConfig {
                    cipher,
                    integrity,
                    spi: ESP_SPI,
                    esn,
                });
            }
        }
    }
    out
}

impl Suite {
    fn encode(self) -> [u8; 2] {
        match self {
            Suite::Record => [0, 0],
            Suite::Ssh(s) => [1, index(&SshSuite::ALL, &s)],
            Suite::Esp(c) => [2, index(&esp_configs(), &c)],
            Suite::Jose(a) => [3, index(&ContentEncryption::ALL, &a)],
        }
    }

    fn decode(kind: u8, i: u8) -> Option<Suite> {
        let i = i as usize;
        Some(match kind {
            0 => Suite::Record,
            1 => Suite::Ssh(*SshSuite::ALL.get(i)?),
            2 => Suite::Esp(*esp_configs().get(i)?),
            3 => Suite::Jose(*ContentEncryption::ALL.get(i)?),
            _ => return None,
        })
    }
}

/// A case. For [`Op::Verify`] `data` is the message and `mac_key` the
/// HMAC key; for the record opens `data` is the fragment; the format
/// opens say at their [`Op`].
#[derive(Clone, Debug)]
pub struct Case {
    pub op: Op,
    pub backend: Backend,
    pub config: RecordConfig,
    /// [`Suite::Record`] for the record opens and verify.
    pub suite: Suite,
    pub alg: MacAlgorithm,
    pub seq: u64,
    /// `Some(plaintext length)` if the record must open (the tag verify).
    pub expect: Option<usize>,
    pub enc_key: Vec<u8>,
    pub mac_key: Vec<u8>,
    pub iv: Vec<u8>,
    pub data: Vec<u8>,
    pub tag: Vec<u8>,
    /// The additional authenticated data (JOSE only).
    pub aad: Vec<u8>,
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
        out.extend_from_slice(&self.suite.encode());
        out.extend_from_slice(&self.seq.to_le_bytes());
        out.extend_from_slice(&(self.expect.unwrap_or(0) as u32).to_le_bytes());
        for field in [
            &self.enc_key,
            &self.mac_key,
            &self.iv,
            &self.data,
            &self.tag,
            &self.aad,
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
        let suite = Suite::decode(r.u8()?, r.u8()?)?;
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
            suite,
            alg,
            seq,
            expect: accept.then_some(len),
            enc_key: field()?,
            mac_key: field()?,
            iv: field()?,
            data: field()?,
            tag: field()?,
            aad: field()?,
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
