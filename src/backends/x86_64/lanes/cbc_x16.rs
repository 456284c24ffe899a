//! AES-CBC encryption of up to sixteen independent lanes with VAES: four
//! lanes per zmm register, each lane with its own round keys.
//!
//! One lane's CBC encryption is a serial chain of AES rounds; the lanes
//! of a register advance together (one `vaesenc` runs a round of all four)
//! and the registers' chains are interleaved round by round, so up to four
//! chains keep the AES unit busy. Each step gathers block `t` of the four
//! lanes of a register into one zmm (one 128-bit load and three inserts)
//! and scatters the ciphertext back (extracts to memory): the lanes live
//! in separate buffers. Where many lanes' buffers start at the same offset
//! in their pages, their cache lines compete for one L1 set, and a line
//! read block by block is evicted between its four blocks; then the
//! kernel reads and writes each lane 64 bytes at a time, transposing four
//! blocks of four lanes in registers (`encrypt` with `LINES`). More than
//! eight such lanes do not fit a set's ways even so: then the first eight
//! run two lines ahead of the others (`STAGGER`), so each set holds eight.
//!
//! On AMD family 0x19 model 0x11 (Zen 4) sixteen lanes take about 56
//! cycles a step (a block of every lane), where the chains allow 41. A
//! hand-scheduled assembly form ran no faster: its chains alone, with the
//! round keys as memory operands, took 42 cycles a step, and each way of
//! moving the blocks in and out that was tried (line loads and transposes,
//! masked loads, extracts to memory, the next lines loaded a group ahead)
//! added 10-15 cycles back.

use core::arch::x86_64::*;

use super::super::Vaes512;
use super::super::aes::Schedule;

/// Round keys of sixteen lanes, stored per register: `rk[r][i]` holds round
/// key `i` of lanes `4r..4r + 4` (64 bytes, lane 4r in the low 128 bits).
#[repr(C, align(64))]
pub(crate) struct LaneKeys<const N: usize> {
    pub(super) rk: [[[u8; 64]; N]; 4],
}

impl<const N: usize> LaneKeys<N> {
    /// All round keys zero (a lane never set encrypts with the zero keys,
    /// harmlessly: the kernel only stores the lanes it is given).
    pub(crate) fn new() -> Self {
        LaneKeys {
            rk: [[[0u8; 64]; N]; 4],
        }
    }

    /// Copies `s`, an encryption schedule, into lane `lane` (< 16).
    pub(crate) fn set_lane(&mut self, lane: usize, s: &Schedule<N>) {
        let (r, j) = (lane / 4, lane % 4);
        for (dst, src) in self.rk[r].iter_mut().zip(&s.0) {
            dst[16 * j..16 * j + 16].copy_from_slice(src);
        }
    }
}

impl<const N: usize> Drop for LaneKeys<N> {
    fn drop(&mut self) {
        // Eight volatile 64-bit stores a row. `Zeroize` on byte arrays
        // stores one byte at a time: 2816 stores for the AES-128 keys of
        // a batch, 7% of the time of a batch seal of 1408-byte records.
        for row in self.rk.iter_mut().flatten() {
            let words = row.as_mut_ptr().cast::<u64>();
            for i in 0..8 {
                // SAFETY: `row` is 64 writable bytes, 64-byte aligned
                // (`LaneKeys` is `align(64)` and its rows are 64 bytes), so
                // word `i < 8` is in it and 8-byte aligned.
                unsafe { core::ptr::write_volatile(words.add(i), 0) };
            }
        }
        // As `zeroize` does: keep later code from moving before the wipe.
        core::sync::atomic::compiler_fence(core::sync::atomic::Ordering::SeqCst);
    }
}

/// CBC-encrypts `blocks` 16-byte blocks in place in each lane `i < data.len()`
/// (at most 16 lanes; `data[i]` holds at least `16 * blocks` bytes), chaining
/// from `ivs[i]`, which becomes the lane's last ciphertext block.
/// Lanes beyond `data.len()` are not touched; the kernel runs only
/// `ceil(data.len() / 4)` registers.
///
/// # Panics
/// If there are more than 16 lanes, fewer IVs than lanes, or a lane is
/// shorter than `16 * blocks` bytes: the batch layer sizes them (public
/// lengths), so a panic here is a bug there.
pub(crate) fn cbc_encrypt_x16<const N: usize>(
    t: Vaes512,
    keys: &LaneKeys<N>,
    ivs: &mut [[u8; 16]],
    data: &mut [&mut [u8]],
    blocks: usize,
) {
    let _ = t;
    let lanes = data.len();
    assert!(lanes <= 16, "at most 16 lanes");
    assert!(ivs.len() >= lanes, "an IV per lane");
    if lanes == 0 || blocks == 0 {
        return;
    }
    let len = 16 * blocks;
    let mut ptrs = [core::ptr::null_mut::<u8>(); 16];
    for (p, lane) in ptrs.iter_mut().zip(data.iter_mut()) {
        *p = lane[..len].as_mut_ptr();
    }
    let ivs = &mut ivs[..lanes];
    let ptrs = &ptrs[..lanes];
    if !staggered(ptrs, blocks) {
        // SAFETY: `ptrs[i]` points at `16 blocks` writable bytes of lane
        // `i` (sliced above), the lanes are distinct `&mut` slices so they
        // do not overlap, `data` stays borrowed for the call, and `keys`
        // has a row for every register.
        return unsafe { run(&keys.rk, ivs, ptrs, blocks) };
    }
    // The first eight lanes run `STAGGER` blocks ahead of the others: their
    // first blocks alone, then every lane, then the others' last blocks.
    let (ahead, behind) = ptrs.split_at(8);
    let (from, to) = (16 * STAGGER, 16 * (blocks - STAGGER));
    let mut both = [core::ptr::null_mut::<u8>(); 16];
    for (b, p) in both.iter_mut().zip(ahead) {
        *b = p.wrapping_add(from);
    }
    both[8..lanes].copy_from_slice(behind);
    let mut last = [core::ptr::null_mut::<u8>(); 8];
    for (l, p) in last.iter_mut().zip(behind) {
        *l = p.wrapping_add(to);
    }
    // SAFETY: as above, each call covering a part of every lane it is
    // given: lanes 0-7's bytes `0..from`, then every lane's `to` bytes
    // (lanes 0-7 from byte `from`, the others from 0), then lanes 8..'s
    // bytes `to..16 blocks`; `blocks > 2 STAGGER`, so no part is empty.
    // Rows `2..` of `keys` are lanes 8..'s, in the order of `ivs[8..]`.
    unsafe {
        run(&keys.rk, &mut ivs[..8], ahead, STAGGER);
        run(&keys.rk, ivs, &both[..lanes], blocks - STAGGER);
        run(&keys.rk[2..], &mut ivs[8..], &last[..lanes - 8], STAGGER);
    }
}

/// Blocks the first eight lanes run ahead of the others where more than
/// eight lanes crowd one L1 set (`staggered`): two lines, so that the two
/// halves, and the next lines the prefetcher brings in, sit in different
/// sets. Measured on Intel family 6 model 0xA7, sixteen lanes at one page
/// offset, ns a lane (medians of 7): 16 KiB lanes 1253-1304 unstaggered,
/// 776-881 two lines ahead, 836 four lines ahead, 1405 one line ahead,
/// against 738-886 for lanes in distinct sets; 1408-byte lanes 108-118,
/// 79-86, 79, 144, against 68-79.
const STAGGER: usize = 8;

/// Whether the lanes run staggered: more than eight, crowding one L1 set
/// (`crowded`), each long enough for the two lines ahead and behind.
/// Eight lanes of one set fit its ways; sixteen do not, even a line at a
/// time: a lane's line is evicted between its load and its store, and the
/// lines the prefetcher brings in for the next step evict others.
fn staggered(ptrs: &[*mut u8], blocks: usize) -> bool {
    ptrs.len() > 8 && blocks > 2 * STAGGER && crowded(ptrs)
}

/// Runs the kernel for the `p.len()` lanes (1 to 16) with round keys `rk`
/// (a row per register of four lanes), the line-at-a-time form where they
/// crowd one L1 set.
///
/// # Safety
/// The CPU must have the kernel's features (a `Vaes512` token proves it);
/// `p[i]` must point at `16 blocks` writable bytes, no two lanes
/// overlapping; `rk` must hold a row per register of lanes, `ivs` an IV
/// per lane; `blocks > 0`.
// Inlined: as a call of its own, the unstaggered batch seal of sixteen
// 16 KiB records measured 4-11% slower on Intel family 6 model 0xA7.
#[inline(always)]
unsafe fn run<const N: usize>(
    rk: &[[[u8; 64]; N]],
    ivs: &mut [[u8; 16]],
    p: &[*mut u8],
    blocks: usize,
) {
    let lanes = p.len();
    debug_assert!(rk.len() >= lanes.div_ceil(4));
    let mut ptrs = [core::ptr::null_mut::<u8>(); 16];
    ptrs[..lanes].copy_from_slice(p);
    let ivs = &mut ivs[..lanes];
    let crowded = crowded(p);
    macro_rules! dispatch {
        ($(($r:literal, $l:literal))*) => {
            match (lanes.div_ceil(4), (lanes - 1) % 4 + 1) {
                $(
                    // SAFETY: the caller guarantees the CPU features, the
                    // `lanes = 4 ($r - 1) + $l` lanes copied into `ptrs`,
                    // a row of `rk` per register and `blocks > 0`.
                    ($r, $l) if crowded => unsafe { encrypt::<N, $r, $l, true, true>(rk, ivs, &ptrs, blocks) },
                    // SAFETY: as above.
                    ($r, $l) => unsafe { encrypt::<N, $r, $l, true, false>(rk, ivs, &ptrs, blocks) },
                )*
                _ => unreachable!("1 to 16 lanes"),
            }
        };
    }
    dispatch! {
        (1, 1) (1, 2) (1, 3) (1, 4)
        (2, 1) (2, 2) (2, 3) (2, 4)
        (3, 1) (3, 2) (3, 3) (3, 4)
        (4, 1) (4, 2) (4, 3) (4, 4)
    }
}

/// Lanes in one L1 set from which the line-at-a-time kernel runs.
/// Measured on Intel family 6 model 0xA7 (48 KiB, 12-way L1), a batch seal
/// of 16 x 1408-byte MAC-then-encrypt SHA-1 records, ns a record (medians),
/// block by block / line by line: 16 lanes in one set 623 / 478; 8 in each
/// of two sets 388-395 / 413-426 (ranges); lanes in distinct sets about
/// 395 / 420 (ranges 391-395 / 418-426).
const CROWDED_SET: usize = 9;

/// Whether `CROWDED_SET` or more lanes start in the same L1 set (bits 6-11
/// of the address: the same offset in their pages, to the cache line), so
/// that their lines, read four times each block by block, would evict one
/// another. Addresses are public.
fn crowded(ptrs: &[*mut u8]) -> bool {
    let mut count = [0u8; 64];
    for p in ptrs {
        let set = (*p as usize >> 6) & 63;
        count[set] += 1;
        if usize::from(count[set]) >= CROWDED_SET {
            return true;
        }
    }
    false
}

/// Aligned 64-byte load of a row of round keys.
#[inline]
#[target_feature(enable = "avx512f")]
fn load_keys(row: &[u8; 64]) -> __m512i {
    // SAFETY: `row` is 64 readable bytes, 64-byte aligned (`LaneKeys` is
    // `align(64)` and its rows are 64 bytes).
    unsafe { _mm512_load_si512(row.as_ptr().cast()) }
}

/// Block `at` (a byte offset) of the first `L` lanes of `p`, lane `j` in
/// 128-bit lane `j` (the others zero).
///
/// # Safety
/// `p[j] + at .. p[j] + at + 16` must be readable for `j < L`.
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn gather<const L: usize>(p: &[*mut u8], at: usize) -> __m512i {
    // SAFETY: the caller guarantees the 16 bytes of each lane; `loadu`
    // needs no alignment.
    unsafe {
        let mut z = _mm512_zextsi128_si512(_mm_loadu_si128(p[0].add(at).cast()));
        if L > 1 {
            z = _mm512_inserti32x4::<1>(z, _mm_loadu_si128(p[1].add(at).cast()));
        }
        if L > 2 {
            z = _mm512_inserti32x4::<2>(z, _mm_loadu_si128(p[2].add(at).cast()));
        }
        if L > 3 {
            z = _mm512_inserti32x4::<3>(z, _mm_loadu_si128(p[3].add(at).cast()));
        }
        z
    }
}

/// Stores 128-bit lane `j` of `z` at `p[j] + at` for `j < L`.
///
/// # Safety
/// `p[j] + at .. p[j] + at + 16` must be writable for `j < L`.
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn scatter<const L: usize>(p: &[*mut u8], at: usize, z: __m512i) {
    // SAFETY: as in `gather`, for writes.
    unsafe {
        _mm_storeu_si128(p[0].add(at).cast(), _mm512_castsi512_si128(z));
        if L > 1 {
            _mm_storeu_si128(p[1].add(at).cast(), _mm512_extracti32x4_epi32::<1>(z));
        }
        if L > 2 {
            _mm_storeu_si128(p[2].add(at).cast(), _mm512_extracti32x4_epi32::<2>(z));
        }
        if L > 3 {
            _mm_storeu_si128(p[3].add(at).cast(), _mm512_extracti32x4_epi32::<3>(z));
        }
    }
}

/// The IVs of lanes `j < L` of `ivs` in a zmm, as [`gather`].
#[inline]
#[target_feature(enable = "avx512f")]
fn gather_ivs<const L: usize>(ivs: &[[u8; 16]]) -> __m512i {
    let p: [*mut u8; 4] = core::array::from_fn(|j| {
        ivs.get(j)
            .map_or(core::ptr::null_mut(), |iv| iv.as_ptr().cast_mut())
    });
    // SAFETY: `ivs` holds at least `L` blocks (the caller's lane count),
    // and `gather` only reads.
    unsafe { gather::<L>(&p, 0) }
}

/// Writes lanes `j < L` of `z` to `ivs`, as [`scatter`].
#[inline]
#[target_feature(enable = "avx512f")]
fn scatter_ivs<const L: usize>(ivs: &mut [[u8; 16]], z: __m512i) {
    let mut p = [core::ptr::null_mut::<u8>(); 4];
    for (p, iv) in p.iter_mut().zip(ivs.iter_mut()) {
        *p = iv.as_mut_ptr();
    }
    // SAFETY: `ivs` holds at least `L` writable blocks (the caller's lane
    // count).
    unsafe { scatter::<L>(&p, 0, z) }
}

/// Transposes four 128-bit lanes of four zmm registers: block `b` of row
/// `j` becomes block `j` of row `b` (its own inverse). Rows are lanes'
/// 64-byte lines on one side and the four lanes' blocks `t..t + 4` on the
/// other.
#[inline]
#[target_feature(enable = "avx512f")]
fn transpose4(m: [__m512i; 4]) -> [__m512i; 4] {
    let t0 = _mm512_shuffle_i64x2::<0x44>(m[0], m[1]);
    let t1 = _mm512_shuffle_i64x2::<0xee>(m[0], m[1]);
    let t2 = _mm512_shuffle_i64x2::<0x44>(m[2], m[3]);
    let t3 = _mm512_shuffle_i64x2::<0xee>(m[2], m[3]);
    [
        _mm512_shuffle_i64x2::<0x88>(t0, t2),
        _mm512_shuffle_i64x2::<0xdd>(t0, t2),
        _mm512_shuffle_i64x2::<0x88>(t1, t3),
        _mm512_shuffle_i64x2::<0xdd>(t1, t3),
    ]
}

/// Blocks `at / 16 .. at / 16 + 4` of the first `L` lanes of `p`, block
/// `at / 16 + b` in row `b`, lane `j` in its 128-bit lane `j`: one 64-byte
/// load a lane.
///
/// # Safety
/// `p[j] + at .. p[j] + at + 64` must be readable for `j < L`.
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn gather_lines<const L: usize>(p: &[*mut u8], at: usize) -> [__m512i; 4] {
    let rows: [__m512i; 4] = core::array::from_fn(|j| {
        if j < L {
            // SAFETY: the caller guarantees the 64 bytes of lane `j < L`;
            // `loadu` needs no alignment.
            unsafe { _mm512_loadu_si512(p[j].add(at).cast()) }
        } else {
            _mm512_setzero_si512()
        }
    });
    transpose4(rows)
}

/// Stores rows `b` of `z` (four lanes' block `at / 16 + b`) as each lane's
/// 64 bytes at `p[j] + at`, for `j < L`: the inverse of [`gather_lines`].
///
/// # Safety
/// `p[j] + at .. p[j] + at + 64` must be writable for `j < L`.
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn scatter_lines<const L: usize>(p: &[*mut u8], at: usize, z: [__m512i; 4]) {
    for (j, row) in transpose4(z).into_iter().enumerate().take(L) {
        // SAFETY: the caller guarantees the 64 bytes of lane `j < L`.
        unsafe { _mm512_storeu_si512(p[j].add(at).cast(), row) };
    }
}

/// Runs `R` registers of lanes: registers `0..R - 1` full, register `R - 1`
/// with `L` lanes. `p[i]` is lane `i`'s data, `ivs[i]` its IV.
///
/// With `FOLD`, the xor of the next plaintext block and round key 0 is
/// folded into the last round's key (`vaesenclast` ends with an xor, and
/// `last ^ k0` is constant), so only AES rounds sit on each chain, as in
/// the single-chain AES-NI kernel; that costs a second xor per step off
/// the chain. Without, the one xor sits on the chain. One or two registers
/// are bound by the chains' latency, three or four by `vaesenc` throughput
/// (one zmm per cycle on Intel Emerald Rapids, on the port the xors
/// share), so one might expect the plain form to win there; measured, the
/// folded form is as fast or faster for every `R` (see the timing test),
/// so the kernel always folds and the plain form stays for measuring.
///
/// Three or four registers' round keys do not fit in the 32 zmm registers,
/// so most rounds read their key from memory, reloaded from the stack
/// copy the compiler spills. At three or four registers the same code
/// measured up to a fifth apart depending on the call site (cause not
/// established: stack placement of those keys against the lanes' stores,
/// 4 KiB aliasing, is the suspect; back-to-back passes did not differ).
///
/// With `LINES`, each lane's data is read and written 64 bytes at a time:
/// four blocks of a register's lanes are loaded together and transposed,
/// and the ciphertext is kept for four steps and stored the same way;
/// blocks past the last whole group of four go block by block, as all
/// blocks do without. Lanes whose buffers sit at the same offset in their
/// pages share the L1 sets of those offsets; sixteen such lanes are more
/// than the ways of a set, so a line reloaded for each of its four blocks
/// misses each time. Elsewhere the staging costs a little more than the
/// block-by-block gathers (see [`CROWDED_SET`]).
///
/// # Safety
/// `p[i]` must point at `16 blocks` writable bytes, for `i < 4 (R - 1) +
/// L`, none overlapping another lane's; `blocks > 0`.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,vaes,aes,sse2,sse4.1")]
unsafe fn encrypt<
    const N: usize,
    const R: usize,
    const L: usize,
    const FOLD: bool,
    const LINES: bool,
>(
    rk: &[[[u8; 64]; N]],
    ivs: &mut [[u8; 16]],
    p: &[*mut u8; 16],
    blocks: usize,
) {
    debug_assert_eq!(ivs.len(), 4 * (R - 1) + L);
    let groups = if LINES { blocks / 4 } else { 0 };
    // Register `r`'s group `g` (blocks `4g..4g + 4`), or its block `t`.
    let load_group = |r: usize, g: usize| {
        // SAFETY: the caller passes `g < blocks / 4`: four whole blocks of
        // each of the register's lanes.
        unsafe {
            if r + 1 < R {
                gather_lines::<4>(&p[4 * r..], 64 * g)
            } else {
                gather_lines::<L>(&p[4 * r..], 64 * g)
            }
        }
    };
    let store_group = |r: usize, g: usize, z: [__m512i; 4]| {
        // SAFETY: as for `load_group`.
        unsafe {
            if r + 1 < R {
                scatter_lines::<4>(&p[4 * r..], 64 * g, z);
            } else {
                scatter_lines::<L>(&p[4 * r..], 64 * g, z);
            }
        }
    };
    let load_block = |r: usize, t: usize| {
        // SAFETY: the caller passes `t < blocks`.
        unsafe {
            if r + 1 < R {
                gather::<4>(&p[4 * r..], 16 * t)
            } else {
                gather::<L>(&p[4 * r..], 16 * t)
            }
        }
    };
    let store_block = |r: usize, t: usize, z: __m512i| {
        // SAFETY: as for `load_block`.
        unsafe {
            if r + 1 < R {
                scatter::<4>(&p[4 * r..], 16 * t, z);
            } else {
                scatter::<L>(&p[4 * r..], 16 * t, z);
            }
        }
    };
    let k0: [__m512i; R] = core::array::from_fn(|r| load_keys(&rk[r][0]));
    let last: [__m512i; R] = core::array::from_fn(|r| load_keys(&rk[r][N - 1]));
    let last_k0: [__m512i; R] = core::array::from_fn(|r| _mm512_xor_si512(last[r], k0[r]));
    let middle = |mut s: [__m512i; R]| {
        // Round by round across the registers: round `i` of every chain.
        #[allow(clippy::needless_range_loop)]
        for i in 1..N - 1 {
            for (r, s) in s.iter_mut().enumerate() {
                *s = _mm512_aesenc_epi128(*s, load_keys(&rk[r][i]));
            }
        }
        s
    };
    let iv: [__m512i; R] = core::array::from_fn(|r| {
        if r + 1 < R {
            gather_ivs::<4>(&ivs[4 * r..])
        } else {
            gather_ivs::<L>(&ivs[4 * r..])
        }
    });
    // Register `r`'s last round of block `t` from `s`, and block `t + 1`'s
    // round-0 input `x` from its plaintext `next`; returns the ciphertext
    // of block `t`.
    let last_round = |x: &mut __m512i, s: __m512i, r: usize, next: __m512i| {
        if FOLD {
            // vaesenclast(s, last ^ k0 ^ next) = c ^ k0 ^ next: the next
            // round-0 input.
            *x = _mm512_aesenclast_epi128(s, _mm512_xor_si512(last_k0[r], next));
            _mm512_ternarylogic_epi64::<0x96>(*x, k0[r], next)
        } else {
            let c = _mm512_aesenclast_epi128(s, last[r]);
            *x = _mm512_ternarylogic_epi64::<0x96>(c, k0[r], next);
            c
        }
    };
    let step = |x: &mut [__m512i; R], next: [__m512i; R]| -> [__m512i; R] {
        let s = middle(*x);
        core::array::from_fn(|r| last_round(&mut x[r], s[r], r, next[r]))
    };
    let zero = _mm512_setzero_si512();
    // The current group's plaintext, row `b` block `4g + b`, and its
    // ciphertext until the group's last block.
    let mut cur = [[zero; 4]; R];
    let mut out = [[zero; 4]; R];
    let first: [__m512i; R] = if groups > 0 {
        cur = core::array::from_fn(|r| load_group(r, 0));
        core::array::from_fn(|r| cur[r][0])
    } else {
        core::array::from_fn(|r| load_block(r, 0))
    };
    // Round-0 inputs of the first block: p ^ k0 ^ iv.
    let mut x: [__m512i; R] =
        core::array::from_fn(|r| _mm512_ternarylogic_epi64::<0x96>(first[r], k0[r], iv[r]));
    let mut c = [zero; R];
    for g in 0..groups {
        for b in 0..3 {
            let next = core::array::from_fn(|r| cur[r][b + 1]);
            let cb = step(&mut x, next);
            for (rows, cb) in out.iter_mut().zip(cb) {
                rows[b] = cb;
            }
        }
        let t = 4 * g + 3;
        if t + 1 == blocks {
            // The last block of all: unfolded.
            let s = middle(x);
            c = core::array::from_fn(|r| _mm512_aesenclast_epi128(s[r], last[r]));
        } else {
            let next: [__m512i; R] = if g + 1 < groups {
                cur = core::array::from_fn(|r| load_group(r, g + 1));
                core::array::from_fn(|r| cur[r][0])
            } else {
                core::array::from_fn(|r| load_block(r, t + 1))
            };
            c = step(&mut x, next);
        }
        for (r, (rows, c)) in out.iter_mut().zip(c).enumerate() {
            rows[3] = c;
            store_group(r, g, *rows);
        }
    }
    // Blocks past the whole groups, one at a time.
    if 4 * groups < blocks {
        for t in 4 * groups..blocks - 1 {
            let s = middle(x);
            for r in 0..R {
                let c = last_round(&mut x[r], s[r], r, load_block(r, t + 1));
                store_block(r, t, c);
            }
        }
        let s = middle(x);
        c = core::array::from_fn(|r| _mm512_aesenclast_epi128(s[r], last[r]));
        for (r, c) in c.into_iter().enumerate() {
            store_block(r, blocks - 1, c);
        }
    }
    for (r, c) in c.iter().enumerate() {
        let ivs = &mut ivs[4 * r..];
        if r + 1 < R {
            scatter_ivs::<4>(ivs, *c);
        } else {
            scatter_ivs::<L>(ivs, *c);
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::super::super::aes::AesNiKey;
    use super::super::super::test_rng::SplitMix64;
    use super::*;
    use crate::backends::portable::AesKey;
    use crate::combination::Cipher;

    fn token() -> Option<Vaes512> {
        let token = Vaes512::detect();
        if token.is_none() {
            eprintln!("SKIPPED: CBC x16 lane tests (CPU lacks AVX-512 F/BW/VL or VAES)");
        }
        token
    }

    #[test]
    fn lane_keys_are_wiped_on_drop() {
        // Runs on any CPU: the wipe is plain stores.
        let s = Schedule::<11>(core::array::from_fn(|i| [i as u8 + 1; 16]));
        let mut keys = core::mem::ManuallyDrop::new(LaneKeys::<11>::new());
        for lane in 0..16 {
            keys.set_lane(lane, &s);
        }
        assert!(keys.rk.iter().flatten().flatten().any(|&b| b != 0));
        // SAFETY: dropped once; the bytes stay allocated in the
        // `ManuallyDrop` and are plain `u8`s, valid in any state.
        unsafe { core::mem::ManuallyDrop::drop(&mut keys) };
        assert!(keys.rk.iter().flatten().flatten().all(|&b| b == 0));
    }

    /// A copy of `k`'s encryption schedule.
    pub(in super::super) fn schedule<const N: usize>(k: &AesNiKey) -> Schedule<N> {
        let rows: &[[u8; 16]] = match k {
            AesNiKey::Aes128(s, _) => &s.enc.0,
            AesNiKey::Aes256(s, _) => &s.enc.0,
        };
        assert_eq!(rows.len(), N);
        Schedule(core::array::from_fn(|i| rows[i]))
    }

    /// AES-128 for 11 round keys, AES-256 for 15.
    pub(in super::super) fn cipher<const N: usize>() -> Cipher {
        match N {
            11 => Cipher::Aes128Cbc,
            15 => Cipher::Aes256Cbc,
            _ => unreachable!("AES-128 or AES-256"),
        }
    }

    fn as_blocks(bytes: &[u8]) -> Vec<[u8; 16]> {
        bytes
            .chunks_exact(16)
            .map(|b| b.try_into().expect("16"))
            .collect()
    }

    /// `lanes` lanes of `blocks` blocks with random keys, IVs and data, some
    /// lanes longer than `16 blocks`; every lane against AES-NI and the
    /// portable `aes` + `cbc`, the IVs and buffers of the other lanes (and
    /// the tails of longer lanes) unchanged.
    ///
    /// With `crowd`, the lanes sit 4 KiB apart in one buffer, all in the
    /// same L1 sets: nine lanes or more run the line-at-a-time kernel.
    fn check_random<const N: usize>(
        t: Vaes512,
        rng: &mut SplitMix64,
        lanes: usize,
        blocks: usize,
        crowd: bool,
    ) {
        let cipher = cipher::<N>();
        let key_len = if N == 11 { 16 } else { 32 };
        let raw: Vec<[u8; 32]> = rng.blocks(16);
        let ni: Vec<AesNiKey> = raw
            .iter()
            .map(|k| AesNiKey::new(t.aes_ni(), cipher, &k[..key_len]))
            .collect();
        let portable: Vec<AesKey> = raw
            .iter()
            .map(|k| AesKey::new(cipher, &k[..key_len]))
            .collect();
        let mut keys = LaneKeys::<N>::new();
        for (lane, k) in ni.iter().enumerate().take(lanes) {
            keys.set_lane(lane, &schedule::<N>(k));
        }
        let mut bufs: Vec<Vec<u8>> = (0..16)
            .map(|_| {
                let extra = (rng.next() % 40) as usize;
                let mut b = vec![0u8; 16 * blocks + extra];
                rng.fill(&mut b);
                b
            })
            .collect();
        let before = bufs.clone();
        let ivs_before: Vec<[u8; 16]> = rng.blocks(16);
        let mut ivs = ivs_before.clone();
        if crowd {
            const STRIDE: usize = 4096;
            let mut arena = vec![0u8; 17 * STRIDE];
            let skip = (STRIDE - arena.as_ptr() as usize % STRIDE) % STRIDE;
            let mut data: Vec<&mut [u8]> = arena[skip..]
                .chunks_mut(STRIDE)
                .zip(&bufs)
                .take(lanes)
                .map(|(a, b)| {
                    a[..b.len()].copy_from_slice(b);
                    &mut a[..b.len()]
                })
                .collect();
            let ptrs: Vec<*mut u8> = data.iter_mut().map(|d| d.as_mut_ptr()).collect();
            assert_eq!(crowded(&ptrs), lanes >= CROWDED_SET);
            assert_eq!(staggered(&ptrs, blocks), lanes > 8 && blocks > 2 * STAGGER);
            cbc_encrypt_x16(t, &keys, &mut ivs, &mut data, blocks);
            for (b, d) in bufs.iter_mut().zip(data) {
                b.copy_from_slice(d);
            }
        } else {
            let mut data: Vec<&mut [u8]> =
                bufs.iter_mut().take(lanes).map(|b| &mut b[..]).collect();
            cbc_encrypt_x16(t, &keys, &mut ivs, &mut data, blocks);
        }
        let len = 16 * blocks;
        for lane in 0..16 {
            let what = format!(
                "AES-{}, {lanes} lanes, {blocks} blocks, lane {lane}",
                8 * key_len
            );
            if lane >= lanes {
                assert_eq!(bufs[lane], before[lane], "{what}: untouched");
                assert_eq!(ivs[lane], ivs_before[lane], "{what}: IV untouched");
                continue;
            }
            let mut ni_iv = ivs_before[lane];
            let mut ni_out = as_blocks(&before[lane][..len]);
            ni[lane].encrypt_cbc(&mut ni_iv, &mut ni_out);
            let mut p_iv = ivs_before[lane];
            let mut p_out = as_blocks(&before[lane][..len]);
            portable[lane].encrypt_cbc(&mut p_iv, &mut p_out);
            assert_eq!((ni_out.as_flattened(), ni_iv), (p_out.as_flattened(), p_iv));
            assert_eq!(&bufs[lane][..len], ni_out.as_flattened(), "{what}");
            assert_eq!(ivs[lane], ni_iv, "{what}: chaining value");
            assert_eq!(
                bufs[lane][len..],
                before[lane][len..],
                "{what}: tail untouched"
            );
        }
    }

    #[test]
    fn random_lanes_match_aes_ni_and_portable() {
        let Some(t) = token() else { return };
        let mut rng = SplitMix64(13);
        for lanes in 1..=16 {
            for blocks in [0, 1, 2, 7, 64] {
                check_random::<11>(t, &mut rng, lanes, blocks, false);
                check_random::<15>(t, &mut rng, lanes, blocks, false);
            }
        }
    }

    /// The same with the lanes in one L1 set (the line-at-a-time kernel
    /// from nine lanes), at every count of blocks past the whole groups of
    /// four.
    #[test]
    fn crowded_lanes_match_aes_ni_and_portable() {
        let Some(t) = token() else { return };
        let mut rng = SplitMix64(17);
        for lanes in [1, 4, 8, 9, 12, 13, 16] {
            for blocks in [1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 17, 18, 64, 87, 200] {
                check_random::<11>(t, &mut rng, lanes, blocks, true);
                check_random::<15>(t, &mut rng, lanes, blocks, true);
            }
        }
    }

    #[test]
    fn no_lanes_is_a_no_op() {
        let Some(t) = token() else { return };
        let keys = LaneKeys::<11>::new();
        let mut ivs = [[7u8; 16]; 2];
        cbc_encrypt_x16(t, &keys, &mut ivs, &mut [], 3);
        assert_eq!(ivs, [[7u8; 16]; 2]);
    }

    #[test]
    fn set_lane_places_keys_by_register() {
        let mut keys = LaneKeys::<11>::new();
        let s = Schedule(core::array::from_fn(|i| [i as u8 + 1; 16]));
        keys.set_lane(6, &s);
        for (r, row) in keys.rk.iter().enumerate() {
            for (i, k) in row.iter().enumerate() {
                for (j, lane) in k.chunks_exact(16).enumerate() {
                    let expected = if 4 * r + j == 6 { i as u8 + 1 } else { 0 };
                    assert_eq!(lane, [expected; 16], "register {r}, key {i}, lane {j}");
                }
            }
        }
    }

    fn hex(s: &str) -> Vec<u8> {
        assert_eq!(s.len() % 2, 0, "hex: {s}");
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
            .collect()
    }

    /// Encrypts `plaintext` with `key` and `iv` in lane `lane` of `lanes`
    /// (the others random), returning the lane's ciphertext and final IV.
    fn in_lane<const N: usize>(
        t: Vaes512,
        key: &[u8],
        iv: &[u8],
        plaintext: &[u8],
        lane: usize,
        lanes: usize,
    ) -> (Vec<u8>, [u8; 16]) {
        let mut rng = SplitMix64(plaintext.len() as u64);
        let mut keys = LaneKeys::<N>::new();
        for other in 0..lanes {
            let mut k = [0u8; 32];
            rng.fill(&mut k);
            let k = AesNiKey::new(t.aes_ni(), cipher::<N>(), &k[..key.len()]);
            keys.set_lane(other, &schedule::<N>(&k));
        }
        let k = AesNiKey::new(t.aes_ni(), cipher::<N>(), key);
        keys.set_lane(lane, &schedule::<N>(&k));
        let mut bufs: Vec<Vec<u8>> = (0..lanes)
            .map(|_| {
                let mut b = vec![0u8; plaintext.len()];
                rng.fill(&mut b);
                b
            })
            .collect();
        bufs[lane].copy_from_slice(plaintext);
        let mut ivs: Vec<[u8; 16]> = rng.blocks(lanes);
        ivs[lane].copy_from_slice(iv);
        let mut data: Vec<&mut [u8]> = bufs.iter_mut().map(|b| &mut b[..]).collect();
        cbc_encrypt_x16(t, &keys, &mut ivs, &mut data, plaintext.len() / 16);
        (bufs[lane].clone(), ivs[lane])
    }

    #[test]
    fn sp800_38a_cbc_vectors() {
        let Some(t) = token() else { return };
        // NIST SP 800-38A, F.2.1 (CBC-AES128.Encrypt) and F.2.5
        // (CBC-AES256.Encrypt).
        let iv = hex("000102030405060708090a0b0c0d0e0f");
        let plaintext = hex(concat!(
            "6bc1bee22e409f96e93d7e117393172a",
            "ae2d8a571e03ac9c9eb76fac45af8e51",
            "30c81c46a35ce411e5fbc1191a0a52ef",
            "f69f2445df4f9b17ad2b417be66c3710",
        ));
        let key128 = hex("2b7e151628aed2a6abf7158809cf4f3c");
        let expected128 = hex(concat!(
            "7649abac8119b246cee98e9b12e9197d",
            "5086cb9b507219ee95db113a917678b2",
            "73bed6b8e3c1743b7116e69e22229516",
            "3ff1caa1681fac09120eca307586e1a7",
        ));
        let key256 = hex("603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4");
        let expected256 = hex(concat!(
            "f58c4c04d6e5f1ba779eabfb5f7bfbd6",
            "9cfc4e967edb808d679f777bc6702c7d",
            "39f23369a9d9bacfa530e26304231461",
            "b2eb05e2c39be9fcda6c19078c6a9d1b",
        ));
        for (lane, lanes) in [(0, 1), (5, 9), (15, 16), (2, 3)] {
            let (c, last) = in_lane::<11>(t, &key128, &iv, &plaintext, lane, lanes);
            assert_eq!(c, expected128, "F.2.1 in lane {lane} of {lanes}");
            assert_eq!(last[..], expected128[48..], "F.2.1 chaining value");
            let (c, last) = in_lane::<15>(t, &key256, &iv, &plaintext, lane, lanes);
            assert_eq!(c, expected256, "F.2.5 in lane {lane} of {lanes}");
            assert_eq!(last[..], expected256[48..], "F.2.5 chaining value");
        }
    }

    /// The `[ENCRYPT]` records of a CAVP CBC file: key, IV, plaintext,
    /// ciphertext. Every record must be complete.
    fn cavp_encrypt(file: &str) -> Vec<[Vec<u8>; 4]> {
        let mut out = Vec::new();
        let mut fields: [Option<Vec<u8>>; 4] = Default::default();
        for line in file
            .lines()
            .map(|l| l.trim_end_matches('\r'))
            .skip_while(|l| *l != "[ENCRYPT]")
            .skip(1)
            .take_while(|l| *l != "[DECRYPT]")
        {
            let Some((name, value)) = line.split_once(" = ") else {
                assert!(line.is_empty(), "unexpected line {line:?}");
                continue;
            };
            let slot = match name {
                "COUNT" => {
                    assert!(fields.iter().all(Option::is_none), "incomplete record");
                    continue;
                }
                "KEY" => 0,
                "IV" => 1,
                "PLAINTEXT" => 2,
                "CIPHERTEXT" => 3,
                _ => panic!("unexpected field {name}"),
            };
            assert!(fields[slot].replace(hex(value)).is_none(), "{name} twice");
            if fields.iter().all(Option::is_some) {
                out.push(fields.each_mut().map(|f| f.take().expect("set")));
            }
        }
        assert!(fields.iter().all(Option::is_none), "incomplete last record");
        out
    }

    #[test]
    fn cavp_mmt_vectors() {
        let Some(t) = token() else { return };
        let files = [
            (include_str!("../../../../vectors/CBCMMT128.rsp"), 16),
            (include_str!("../../../../vectors/CBCMMT256.rsp"), 32),
        ];
        for (file, key_len) in files {
            let records = cavp_encrypt(file);
            assert_eq!(records.len(), 10);
            for (n, [key, iv, plaintext, ciphertext]) in records.iter().enumerate() {
                let (lane, lanes) = (n % 16, 16 - n / 2);
                let (c, _) = if key_len == 16 {
                    in_lane::<11>(t, key, iv, plaintext, lane, lanes)
                } else {
                    in_lane::<15>(t, key, iv, plaintext, lane, lanes)
                };
                assert_eq!(&c, ciphertext, "AES-{} MMT record {n}", 8 * key_len);
            }
        }
    }

    /// Timing, printed only (`cargo test --release --lib cbc_x16 --
    /// --nocapture`): GB/s of 4, 8, 12 and 16 lanes x 16 KiB against the
    /// single-chain AES-NI CBC over the same lanes, in alternating rounds,
    /// medians.
    #[test]
    fn print_throughput() {
        let Some(t) = token() else { return };
        if cfg!(debug_assertions) {
            eprintln!("SKIPPED: CBC x16 timing (debug build; run with --release -- --nocapture)");
            return;
        }
        // Lanes back to back in one buffer, as a record layer writes
        // records: 80 bytes apart modulo 4 KiB (records of 16 KiB plus
        // header, MAC and padding), and half a page apart, where no lane's
        // stores alias another's loads modulo 4 KiB.
        for stride in [16384 + 80, 16384 + 2048] {
            throughput::<11>(t, stride);
            throughput::<15>(t, stride);
        }
    }

    /// `iters` x 8 dependent one-cycle adds: the core clock. (Register
    /// operands: some cores fold chains of immediate adds at rename.)
    fn add_chain(iters: u64) {
        // SAFETY: registers only.
        unsafe {
            core::arch::asm!(
                "2:",
                "add {x}, {y}", "add {x}, {y}", "add {x}, {y}", "add {x}, {y}",
                "add {x}, {y}", "add {x}, {y}", "add {x}, {y}", "add {x}, {y}",
                "dec {n}",
                "jnz 2b",
                x = inout(reg) 0u64 => _,
                y = in(reg) 1u64,
                n = inout(reg) iters => _,
                options(nomem, nostack),
            );
        }
    }

    /// `iters` x 8 `vaesenc` on zmm: one dependent chain (`chains` = 1),
    /// or eight independent ones.
    #[target_feature(enable = "avx512f,vaes")]
    fn vaesenc_loop(iters: u64, independent: bool) {
        // SAFETY: registers only (zmm0-8 declared clobbered).
        unsafe {
            if independent {
                core::arch::asm!(
                    "2:",
                    "vaesenc zmm0, zmm0, zmm8", "vaesenc zmm1, zmm1, zmm8",
                    "vaesenc zmm2, zmm2, zmm8", "vaesenc zmm3, zmm3, zmm8",
                    "vaesenc zmm4, zmm4, zmm8", "vaesenc zmm5, zmm5, zmm8",
                    "vaesenc zmm6, zmm6, zmm8", "vaesenc zmm7, zmm7, zmm8",
                    "dec {n}",
                    "jnz 2b",
                    n = inout(reg) iters => _,
                    out("zmm0") _, out("zmm1") _, out("zmm2") _, out("zmm3") _,
                    out("zmm4") _, out("zmm5") _, out("zmm6") _, out("zmm7") _,
                    out("zmm8") _,
                    options(nomem, nostack),
                );
            } else {
                core::arch::asm!(
                    "2:",
                    "vaesenc zmm0, zmm0, zmm8", "vaesenc zmm0, zmm0, zmm8",
                    "vaesenc zmm0, zmm0, zmm8", "vaesenc zmm0, zmm0, zmm8",
                    "vaesenc zmm0, zmm0, zmm8", "vaesenc zmm0, zmm0, zmm8",
                    "vaesenc zmm0, zmm0, zmm8", "vaesenc zmm0, zmm0, zmm8",
                    "dec {n}",
                    "jnz 2b",
                    n = inout(reg) iters => _,
                    out("zmm0") _, out("zmm8") _,
                    options(nomem, nostack),
                );
            }
        }
    }

    /// Printed only: the core clock (from a chain of adds) and `vaesenc`
    /// zmm latency and throughput in cycles. Each the fastest of many short
    /// alternating runs: a property of the core, so the run least disturbed
    /// by other work on a shared machine is the one to keep.
    #[test]
    fn print_vaesenc_limits() {
        use std::time::Instant;
        let Some(t) = token() else { return };
        let _ = t;
        if cfg!(debug_assertions) {
            eprintln!("SKIPPED: vaesenc timing (debug build; run with --release -- --nocapture)");
            return;
        }
        const ITERS: u64 = 1 << 14;
        let mut best = [f64::MAX; 3];
        for _ in 0..1000 {
            let runs: [&dyn Fn(); 3] = [
                &|| add_chain(ITERS),
                // SAFETY: `t` proves the CPU has AVX-512F and VAES.
                &|| unsafe { vaesenc_loop(ITERS, false) },
                // SAFETY: as above.
                &|| unsafe { vaesenc_loop(ITERS, true) },
            ];
            for (best, run) in best.iter_mut().zip(runs) {
                let start = Instant::now();
                run();
                let ns = start.elapsed().as_nanos() as f64 / (8 * ITERS) as f64;
                *best = best.min(ns);
            }
        }
        let cycle = best[0];
        eprintln!(
            "core clock {:.2} GHz; vaesenc zmm latency {:.2} cycles, throughput one per \
             {:.2} cycles (8 chains; fastest of 1000 runs)",
            1.0 / cycle,
            best[1] / cycle,
            best[2] / cycle
        );
    }

    /// "median [best]": on a shared machine a run may lose the core part
    /// way; the best run is the least disturbed one.
    fn median_best(v: &mut [f64]) -> String {
        v.sort_by(f64::total_cmp);
        format!("{:.2} [{:.2}]", v[v.len() / 2], v[v.len() - 1])
    }

    /// The kernel on `R` full registers (`4 R` lanes) in variant `FOLD`.
    fn variant<const N: usize, const R: usize, const FOLD: bool>(
        keys: &LaneKeys<N>,
        ivs: &mut [[u8; 16]],
        lanes: &mut [&mut [u8]],
        blocks: usize,
    ) {
        assert!(Vaes512::detect().is_some() && blocks > 0 && lanes.len() == 4 * R);
        let mut p = [core::ptr::null_mut(); 16];
        for (p, lane) in p.iter_mut().zip(lanes.iter_mut()) {
            *p = lane[..16 * blocks].as_mut_ptr();
        }
        // SAFETY: the CPU has the features (checked above); `p[i]` for
        // `i < 4 R` points at `16 blocks` bytes of the distinct lane `i`.
        unsafe { encrypt::<N, R, 4, FOLD, false>(&keys.rk, &mut ivs[..4 * R], &p, blocks) }
    }

    /// One timed run over the lanes and their IVs.
    type Run<'a> = dyn FnMut(&mut [&mut [u8]], &mut [[u8; 16]]) + 'a;

    fn throughput<const N: usize>(t: Vaes512, stride: usize) {
        use std::time::Instant;
        const LEN: usize = 16384;
        const ROUNDS: usize = 101;
        let key_len = if N == 11 { 16 } else { 32 };
        let mut rng = SplitMix64(99);
        let raw: Vec<[u8; 32]> = rng.blocks(16);
        let ni: Vec<AesNiKey> = raw
            .iter()
            .map(|k| AesNiKey::new(t.aes_ni(), cipher::<N>(), &k[..key_len]))
            .collect();
        let mut keys = LaneKeys::<N>::new();
        for (lane, k) in ni.iter().enumerate() {
            keys.set_lane(lane, &schedule::<N>(k));
        }
        let mut buf = vec![0u8; 16 * stride];
        rng.fill(&mut buf);
        let mut ivs: Vec<[u8; 16]> = rng.blocks(16);
        let blocks = LEN / 16;
        for r in 1..=4 {
            let lanes = 4 * r;
            let mut m: [Vec<f64>; 4] = Default::default();
            let bytes = (lanes * LEN) as f64;
            for round in 0..ROUNDS {
                let mut data: Vec<&mut [u8]> = buf
                    .chunks_mut(stride)
                    .take(lanes)
                    .map(|l| &mut l[..LEN])
                    .collect();
                let mut gbs = |f: &mut Run| {
                    let start = Instant::now();
                    f(&mut data, &mut ivs);
                    bytes / start.elapsed().as_nanos() as f64
                };
                let runs: [&mut Run; 4] = [
                    &mut |d, iv| cbc_encrypt_x16(t, &keys, iv, d, blocks),
                    &mut |d, iv| {
                        for (lane, l) in d.iter_mut().enumerate() {
                            let (l, _) = l.as_chunks_mut::<16>();
                            ni[lane].encrypt_cbc(&mut iv[lane], l);
                        }
                    },
                    &mut |d, iv| match r {
                        1 => variant::<N, 1, true>(&keys, iv, d, blocks),
                        2 => variant::<N, 2, true>(&keys, iv, d, blocks),
                        3 => variant::<N, 3, true>(&keys, iv, d, blocks),
                        _ => variant::<N, 4, true>(&keys, iv, d, blocks),
                    },
                    &mut |d, iv| match r {
                        1 => variant::<N, 1, false>(&keys, iv, d, blocks),
                        2 => variant::<N, 2, false>(&keys, iv, d, blocks),
                        3 => variant::<N, 3, false>(&keys, iv, d, blocks),
                        _ => variant::<N, 4, false>(&keys, iv, d, blocks),
                    },
                ];
                // A different order each round, so that none gains from its
                // place.
                for k in 0..4 {
                    let k = (k + round) % 4;
                    let x = gbs(&mut *runs[k]);
                    m[k].push(x);
                }
            }
            // The kernel alone, pass after pass.
            let mut warm = Vec::new();
            for _ in 0..ROUNDS {
                let mut data: Vec<&mut [u8]> = buf
                    .chunks_mut(stride)
                    .take(lanes)
                    .map(|l| &mut l[..LEN])
                    .collect();
                let start = Instant::now();
                cbc_encrypt_x16(t, &keys, &mut ivs, &mut data, blocks);
                warm.push(bytes / start.elapsed().as_nanos() as f64);
            }
            eprintln!(
                "AES-{}-CBC encrypt, {lanes} lanes x {LEN} B (stride {stride}): x16 kernel \
                 back to back {} GB/s (median [best] of {ROUNDS})",
                8 * key_len,
                median_best(&mut warm)
            );
            let mut ratio: Vec<f64> = m[0].iter().zip(&m[1]).map(|(a, b)| a / b).collect();
            ratio.sort_by(f64::total_cmp);
            let best = |v: &[f64]| v.iter().copied().fold(0.0, f64::max);
            let best_ratio = best(&m[0]) / best(&m[1]);
            eprintln!(
                "AES-{}-CBC encrypt, {lanes} lanes x {LEN} B (stride {stride}): x16 kernel {} \
                 GB/s (folded {}, plain {}), AES-NI one chain {} GB/s, ratio {:.2} [{:.2}] (median [best] \
                 of {ROUNDS} single passes)",
                8 * key_len,
                median_best(&mut m[0]),
                median_best(&mut m[2]),
                median_best(&mut m[3]),
                median_best(&mut m[1]),
                ratio[ratio.len() / 2],
                best_ratio
            );
        }
        core::hint::black_box(&buf);
    }
}
