//! Up to eight lanes hashed and CBC-encrypted in one loop, for sealing a
//! few MAC-then-encrypt records at once: each iteration runs one SHA-1
//! block of every lane (ymm, the round code of `sha_x8`) and, between its
//! rounds, the AES rounds that CBC-encrypt the 64 bytes of each lane
//! behind that block (VAES on ymm, two lanes per register).
//!
//! Why: a CBC chain is latency-bound (each AES round waits for the one
//! before), so the chains of a few lanes run alone leave the vector units
//! mostly idle, while the hash rounds are bound by throughput. An AES
//! round every round or two of the hash fills those gaps. Measured on
//! Intel family 6 model 0xA7 (`stitched_against_separate`), 16 KiB per
//! lane: 1.31-1.34x the eight-lane hash followed by the CBC lanes for four
//! lanes, 1.14-1.16x for eight; on AMD family 0x19 model 0x11 (Zen 4),
//! 1.36x for four and 1.24x for eight. The same loop over the SHA-256 rounds only
//! broke even (0.99-1.01x): they leave no port time for the AES rounds.
//! Nor does it pay past eight lanes: over the sixteen-lane hash with zmm
//! chains beside it, it ran 1.07x the two apart for twelve lanes and 1.01x
//! for sixteen, whose hash keeps both 512-bit ports busy while sixteen
//! chains alone already keep port 0's AES unit mostly busy. On Zen 4,
//! whose 512-bit operations take two passes through the 256-bit units,
//! the same sixteen-lane form ran 0.98x (61.0 against 60.0 us for sixteen
//! lanes of 16 KiB); two calls of this loop, eight lanes each, 0.94-1.01x.
//!
//! In place: lane `i` is hashed from `hash_at` and encrypted from `cbc_at
//! <= hash_at` of its buffer. An iteration loads its hash block before it
//! stores any ciphertext, and it stores only the 64 bytes at `cbc_at + 64
//! b`, none past the end of the block it loaded: the hash never reads a
//! byte the encryption has overwritten.

use core::arch::x86_64::*;

use super::super::Vaes512;
use super::cbc_x16::LaneKeys;
use super::sha_x8::{load_words, transpose_in, transpose_out};
use super::sha1_x16::{self, by_index};
use super::words::RoundHook;

/// The most lanes a call takes.
pub(crate) const LANES: usize = 8;

// The helpers below are `#[inline(always)]` and reached only from the
// kernel, a `#[target_feature]` function with AVX-512 F/BW/VL, VAES and
// AES-NI into which they are inlined (see `words`).

/// The AES side of the loop: `R` ymm registers of two lanes' CBC chains.
/// Each block of 64 bytes per lane is `4 N` steps (per AES block: the
/// load and whitening, `N - 2` rounds, the last round and the store),
/// spread evenly over the hash's rounds.
///
/// ymm, not zmm as in `cbc_x16`: on Intel, while 512-bit instructions are
/// in flight port 1 runs no vector instructions, and the eight-lane hash
/// rounds need it (measured on family 6 model 0xA7, four lanes of 16 KiB:
/// with zmm chains the loop was 0.88-1.02x the hash and CBC run one after
/// the other).
pub(super) struct Chains<'k, const N: usize, const R: usize> {
    keys: &'k LaneKeys<N>,
    /// Register `r` runs lanes `2 (first + r)` and `2 (first + r) + 1` of
    /// `keys`.
    first: usize,
    /// Each lane's 64 bytes for this iteration (a lane without a record
    /// points at a scratch block).
    p: [*mut u8; 8],
    /// The block in flight, between rounds.
    x: [__m256i; R],
    /// The last ciphertext block of each lane.
    chain: [__m256i; R],
}

/// Round key `i` of lanes `2 r` and `2 r + 1`: half a row of `keys`.
#[inline(always)]
fn round_key<const N: usize>(keys: &LaneKeys<N>, r: usize, i: usize) -> __m256i {
    let half = &keys.rk[r / 2][i][32 * (r % 2)..32 * (r % 2) + 32];
    // SAFETY: 32 readable bytes, 32-byte aligned (`LaneKeys` rows are
    // 64-byte aligned); AVX as said above.
    unsafe { _mm256_load_si256(half.as_ptr().cast()) }
}

/// Block `at` (a byte offset) of lanes `p[0]` and `p[1]`.
///
/// # Safety
/// `p[j] + at .. + 16` must be readable for `j < 2`.
#[inline(always)]
unsafe fn gather2(p: &[*mut u8], at: usize) -> __m256i {
    // SAFETY: the caller's bytes; `loadu` needs no alignment; AVX2 as said
    // above.
    unsafe {
        let lo = _mm_loadu_si128(p[0].add(at).cast());
        let hi = _mm_loadu_si128(p[1].add(at).cast());
        _mm256_inserti128_si256::<1>(_mm256_castsi128_si256(lo), hi)
    }
}

/// Stores the halves of `y` at `p[0] + at` and `p[1] + at`.
///
/// # Safety
/// `p[j] + at .. + 16` must be writable for `j < 2`.
#[inline(always)]
unsafe fn scatter2(p: &[*mut u8], at: usize, y: __m256i) {
    // SAFETY: as in `gather2`, for writes.
    unsafe {
        _mm_storeu_si128(p[0].add(at).cast(), _mm256_castsi256_si128(y));
        _mm_storeu_si128(p[1].add(at).cast(), _mm256_extracti128_si256::<1>(y));
    }
}

/// CBC chains whose AES rounds run between a hash's round groups
/// ([`RoundHook`]), a block of 64 bytes per lane an iteration: this
/// module's VAES chains and `cbc_aesni_x8`'s AES-NI ones. The methods are
/// inlined into `#[target_feature]` kernels, whose features they need.
pub(super) trait Chained<'k, const N: usize>: RoundHook {
    /// Chains of lanes `0..` from `ivs`, their bytes not set yet, with the
    /// round keys of lanes `first..` of `keys`.
    fn start(keys: &'k LaneKeys<N>, first: usize, ivs: &[[u8; 16]; 8]) -> Self;
    /// Points the chains at block `b` of each lane: `cbc[i] + step[i] b`.
    fn at(&mut self, cbc: &[*mut u8; 8], step: &[usize; 8], b: usize);
    /// Writes each lane's last ciphertext block to `ivs`.
    fn store(&self, ivs: &mut [[u8; 16]; 8]);
    /// Step `i` of AES block `k` (of four) in every lane.
    fn step(&mut self, k: usize, i: usize);

    /// The steps that run after round `t` of `rounds`: `t S / rounds ..
    /// (t + 1) S / rounds` of the `S = 4 N` of a block of 64 bytes per
    /// lane (per AES block, the load and whitening, `N - 2` rounds, the
    /// last round and the store), spread evenly, the last in the last
    /// round. At most one a round for the eight-lane hashes (`S` is 44 or
    /// 60, they have 64 or 80 rounds), two or three a round group of
    /// `ni_cbc`'s SHA-NI pairs.
    #[inline(always)]
    fn spread(&mut self, t: usize, rounds: usize) {
        let steps = 4 * N;
        for s in t * steps / rounds..(t + 1) * steps / rounds {
            self.step(s / N, s % N);
        }
    }
}

/// Two lanes a register: `first` is even.
impl<'k, const N: usize, const R: usize> Chained<'k, N> for Chains<'k, N, R> {
    #[inline(always)]
    fn start(keys: &'k LaneKeys<N>, first: usize, ivs: &[[u8; 16]; 8]) -> Self {
        Chains {
            keys,
            first: first / 2,
            p: [core::ptr::null_mut(); 8],
            // SAFETY: AVX as said above.
            x: [unsafe { _mm256_setzero_si256() }; R],
            // SAFETY: lanes `2 r, 2 r + 1 < 8` of `ivs`, 32 readable bytes.
            chain: core::array::from_fn(|r| unsafe {
                _mm256_loadu_si256(ivs[2 * r..].as_ptr().cast())
            }),
        }
    }

    /// Hides the round keys' address from the optimizer each time, so they
    /// are read from memory where a round uses them: hoisted out of the
    /// loop, the 22 to 60 key vectors spill to the stack, which cost 4-7%
    /// here.
    #[inline(always)]
    fn at(&mut self, cbc: &[*mut u8; 8], step: &[usize; 8], b: usize) {
        self.p = by_index!(0 1 2 3 4 5 6 7; |i| cbc[i].wrapping_add(step[i] * b));
        self.keys = core::hint::black_box(self.keys);
    }

    #[inline(always)]
    fn store(&self, ivs: &mut [[u8; 16]; 8]) {
        for (r, c) in self.chain.iter().enumerate() {
            // SAFETY: lanes `2 r, 2 r + 1 < 8` of `ivs`, 32 writable bytes.
            unsafe { _mm256_storeu_si256(ivs[2 * r..].as_mut_ptr().cast(), *c) };
        }
    }

    #[inline(always)]
    fn step(&mut self, k: usize, i: usize) {
        for r in 0..R {
            let p = &self.p[2 * r..2 * r + 2];
            let key = round_key(self.keys, self.first + r, i);
            // SAFETY: the kernel's features (see above); `p` points at 64
            // bytes of each lane for this iteration, readable and writable
            // (the kernel's contract), and `16 k < 64`.
            unsafe {
                if i == 0 {
                    let m = gather2(p, 16 * k);
                    self.x[r] = _mm256_ternarylogic_epi64::<0x96>(m, self.chain[r], key);
                } else if i + 1 < N {
                    self.x[r] = _mm256_aesenc_epi128(self.x[r], key);
                } else {
                    let c = _mm256_aesenclast_epi128(self.x[r], key);
                    scatter2(p, 16 * k, c);
                    self.chain[r] = c;
                }
            }
        }
    }
}

impl<const N: usize, const R: usize> RoundHook for Chains<'_, N, R> {
    #[inline(always)]
    fn after_round(&mut self, t: usize, rounds: usize) {
        self.spread(t, rounds);
    }
}

/// SHA-1 of `blocks` blocks of each lane `i < bufs.len()` (at most 8)
/// from `bufs[i][hash_at..]` into `states[i]`, and CBC encryption in place
/// of `bufs[i][cbc_at..cbc_at + 64 blocks]` with lane `i`'s round keys in
/// `keys`, chaining from `ivs[i]`, which becomes the last ciphertext
/// block. The other lanes' states and keys are not used or changed.
///
/// # Panics
/// If there are more than 8 lanes, fewer IVs than lanes, `cbc_at >
/// hash_at`, or a buffer shorter than `hash_at + 64 blocks`: the batch
/// layer sizes them (public lengths), so a panic is a bug there.
#[allow(clippy::too_many_arguments)]
pub(crate) fn sha1_cbc_x8<const N: usize>(
    t: Vaes512,
    states: &mut [[u32; 5]; 8],
    keys: &LaneKeys<N>,
    ivs: &mut [[u8; 16]],
    bufs: &mut [&mut [u8]],
    hash_at: usize,
    cbc_at: usize,
    blocks: usize,
) {
    let _ = t;
    let lanes = bufs.len();
    assert!((1..=8).contains(&lanes), "1 to 8 lanes");
    let mut scratch = [0u8; 64];
    let (hash, cbc, step) = lane_pointers(bufs, ivs.len(), &mut scratch, hash_at, cbc_at, blocks);
    if blocks == 0 {
        return;
    }
    let mut chain = [[0u8; 16]; 8];
    chain[..lanes].copy_from_slice(&ivs[..lanes]);
    let mut s = *states;
    // SAFETY: `t` proves AVX-512 F/BW/VL, VAES and AES-NI, the kernel's
    // features. `lane_pointers` checked and derived the pointers as the
    // kernel needs them (see there), `bufs` and `scratch` borrowed for the
    // call.
    unsafe {
        if lanes <= 4 {
            kernel::<N, 2>(&mut s, keys, &mut chain, hash, cbc, step, blocks);
        } else {
            kernel::<N, 4>(&mut s, keys, &mut chain, hash, cbc, step, blocks);
        }
    }
    states[..lanes].copy_from_slice(&s[..lanes]);
    ivs[..lanes].copy_from_slice(&chain[..lanes]);
}

/// The kernels' pointers into `bufs` (each lane hashed from `hash_at`
/// and encrypted from `cbc_at`, 64 bytes a block, for `blocks` blocks),
/// after checking the contract the callers document: at least one IV per
/// lane (`ivs` of them), `cbc_at <= hash_at`, every buffer long enough.
/// Lanes past `bufs.len()` hash lane 0's bytes and encrypt `scratch` over
/// and over (step 0); their results are to be dropped.
///
/// So `hash[i] + 64 b .. + 64` is readable and `cbc[i] + step[i] b .. +
/// 64` writable for `b < blocks`, both derived from one pointer per
/// distinct `&mut` buffer, a lane's writes at or below its reads.
pub(super) fn lane_pointers(
    bufs: &mut [&mut [u8]],
    ivs: usize,
    scratch: &mut [u8; 64],
    hash_at: usize,
    cbc_at: usize,
    blocks: usize,
) -> ([*const u8; 8], [*mut u8; 8], [usize; 8]) {
    let lanes = bufs.len();
    assert!(
        lanes <= 8 && ivs >= lanes,
        "an IV per lane, at most 8 lanes"
    );
    assert!(cbc_at <= hash_at, "the encryption stays behind the hash");
    let end = hash_at + 64 * blocks;
    for (i, b) in bufs.iter().enumerate() {
        assert!(b.len() >= end, "lane {i}: {} bytes, needs {end}", b.len());
    }
    let mut hash = [core::ptr::null::<u8>(); 8];
    let mut cbc = [scratch.as_mut_ptr(); 8];
    let mut step = [0usize; 8];
    for (i, b) in bufs.iter_mut().enumerate() {
        // One raw pointer per buffer, both views derived from it.
        let base = b.as_mut_ptr();
        // SAFETY: `hash_at` and `cbc_at` are at most `end <= b.len()`.
        unsafe {
            hash[i] = base.add(hash_at).cast_const();
            cbc[i] = base.add(cbc_at);
        }
        step[i] = 64;
    }
    let first = hash[0];
    hash[lanes..].fill(first);
    (hash, cbc, step)
}

/// # Safety
/// For each of the `2 R` lanes, `hash[i] + 64 b .. + 64` must be readable
/// and `cbc[i] + step[i] b .. + 64` writable for `b < blocks`; a lane's
/// writes may overlap its own reads only at or below them (`cbc[i] <=
/// hash[i]` with equal steps), never another lane's reads or writes
/// (lanes with step 0 may share their scratch).
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,vaes,aes")]
unsafe fn kernel<const N: usize, const R: usize>(
    states: &mut [[u32; 5]; 8],
    keys: &LaneKeys<N>,
    ivs: &mut [[u8; 16]; 8],
    hash: [*const u8; 8],
    cbc: [*mut u8; 8],
    step: [usize; 8],
    blocks: usize,
) {
    let mut s = transpose_in(states);
    let mut chains = Chains::<N, R>::start(keys, 0, ivs);
    for b in 0..blocks {
        // SAFETY: the caller's ranges; the block is read into registers
        // before this iteration stores anything, and the reference ends
        // there.
        let w = load_words(by_index!(0 1 2 3 4 5 6 7; |i| unsafe {
            &*hash[i].add(64 * b).cast::<[u8; 64]>()
        }));
        chains.at(&cbc, &step, b);
        s = sha1_x16::rounds(s, w, &mut chains);
    }
    transpose_out(s, states);
    chains.store(ivs);
}

#[cfg(test)]
pub(super) mod tests {
    use super::super::super::AesNi;
    use super::super::super::aes::{AesNiKey, Schedule};
    use super::super::super::test_rng::SplitMix64;
    use super::super::cbc_x16;
    use super::super::cbc_x16::tests::{cipher, schedule};
    use super::super::sha_x8::sha1_x8;
    use super::super::sha1_x16::tests::{ROUNDS, alternate, cpu_name, token};
    use super::{LaneKeys, sha1_cbc_x8};
    use crate::backends::portable::{AesKey, CrateCompress};
    use crate::primitives::hash::{Compress, Sha1};

    /// A stitched kernel: `(states, keys, ivs, bufs, hash_at, cbc_at,
    /// blocks)` as [`sha1_cbc_x8`] takes them.
    pub(in super::super) type Stitched<'f, const N: usize, const W: usize> = &'f dyn Fn(
        &mut [[u32; W]; 8],
        &LaneKeys<N>,
        &mut [[u8; 16]],
        &mut [&mut [u8]],
        usize,
        usize,
        usize,
    );

    /// Every lane count up to `max_lanes`, with random keys, states, IVs and bytes, the hash
    /// 0, 13 or 51 bytes ahead of the encryption (51: where the batch seal
    /// puts it), 0 to 5 blocks: each lane's state against the portable
    /// compression of its original bytes, its buffer against the portable
    /// CBC encryption of them, the bytes outside the range and the other
    /// lanes' states untouched.
    pub(in super::super) fn against_portable<const N: usize, const W: usize>(
        aes: AesNi,
        max_lanes: usize,
        run: Stitched<'_, N, W>,
        compress: impl Fn(&mut [u32; W], &[[u8; 64]]),
    ) {
        let cipher = cipher::<N>();
        let key_len = if N == 11 { 16 } else { 32 };
        let mut rng = SplitMix64(0x5c8 + N as u64);
        for lanes in 1..=max_lanes {
            for (ahead, blocks) in [(0, 1), (13, 2), (51, 0), (51, 1), (51, 5), (0, 4)] {
                let raw: Vec<[u8; 32]> = rng.blocks(8);
                let mut keys = LaneKeys::<N>::new();
                let mut portable = Vec::new();
                for (lane, k) in raw.iter().enumerate() {
                    let ni = AesNiKey::new(aes, cipher, &k[..key_len]);
                    keys.set_lane(lane, &schedule::<N>(&ni));
                    portable.push(AesKey::new(cipher, &k[..key_len]));
                }
                let cbc_at = (rng.next() % 3) as usize * 16;
                let hash_at = cbc_at + ahead;
                let mut bufs: Vec<Vec<u8>> = (0..lanes)
                    .map(|_| {
                        let extra = (rng.next() % 70) as usize;
                        let mut b = vec![0u8; hash_at + 64 * blocks + extra];
                        rng.fill(&mut b);
                        b
                    })
                    .collect();
                let before = bufs.clone();
                let start: [[u32; W]; 8] =
                    core::array::from_fn(|_| core::array::from_fn(|_| rng.next() as u32));
                let ivs_before: Vec<[u8; 16]> = rng.blocks(lanes);
                let mut ivs = ivs_before.clone();
                let mut states = start;
                {
                    let mut views: Vec<&mut [u8]> = bufs.iter_mut().map(|b| &mut b[..]).collect();
                    run(
                        &mut states,
                        &keys,
                        &mut ivs,
                        &mut views,
                        hash_at,
                        cbc_at,
                        blocks,
                    );
                }
                for lane in 0..8 {
                    let what = format!(
                        "AES-{}, {lanes} lanes, hash {ahead} bytes ahead, {blocks} blocks, lane {lane}",
                        8 * key_len
                    );
                    if lane >= lanes {
                        assert_eq!(states[lane], start[lane], "{what}: state untouched");
                        continue;
                    }
                    let mut want = start[lane];
                    let (whole, _) = before[lane][hash_at..].as_chunks::<64>();
                    compress(&mut want, &whole[..blocks]);
                    assert_eq!(states[lane], want, "{what}: hash state");
                    let range = cbc_at..cbc_at + 64 * blocks;
                    let mut iv = ivs_before[lane];
                    let mut out: Vec<[u8; 16]> = before[lane][range.clone()]
                        .chunks_exact(16)
                        .map(|c| c.try_into().expect("16"))
                        .collect();
                    portable[lane].encrypt_cbc(&mut iv, &mut out);
                    let got = &bufs[lane];
                    assert_eq!(
                        &got[range.clone()],
                        out.as_flattened(),
                        "{what}: ciphertext"
                    );
                    assert_eq!(ivs[lane], iv, "{what}: chaining value");
                    assert_eq!(got[..cbc_at], before[lane][..cbc_at], "{what}: before");
                    assert_eq!(got[range.end..], before[lane][range.end..], "{what}: after");
                }
            }
        }
    }

    #[test]
    fn matches_portable() {
        let Some(t) = token("sha1_cbc_x8 against the portable SHA-1 and CBC") else {
            return;
        };
        fn sha1(s: &mut [u32; 5], b: &[[u8; 64]]) {
            Compress::<Sha1>::compress(&CrateCompress, s, b);
        }
        against_portable::<11, 5>(
            t.aes_ni(),
            8,
            &|s, k, v, b, h, c, n| sha1_cbc_x8(t, s, k, v, b, h, c, n),
            sha1,
        );
        against_portable::<15, 5>(
            t.aes_ni(),
            8,
            &|s, k, v, b, h, c, n| sha1_cbc_x8(t, s, k, v, b, h, c, n),
            sha1,
        );
    }

    /// The stitched loop against the eight-lane hash followed by the CBC
    /// lanes, over 16 KiB per lane, for 4 and 8 lanes on this CPU: what
    /// the batch seal gains from it. Prints the figures; asserts only that
    /// both ways give the same states and bytes.
    #[test]
    fn stitched_against_separate() {
        let Some(t) = token("sha1_cbc_x8 against sha1_x8 then cbc_x16") else {
            return;
        };
        const BLOCKS: usize = 256;
        let mut rng = SplitMix64(0x57c8);
        let mut keys = LaneKeys::<11>::new();
        let rows: [[u8; 16]; 11] = core::array::from_fn(|_| rng.blocks(1)[0]);
        for lane in 0..8 {
            keys.set_lane(lane, &Schedule(rows));
        }
        for lanes in [4, 8] {
            let data: Vec<Vec<u8>> = (0..lanes)
                .map(|_| {
                    let mut b = vec![0u8; 64 * BLOCKS];
                    rng.fill(&mut b);
                    b
                })
                .collect();
            let (mut b1, mut b2) = (data.clone(), data);
            let (mut s1, mut s2) = ([[0u32; 5]; 8], [[0u32; 5]; 8]);
            let (mut v1, mut v2) = (vec![[0u8; 16]; lanes], vec![[0u8; 16]; lanes]);
            let m = alternate(&mut [
                &mut || {
                    let refs: [&[u8]; 8] = core::array::from_fn(|i| b1[i % lanes].as_slice());
                    sha1_x8(t, &mut s1, &refs, BLOCKS);
                    let mut views: Vec<&mut [u8]> = b1.iter_mut().map(|b| &mut b[..]).collect();
                    cbc_x16::cbc_encrypt_x16(t, &keys, &mut v1, &mut views, 4 * BLOCKS);
                },
                &mut || {
                    let mut views: Vec<&mut [u8]> = b2.iter_mut().map(|b| &mut b[..]).collect();
                    sha1_cbc_x8(t, &mut s2, &keys, &mut v2, &mut views, 0, 0, BLOCKS);
                },
            ]);
            assert_eq!(s1[..lanes], s2[..lanes], "{lanes} lanes: states differ");
            assert_eq!((&b1, &v1), (&b2, &v2), "{lanes} lanes: bytes or IVs differ");
            println!(
                "SHA-1 + AES-128-CBC, {lanes} lanes of 16 KiB on {}: hash then CBC {:.1} us, \
                 stitched {:.1} us, ratio {:.2} (medians of {ROUNDS} rounds)",
                cpu_name(),
                m[0].median * 1e6,
                m[1].median * 1e6,
                1.0 / m[1].ratio
            );
        }
    }
}
