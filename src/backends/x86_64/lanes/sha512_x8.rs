//! SHA-512 compression in eight independent lanes with AVX-512: word `j`
//! of every lane's state (and of every lane's message schedule) in one zmm
//! register, lane `i` in 64-bit lane `i`, for HMAC-SHA384 over many
//! records.
//!
//! The eight lanes run one round at a time together, so the kernel is
//! bound by vector throughput rather than by the round's dependency chain:
//! `vprorq` for the rotations, `vpternlogq` for Ch (`0xca`), Maj (`0xe8`)
//! and the three-way xors of the sigmas, the round constants broadcast
//! from memory. Each lane's 128-byte block is loaded as two rows of eight
//! words and the rows of the eight lanes transposed (8x8 words, unpacks
//! and permutes), then byte-swapped with `vpshufb`.

use core::arch::x86_64::*;

use super::super::Vaes512;
use super::words64;

/// SHA-512 compression in eight independent lanes: lane `i` runs `blocks`
/// 128-byte blocks from `data[i]` (at least `128 * blocks` bytes) into `states[i]`.
///
/// # Panics
/// If a lane is shorter than `128 * blocks` bytes: the batch layer sizes
/// them (public lengths), so a panic here is a bug there.
pub(crate) fn compress_x8(
    t: Vaes512,
    states: &mut [[u64; 8]; 8],
    data: &[&[u8]; 8],
    blocks: usize,
) {
    let _ = t;
    for lane in data {
        assert!(lane.len() >= 128 * blocks, "a lane shorter than its blocks");
    }
    if blocks == 0 {
        return;
    }
    // SAFETY: `t` proves the CPU has AVX-512 F/BW/VL, the kernel's features.
    unsafe { compress(states, data, blocks) }
}

/// Unaligned load of the 64 bytes at `bytes[..64]`.
#[inline]
#[target_feature(enable = "avx512f")]
fn load64(bytes: &[u8]) -> __m512i {
    let bytes: &[u8; 64] = bytes[..64].try_into().expect("64 bytes");
    // SAFETY: `bytes` is 64 readable bytes; `loadu` needs no alignment.
    unsafe { _mm512_loadu_si512(bytes.as_ptr().cast()) }
}

/// Transposes eight rows of eight 64-bit words: word `j` of row `i` becomes
/// word `i` of row `j`. Three stages of eight shuffles: pairs of rows
/// interleaved word by word, then 128-bit pairs, then 256-bit halves.
#[inline]
#[target_feature(enable = "avx512f")]
fn transpose(r: [__m512i; 8]) -> [__m512i; 8] {
    // t[2k] = words 0, 2, 4, 6 of rows 2k and 2k + 1 interleaved; t[2k + 1]
    // the odd words.
    let t: [__m512i; 8] = core::array::from_fn(|i| {
        let (a, b) = (r[i & !1], r[i | 1]);
        if i % 2 == 0 {
            _mm512_unpacklo_epi64(a, b)
        } else {
            _mm512_unpackhi_epi64(a, b)
        }
    });
    // Rows 0-3 (u[0..4]) and rows 4-7 (u[4..8]): u[4h + m] holds words m
    // and m + 4 of the four rows, in its low and high 256 bits.
    let lo = _mm512_set_epi64(13, 12, 5, 4, 9, 8, 1, 0);
    let hi = _mm512_set_epi64(15, 14, 7, 6, 11, 10, 3, 2);
    let u: [__m512i; 8] = core::array::from_fn(|i| {
        let (h, m) = (i / 4, i % 4);
        // Word m comes from t[4h + (m & 1)] (rows 4h, 4h + 1) and
        // t[4h + 2 + (m & 1)] (rows 4h + 2, 4h + 3); even/odd pairs of words
        // 0/4 (lo) or 2/6 (hi), and likewise 1/5, 3/7.
        let (a, b) = (t[4 * h + (m & 1)], t[4 * h + 2 + (m & 1)]);
        if m < 2 {
            _mm512_permutex2var_epi64(a, lo, b)
        } else {
            _mm512_permutex2var_epi64(a, hi, b)
        }
    });
    core::array::from_fn(|j| {
        let (a, b) = (u[j % 4], u[4 + j % 4]);
        if j < 4 {
            _mm512_shuffle_i64x2::<0x44>(a, b)
        } else {
            _mm512_shuffle_i64x2::<0xee>(a, b)
        }
    })
}

/// Big-endian words: the bytes of each 64-bit lane reversed.
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
fn bswap64(x: __m512i) -> __m512i {
    let m = _mm512_broadcast_i32x4(_mm_set_epi64x(0x0809_0a0b_0c0d_0e0f, 0x0001_0203_0405_0607));
    _mm512_shuffle_epi8(x, m)
}

#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
fn compress(states: &mut [[u64; 8]; 8], data: &[&[u8]; 8], blocks: usize) {
    let rows: [__m512i; 8] = core::array::from_fn(|i| {
        // SAFETY: `states[i]` is 64 readable bytes; `loadu` needs no
        // alignment.
        unsafe { _mm512_loadu_si512(states[i].as_ptr().cast()) }
    });
    let mut s = transpose(rows);
    for b in 0..blocks {
        let at = 128 * b;
        let lo = transpose(core::array::from_fn(|i| load64(&data[i][at..])));
        let hi = transpose(core::array::from_fn(|i| load64(&data[i][at + 64..])));
        let w: [__m512i; 16] =
            core::array::from_fn(|j| bswap64(if j < 8 { lo[j] } else { hi[j - 8] }));
        let out = words64::rounds(s, w);
        s = core::array::from_fn(|j| _mm512_add_epi64(s[j], out[j]));
    }
    let rows = transpose(s);
    for (state, row) in states.iter_mut().zip(rows) {
        // SAFETY: `state` is 64 writable bytes; `storeu` needs no alignment.
        unsafe { _mm512_storeu_si512(state.as_mut_ptr().cast(), row) };
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::super::super::test_rng::SplitMix64;
    use super::*;
    use crate::primitives::hash::{HashFunction, Sha384};

    fn token() -> Option<Vaes512> {
        let token = Vaes512::detect();
        if token.is_none() {
            eprintln!("SKIPPED: SHA-512 x8 lane tests (CPU lacks AVX-512 F/BW/VL)");
        }
        token
    }

    fn reference(state: [u64; 8], data: &[u8], blocks: usize) -> [u64; 8] {
        let (blocks, _) = data[..128 * blocks].as_chunks::<128>();
        let mut s = state;
        sha2::block_api::compress512(&mut s, blocks);
        s
    }

    #[test]
    fn transpose_moves_word_j_of_row_i_to_word_i_of_row_j() {
        if token().is_none() {
            return;
        }
        let rows: [[u64; 8]; 8] =
            core::array::from_fn(|i| core::array::from_fn(|j| (10 * i + j) as u64));
        let mut out = [[0u64; 8]; 8];
        // SAFETY: the CPU has AVX-512F (checked above); each row is 64
        // bytes, read and written unaligned.
        unsafe {
            let z = core::array::from_fn(|i| _mm512_loadu_si512(rows[i].as_ptr().cast()));
            for (o, z) in out.iter_mut().zip(transpose(z)) {
                _mm512_storeu_si512(o.as_mut_ptr().cast(), z);
            }
        }
        for (j, row) in out.iter().enumerate() {
            for (i, &w) in row.iter().enumerate() {
                assert_eq!(w, (10 * i + j) as u64, "row {j}, word {i}");
            }
        }
    }

    /// A lane kernel's calling form: `L` states, `L` lanes, the blocks.
    pub(in super::super) type Kernel<'f, const L: usize> =
        &'f mut dyn FnMut(&mut [[u64; 8]; L], &[&[u8]; L], usize);

    /// Random states and lanes of 0 to 7 blocks, each lane with a few
    /// bytes more than its blocks (which must not be read into the
    /// state), through `compress`, every lane against the `sha2` crate.
    pub(in super::super) fn random_lanes_against_sha2<const L: usize>(
        what: &str,
        compress: Kernel<'_, L>,
    ) {
        let mut rng = SplitMix64(512 + L as u64);
        for blocks in [0, 1, 2, 3, 5, 7] {
            for _ in 0..20 {
                let before: [[u64; 8]; L] =
                    core::array::from_fn(|_| core::array::from_fn(|_| rng.next()));
                let bufs: Vec<Vec<u8>> = (0..L)
                    .map(|_| {
                        let mut b = vec![0u8; 128 * blocks + (rng.next() % 130) as usize];
                        rng.fill(&mut b);
                        b
                    })
                    .collect();
                let data: [&[u8]; L] = core::array::from_fn(|i| &bufs[i][..]);
                let mut states = before;
                compress(&mut states, &data, blocks);
                for lane in 0..L {
                    assert_eq!(
                        states[lane],
                        reference(before[lane], &bufs[lane], blocks),
                        "{what}: {blocks} blocks, lane {lane}"
                    );
                }
            }
        }
    }

    /// All-zero and all-one words in states and blocks, lane by lane,
    /// which exercise the carries and the shifts' edges of every 64-bit
    /// lane, through `compress` against the `sha2` crate.
    pub(in super::super) fn edge_words_against_sha2<const L: usize>(
        what: &str,
        compress: Kernel<'_, L>,
    ) {
        let mut rng = SplitMix64(7 + L as u64);
        for pattern in 0..24u64 {
            let word = |rng: &mut SplitMix64, k: u64| match (pattern + k) % 3 {
                0 => 0,
                1 => u64::MAX,
                _ => rng.next(),
            };
            let before: [[u64; 8]; L] = core::array::from_fn(|i| {
                core::array::from_fn(|j| word(&mut rng, (i * 3 + j) as u64))
            });
            let bufs: Vec<Vec<u8>> = (0..L)
                .map(|i| {
                    (0..32)
                        .flat_map(|j| word(&mut rng, (i * 5 + j) as u64).to_le_bytes())
                        .collect()
                })
                .collect();
            let data: [&[u8]; L] = core::array::from_fn(|i| &bufs[i][..]);
            let mut states = before;
            compress(&mut states, &data, 2);
            for lane in 0..L {
                assert_eq!(
                    states[lane],
                    reference(before[lane], &bufs[lane], 2),
                    "{what}: pattern {pattern}, lane {lane}"
                );
            }
        }
    }

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
            .collect()
    }

    /// FIPS 180-4's "abc" as one padded block, hashed to its published
    /// SHA-512 and SHA-384 digests in every pair of distinct lanes'
    /// turn (SHA-512 in lane `i`, SHA-384 in lane `L - 1 - i`, where they
    /// differ), the other lanes with random states and data.
    pub(in super::super) fn fips_abc_against_published<const L: usize>(
        what: &str,
        compress: Kernel<'_, L>,
    ) {
        // FIPS 180-4 5.3.5 (SHA-512 initial hash value); SHA-384's is the
        // library's own.
        const SHA512_IV: [u64; 8] = [
            0x6a09e667f3bcc908,
            0xbb67ae8584caa73b,
            0x3c6ef372fe94f82b,
            0xa54ff53a5f1d36f1,
            0x510e527fade682d1,
            0x9b05688c2b3e6c1f,
            0x1f83d9abfb41bd6b,
            0x5be0cd19137e2179,
        ];
        // "abc", 0x80, zeros, the 128-bit length 24 (FIPS 180-4 5.1.2).
        let mut block = [0u8; 128];
        block[..4].copy_from_slice(b"abc\x80");
        block[127] = 24;
        // The published digests of "abc" (FIPS 180-4 examples).
        let sha512 = hex(concat!(
            "ddaf35a193617abacc417349ae204131",
            "12e6fa4e89a97ea20a9eeee64b55d39a",
            "2192992a274fc1a836ba3c23a3feebbd",
            "454d4423643ce80e2a9ac94fa54ca49f",
        ));
        let sha384 = hex(concat!(
            "cb00753f45a35e8bb5a03d699ac65007",
            "272c32ab0eded1631a8b605a43ff5bed",
            "8086072ba1e7cc2358baeca134c825a7",
        ));
        let mut rng = SplitMix64(3);
        let others: Vec<u8> = {
            let mut b = vec![0u8; 128];
            rng.fill(&mut b);
            b
        };
        for l512 in 0..L {
            let l384 = L - 1 - l512;
            let mut states: [[u64; 8]; L] =
                core::array::from_fn(|_| core::array::from_fn(|_| rng.next()));
            states[l512] = SHA512_IV;
            states[l384] = Sha384::INITIAL_STATE;
            let data: [&[u8]; L] = core::array::from_fn(|i| {
                if i == l512 || i == l384 {
                    &block[..]
                } else {
                    &others[..]
                }
            });
            compress(&mut states, &data, 1);
            if l512 != l384 {
                let digest: Vec<u8> = states[l512].iter().flat_map(|w| w.to_be_bytes()).collect();
                assert_eq!(digest, sha512, "{what}: SHA-512 in lane {l512}");
            }
            let digest: Vec<u8> = states[l384][..6]
                .iter()
                .flat_map(|w| w.to_be_bytes())
                .collect();
            assert_eq!(digest, sha384, "{what}: SHA-384 in lane {l384}");
        }
    }

    #[test]
    fn random_lanes_match_sha2() {
        let Some(t) = token() else { return };
        random_lanes_against_sha2::<8>("x8", &mut |s, d, n| compress_x8(t, s, d, n));
    }

    #[test]
    fn edge_words_match_sha2() {
        let Some(t) = token() else { return };
        edge_words_against_sha2::<8>("x8", &mut |s, d, n| compress_x8(t, s, d, n));
    }

    #[test]
    fn fips_abc_in_one_padded_block() {
        let Some(t) = token() else { return };
        fips_abc_against_published::<8>("x8", &mut |s, d, n| compress_x8(t, s, d, n));
    }

    fn median(v: &mut [f64]) -> String {
        v.sort_by(f64::total_cmp);
        format!("{:.2}", v[v.len() / 2])
    }

    /// "median [best]": on a shared machine a run may lose the core part
    /// way; the best run is the least disturbed one.
    fn median_best(v: &mut [f64]) -> String {
        v.sort_by(f64::total_cmp);
        format!("{:.2} [{:.2}]", v[v.len() / 2], v[v.len() - 1])
    }

    /// Timing, printed only (`cargo test --release --lib sha512_x8 --
    /// --nocapture`): GB/s of 8 lanes x 16 KiB against the single-stream
    /// SHA-512 kernel the CPU picks and the `sha2` crate's, over the same
    /// lanes, in alternating short runs (a run is one pass over the lanes,
    /// tens of microseconds, so that a loaded machine's preemptions hit
    /// the slower references no more often than the kernel).
    #[test]
    fn print_throughput() {
        use std::time::Instant;
        let Some(t) = token() else { return };
        if cfg!(debug_assertions) {
            eprintln!(
                "SKIPPED: SHA-512 x8 timing (debug build; run with --release -- --nocapture)"
            );
            return;
        }
        const LEN: usize = 16384;
        const ROUNDS: usize = 201;
        let single =
            super::super::super::sha512::Sha512Kernel::new(crate::backends::cpu::enabled());
        let mut rng = SplitMix64(8);
        let bufs: Vec<Vec<u8>> = (0..8)
            .map(|_| {
                let mut b = vec![0u8; LEN];
                rng.fill(&mut b);
                b
            })
            .collect();
        let data: [&[u8]; 8] = core::array::from_fn(|i| &bufs[i][..]);
        let mut states: [[u64; 8]; 8] = [Sha384::INITIAL_STATE; 8];
        let mut m: [Vec<f64>; 3] = Default::default();
        let bytes = (8 * LEN) as f64;
        for round in 0..ROUNDS {
            // A different order each round, so that none gains from its
            // place: the x8 kernel, the kernel the CPU picks, the `sha2`
            // crate's.
            for k in 0..3 {
                let k = (k + round) % 3;
                let start = Instant::now();
                if k == 0 {
                    compress_x8(t, &mut states, &data, LEN / 128);
                } else {
                    for (state, lane) in states.iter_mut().zip(&data) {
                        let blocks = lane.as_chunks::<128>().0;
                        if k == 1 {
                            single.compress(state, blocks);
                        } else {
                            sha2::block_api::compress512(state, blocks);
                        }
                    }
                }
                m[k].push(bytes / start.elapsed().as_nanos() as f64);
            }
        }
        let mut ratio: Vec<f64> = m[0].iter().zip(&m[1]).map(|(a, b)| a / b).collect();
        let mut ratio_crate: Vec<f64> = m[0].iter().zip(&m[2]).map(|(a, b)| a / b).collect();
        let best = |v: &[f64]| v.iter().copied().fold(0.0, f64::max);
        let best_ratios = (best(&m[0]) / best(&m[1]), best(&m[0]) / best(&m[2]));
        core::hint::black_box(&states);
        eprintln!(
            "SHA-512 compression, 8 lanes x {LEN} B: x8 kernel {} GB/s; single stream \
             {single:?} {} GB/s, ratio {} [{:.2}]; sha2 crate {} GB/s, ratio {} [{:.2}] \
             (median [best] of {ROUNDS} short runs)",
            median_best(&mut m[0]),
            median_best(&mut m[1]),
            median(&mut ratio),
            best_ratios.0,
            median_best(&mut m[2]),
            median(&mut ratio_crate),
            best_ratios.1
        );
    }
}
