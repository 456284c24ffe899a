//! The traced side (`ct-check trace-child`): reads one case from stdin,
//! prepares everything, then runs the one call under test between two
//! `int3` markers. Exits 0 if the call gave the answer the case expects.

use std::io::Read;
use std::process::ExitCode;

use cbc_hmac::esp::{EspKeys, EspOpener};
use cbc_hmac::jose::CbcHmacAead;
use cbc_hmac::record::{OpenJob, open_batch};
use cbc_hmac::ssh::{SshKeys, SshOpener};
use cbc_hmac::{Error, HmacKey, Opener, ProtocolVersion, RecordKeys};

use super::case::{Case, Op, Suite};
use super::leaky;
use super::matrix::BATCH_LANES;

/// The content type every traced record is sealed with.
pub const CONTENT_TYPE: u8 = 23;

/// Fixed work buffer: allocated first, so it is at the same address in
/// every run whatever the case. It holds the longest case: an SSH packet
/// of the fixed bound a bad length consumes (256 KiB and the MAC).
const WORK_LEN: usize = 1 << 19;

/// The marker the tracer stops at and stops before.
#[inline(always)]
fn marker() {
    // SAFETY: `int3` only raises SIGTRAP, which the tracer takes; without
    // a tracer the child would die of it, and it is only ever run traced.
    unsafe { core::arch::asm!("int3") };
}

pub fn main() -> ExitCode {
    let mut work = vec![0u8; WORK_LEN];
    let mut input = Vec::with_capacity(WORK_LEN);
    if std::io::stdin().lock().read_to_end(&mut input).is_err() {
        return ExitCode::from(2);
    }
    let Some(case) = Case::decode(&input) else {
        eprintln!("trace-child: bad case");
        return ExitCode::from(2);
    };
    let got = match case.op {
        Op::Verify => verify(&case, &mut work),
        Op::OpenBatch => open_many(&case, &mut work),
        Op::SshOpen => ssh_open(&case, &mut work),
        Op::EspOpen => esp_open(&case, &mut work),
        Op::JoseOpen => jose_open(&case, &mut work),
        _ => open(&case, &mut work),
    };
    match got {
        Ok(got) if got == case.expect => ExitCode::SUCCESS,
        Ok(got) => {
            eprintln!(
                "trace-child: {:?} {:?} on {}: got {got:?}, expected {:?}",
                case.op, case.config, case.backend, case.expect
            );
            ExitCode::from(1)
        }
        Err(e) => {
            eprintln!("trace-child: {e}");
            ExitCode::from(2)
        }
    }
}

fn open(case: &Case, work: &mut [u8]) -> Result<Option<usize>, String> {
    let config = case.config;
    let keys = RecordKeys {
        enc_key: &case.enc_key,
        mac_key: &case.mac_key,
        iv: (config.version == ProtocolVersion::Tls10).then_some(&case.iv[..]),
    };
    let n = case.data.len();
    work[..n].copy_from_slice(&case.data);
    let frag = &mut work[..n];
    let result = if case.op == Op::Open {
        let mut opener = Opener::with_backend(config, keys, case.backend)
            .map_err(|e| format!("opener: {e:?}"))?;
        traced_open(&mut opener, case.seq, frag)
    } else {
        let leak = leaky::Leaky::new(case).map_err(|e| format!("leaky: {e:?}"))?;
        traced_leak(&leak, case.op, case.seq, frag)
    };
    match result {
        Ok(len) => Ok(Some(len)),
        Err(Error::BadRecordMac) => Ok(None),
        Err(e) => Err(format!("open: {e:?}")),
    }
}

/// One open between the markers; the plaintext length is read after.
#[inline(never)]
fn traced_open(opener: &mut Opener, seq: u64, frag: &mut [u8]) -> Result<usize, Error> {
    marker();
    let r = opener
        .open_in_place(seq, CONTENT_TYPE, frag)
        .map(|p| p.len());
    marker();
    r
}

#[inline(never)]
fn traced_leak(leak: &leaky::Leaky, op: Op, seq: u64, frag: &mut [u8]) -> Result<usize, Error> {
    marker();
    let r = leak.open(op, seq, frag);
    marker();
    r
}

/// The batch: every opener and job made before the markers, so the traced
/// part is `open_batch` alone. Returns the mask of lanes that opened.
fn open_many(case: &Case, work: &mut [u8]) -> Result<Option<usize>, String> {
    let config = case.config;
    let keys = RecordKeys {
        enc_key: &case.enc_key,
        mac_key: &case.mac_key,
        iv: (config.version == ProtocolVersion::Tls10).then_some(&case.iv[..]),
    };
    let n = case.data.len();
    let lanes = match case.tag[..] {
        [k] if (1..=BATCH_LANES).contains(&(k as usize)) && n.is_multiple_of(k as usize) => {
            k as usize
        }
        _ => return Err(format!("batch of {n} bytes, record count {:?}", case.tag)),
    };
    let frag_len = n / lanes;
    work[..n].copy_from_slice(&case.data);
    let mut openers = (0..lanes)
        .map(|_| Opener::with_backend(config, keys, case.backend))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("opener: {e:?}"))?;
    let mut jobs: Vec<OpenJob<'_>> = openers
        .iter_mut()
        .zip(work[..n].chunks_mut(frag_len))
        .map(|(o, f)| OpenJob::new(o, case.seq, CONTENT_TYPE, f))
        .collect();
    traced_batch(&mut jobs);
    let mut opened = 0;
    for (i, job) in jobs.iter().enumerate() {
        match job.result() {
            Some(Ok(_)) => opened |= 1 << i,
            Some(Err(Error::BadRecordMac)) => {}
            other => return Err(format!("batch lane {i}: {other:?}")),
        }
    }
    Ok(Some(opened))
}

#[inline(never)]
fn traced_batch(jobs: &mut [OpenJob<'_>]) {
    marker();
    open_batch(jobs);
    marker();
}

fn verify(case: &Case, work: &mut [u8]) -> Result<Option<usize>, String> {
    let key = HmacKey::with_backend(case.alg, &case.mac_key, case.backend)
        .map_err(|e| format!("key: {e:?}"))?;
    let (msg, tag) = work.split_at_mut(WORK_LEN / 2);
    let n = case.data.len();
    msg[..n].copy_from_slice(&case.data);
    let t = case.tag.len();
    tag[..t].copy_from_slice(&case.tag);
    match traced_verify(&key, &msg[..n], &tag[..t]) {
        Ok(()) => Ok(Some(n)),
        Err(Error::BadMac) => Ok(None),
        Err(e) => Err(format!("verify: {e:?}")),
    }
}

#[inline(never)]
fn traced_verify(key: &HmacKey, msg: &[u8], tag: &[u8]) -> Result<(), Error> {
    marker();
    let r = key.verify(msg, tag);
    marker();
    r
}

/// The SSH open in the two steps a transport takes, both traced: the
/// length (which decides how many bytes are read: public) and the
/// packet. After a reject without EtM the opener must ask for the rest of
/// the fixed bound, as a peer sees it do.
fn ssh_open(case: &Case, work: &mut [u8]) -> Result<Option<usize>, String> {
    let Suite::Ssh(suite) = case.suite else {
        return Err("not an SSH case".into());
    };
    let keys = SshKeys {
        enc_key: &case.enc_key,
        iv: &case.iv,
        mac_key: &case.mac_key,
    };
    let mut opener = SshOpener::with_backend(suite, keys, case.seq as u32, case.backend)
        .map_err(|e| format!("opener: {e:?}"))?;
    let n = case.data.len();
    work[..n].copy_from_slice(&case.data);
    match traced_ssh(&mut opener, &mut work[..n]) {
        Ok(len) => Ok(Some(len)),
        Err(Error::AuthenticationFailed) => {
            let left = opener.bytes_to_discard();
            let want = if suite.encrypt_then_mac() {
                0
            } else {
                opener.discard_len() - n
            };
            if left != want {
                return Err(format!("{left} bytes to discard, not {want}"));
            }
            Ok(None)
        }
        Err(e) => Err(format!("SSH open: {e:?}")),
    }
}

#[inline(never)]
fn traced_ssh(opener: &mut SshOpener, packet: &mut [u8]) -> Result<usize, Error> {
    marker();
    let r = opener
        .open_length(packet)
        .and_then(|_| opener.open(packet).map(|p| p.len()));
    marker();
    r
}

fn esp_open(case: &Case, work: &mut [u8]) -> Result<Option<usize>, String> {
    let Suite::Esp(config) = case.suite else {
        return Err("not an ESP case".into());
    };
    let keys = EspKeys {
        enc_key: &case.enc_key,
        auth_key: &case.mac_key,
    };
    let opener = EspOpener::with_backend(config, keys, case.backend)
        .map_err(|e| format!("opener: {e:?}"))?;
    let n = case.data.len();
    work[..n].copy_from_slice(&case.data);
    match traced_esp(&opener, case.seq, &mut work[..n]) {
        Ok(len) => Ok(Some(len)),
        Err(Error::AuthenticationFailed) => Ok(None),
        Err(e) => Err(format!("ESP open: {e:?}")),
    }
}

#[inline(never)]
fn traced_esp(opener: &EspOpener, seq: u64, packet: &mut [u8]) -> Result<usize, Error> {
    marker();
    let r = opener.open_in_place(seq, packet).map(|p| p.payload.len());
    marker();
    r
}

/// The JOSE open; ciphertext, tag, AAD and IV all in the work buffer.
fn jose_open(case: &Case, work: &mut [u8]) -> Result<Option<usize>, String> {
    let Suite::Jose(alg) = case.suite else {
        return Err("not a JOSE case".into());
    };
    let aead = CbcHmacAead::with_backend(alg, &case.enc_key, case.backend)
        .map_err(|e| format!("AEAD: {e:?}"))?;
    let (ct, rest) = work.split_at_mut(WORK_LEN / 2);
    let (tag, rest) = rest.split_at_mut(256);
    let (iv, aad) = rest.split_at_mut(256);
    let (n, t, i, a) = (
        case.data.len(),
        case.tag.len(),
        case.iv.len(),
        case.aad.len(),
    );
    ct[..n].copy_from_slice(&case.data);
    tag[..t].copy_from_slice(&case.tag);
    iv[..i].copy_from_slice(&case.iv);
    aad[..a].copy_from_slice(&case.aad);
    match traced_jose(&aead, &iv[..i], &aad[..a], &mut ct[..n], &tag[..t]) {
        Ok(len) => Ok(Some(len)),
        Err(Error::AuthenticationFailed) => Ok(None),
        Err(e) => Err(format!("JOSE open: {e:?}")),
    }
}

#[inline(never)]
fn traced_jose(
    aead: &CbcHmacAead,
    iv: &[u8],
    aad: &[u8],
    ct: &mut [u8],
    tag: &[u8],
) -> Result<usize, Error> {
    marker();
    let r = aead.open_in_place(iv, aad, ct, tag).map(|p| p.len());
    marker();
    r
}
