//! Two lanes of SHA-1 or SHA-256 and their CBC encryption in one loop,
//! for sealing a few MAC-then-encrypt records at once on CPUs where two
//! SHA-NI streams are the fastest way to hash few lanes: each iteration
//! hashes one block of both lanes ([`sha_ni_x2`]'s rounds) and, between
//! its groups of four rounds, runs the AES rounds that CBC-encrypt the 64
//! bytes of each lane behind its block (`sha1_cbc_x8`'s VAES chains, both
//! lanes in one ymm register, or `cbc_aesni_x8`'s AES-NI ones).
//!
//! Why: a CBC chain is latency-bound, and two SHA-NI streams do not fill
//! the core either; one after the other, each leaves the other's units
//! idle. Measured on AMD family 0x19 model 0x11 (Zen 4) by
//! `stitched_against_separate`, 16 KiB per lane, SHA-256: two lanes
//! 1.71-1.80x the pair's hash followed by the CBC lanes, and four lanes as
//! two calls 1.24-1.33x (the loop runs at about the speed of the CBC
//! chains alone). One loop over two pairs with four chains was slower
//! than two calls (it ran 1.10-1.15x the separate form): the second
//! pair's registers crowd the sixteen xmm registers the SHA-NI
//! instructions can address. What pays for three or four SHA-1 lanes,
//! whose pair hashes faster than the chains encrypt, is one pair hashed
//! ahead and the other pair's hash beside all four chains (a call with
//! four lanes, the chains in two ymm registers): 22.0 against 23.9-24.0
//! us for four lanes of 16 KiB (`stitched_against_separate`), near the 20.8 us
//! the SHA-NI hashing of four lanes takes alone. SHA-256 gained 0.99-1.07x
//! there and nothing in the batch seal, which keeps its pair calls.
//!
//! Without VAES the chains run on AES-NI, one xmm register a lane (a
//! lane's block in flight and its last ciphertext share it: the SHA-NI
//! rounds can only address the sixteen xmm registers, and a pair's hash
//! takes most of them). On AMD family 0x17 model 0x31 (Zen 2), 16 KiB per
//! lane, `stitched_against_separate`: two lanes 1.94x (SHA-1) and 1.66x
//! (SHA-256) the pair's hash followed by the AES-NI CBC lanes, four lanes
//! as two calls 1.46x and 1.22x. There a pair's loop runs at about the
//! speed of its two CBC chains alone (13.1 us for SHA-1, whose pair hash
//! alone takes about 12.5), so one pair hashed ahead gains nothing for
//! SHA-1 (0.98-1.00x) and little for SHA-256 (1.02-1.05x).
//! `cpu::Tuning::stitched_ni_pairs` enables the loop where it was measured.
//!
//! In place, with the contract of `sha1_cbc_x8`: lane `i` is hashed from
//! `hash_at` and encrypted from `cbc_at <= hash_at`; both hashed lanes'
//! blocks are loaded before the iteration stores any ciphertext, and the
//! stores stay at or below the bytes loaded.
//!
//! [`sha_ni_x2`]: super::sha_ni_x2

use core::arch::x86_64::*;

use super::super::ShaNi;
use super::Cbc;
use super::cbc_aesni_x8::Chains as NiChains;
use super::cbc_x16::LaneKeys;
use super::sha_ni_x2::NiPair;
use super::sha1_cbc_x8::{Chained, Chains as VaesChains, lane_pointers};

/// The lanes a call hashes.
pub(crate) const LANES: usize = 2;

/// The most lanes a call encrypts.
pub(crate) const WIDE_LANES: usize = 4;

/// The hash `H` of `blocks` blocks of lanes 0 and 1 of `bufs` (those there
/// are) from `bufs[i][hash_at..]` into `states[i]`, and CBC encryption in
/// place of `bufs[i][cbc_at..cbc_at + 64 blocks]` for every lane `i <
/// bufs.len()` (at most 4) with the round keys of lane `2 pair + i` of
/// `keys`, chaining from `ivs[i]`, which becomes the last ciphertext
/// block. The chains run on `cbc`'s kernel: VAES (both lanes of a pair in
/// one ymm register, of the registers past the sixteen SHA-NI can use) or
/// AES-NI (one xmm register a lane). Lanes 2 and 3 are only encrypted,
/// their hash left to the caller (run before, as it reads the plaintext):
/// for three or four lanes whose hash is faster than their chains (SHA-1),
/// one pair hashed ahead and the other beside all the chains costs less
/// than a call per pair, each bound by its chains. The other lanes' states
/// and keys are not used or changed.
///
/// # Panics
/// If there are more than 4 lanes, lanes past `keys`' sixteen, fewer IVs
/// than lanes, `cbc_at > hash_at`, or a buffer shorter than `hash_at + 64
/// blocks`: the batch layer sizes them (public lengths), so a panic is a
/// bug there.
#[allow(clippy::too_many_arguments)]
pub(crate) fn ni_cbc<H: NiPair, const N: usize>(
    cbc: Cbc,
    ni: ShaNi,
    states: &mut [H::State; LANES],
    keys: &LaneKeys<N>,
    pair: usize,
    ivs: &mut [[u8; 16]],
    bufs: &mut [&mut [u8]],
    hash_at: usize,
    cbc_at: usize,
    blocks: usize,
) {
    let _ = ni;
    let lanes = bufs.len();
    assert!((1..=WIDE_LANES).contains(&lanes), "1 to 4 lanes");
    assert!(2 * pair + lanes <= 16, "lanes of sixteen");
    let mut scratch = [0u8; 64];
    let (hash, at, step) = lane_pointers(bufs, ivs.len(), &mut scratch, hash_at, cbc_at, blocks);
    if blocks == 0 {
        return;
    }
    let mut chain = [[0u8; 16]; 8];
    chain[..lanes].copy_from_slice(&ivs[..lanes]);
    let mut s = *states;
    let run = Loop {
        states: &mut s,
        keys,
        first: 2 * pair,
        ivs: &mut chain,
        hash,
        cbc: at,
        step,
        blocks,
    };
    // SAFETY: `ni` proves SHA-NI, SSE2, SSSE3 and SSE4.1; `cbc`'s token
    // AVX-512 F/BW/VL, VAES and AES-NI, or AES-NI: each kernel's features.
    // `lane_pointers` checked and derived the pointers as the kernel needs
    // them (see there), `bufs` and `scratch` borrowed for the call; `first
    // + lanes <= 16`.
    unsafe {
        match (cbc, lanes) {
            (Cbc::Vaes(_), ..=LANES) => vaes::<H, N, VaesChains<'_, N, 1>>(run),
            (Cbc::Vaes(_), _) => vaes::<H, N, VaesChains<'_, N, 2>>(run),
            (Cbc::AesNi(_), 1) => aes_ni::<H, N, NiChains<'_, N, 1>>(run),
            (Cbc::AesNi(_), 2) => aes_ni::<H, N, NiChains<'_, N, 2>>(run),
            (Cbc::AesNi(_), 3) => aes_ni::<H, N, NiChains<'_, N, 3>>(run),
            (Cbc::AesNi(_), _) => aes_ni::<H, N, NiChains<'_, N, 4>>(run),
        }
    }
    let hashed = lanes.min(LANES);
    states[..hashed].copy_from_slice(&s[..hashed]);
    ivs[..lanes].copy_from_slice(&chain[..lanes]);
}

/// One call's loop: the hashed pair's states, the chains' keys (lanes
/// from `first`) and chaining values, and `sha1_cbc_x8`'s lane pointers.
struct Loop<'a, 'k, H: NiPair, const N: usize> {
    states: &'a mut [H::State; LANES],
    keys: &'k LaneKeys<N>,
    first: usize,
    ivs: &'a mut [[u8; 16]; 8],
    hash: [*const u8; 8],
    cbc: [*mut u8; 8],
    step: [usize; 8],
    blocks: usize,
}

impl<'k, H: NiPair, const N: usize> Loop<'_, 'k, H, N> {
    /// One block of both hashed lanes an iteration, the chains' rounds
    /// between the hash's round groups.
    ///
    /// # Safety
    /// The features of the kernel it is inlined into (the chains' and
    /// SHA-NI's), and the pointers of `sha1_cbc_x8`'s kernel: for each
    /// lane, the 64 bytes at `hash[i] + 64 b` readable and those at
    /// `cbc[i] + step[i] b` writable for `b < blocks`, a lane's writes at
    /// or below its reads; the chains' lanes within `keys`' sixteen.
    #[inline(always)]
    unsafe fn run<C: Chained<'k, N>>(self) {
        let mut chains = C::start(self.keys, self.first, self.ivs);
        let (mut x, mut y) = H::pair_in(self.states);
        for b in 0..self.blocks {
            // Both blocks in registers before anything is stored.
            let w: [[__m128i; 4]; 2] = core::array::from_fn(|i| {
                core::array::from_fn(|q| {
                    // SAFETY: the caller's ranges: 64 readable bytes of
                    // lane i at block b.
                    unsafe { _mm_loadu_si128(self.hash[i].add(64 * b + 16 * q).cast()) }
                })
            });
            chains.at(&self.cbc, &self.step, b);
            H::pair_block(&mut x, &mut y, H::words(w), &mut chains);
        }
        H::pair_out(x, y, self.states);
        chains.store(self.ivs);
    }
}

/// The loop on VAES chains (`C`: one or two ymm registers).
///
/// # Safety
/// As [`Loop::run`], on a CPU with AVX-512 F/BW/VL, VAES, AES-NI, SHA-NI
/// and SSE4.1.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,vaes,aes,sha,sse4.1")]
unsafe fn vaes<'k, H: NiPair, const N: usize, C: Chained<'k, N>>(run: Loop<'_, 'k, H, N>) {
    // SAFETY: the caller's.
    unsafe { run.run::<C>() }
}

/// The loop on AES-NI chains (`C`: one xmm register a lane).
///
/// # Safety
/// As [`Loop::run`], on a CPU with AES-NI, SHA-NI and SSE4.1.
#[target_feature(enable = "aes,sha,sse2,ssse3,sse4.1")]
unsafe fn aes_ni<'k, H: NiPair, const N: usize, C: Chained<'k, N>>(run: Loop<'_, 'k, H, N>) {
    // SAFETY: the caller's.
    unsafe { run.run::<C>() }
}

#[cfg(test)]
mod tests {
    use super::super::super::aes::Schedule;
    use super::super::super::test_rng::SplitMix64;
    use super::super::super::{AesNi, Vaes512};
    use super::super::sha_ni_x2::{NiPair, compress_x2};
    use super::super::sha1_cbc_x8::sha1_cbc_x8;
    use super::super::sha1_cbc_x8::tests::against_portable;
    use super::super::sha1_x16::tests::{ROUNDS, Timing, alternate, cpu_name};
    use super::super::{cbc_aesni_x8, cbc_x16};
    use super::{Cbc, LANES, LaneKeys, ShaNi, WIDE_LANES, ni_cbc};
    use crate::backends::portable::CrateCompress;
    use crate::primitives::hash::{Compress, Sha1, Sha256};

    /// The chains of each kind this CPU has, with SHA-NI; says what it
    /// skips and why.
    fn kinds(what: &str) -> Vec<(Cbc, ShaNi)> {
        let Some(ni) = ShaNi::detect() else {
            eprintln!("SKIPPED: {what} (CPU lacks SHA-NI)");
            return Vec::new();
        };
        let mut kinds = Vec::new();
        match Vaes512::detect() {
            Some(t) => kinds.push((Cbc::Vaes(t), ni)),
            None => eprintln!("SKIPPED: {what}, VAES chains (CPU lacks AVX-512)"),
        }
        match AesNi::detect() {
            Some(a) => kinds.push((Cbc::AesNi(a), ni)),
            None => eprintln!("SKIPPED: {what}, AES-NI chains (CPU lacks AES-NI)"),
        }
        kinds
    }

    fn aes_of(cbc: Cbc) -> AesNi {
        match cbc {
            Cbc::Vaes(t) => t.aes_ni(),
            Cbc::AesNi(a) => a,
        }
    }

    fn name(cbc: Cbc) -> &'static str {
        match cbc {
            Cbc::Vaes(_) => "VAES",
            Cbc::AesNi(_) => "AES-NI",
        }
    }

    /// The kernel for `H` (state of `W` words) through the eight-lane
    /// interface of the shared test, 1 to 4 lanes: lanes 2 and 3 hashed
    /// first (the portable compression, as the caller would), then
    /// encrypted beside the first pair.
    fn check<H: NiPair<State = [u32; W], Block = [u8; 64]>, const N: usize, const W: usize>(
        cbc: Cbc,
        ni: ShaNi,
    ) where
        CrateCompress: Compress<H>,
    {
        let compress =
            |s: &mut [u32; W], b: &[[u8; 64]]| Compress::<H>::compress(&CrateCompress, s, b);
        against_portable::<N, W>(
            aes_of(cbc),
            WIDE_LANES,
            &|states, keys, ivs, bufs, hash_at, cbc_at, blocks| {
                for (lane, buf) in bufs.iter().enumerate().skip(LANES) {
                    let (whole, _) = buf[hash_at..].as_chunks::<64>();
                    compress(&mut states[lane], &whole[..blocks]);
                }
                let mut pair = [states[0], states[1]];
                ni_cbc::<H, N>(
                    cbc, ni, &mut pair, keys, 0, ivs, bufs, hash_at, cbc_at, blocks,
                );
                states[..LANES].copy_from_slice(&pair);
            },
            compress,
        )
    }

    /// Both chain kinds (those this CPU has), every lane count.
    #[test]
    fn matches_portable() {
        for (cbc, ni) in kinds("ni_cbc against the portable SHA-1, SHA-256 and CBC") {
            check::<Sha1, 11, 5>(cbc, ni);
            check::<Sha1, 15, 5>(cbc, ni);
            check::<Sha256, 11, 8>(cbc, ni);
            check::<Sha256, 15, 8>(cbc, ni);
        }
    }

    /// A later pair of `keys`' lanes encrypts as the first pair does with
    /// the same keys there (the other lanes' keys differ).
    #[test]
    fn pair_selects_its_keys() {
        for (cbc, ni) in kinds("ni_cbc key pairs") {
            pair_keys(cbc, ni);
        }
    }

    fn pair_keys(t: Cbc, ni: ShaNi) {
        let mut rng = SplitMix64(0x9a12);
        let ours: [Schedule<11>; 2] =
            core::array::from_fn(|_| Schedule(rng.blocks(11).try_into().expect("11")));
        let other = Schedule(rng.blocks(11).try_into().expect("11"));
        let mut data = vec![vec![0u8; 64 * 3 + 51]; 2];
        data.iter_mut().for_each(|d| rng.fill(d));
        let run = |keys: &LaneKeys<11>, pair: usize| {
            let mut bufs = data.clone();
            let mut ivs = [[7u8; 16]; 2];
            let mut states = [[1u32; 8]; 2];
            let mut views: Vec<&mut [u8]> = bufs.iter_mut().map(|b| &mut b[..]).collect();
            ni_cbc::<Sha256, 11>(
                t,
                ni,
                &mut states,
                keys,
                pair,
                &mut ivs,
                &mut views,
                51,
                0,
                3,
            );
            (bufs, ivs, states)
        };
        let mut first = LaneKeys::<11>::new();
        let mut later = LaneKeys::<11>::new();
        for lane in 0..16 {
            later.set_lane(lane, &other);
        }
        for (i, s) in ours.iter().enumerate() {
            first.set_lane(i, s);
            later.set_lane(10 + i, s);
        }
        let want = run(&first, 0);
        assert_eq!(run(&later, 5), want, "pair 5");
        assert_ne!(run(&later, 0).0, want.0, "pair 0 of other keys");
    }

    /// The stitched pairs against what the batch seal runs without them,
    /// over 16 KiB per lane, for 2 to 4 lanes (as calls of one pair at a
    /// time) on this CPU: for SHA-256, the lanes hashed two streams at a
    /// time, then the CBC lanes; for SHA-1, the stitched eight-lane loop
    /// (`sha1_cbc_x8`). For 3 and 4 lanes also one pair hashed ahead, then
    /// one call over all lanes. Prints the figures; asserts only that every
    /// way gives the same states and bytes.
    #[test]
    fn stitched_against_separate() {
        for (cbc, ni) in kinds("ni_cbc against the batch seal's other loops") {
            against_separate(cbc, ni);
        }
    }

    fn against_separate(t: Cbc, ni: ShaNi) {
        const BLOCKS: usize = 256;
        // The hash 51 bytes ahead, as the batch seal runs it.
        const AHEAD: usize = 51;
        let mut rng = SplitMix64(0x57c9);
        let mut keys = LaneKeys::<11>::new();
        let mut schedules = Vec::new();
        for lane in 0..8 {
            let rows: [[u8; 16]; 11] = core::array::from_fn(|_| rng.blocks(1)[0]);
            keys.set_lane(lane, &Schedule(rows));
            schedules.push(Schedule(rows));
        }
        let schedules: Vec<&Schedule<11>> = schedules.iter().collect();
        // The CBC lanes after the hash, as the batch seal runs them.
        let cbc_lanes = |v: &mut [[u8; 16]], views: &mut [&mut [u8]]| match t {
            Cbc::Vaes(t) => cbc_x16::cbc_encrypt_x16(t, &keys, v, views, 4 * BLOCKS),
            Cbc::AesNi(a) => cbc_aesni_x8::cbc_encrypt_x8(a, &schedules, v, views, 4 * BLOCKS),
        };
        /// The CBC lanes after the hash.
        type CbcLanes<'f> = &'f dyn Fn(&mut [[u8; 16]], &mut [&mut [u8]]);
        /// The lanes hashed two streams at a time, then encrypted.
        fn hash_then_cbc<H: NiPair<State = [u32; W]>, const W: usize>(
            ni: ShaNi,
            b: &mut [Vec<u8>],
            s: &mut [[u32; W]; 8],
            v: &mut [[u8; 16]],
            cbc_lanes: CbcLanes<'_>,
        ) {
            for (p, pair) in b.chunks(LANES).enumerate() {
                let data = [&pair[0][AHEAD..], &pair[pair.len() - 1][AHEAD..]];
                let mut x = [s[2 * p], s[2 * p + 1]];
                compress_x2::<H>(ni, &mut x, &data, BLOCKS);
                s[2 * p..2 * p + pair.len()].copy_from_slice(&x[..pair.len()]);
            }
            let mut views: Vec<&mut [u8]> = b.iter_mut().map(|b| &mut b[..64 * BLOCKS]).collect();
            cbc_lanes(v, &mut views);
        }
        // Pair by pair, as the batch seal calls the kernel, or with the
        // lanes past the first pair hashed `ahead` first.
        fn pairs<H: NiPair<State = [u32; W]>, const W: usize>(
            t: Cbc,
            ni: ShaNi,
            keys: &LaneKeys<11>,
            bufs: &mut [Vec<u8>],
            states: &mut [[u32; W]; 8],
            ivs: &mut [[u8; 16]],
            ahead: bool,
        ) {
            let lanes = bufs.len();
            if ahead {
                let last = lanes - 1;
                let mut s = [states[2], states[last]];
                compress_x2::<H>(
                    ni,
                    &mut s,
                    &[&bufs[2][AHEAD..], &bufs[last][AHEAD..]],
                    BLOCKS,
                );
                states[2..lanes].copy_from_slice(&s[..lanes - 2]);
                let mut views: Vec<&mut [u8]> = bufs.iter_mut().map(|b| &mut b[..]).collect();
                let mut pair = [states[0], states[1]];
                ni_cbc::<H, 11>(t, ni, &mut pair, keys, 0, ivs, &mut views, AHEAD, 0, BLOCKS);
                states[..2].copy_from_slice(&pair);
                return;
            }
            for (p, (pair, ivs)) in bufs
                .chunks_mut(LANES)
                .zip(ivs.chunks_mut(LANES))
                .enumerate()
            {
                let mut views: Vec<&mut [u8]> = pair.iter_mut().map(|b| &mut b[..]).collect();
                let mut s = [states[2 * p], states[2 * p + 1]];
                ni_cbc::<H, 11>(t, ni, &mut s, keys, p, ivs, &mut views, AHEAD, 0, BLOCKS);
                states[2 * p..2 * p + 2].copy_from_slice(&s);
            }
        }
        /// The separate way, the pairs and (for more than two lanes) one
        /// pair ahead, alternated over copies of the same lanes; the three
        /// ways' states must agree.
        #[allow(clippy::type_complexity)]
        fn ways<H: NiPair<State = [u32; W]>, const W: usize>(
            t: Cbc,
            ni: ShaNi,
            keys: &LaneKeys<11>,
            [b1, b2, b3]: &mut [Vec<Vec<u8>>; 3],
            [v1, v2, v3]: &mut [Vec<[u8; 16]>; 3],
            cbc_lanes: CbcLanes<'_>,
            mut separate: Option<
                &mut dyn FnMut(&mut Vec<Vec<u8>>, &mut [[u32; W]; 8], &mut Vec<[u8; 16]>),
            >,
        ) -> Vec<Timing> {
            let lanes = b1.len();
            let mut s = [[[0u32; W]; 8]; 3];
            let [s1, s2, s3] = &mut s;
            let mut first = || match separate.as_mut() {
                Some(separate) => separate(b1, s1, v1),
                None => hash_then_cbc::<H, W>(ni, b1, s1, v1, cbc_lanes),
            };
            let mut paired = || pairs::<H, W>(t, ni, keys, b2, s2, v2, false);
            let mut wide = || pairs::<H, W>(t, ni, keys, b3, s3, v3, true);
            let m = if lanes > LANES {
                alternate(&mut [&mut first, &mut paired, &mut wide])
            } else {
                alternate(&mut [&mut first, &mut paired])
            };
            for w in 1..m.len() {
                assert_eq!(
                    s[w][..lanes],
                    s[0][..lanes],
                    "{lanes} lanes, way {w}: states"
                );
            }
            m
        }
        for sha in [1, 256] {
            for lanes in 2..=4 {
                let data: Vec<Vec<u8>> = (0..lanes)
                    .map(|_| {
                        let mut b = vec![0u8; 64 * BLOCKS + 64];
                        rng.fill(&mut b);
                        b
                    })
                    .collect();
                let mut b = [data.clone(), data.clone(), data];
                let mut v = [(); 3].map(|_| vec![[0u8; 16]; lanes]);
                let ahead = lanes > LANES;
                let (b, v, k) = (&mut b, &mut v, &keys);
                let (m, other) = match (sha, t) {
                    (1, Cbc::Vaes(x8)) => {
                        let mut eight = |b: &mut Vec<Vec<u8>>, s: &mut _, v: &mut Vec<_>| {
                            let mut views: Vec<&mut [u8]> =
                                b.iter_mut().map(|b| &mut b[..]).collect();
                            sha1_cbc_x8::<11>(x8, s, k, v, &mut views, AHEAD, 0, BLOCKS);
                        };
                        let m = ways::<Sha1, 5>(t, ni, k, b, v, &cbc_lanes, Some(&mut eight));
                        (m, "the eight-lane stitched loop")
                    }
                    (1, _) => {
                        let m = ways::<Sha1, 5>(t, ni, k, b, v, &cbc_lanes, None);
                        (m, "hash in pairs then CBC")
                    }
                    _ => {
                        let m = ways::<Sha256, 8>(t, ni, k, b, v, &cbc_lanes, None);
                        (m, "hash in pairs then CBC")
                    }
                };
                for w in 1..m.len() {
                    assert_eq!(
                        (&b[w], &v[w]),
                        (&b[0], &v[0]),
                        "SHA-{sha}, {lanes} lanes, way {w}: bytes or IVs differ"
                    );
                }
                print!(
                    "SHA-{sha} + AES-128-CBC, {} chains, {lanes} lanes of 16 KiB on {}: \
                     {other} {:.1} us, SHA-NI pairs {:.1} us, ratio {:.2}",
                    name(t),
                    cpu_name(),
                    m[0].median * 1e6,
                    m[1].median * 1e6,
                    1.0 / m[1].ratio
                );
                if ahead {
                    print!(
                        "; one pair ahead, then one call {:.1} us, {:.2}x the pairs",
                        m[2].median * 1e6,
                        m[1].median / m[2].median
                    );
                }
                println!(" (medians of {ROUNDS} rounds)");
            }
        }
    }
}
