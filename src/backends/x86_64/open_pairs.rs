//! The SHA-384 open's prefix on the two-block SHA-512 loop: the hash of
//! each pair of blocks runs with the CBC decryption of the next 256 bytes
//! beside its second block's rounds, which leave the vector and AES units
//! idle (the schedule of both blocks ran beside the first).
//!
//! The fused loop of `stitch` hashes one block at a time between chunks
//! of decryption; where the one-block kernel is slower than the pair loop
//! (see `Tuning::sha384_open_pairs`), the open then ran decrypt-then-hash
//! instead, and paid for the decryption in full. Here the decryption
//! rides in the pair loop's idle units: four blocks a run of sixteen
//! rounds, one AES round after each hash round (AES-256's fifteen steps
//! fit in sixteen rounds).

use super::aes::{AesNiKey, DecryptSteps, Schedule, decrypt_run, load_keys};
use super::sha512::Sha384Avx2;
use super::sha512_pair::{BESIDE_RUNS, Layout, PairSums, compress_pair_beside};
use super::stitch::first_block;
use super::{AesNi, Avx2, load};
use crate::backends::AesKey;

/// The bytes decrypted beside one pair (four blocks a run): the next
/// pair's input, which the loop below needs them to be.
const AHEAD: usize = 64 * BESIDE_RUNS;
const _: () = assert!(AHEAD == 256);

/// The open prefix's hash state after the full 128-byte blocks of
/// `header || region[..hash_len]`, having CBC-decrypted all of `region`
/// (whole blocks) in place from `iv`; `state` is the state before. `None`
/// for a key this loop does not take (the portable one), which the caller
/// then decrypts and hashes apart.
#[allow(clippy::too_many_arguments)]
pub(crate) fn decrypt_hash(
    token: Avx2,
    layout: Layout,
    aes: &AesKey,
    iv: &[u8; 16],
    region: &mut [u8],
    state: &[u64; 8],
    header: &[u8; 13],
    hash_len: usize,
) -> Option<[u64; 8]> {
    let key = aes.aes_ni()?;
    let (r, s, h, n) = (region, state, header, hash_len);
    Some(match key {
        AesNiKey::Aes128(k, ni) => in_layout::<11>(*ni, token, layout, &k.dec, iv, r, s, h, n),
        AesNiKey::Aes256(k, ni) => in_layout::<15>(*ni, token, layout, &k.dec, iv, r, s, h, n),
    })
}

/// [`prefix`] in `layout`.
#[allow(clippy::too_many_arguments)]
fn in_layout<const N: usize>(
    ni: AesNi,
    token: Avx2,
    layout: Layout,
    dec: &Schedule<N>,
    iv: &[u8; 16],
    region: &mut [u8],
    state: &[u64; 8],
    header: &[u8; 13],
    hash_len: usize,
) -> [u64; 8] {
    let _ = ni;
    let (r, s, h, n) = (region, state, header, hash_len);
    match layout {
        // SAFETY: `ni` proves AES-NI, `token` AVX2, BMI1, BMI2, SSSE3 and
        // SSE4.1: the features `prefix` enables.
        Layout::Rolled => unsafe { prefix::<N, true, false>(token, dec, iv, r, s, h, n) },
        // SAFETY: as above.
        Layout::RolledFourStep => unsafe { prefix::<N, true, true>(token, dec, iv, r, s, h, n) },
        // SAFETY: as above.
        Layout::Unrolled => unsafe { prefix::<N, false, false>(token, dec, iv, r, s, h, n) },
    }
}

/// [`decrypt_hash`] for an `N`-key schedule, the pair loop in the layout
/// `ROLLED` and `FOUR` pick (see `sha512_pair::Layout`).
#[target_feature(enable = "aes,avx2,bmi1,bmi2,ssse3,sse4.1")]
fn prefix<const N: usize, const ROLLED: bool, const FOUR: bool>(
    token: Avx2,
    dec: &Schedule<N>,
    iv: &[u8; 16],
    region: &mut [u8],
    state: &[u64; 8],
    header: &[u8; 13],
    hash_len: usize,
) -> [u64; 8] {
    // The steps of four blocks fit in a run of sixteen rounds.
    const { assert!(N <= 16) };
    debug_assert!(region.len().is_multiple_of(16) && hash_len <= region.len());
    let k = load_keys(dec);
    let full = (13 + hash_len) / 128;
    let first = region.len().min(AHEAD);
    let mut prev = decrypt_run(&k, load(iv), &mut region[..first]);
    let mut regs = *state;
    // Zeroed only when a pair runs: short records never need it.
    let mut sums = None;
    // Pair p hashes blocks 2 p and 2 p + 1, the region's bytes up to
    // 256 p + 243, which are decrypted; beside it go bytes 256 (p + 1) to
    // 256 (p + 2). Every bound here is public (lengths only).
    let mut p = 0;
    while 2 * p + 2 <= full && AHEAD * (p + 2) <= region.len() {
        let (done, rest) = region.split_at_mut(AHEAD * (p + 1));
        let next = &mut rest[..AHEAD];
        let head;
        let one: &[u8; 128] = if p == 0 {
            head = first_block::<Sha384Avx2>(header, done);
            &head
        } else {
            block128(done, 256 * p - 13)
        };
        let two = block128(done, 256 * p + 115);
        let mut steps = DecryptSteps::new(&k, prev);
        // SAFETY: this function enables AES-NI and the pair loop's
        // features.
        regs = unsafe {
            let sums = sums.get_or_insert_with(PairSums::new);
            compress_pair_beside::<ROLLED, FOUR>(regs, one, two, sums, |i, t| {
                steps.step(t, next, i)
            })
        };
        prev = steps.prev();
        p += 1;
    }
    let from = region.len().min(AHEAD * (p + 1));
    decrypt_run(&k, prev, &mut region[from..]);
    // The last blocks: at most four (the loop stops with the region
    // ending within 512 bytes of the next pair's start), or all of them
    // when no pair ran.
    let mut b = 2 * p;
    if b == 0 && full > 0 {
        let first = first_block::<Sha384Avx2>(header, region);
        super::sha512::compress512_avx2(token, &mut regs, core::slice::from_ref(&first));
        b = 1;
    }
    if b < full {
        // Through the bulk entry point, which takes the pair loop (with
        // nothing beside) where two blocks are worth it on this CPU
        // (`Tuning::sha512_short_pairs`).
        let (blocks, _) = region[128 * b - 13..128 * full - 13].as_chunks::<128>();
        super::sha512::compress512_avx2(token, &mut regs, blocks);
    }
    regs
}

/// `data[at..at + 128]`.
#[inline(always)]
fn block128(data: &[u8], at: usize) -> &[u8; 128] {
    data[at..at + 128].try_into().expect("128 bytes")
}

#[cfg(test)]
mod tests {
    use super::super::test_rng::SplitMix64;
    use super::*;
    use crate::combination::Cipher;

    /// Decrypts with the `aes`/`cbc` crates and hashes with the `sha2`
    /// crate: what `decrypt_hash` must match.
    fn reference(
        key: &AesKey,
        iv: &[u8; 16],
        region: &mut [u8],
        state: &[u64; 8],
        header: &[u8; 13],
        hash_len: usize,
    ) -> [u64; 8] {
        let mut chain = *iv;
        key.decrypt_cbc(&mut chain, region.as_chunks_mut::<16>().0);
        let mut msg = header.to_vec();
        msg.extend_from_slice(&region[..hash_len]);
        let (blocks, _) = msg.as_chunks::<128>();
        let mut s = *state;
        sha2::block_api::compress512(&mut s, blocks);
        s
    }

    #[test]
    fn matches_decrypt_then_hash() {
        let Some(token) = Avx2::detect() else {
            eprintln!("SKIPPED: SHA-384 pair open prefix (CPU lacks AVX2/BMI2)");
            return;
        };
        let mut rng = SplitMix64(41);
        for cipher in [Cipher::Aes128Cbc, Cipher::Aes256Cbc] {
            let mut raw = vec![0u8; cipher.key_len()];
            rng.fill(&mut raw);
            let Some(ni) = super::super::AesNi::detect() else {
                eprintln!("SKIPPED: SHA-384 pair open prefix (CPU lacks AES-NI)");
                return;
            };
            // The key forms the loop takes: the AES-NI backends' and the
            // VAES backend's, which holds the same schedule.
            let mut keys = vec![AesKey::AesNi(AesNiKey::new(ni, cipher, &raw))];
            if crate::Backend::Vaes512ShaNi.is_available() {
                keys.push(AesKey::new(crate::Backend::Vaes512ShaNi, cipher, &raw));
            } else {
                eprintln!(
                    "SKIPPED: SHA-384 pair open prefix with the VAES key (CPU lacks VAES-512)"
                );
            }
            let portable = AesKey::new(crate::Backend::Portable, cipher, &raw);
            // Regions from one block to past 16 KiB; prefixes from empty
            // to the whole region, and those that end a pair.
            let lens = (1..=48).chain([63, 64, 65, 127, 128, 129, 1025, 1040]);
            for blocks in lens {
                let len = 16 * blocks;
                let mut hash_lens = vec![0, 114, 115, 243, 244, len / 2, len - 1, len];
                hash_lens.push((rng.next() % (len as u64 + 1)) as usize);
                hash_lens.retain(|&n| n <= len);
                for hash_len in hash_lens {
                    let mut iv = [0u8; 16];
                    rng.fill(&mut iv);
                    let mut header = [0u8; 13];
                    rng.fill(&mut header);
                    let state: [u64; 8] = core::array::from_fn(|_| rng.next());
                    let mut data = vec![0u8; len];
                    rng.fill(&mut data);
                    let mut expect = data.clone();
                    let want = reference(&portable, &iv, &mut expect, &state, &header, hash_len);
                    for (aes, layout) in keys.iter().flat_map(|k| {
                        [Layout::Rolled, Layout::RolledFourStep, Layout::Unrolled].map(|l| (k, l))
                    }) {
                        let mut got = data.clone();
                        let regs = decrypt_hash(
                            token, layout, aes, &iv, &mut got, &state, &header, hash_len,
                        )
                        .expect("an AES-NI or VAES key");
                        let form = match aes {
                            AesKey::Vaes512(_) => "VAES key",
                            _ => "AES-NI key",
                        };
                        let what = format!(
                            "{cipher:?}, {form}, {layout:?}, {len} bytes, prefix {hash_len}"
                        );
                        assert!(got == expect, "plaintext, {what}");
                        assert_eq!(regs, want, "state, {what}");
                    }
                }
            }
        }
    }
}
