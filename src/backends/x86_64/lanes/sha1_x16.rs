//! SHA-1 compression in sixteen independent lanes with AVX-512.
//!
//! Register `j` of the state holds word `j` of all sixteen lanes (lane `i`
//! in element `i`), so one instruction does one step of a round for every
//! lane: `vprold` for the rotations, `vpternlogd` for the round functions
//! (choice `0xCA`, parity `0x96`, majority `0xE8`) and for the three-way
//! xor of the message schedule, the round constants as broadcast operands.
//!
//! The rounds are written over [`Words`], so `sha_x8` compiles the same
//! code for eight lanes in ymm registers.
//!
//! Each block's sixteen lanes x 64 bytes become the sixteen message words
//! by a transpose (see [`rows_to_words`]), which the SHA-256 kernel shares.
//! The states are transposed in at entry and out at exit only (by the same
//! network), so a call over many blocks pays for that once.

use core::arch::x86_64::*;

use super::super::{Vaes512, block, load};
use super::words::{RoundHook, Words};

// The helpers below are `#[inline(always)]`, which a `#[target_feature]`
// function cannot be: called, they would pass their vectors through
// memory. They are reached only from the kernels, `#[target_feature]`
// functions with AVX-512 F/BW into which they are inlined; that is the
// feature context their intrinsics need.

/// `[f(i) for each listed i]`, spelled out: the closures of
/// `core::array::from_fn` were not always inlined.
macro_rules! by_index {
    ($($n:literal)*; |$i:ident| $e:expr) => {
        [$({
            let $i = $n;
            $e
        }),*]
    };
}

/// [`by_index`] over the sixteen lanes.
macro_rules! by16 {
    (|$i:ident| $e:expr) => {
        by_index!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15; |$i| $e)
    };
}

pub(super) use by_index;
pub(super) use by16;

/// Unaligned 64-byte load.
#[inline(always)]
fn load512(words: &[u32; 16]) -> __m512i {
    // SAFETY: `words` is 64 readable bytes and `loadu` has no alignment
    // requirement; AVX-512F as said above.
    unsafe { _mm512_loadu_si512(words.as_ptr().cast()) }
}

/// Unaligned 64-byte store.
#[inline(always)]
fn store512(words: &mut [u32; 16], v: __m512i) {
    // SAFETY: `words` is 64 writable bytes and `storeu` has no alignment
    // requirement; AVX-512F as said above.
    unsafe { _mm512_storeu_si512(words.as_mut_ptr().cast(), v) }
}

/// Unaligned 16-byte load of four words.
#[inline(always)]
fn load_words4(words: &[u32]) -> __m128i {
    let words: &[u32; 4] = words.try_into().expect("four words");
    // SAFETY: `words` is 16 readable bytes; `loadu` has no alignment
    // requirement, and SSE2 is part of the x86-64 baseline.
    unsafe { _mm_loadu_si128(words.as_ptr().cast()) }
}

/// Unaligned 16-byte store of four words.
#[inline(always)]
fn store_words4(words: &mut [u32], v: __m128i) {
    let words: &mut [u32; 4] = words.try_into().expect("four words");
    // SAFETY: `words` is 16 writable bytes; `storeu` has no alignment
    // requirement, and SSE2 is part of the x86-64 baseline.
    unsafe { _mm_storeu_si128(words.as_mut_ptr().cast(), v) }
}

/// Sixteen rows of four words (`rows[i]`, one per lane) as four vectors,
/// vector `k` holding word `k` of row `i` in element `i`.
///
/// Vector `q` first gets rows `q`, `q + 4`, `q + 8`, `q + 12` in its four
/// 128-bit lanes (inserts, which need not use the shuffle port and take
/// their operand from memory when the row is a load); then a 4x4
/// transpose inside each 128-bit lane (eight unpacks) leaves word `k` of
/// row `4m + q` in element `4m + q` of vector `k`: lanes in order, with
/// half the shuffles of a full 16x16 transpose of whole-row loads.
#[inline(always)]
fn rows_to_words(rows: [__m128i; 16]) -> [__m512i; 4] {
    // SAFETY: AVX-512F as said above.
    unsafe {
        macro_rules! spread {
            ($q:literal) => {{
                let x = _mm512_castsi128_si512(rows[$q]);
                let x = _mm512_inserti32x4::<1>(x, rows[$q + 4]);
                let x = _mm512_inserti32x4::<2>(x, rows[$q + 8]);
                _mm512_inserti32x4::<3>(x, rows[$q + 12])
            }};
        }
        transpose4([spread!(0), spread!(1), spread!(2), spread!(3)])
    }
}

/// The inverse of [`rows_to_words`].
#[inline(always)]
fn words_to_rows(words: [__m512i; 4]) -> [__m128i; 16] {
    // SAFETY: AVX-512F as said above.
    unsafe {
        let r = transpose4(words);
        macro_rules! lane {
            ($m:literal) => {
                [
                    _mm512_extracti32x4_epi32::<$m>(r[0]),
                    _mm512_extracti32x4_epi32::<$m>(r[1]),
                    _mm512_extracti32x4_epi32::<$m>(r[2]),
                    _mm512_extracti32x4_epi32::<$m>(r[3]),
                ]
            };
        }
        let [a, b, c, d] = [lane!(0), lane!(1), lane!(2), lane!(3)];
        [
            a[0], a[1], a[2], a[3], b[0], b[1], b[2], b[3], c[0], c[1], c[2], c[3], d[0], d[1],
            d[2], d[3],
        ]
    }
}

/// Transposes the 4x4 matrix of words in each 128-bit lane of four vectors
/// (its own inverse).
#[inline(always)]
fn transpose4(r: [__m512i; 4]) -> [__m512i; 4] {
    // SAFETY: AVX-512F as said above.
    unsafe {
        let t0 = _mm512_unpacklo_epi32(r[0], r[1]);
        let t1 = _mm512_unpackhi_epi32(r[0], r[1]);
        let t2 = _mm512_unpacklo_epi32(r[2], r[3]);
        let t3 = _mm512_unpackhi_epi32(r[2], r[3]);
        [
            _mm512_unpacklo_epi64(t0, t2),
            _mm512_unpackhi_epi64(t0, t2),
            _mm512_unpacklo_epi64(t1, t3),
            _mm512_unpackhi_epi64(t1, t3),
        ]
    }
}

/// The states of sixteen lanes as `N` vectors: vector `j` holds word `j`
/// of every lane. Whole groups of four words go through
/// [`rows_to_words`]; the rest (SHA-1's E) element by element.
#[inline(always)]
pub(super) fn transpose_in<const N: usize>(states: &[[u32; N]; 16]) -> [__m512i; N] {
    // SAFETY: AVX-512F as said above.
    let mut v = [unsafe { _mm512_setzero_si512() }; N];
    for c in 0..N / 4 {
        let rows = by16!(|i| load_words4(&states[i][4 * c..4 * c + 4]));
        v[4 * c..4 * c + 4].copy_from_slice(&rows_to_words(rows));
    }
    for (j, x) in v.iter_mut().enumerate().skip(N / 4 * 4) {
        *x = load512(&by16!(|i| states[i][j]));
    }
    v
}

/// The inverse of [`transpose_in`].
#[inline(always)]
pub(super) fn transpose_out<const N: usize>(v: [__m512i; N], states: &mut [[u32; N]; 16]) {
    for c in 0..N / 4 {
        let rows = words_to_rows(v[4 * c..4 * c + 4].try_into().expect("four vectors"));
        for (state, row) in states.iter_mut().zip(rows) {
            store_words4(&mut state[4 * c..4 * c + 4], row);
        }
    }
    for (j, &x) in v.iter().enumerate().skip(N / 4 * 4) {
        let mut col = [0u32; 16];
        store512(&mut col, x);
        for (state, word) in states.iter_mut().zip(col) {
            state[j] = word;
        }
    }
}

/// The message block of each of sixteen lanes as sixteen vectors of
/// big-endian words: vector `j` holds word `j` of every lane. Each
/// quarter of the blocks goes through [`rows_to_words`], then a byte swap.
#[inline(always)]
pub(super) fn load_words(blocks: [&[u8; 64]; 16]) -> [__m512i; 16] {
    // SAFETY: AVX-512 F/BW as said above.
    unsafe {
        // Byte-swaps each 32-bit element.
        let bswap = _mm512_set4_epi32(0x0c0d_0e0f, 0x0809_0a0b, 0x0405_0607, 0x0001_0203);
        let mut w = [_mm512_setzero_si512(); 16];
        for c in 0..4 {
            let quarter = rows_to_words(by16!(|i| load(block(blocks[i], 16 * c))));
            for k in 0..4 {
                w[4 * c + k] = _mm512_shuffle_epi8(quarter[k], bswap);
            }
        }
        w
    }
}

/// Each lane's blocks, checked to be at least `blocks` long.
pub(super) fn lane_blocks<'a, const L: usize>(
    data: &[&'a [u8]; L],
    blocks: usize,
) -> [&'a [[u8; 64]]; L] {
    core::array::from_fn(|i| {
        let (whole, _) = data[i].as_chunks::<64>();
        // An internal invariant: the batch layer hands whole blocks.
        assert!(
            whole.len() >= blocks,
            "lane {i}: {} bytes, fewer than {blocks} blocks",
            data[i].len()
        );
        &whole[..blocks]
    })
}

/// SHA-1 compression in sixteen independent lanes: lane `i` runs `blocks`
/// 64-byte blocks from `data[i]` (which holds at least `64 * blocks` bytes)
/// into `states[i]`.
pub(crate) fn compress_x16(
    t: Vaes512,
    states: &mut [[u32; 5]; 16],
    data: &[&[u8]; 16],
    blocks: usize,
) {
    let _ = t;
    let lanes = lane_blocks(data, blocks);
    // SAFETY: `t` proves the CPU has AVX-512 F/BW/VL, all the kernel
    // enables.
    unsafe { kernel(states, &lanes) }
}

#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
fn kernel(states: &mut [[u32; 5]; 16], lanes: &[&[[u8; 64]]; 16]) {
    let blocks = lanes[0].len();
    let mut s = transpose_in(states);
    // `b` indexes the blocks of every lane at once.
    #[allow(clippy::needless_range_loop)]
    for b in 0..blocks {
        s = rounds(s, load_words(by16!(|i| &lanes[i][b])), &mut ());
    }
    transpose_out(s, states);
}

/// How many rounds ahead of its use [`rounds`] computes each message word
/// (any of 0-15 is correct: a word's slot is reused sixteen rounds on).
/// On AMD Zen 4 (family 0x19 model 0x11), sixteen lanes x 16 KiB: 7.06-7.20
/// GB/s at 6 against 6.89-6.92 at 0 (3 alternating runs of
/// `timing_against_sha_ni`); 4 and 8 ran as 6, 2 between.
const AHEAD: usize = 6;

/// The 80 rounds over one block of every lane, with the feed-forward and
/// `hook` run after each round;
/// for sixteen lanes (zmm) here and eight (ymm) in `sha_x8`.
#[inline(always)]
pub(super) fn rounds<V: Words>(s: [V; 5], mut w: [V; 16], hook: &mut impl RoundHook) -> [V; 5] {
    let [mut a, mut b, mut c, mut d, mut e] = s;
    macro_rules! round {
        ($($t:literal)*) => {$({
            const T: usize = $t;
            // The schedule runs `AHEAD` rounds ahead of the rounds: its
            // words are ready long before they are needed, and the
            // scheduler finds them among the ops of the round chain.
            const U: usize = T + AHEAD;
            if U >= 16 && U < 80 {
                // W[u] = rol1(W[u-3] ^ W[u-8] ^ W[u-14] ^ W[u-16]), into
                // the slot of W[u-16], whose last reader has run.
                let x = w[(U + 13) % 16].ternary::<0x96>(w[(U + 8) % 16], w[(U + 2) % 16]);
                w[U % 16] = x.xor(w[U % 16]).rol::<1>();
            }
            let (f, k) = match T / 20 {
                0 => (b.ternary::<0xCA>(c, d), 0x5a82_7999),
                1 => (b.ternary::<0x96>(c, d), 0x6ed9_eba1),
                2 => (b.ternary::<0xE8>(c, d), 0x8f1b_bcdc),
                _ => (b.ternary::<0x96>(c, d), 0xca62_c1d6),
            };
            // E + K + W is ready early; A (through rol5) comes last.
            let ekw = e.add(V::splat(k)).add(w[T % 16]);
            let tmp = ekw.add(f).add(a.rol::<5>());
            e = d;
            d = c;
            c = b.rol::<30>();
            b = a;
            a = tmp;
            hook.after_round(T, 80);
        })*};
    }
    round!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19);
    round!(20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39);
    round!(40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59);
    round!(60 61 62 63 64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79);
    [
        a.add(s[0]),
        b.add(s[1]),
        c.add(s[2]),
        d.add(s[3]),
        e.add(s[4]),
    ]
}

#[cfg(test)]
pub(super) mod tests {
    use super::super::super::test_rng::SplitMix64;
    use super::*;
    use crate::backends::portable::CrateCompress;
    use crate::primitives::hash::{Compress, HashFunction, Sha1};

    pub(in super::super) fn token(what: &str) -> Option<Vaes512> {
        let t = Vaes512::detect();
        if t.is_none() {
            eprintln!("SKIPPED: {what} (CPU lacks AVX-512)");
        }
        t
    }

    /// FIPS 180-4's one-block example message "abc", padded.
    pub(in super::super) fn abc_block() -> [u8; 64] {
        let mut padded = [0u8; 64];
        padded[..3].copy_from_slice(b"abc");
        padded[3] = 0x80;
        padded[63] = 24;
        padded
    }

    /// SHA-1("abc"), FIPS 180-4's example.
    pub(in super::super) const ABC_SHA1: [u8; 20] = [
        0xa9, 0x99, 0x3e, 0x36, 0x47, 0x06, 0x81, 0x6a, 0xba, 0x3e, 0x25, 0x71, 0x78, 0x50, 0xc2,
        0x6c, 0x9c, 0xd0, 0xd8, 0x9d,
    ];

    /// SHA-256("abc"), FIPS 180-4's example.
    pub(in super::super) const ABC_SHA256: [u8; 32] = [
        0xba, 0x78, 0x16, 0xbf, 0x8f, 0x01, 0xcf, 0xea, 0x41, 0x41, 0x40, 0xde, 0x5d, 0xae, 0x22,
        0x23, 0xb0, 0x03, 0x61, 0xa3, 0x96, 0x17, 0x7a, 0x9c, 0xb4, 0x10, 0xff, 0x61, 0xf2, 0x00,
        0x15, 0xad,
    ];

    /// Sixteen lanes of `blocks` random blocks each, every lane different.
    pub(in super::super) fn random_lanes(rng: &mut SplitMix64, blocks: usize) -> Vec<Vec<u8>> {
        (0..16)
            .map(|i| {
                // Some lanes longer than needed: only the first blocks count.
                let mut v = vec![0u8; 64 * blocks + (i % 3) * 17];
                rng.fill(&mut v);
                v
            })
            .collect()
    }

    pub(in super::super) fn refs(lanes: &[Vec<u8>]) -> [&[u8]; 16] {
        core::array::from_fn(|i| lanes[i].as_slice())
    }

    /// A candidate's timing: median and least seconds per call, and the
    /// median of its per-round ratio to the first candidate's time.
    #[derive(Clone, Copy)]
    pub(in super::super) struct Timing {
        pub(in super::super) median: f64,
        pub(in super::super) least: f64,
        pub(in super::super) ratio: f64,
    }

    /// Rounds of [`alternate`]: many short ones, since on a shared machine
    /// a long measurement is seldom left alone.
    pub(in super::super) const ROUNDS: usize = if cfg!(debug_assertions) { 1 } else { 201 };

    /// Times the candidates in alternating rounds of one call each (after
    /// one warm-up call each). Debug builds run one round: their figures
    /// mean nothing, the call only checks that the candidates run.
    pub(in super::super) fn alternate(fs: &mut [&mut dyn FnMut()]) -> Vec<Timing> {
        use std::time::Instant;
        for f in fs.iter_mut() {
            f();
        }
        let mut times = vec![Vec::new(); fs.len()];
        let mut ratios = vec![Vec::new(); fs.len()];
        for _ in 0..ROUNDS {
            let mut first = 0.0;
            for (n, f) in fs.iter_mut().enumerate() {
                let start = Instant::now();
                f();
                let x = start.elapsed().as_secs_f64();
                if n == 0 {
                    first = x;
                }
                times[n].push(x);
                ratios[n].push(x / first);
            }
        }
        let median = |mut v: Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        times
            .into_iter()
            .zip(ratios)
            .map(|(t, r)| Timing {
                least: t.iter().copied().fold(f64::INFINITY, f64::min),
                median: median(t),
                ratio: median(r),
            })
            .collect()
    }

    /// The CPU's name, for the printed figures.
    pub(in super::super) fn cpu_name() -> String {
        std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|s| {
                let field = |name: &str| {
                    s.lines()
                        .find(|l| l.starts_with(name))
                        .and_then(|l| l.split(':').nth(1))
                        .map(|v| v.trim().to_string())
                };
                Some(format!(
                    "{}, family {} model {}",
                    field("model name")?,
                    field("cpu family")?,
                    field("model\t")?
                ))
            })
            .unwrap_or_else(|| "unknown CPU".into())
    }

    /// The single-stream SHA-NI compression, or `None` (with a message).
    pub(in super::super) fn sha_ni(what: &str) -> Option<super::super::super::sha::ShaNiCompress> {
        let Some(sha) = super::super::super::ShaNi::detect() else {
            eprintln!("SKIPPED: {what} (CPU lacks SHA-NI)");
            return None;
        };
        Some(super::super::super::sha::ShaNiCompress::new(
            sha,
            super::super::super::ShaNiAvx::detect(),
            None,
            super::super::super::sha512::Sha512Kernel::Crate,
        ))
    }

    /// Prints the throughput of sixteen lanes of 16 KiB against sixteen
    /// single-stream SHA-NI runs over the same data, in one call over all
    /// blocks and in calls of one block each (where the kernel's state
    /// transposes count); asserts only that the kernels agree.
    pub(in super::super) fn time_x16<const N: usize>(
        name: &str,
        initial: [u32; N],
        x16: impl Fn(&mut [[u32; N]; 16], &[&[u8]; 16], usize),
        one: impl Fn(&mut [u32; N], &[[u8; 64]]),
    ) {
        const BLOCKS: usize = 256;
        let mut rng = SplitMix64(0x71e_0001 + N as u64);
        let lanes = random_lanes(&mut rng, BLOCKS);
        let data = refs(&lanes);
        let mut states = [[initial; 16]; 4];
        let [s0, s1, s2, s3] = &mut states;
        let m = alternate(&mut [
            &mut || x16(std::hint::black_box(&mut *s0), &data, BLOCKS),
            &mut || {
                for (state, lane) in s1.iter_mut().zip(&lanes) {
                    one(std::hint::black_box(state), &lane.as_chunks().0[..BLOCKS]);
                }
            },
            &mut || {
                for b in 0..BLOCKS {
                    let block = core::array::from_fn(|i| &data[i][64 * b..]);
                    x16(std::hint::black_box(&mut *s2), &block, 1);
                }
            },
            &mut || {
                for b in 0..BLOCKS {
                    for (state, lane) in s3.iter_mut().zip(&lanes) {
                        one(std::hint::black_box(state), &lane.as_chunks().0[b..b + 1]);
                    }
                }
            },
        ]);
        assert!(
            states.iter().all(|s| *s == states[0]),
            "the kernels disagree"
        );
        let gb = |t: f64| (16 * 64 * BLOCKS) as f64 / t / 1e9;
        let fig = |x: Timing| format!("{:.2} GB/s (best {:.2})", gb(x.median), gb(x.least));
        println!(
            "{name}: 16 lanes x 16 KiB on {}, medians of {ROUNDS} alternating rounds: \
             x16 AVX-512 {}, 16 x one SHA-NI stream {}, ratio {:.2}; \
             in one-block calls {} against {}, ratio {:.2}",
            cpu_name(),
            fig(m[0]),
            fig(m[1]),
            m[1].ratio,
            fig(m[2]),
            fig(m[3]),
            m[3].ratio / m[2].ratio,
        );
    }

    #[test]
    fn timing_against_sha_ni() {
        let what = "sha1_x16 timing against SHA-NI";
        let (Some(t), Some(ni)) = (token(what), sha_ni(what)) else {
            return;
        };
        time_x16(
            "sha1",
            <Sha1 as HashFunction>::INITIAL_STATE,
            |s, d, n| compress_x16(t, s, d, n),
            |s, b| Compress::<Sha1>::compress(&ni, s, b),
        );
    }

    #[test]
    fn matches_portable() {
        let Some(t) = token("sha1_x16 against the portable compression") else {
            return;
        };
        let mut rng = SplitMix64(0x1a9e_5a10_0016);
        for blocks in [0, 1, 2, 3, 17] {
            for _ in 0..4 {
                let lanes = random_lanes(&mut rng, blocks);
                let start: [[u32; 5]; 16] =
                    core::array::from_fn(|_| core::array::from_fn(|_| rng.next() as u32));
                let mut ours = start;
                compress_x16(t, &mut ours, &refs(&lanes), blocks);
                for i in 0..16 {
                    let mut theirs = start[i];
                    let (whole, _) = lanes[i].as_chunks::<64>();
                    Compress::<Sha1>::compress(&CrateCompress, &mut theirs, &whole[..blocks]);
                    assert_eq!(ours[i], theirs, "lane {i}, {blocks} blocks");
                }
                if blocks > 0 {
                    assert_ne!(ours, start, "{blocks} blocks left the states alone");
                }
            }
        }
    }

    #[test]
    #[should_panic(expected = "lane 9")]
    fn short_lane_is_refused() {
        let long = [0u8; 128];
        let short = [0u8; 127];
        let mut data: [&[u8]; 16] = [&long; 16];
        data[9] = &short;
        lane_blocks(&data, 2);
    }

    #[test]
    fn abc_in_one_lane() {
        let Some(t) = token("sha1_x16 FIPS 180-4 \"abc\"") else {
            return;
        };
        let padded = abc_block();
        let mut rng = SplitMix64(0xabc1);
        let lanes = random_lanes(&mut rng, 1);
        for lane in [0, 5, 15] {
            let mut data = refs(&lanes);
            data[lane] = &padded;
            let mut states = [<Sha1 as HashFunction>::INITIAL_STATE; 16];
            compress_x16(t, &mut states, &data, 1);
            let mut digest = [0u8; 20];
            Sha1::write_output(&states[lane], &mut digest);
            assert_eq!(digest, ABC_SHA1, "lane {lane}");
        }
    }
}
