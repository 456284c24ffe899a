//! SHA-512 compression of many blocks, two at a time, for bulk hashing
//! (the plain hash and the long messages of the HMAC; the stitched loops,
//! which hash one block between AES blocks, use the kernels of `sha512`).
//!
//! The message schedules of both blocks of a pair run together in ymm
//! registers, block one in the low 128-bit lane and block two in the high
//! one: the same instructions as one block's schedule in xmm registers. The
//! sums `W[t] + K[t]` of both blocks go to memory; the rounds of block one
//! run beside the schedule, and those of block two read the stored sums and
//! do no schedule work at all. The integer rounds and the vector schedule
//! share the execution ports on Intel cores, so halving the schedule's
//! instructions per block speeds up the rounds too. An odd last block goes
//! through the one-block kernel (or, where `Tuning::sha512_single_rolled`
//! asks, through the rolled loop's code for block one, [`compress_one`]).
//! Used from `sha512::PAIRS_FROM` blocks on (from two on the CPUs whose
//! `Tuning` asks for `sha512_short_pairs`):
//! on Intel Xeon family 6 model 0xCF, 2-7% faster than the AVX-512 kernel's
//! one-block loop and 7-10% faster than the AVX2 one's, at 8 to 128 blocks.
//! The rounds ([`rounds16_with`]) serve the four-block loop of
//! `sha512_quad` too. They come in two forms: five dependent operations
//! a round on the e chain, or four for three more instructions (the
//! one-block kernel's), which pays only on cores with ALUs to spare (see
//! `Tuning::sha512_pairs_four_step`).

use core::arch::x86_64::*;

use super::sha::HashKernel;
use super::sha512::{K512, Sha384Avx2, a_part, a_part_t1, e_half, e_half4};

/// The sums `W[t] + K[t]` of a pair of blocks, in the schedule's layout:
/// entry `p` holds words `2 p` and `2 p + 1` of block one, then those of
/// block two (one ymm store per entry). Aligned to 16 bytes only: a
/// 32-byte alignment would make the functions realign the stack, which
/// takes a register (the frame pointer) from the rounds, and they need
/// all the others.
#[repr(align(16))]
pub(crate) struct PairSums([[u64; 4]; 40]);

impl PairSums {
    /// A zeroed buffer (see `compress_pair` for why zeroed).
    pub(crate) fn new() -> PairSums {
        PairSums([[0u64; 4]; 40])
    }
}

/// The byte offset of block one's sum for round `t` among sums that
/// interleave several blocks, `stride` bytes for each pair of words.
const fn sum_offset(t: usize, stride: usize) -> usize {
    (t / 2) * stride + (t % 2) * 8
}

/// The message schedule of two blocks at once (one per 128-bit lane), one
/// implementation per instruction set.
trait PairSchedule {
    /// Words `2 p` and `2 p + 1` (`p >= 8`) of both blocks from the ring
    /// `x` of the last sixteen, where `r = p % 8`: pair `p - 8` is in
    /// `x[r]`, which the new pair replaces.
    ///
    /// # Safety
    /// The CPU must have the features the implementation enables.
    unsafe fn next(x: &mut [__m256i; 8], r: usize) -> __m256i;
}

/// With AVX2 shifts and shuffles. (An AVX-512VL version, with `vprorq`
/// and `vpternlogq`, has fewer instructions but measured 5-10% slower in
/// this loop on Intel Xeon family 6 model 0xCF.)
struct Avx2Pair;

/// `K512[2 p]` and `K512[2 p + 1]` in both lanes.
#[inline(always)]
fn k_pair(p: usize) -> __m256i {
    let k: &[u64; 2] = K512[2 * p..2 * p + 2].try_into().expect("2 words");
    // SAFETY: `k` is 16 readable bytes; `loadu` needs no alignment, and
    // AVX (for the broadcast) is enabled by every caller's feature set.
    unsafe { _mm256_broadcastsi128_si256(_mm_loadu_si128(k.as_ptr().cast())) }
}

impl PairSchedule for Avx2Pair {
    #[inline]
    #[target_feature(enable = "avx2,bmi1,bmi2,ssse3,sse4.1")]
    unsafe fn next(x: &mut [__m256i; 8], r: usize) -> __m256i {
        // A rotation by 8 is a byte shuffle within each 64-bit lane.
        let ror8 = _mm256_set_epi64x(
            0x080f_0e0d_0c0b_0a09,
            0x0007_0605_0403_0201,
            0x080f_0e0d_0c0b_0a09,
            0x0007_0605_0403_0201,
        );
        let w15 = _mm256_alignr_epi8::<8>(x[(r + 1) % 8], x[r]);
        let w7 = _mm256_alignr_epi8::<8>(x[(r + 5) % 8], x[(r + 4) % 8]);
        let w2 = x[(r + 7) % 8];
        let s0 = _mm256_xor_si256(
            _mm256_xor_si256(_mm256_srli_epi64::<1>(w15), _mm256_slli_epi64::<63>(w15)),
            _mm256_xor_si256(_mm256_shuffle_epi8(w15, ror8), _mm256_srli_epi64::<7>(w15)),
        );
        let s1 = _mm256_xor_si256(
            _mm256_xor_si256(_mm256_srli_epi64::<19>(w2), _mm256_slli_epi64::<45>(w2)),
            _mm256_xor_si256(
                _mm256_xor_si256(_mm256_srli_epi64::<61>(w2), _mm256_slli_epi64::<3>(w2)),
                _mm256_srli_epi64::<6>(w2),
            ),
        );
        let s = _mm256_add_epi64(_mm256_add_epi64(x[r], s0), w7);
        x[r] = _mm256_add_epi64(s, s1);
        x[r]
    }
}

/// How the 80 rounds of a block are laid out in code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Layout {
    /// Every round its own code: no loop counter, no address arithmetic,
    /// about 21 KB of code for a pair of blocks.
    Unrolled,
    /// Sixteen rounds of code run five times over each block, about 7 KB
    /// in all: for the CPUs whose decoded-instruction cache the unrolled
    /// form overflows (see `Tuning::sha512_pairs_rolled`).
    Rolled,
    /// Rolled, with the one-block kernel's four-step rounds (`e_half4`
    /// and `a_part`): three more instructions a round, one operation less
    /// on the e chain, for the cores with ALUs to spare, whose rounds the
    /// chain's latency bounds (see `Tuning::sha512_pairs_four_step`).
    RolledFourStep,
}

/// Two blocks' compressions into `state`, with schedule `S`, in the code
/// layout `ROLLED` picks ([`Layout::Rolled`] when true) and the rounds
/// `FOUR` picks (the four-step ones when true): the state after block
/// one, then after block two.
///
/// Without `two`, block one alone: its schedule runs in both lanes, and
/// both states returned are the state after it (see [`compress_one`]).
/// `kept` is a sums buffer the caller keeps from pair to pair; without
/// one, the pair zeroes its own (see below). With `BESIDE`, `beside` runs
/// beside block two (see [`compress_pair_beside`]); without, it is never
/// called.
///
/// # Safety
/// The CPU must have BMI1, BMI2 and the features of `S`; always inlined,
/// into functions that enable them.
#[inline(always)]
unsafe fn compress_pair<
    S: PairSchedule,
    const ROLLED: bool,
    const FOUR: bool,
    const BESIDE: bool,
>(
    state: [u64; 8],
    one: &[u8; 128],
    two: Option<&[u8; 128]>,
    kept: Option<&mut PairSums>,
    mut beside: impl FnMut(usize, usize),
) -> ([u64; 8], [u64; 8]) {
    let two_or_one = two.unwrap_or(one);
    // Reverses the bytes of each 64-bit lane.
    // SAFETY: the caller guarantees AVX2.
    let bswap = unsafe {
        _mm256_set_epi64x(
            0x0809_0a0b_0c0d_0e0f,
            0x0001_0203_0405_0607,
            0x0809_0a0b_0c0d_0e0f,
            0x0001_0203_0405_0607,
        )
    };
    let mut x: [__m256i; 8] = core::array::from_fn(|i| {
        let (lo, hi) = (
            super::load(super::block(one, 16 * i)),
            super::load(super::block(two_or_one, 16 * i)),
        );
        // SAFETY: the caller guarantees AVX2.
        unsafe {
            _mm256_shuffle_epi8(
                _mm256_inserti128_si256::<1>(_mm256_castsi128_si256(lo), hi),
                bswap,
            )
        }
    });
    // Zeroed, though every entry is stored before the rounds read it: the
    // builds measured with a `MaybeUninit` buffer instead realigned the
    // stack, which takes the frame pointer from the rounds' registers, and
    // ran 20-25% slower. The rolled loop zeroes one buffer for all pairs
    // (on AMD family 0x17 model 0x31, SHA-384 at 16 KiB 0.95-1.03x
    // OpenSSL against 0.87-0.91x zeroed for each pair); the unrolled one zeroes
    // its own for each pair, as measured on the CPUs that run it (a kept
    // buffer made it spill more).
    let mut own;
    let wk = match kept {
        Some(wk) => wk,
        None => {
            own = PairSums::new();
            &mut own
        }
    };
    // The schedule writes and the rounds read the sums through this one
    // pointer.
    let sums = &raw mut *wk;
    let store = |p: usize, v: __m256i| {
        // SAFETY: `sums` points to the live `wk`, whose entry `p` (< 40) is
        // 32 writable bytes; `storeu` needs no alignment, and AVX is
        // enabled by every caller's feature set.
        unsafe { _mm256_storeu_si256((&raw mut (*sums).0[p]).cast(), v) }
    };
    for (p, &v) in x.iter().enumerate() {
        // SAFETY: the caller guarantees AVX2.
        store(p, unsafe { _mm256_add_epi64(v, k_pair(p)) });
    }
    let base = sums.cast::<u8>().cast_const();
    // `base + 256 i` holds the sums of rounds 16 i .. 16 i + 16 of block
    // one; block two's are 16 bytes further into each entry. Every read
    // below stays inside `wk`'s 1280 bytes, which only `schedule` writes
    // meanwhile; the caller guarantees BMI1 and BMI2.
    let mut w = Working::start::<FOUR>(state);
    let none = &mut |_| {};
    if ROLLED {
        for i in 0..4 {
            // SAFETY: as said above.
            unsafe { rounds16::<S, true, FOUR>(&mut w, base.add(256 * i), &mut x, sums, i, none) };
        }
    } else {
        // SAFETY: as said above.
        unsafe {
            rounds16::<S, true, FOUR>(&mut w, base, &mut x, sums, 0, none);
            rounds16::<S, true, FOUR>(&mut w, base.add(256), &mut x, sums, 1, none);
            rounds16::<S, true, FOUR>(&mut w, base.add(512), &mut x, sums, 2, none);
            rounds16::<S, true, FOUR>(&mut w, base.add(768), &mut x, sums, 3, none);
        }
    }
    // SAFETY: as said above.
    unsafe { rounds16::<S, false, FOUR>(&mut w, base.add(1024), &mut x, sums, 0, none) };
    let mid = w.finish::<FOUR>(state);
    if two.is_none() {
        return (mid, mid);
    }
    // Block two, from the stored sums alone, with the caller's work
    // beside its first 64 rounds.
    let mut w = Working::start::<FOUR>(mid);
    let two = base.wrapping_add(16);
    if ROLLED && !BESIDE {
        for i in 0..5 {
            // SAFETY: as said above.
            unsafe { rounds16::<S, false, FOUR>(&mut w, two.add(256 * i), &mut x, sums, 0, none) };
        }
    } else if ROLLED {
        for i in 0..BESIDE_RUNS {
            let slot = &mut |t| beside(i, t);
            // SAFETY: as said above.
            unsafe { rounds16::<S, false, FOUR>(&mut w, two.add(256 * i), &mut x, sums, 0, slot) };
        }
        // SAFETY: as said above.
        unsafe { rounds16::<S, false, FOUR>(&mut w, two.add(1024), &mut x, sums, 0, none) };
    } else {
        // SAFETY: as said above.
        unsafe {
            rounds16::<S, false, FOUR>(&mut w, two, &mut x, sums, 0, &mut |t| beside(0, t));
            let slot = &mut |t| beside(1, t);
            rounds16::<S, false, FOUR>(&mut w, two.add(256), &mut x, sums, 0, slot);
            let slot = &mut |t| beside(2, t);
            rounds16::<S, false, FOUR>(&mut w, two.add(512), &mut x, sums, 0, slot);
            let slot = &mut |t| beside(3, t);
            rounds16::<S, false, FOUR>(&mut w, two.add(768), &mut x, sums, 0, slot);
            rounds16::<S, false, FOUR>(&mut w, two.add(1024), &mut x, sums, 0, none);
        }
    }
    (mid, w.finish::<FOUR>(mid))
}

/// The runs of sixteen rounds of block two that have the caller's work
/// beside them (see [`compress_pair_beside`]).
pub(crate) const BESIDE_RUNS: usize = 4;

/// Two blocks' compressions into `state` in the layout `ROLLED` and
/// `FOUR` pick (see [`compress_pair`]), calling `beside(i, t)` after round
/// `16 i + t` of block two
/// for `i < BESIDE_RUNS` and `t < 16`. Block two's rounds leave the
/// vector units idle (its schedule ran beside block one), so work there
/// costs the rounds little: the SHA-384 open decrypts the next blocks in
/// these slots.
///
/// # Safety
/// The CPU must have AVX2, BMI1, BMI2, SSSE3 and SSE4.1; always inlined,
/// into functions that enable them (and whatever `beside` needs).
#[inline(always)]
pub(crate) unsafe fn compress_pair_beside<const ROLLED: bool, const FOUR: bool>(
    state: [u64; 8],
    one: &[u8; 128],
    two: &[u8; 128],
    sums: &mut PairSums,
    beside: impl FnMut(usize, usize),
) -> [u64; 8] {
    // SAFETY: the caller guarantees the features.
    unsafe {
        compress_pair::<Avx2Pair, ROLLED, FOUR, true>(state, one, Some(two), Some(sums), beside).1
    }
}

/// Both blocks' schedule for rounds 16 i + 4 g + 16 .. + 20 (pairs
/// `p`, `p + 1`), beside group g of rounds 16 i .. 16 i + 16 of block
/// one. Their ring slots depend on `g` alone, so the ring stays in
/// registers in the rolled loop too.
#[inline(always)]
unsafe fn schedule<S: PairSchedule>(x: &mut [__m256i; 8], sums: *mut PairSums, i: usize, g: usize) {
    let p = 8 * i + 2 * g + 8;
    for (q, r) in [(p, 2 * g), (p + 1, 2 * g + 1)] {
        // SAFETY: the caller guarantees the features of `S` and that
        // `sums` points to a live `PairSums`, whose entry `q` (< 40)
        // is 32 writable bytes; `storeu` needs no alignment.
        unsafe {
            let v = _mm256_add_epi64(S::next(x, r), k_pair(q));
            _mm256_storeu_si256((&raw mut (*sums).0[q]).cast(), v);
        }
    }
}

/// The working variables between rounds, each round in two halves as in
/// `sha512::rounds_with` (whose comments say why): the e half of round
/// `t` computes the new e, the a half the new a of round `t - 1`. Before
/// round `t`, `a1..a3` are the a values of rounds `t - 1 .. t - 3` (so
/// `a3` is round t's d), `bc` is `a2 ^ a3` (for Maj), and `e0..e3` are
/// round t's e, f, g, h. `t1` is round `t - 1`'s T1 in the five-step
/// rounds, its `(b & c) - d` in the four-step ones (`sha512::e_half4`).
#[derive(Clone, Copy)]
pub(super) struct Working {
    a1: u64,
    a2: u64,
    a3: u64,
    bc: u64,
    t1: u64,
    e0: u64,
    e1: u64,
    e2: u64,
    e3: u64,
}

impl Working {
    /// The variables before round 0, for the four-step rounds when `FOUR`.
    /// Round 0 has no round before it whose a to finish; a `t1` chosen so
    /// that this a half yields a itself lets every round run the same code.
    #[inline(always)]
    pub(super) fn start<const FOUR: bool>(state: [u64; 8]) -> Working {
        let [a, b, c, d, e, f, g, h] = state;
        let sigma0 = b.rotate_right(28) ^ b.rotate_right(34) ^ b.rotate_right(39);
        // The five-step a half adds Sigma0 and Maj to `t1`; the four-step
        // one adds Sigma0, b & (c ^ d) and round 0's e (`a_part`).
        let rest = if FOUR {
            (b & (c ^ d)).wrapping_add(e)
        } else {
            (b & c) | (d & (b | c))
        };
        Working {
            a1: b,
            a2: c,
            a3: d,
            bc: c ^ d,
            t1: a.wrapping_sub(sigma0).wrapping_sub(rest),
            e0: e,
            e1: f,
            e2: g,
            e3: h,
        }
    }

    /// Round 79's deferred a half (of the four-step rounds when `FOUR`),
    /// and the state plus the result.
    #[inline(always)]
    pub(super) fn finish<const FOUR: bool>(self, state: [u64; 8]) -> [u64; 8] {
        let Working {
            a1,
            a2,
            bc,
            t1: mut x,
            e0,
            ..
        } = self;
        let y: u64;
        if FOUR {
            // SAFETY: registers only.
            unsafe { a_part!(a1, a2, bc, e0, x, y) };
        } else {
            a_part_t1!(a1, a2, bc, x, y);
        }
        let _ = y;
        let out = [
            x, self.a1, self.a2, self.a3, self.e0, self.e1, self.e2, self.e3,
        ];
        core::array::from_fn(|i| state[i].wrapping_add(out[i]))
    }
}

/// Sixteen rounds of [`rounds16_with`] (the four-step ones when `FOUR`)
/// over a pair's sums; with `SCHEDULE`, the schedule of pairs `8 i + 8 ..
/// 8 i + 16` beside them, a call of [`schedule`] before each group of four
/// rounds; `slot(t)` after round `t`.
///
/// # Safety
/// The CPU must have BMI1, BMI2 and the features of `S`; `sums` must
/// point to 248 readable bytes that only the schedule writes meanwhile,
/// into `store`, a live [`PairSums`]. Always inlined, into functions that
/// enable the features.
#[inline(always)]
unsafe fn rounds16<S: PairSchedule, const SCHEDULE: bool, const FOUR: bool>(
    w: &mut Working,
    sums: *const u8,
    x: &mut [__m256i; 8],
    store: *mut PairSums,
    i: usize,
    slot: &mut impl FnMut(usize),
) {
    let mut sched = PairSched::<S, SCHEDULE> {
        x,
        store,
        i,
        s: core::marker::PhantomData,
    };
    // SAFETY: the caller's guarantees, with the pair's 32-byte entries.
    unsafe { rounds16_with::<32, FOUR>(w, sums, &mut sched, slot) }
}

/// The work before each group of four rounds of [`rounds16_with`]: a
/// trait with an always-inlined method rather than a closure, so that the
/// schedule's ring stays in registers (a closure capturing it kept it in
/// memory, and the pair loop ran at half speed).
pub(super) trait Sched {
    /// The work before group `g` (0 to 3).
    ///
    /// # Safety
    /// As the implementation says; called only from [`rounds16_with`].
    unsafe fn group(&mut self, g: usize);
}

/// No work between the groups.
pub(super) struct NoSched;

impl Sched for NoSched {
    #[inline(always)]
    unsafe fn group(&mut self, _: usize) {}
}

/// The pair loop's schedule (with `SCHEDULE`; else nothing).
struct PairSched<'a, S, const SCHEDULE: bool> {
    x: &'a mut [__m256i; 8],
    store: *mut PairSums,
    i: usize,
    s: core::marker::PhantomData<S>,
}

impl<S: PairSchedule, const SCHEDULE: bool> Sched for PairSched<'_, S, SCHEDULE> {
    #[inline(always)]
    unsafe fn group(&mut self, g: usize) {
        if SCHEDULE {
            // SAFETY: the caller of `rounds16` guarantees the features and
            // `store`.
            unsafe { schedule::<S>(self.x, self.store, self.i, g) };
        }
    }
}

/// Sixteen rounds on `w` over the sums `W[t] + K[t]` at `sums +
/// sum_offset(t, STRIDE)` for t in 0..16, in assembly (the four-step
/// rounds of `sha512::rounds_with` when `FOUR`, else five-step), calling
/// `sched.group(g)` before each group `g` of four rounds and `slot(t)`
/// after round `t`.
/// The sums of several blocks interleave, `STRIDE` bytes for each pair of
/// words: 32 in the pair loop, 64 in the four-block loop of
/// `sha512_quad`.
///
/// # Safety
/// The CPU must have BMI1 and BMI2 and the features `sched` and `slot`
/// need; `sums` must point to `7 STRIDE + 16` readable bytes that only
/// `sched` writes meanwhile. Always inlined, into functions that enable
/// the features.
#[inline(always)]
pub(super) unsafe fn rounds16_with<const STRIDE: usize, const FOUR: bool>(
    w: &mut Working,
    sums: *const u8,
    sched: &mut impl Sched,
    slot: &mut impl FnMut(usize),
) {
    let Working {
        mut a1,
        mut a2,
        mut a3,
        mut bc,
        mut t1,
        mut e0,
        mut e1,
        mut e2,
        mut e3,
    } = *w;
    macro_rules! round {
        ($t:expr) => {
            let (mut h, mut ne) = (e3, a3);
            let (mut x, y): (u64, u64);
            if FOUR {
                let z: u64;
                // SAFETY: reads the 8 bytes of round t's sum at `sums`,
                // inside the bytes the caller vouches for; registers
                // otherwise.
                unsafe { e_half4!(sums, sum_offset($t, STRIDE), e0, e1, e2, h, ne, a1, a2, z) };
                x = t1;
                // SAFETY: registers only.
                unsafe { a_part!(a1, a2, bc, e0, x, y) };
                t1 = z;
            } else {
                // SAFETY: reads the 8 bytes of round t's sum at `sums`,
                // inside the bytes the caller vouches for; registers
                // otherwise.
                unsafe { e_half!(sums, sum_offset($t, STRIDE), e0, e1, e2, h, ne) };
                x = t1;
                a_part_t1!(a1, a2, bc, x, y);
                t1 = h;
            }
            let _ = h;
            a3 = a2;
            a2 = a1;
            a1 = x;
            bc = y;
            e3 = e2;
            e2 = e1;
            e1 = e0;
            e0 = ne;
        };
    }
    macro_rules! group {
        ($($g:literal)*) => {
            $(
                // SAFETY: the caller guarantees what `sched` needs.
                unsafe { sched.group($g) };
                round!(4 * $g);
                slot(4 * $g);
                round!(4 * $g + 1);
                slot(4 * $g + 1);
                round!(4 * $g + 2);
                slot(4 * $g + 2);
                round!(4 * $g + 3);
                slot(4 * $g + 3);
            )*
        };
    }
    group!(0 1 2 3);
    *w = Working {
        a1,
        a2,
        a3,
        bc,
        t1,
        e0,
        e1,
        e2,
        e3,
    };
}

/// The compression loop of schedule `S` and one-block kernel `K` (for an
/// odd last block), as a macro so that each copy is its own
/// `#[target_feature]` function.
macro_rules! pair_loop {
    ($name:ident, $schedule:ty, $rolled:literal, $four:literal, $kernel:ty, $features:literal) => {
        #[target_feature(enable = $features)]
        pub(crate) fn $name(state: &mut [u64; 8], blocks: &[[u8; 128]]) {
            let mut regs = *state;
            // The rolled loop's sums buffer, zeroed once for all pairs (see
            // `compress_pair`).
            let mut wk = if $rolled { Some(PairSums::new()) } else { None };
            let mut pairs = blocks.chunks_exact(2);
            for pair in &mut pairs {
                // SAFETY: this function enables the features of BMI and of
                // the schedule.
                regs = unsafe {
                    compress_pair::<$schedule, $rolled, $four, false>(
                        regs,
                        &pair[0],
                        Some(&pair[1]),
                        wk.as_mut(),
                        |_, _| {},
                    )
                    .1
                };
            }
            if $rolled && crate::backends::cpu::Tuning::get().sha512_single_rolled {
                // The odd last block on the rolled code too, on the sums
                // buffer the pairs used (nothing to zero when the count
                // is even).
                for b in pairs.remainder() {
                    // SAFETY: as above.
                    regs = unsafe {
                        compress_pair::<$schedule, true, $four, false>(
                            regs,
                            b,
                            None,
                            wk.as_mut(),
                            |_, _| {},
                        )
                        .0
                    };
                }
            } else {
                for b in pairs.remainder() {
                    // SAFETY: this function enables the kernel's features.
                    regs = unsafe { <$kernel as HashKernel>::compress(regs, b) };
                }
            }
            *state = regs;
        }
    };
}

pair_loop!(
    compress_pairs_avx2,
    Avx2Pair,
    false,
    false,
    Sha384Avx2,
    "avx2,bmi1,bmi2,ssse3,sse4.1"
);
pair_loop!(
    compress_pairs_avx2_rolled,
    Avx2Pair,
    true,
    false,
    Sha384Avx2,
    "avx2,bmi1,bmi2,ssse3,sse4.1"
);
pair_loop!(
    compress_pairs_avx2_rolled4,
    Avx2Pair,
    true,
    true,
    Sha384Avx2,
    "avx2,bmi1,bmi2,ssse3,sse4.1"
);

/// Two blocks' compressions into `state` on the pair loop (in the layout
/// `ROLLED` and `FOUR` pick, see [`compress_pair`]), returning the state between them: for the finish of a
/// message whose length is secret, which keeps the state after whichever
/// block is its last (`ct_digest`).
#[target_feature(enable = "avx2,bmi1,bmi2,ssse3,sse4.1")]
pub(crate) fn compress_two<const ROLLED: bool, const FOUR: bool>(
    state: &mut [u64; 8],
    one: &[u8; 128],
    two: &[u8; 128],
) -> [u64; 8] {
    // SAFETY: this function enables the features of BMI and of the
    // schedule.
    let (mid, out) = unsafe {
        compress_pair::<Avx2Pair, ROLLED, FOUR, false>(*state, one, Some(two), None, |_, _| {})
    };
    *state = out;
    mid
}

/// Each block's compression into `state`, one at a time, on the code of
/// the rolled pair loop's first block (its schedule in both lanes): about
/// a third of the one-block kernel's code, for the CPUs whose
/// decoded-instruction cache that kernel and the pair loop overflow
/// together (see `Tuning::sha512_single_rolled`).
#[target_feature(enable = "avx2,bmi1,bmi2,ssse3,sse4.1")]
pub(crate) fn compress_one(state: &mut [u64; 8], blocks: &[[u8; 128]]) {
    let mut regs = *state;
    let mut wk = PairSums::new();
    for b in blocks {
        // SAFETY: this function enables the features of BMI and of the
        // schedule.
        regs = unsafe {
            compress_pair::<Avx2Pair, true, false, false>(regs, b, None, Some(&mut wk), |_, _| {}).0
        };
    }
    *state = regs;
}

/// The pair loop in `layout`.
///
/// # Safety
/// The CPU must have AVX2, BMI1, BMI2, SSSE3 and SSE4.1.
pub(crate) unsafe fn compress_pairs(layout: Layout, state: &mut [u64; 8], blocks: &[[u8; 128]]) {
    match layout {
        // SAFETY: the caller guarantees the features.
        Layout::Unrolled => unsafe { compress_pairs_avx2(state, blocks) },
        // SAFETY: the caller guarantees the features.
        Layout::Rolled => unsafe { compress_pairs_avx2_rolled(state, blocks) },
        // SAFETY: the caller guarantees the features.
        Layout::RolledFourStep => unsafe { compress_pairs_avx2_rolled4(state, blocks) },
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_rng::SplitMix64;
    use super::super::{Avx2, Vaes512};
    use super::*;
    use crate::primitives::hash::{Compress, Engine, Sha384, Sha512};
    use sha2::Digest;

    type Loop = fn(&mut [u64; 8], &[[u8; 128]]);

    /// The pair loop itself, the four-block loop (which shares its
    /// rounds), and the bulk entry points that use them for long runs,
    /// those the CPU can run, by name.
    fn loops() -> Vec<(&'static str, Loop)> {
        let mut list: Vec<(&'static str, Loop)> = Vec::new();
        if Avx2::detect().is_some() {
            // SAFETY: `Avx2::detect` succeeded, so the CPU has AVX2, BMI1,
            // BMI2, SSSE3 and SSE4.1.
            list.push(("pairs", |s, b| unsafe { compress_pairs_avx2(s, b) }));
            // SAFETY: as above.
            list.push(("pairs rolled", |s, b| unsafe {
                compress_pairs_avx2_rolled(s, b)
            }));
            // SAFETY: as above.
            list.push(("pairs rolled, four-step", |s, b| unsafe {
                compress_pairs_avx2_rolled4(s, b)
            }));
            // SAFETY: as above.
            list.push(("pairs' code, one block at a time", |s, b| unsafe {
                compress_one(s, b)
            }));
            list.push(("avx2", |s, b| {
                let t = Avx2::detect().expect("detected above");
                super::super::sha512::compress512_avx2(t, s, b)
            }));
        } else {
            eprintln!("SKIPPED: SHA-512 AVX2 pair loop (CPU lacks AVX2/BMI2)");
        }
        if Avx2::detect().zip(Vaes512::detect()).is_some() {
            list.push(("avx512", |s, b| {
                let (t, v) = Avx2::detect()
                    .zip(Vaes512::detect())
                    .expect("detected above");
                super::super::sha512::compress512_avx512(super::super::Avx512Bmi::new(t, v), s, b)
            }));
            // SAFETY: both detections succeeded, so the CPU has AVX-512
            // F, BW and VL, AVX2, BMI1, BMI2, SSSE3 and SSE4.1.
            list.push(("quads", |s, b| unsafe {
                super::super::sha512_quad::compress_quads::<false>(s, b)
            }));
            // SAFETY: as above.
            list.push(("quads, four-step", |s, b| unsafe {
                super::super::sha512_quad::compress_quads::<true>(s, b)
            }));
        } else {
            eprintln!("SKIPPED: SHA-512 AVX-512 bulk path (CPU lacks AVX2/BMI2 or AVX-512F/BW/VL)");
        }
        list
    }

    fn portable(state: [u64; 8], blocks: &[[u8; 128]]) -> [u64; 8] {
        let mut s = state;
        sha2::block_api::compress512(&mut s, blocks);
        s
    }

    #[test]
    fn pairs_and_odd_tails_match_portable() {
        for (name, pairs) in loops() {
            let mut rng = SplitMix64(11);
            for n in [1, 2, 3, 5].into_iter().chain(0..=20).chain([31, 32, 33]) {
                for _ in 0..20 {
                    let state = core::array::from_fn(|_| rng.next());
                    let blocks = rng.blocks(n);
                    let mut ours = state;
                    pairs(&mut ours, &blocks);
                    assert_eq!(ours, portable(state, &blocks), "{name}, {n} blocks");
                }
            }
        }
    }

    #[test]
    fn two_blocks_give_the_state_between_them() {
        let Some(token) = Avx2::detect() else {
            eprintln!("SKIPPED: SHA-512 pair of two blocks (CPU lacks AVX2/BMI2)");
            return;
        };
        let kernel = super::super::sha512::Sha512Kernel::Avx2(token);
        let mut rng = SplitMix64(15);
        for _ in 0..200 {
            let state: [u64; 8] = core::array::from_fn(|_| rng.next());
            let b = rng.blocks::<128>(2);
            let want_mid = portable(state, &b[..1]);
            let want = portable(state, &b);
            let (mut rolled, mut four, mut unrolled) = (state, state, state);
            let mut chosen = state;
            // SAFETY: `Avx2::detect` succeeded, so the CPU has AVX2, BMI1,
            // BMI2, SSSE3 and SSE4.1.
            let mids = unsafe {
                [
                    compress_two::<true, false>(&mut rolled, &b[0], &b[1]),
                    compress_two::<true, true>(&mut four, &b[0], &b[1]),
                    compress_two::<false, false>(&mut unrolled, &b[0], &b[1]),
                ]
            };
            // And as this CPU's compressor runs it.
            let mid = kernel.compress_two(&mut chosen, &b[0], &b[1]);
            assert_eq!(mids, [want_mid; 3]);
            assert_eq!(mid, want_mid);
            assert_eq!([rolled, four, unrolled, chosen], [want; 4]);
        }
    }

    #[test]
    fn pairs_of_equal_and_extreme_blocks_match_portable() {
        // The lanes of a pair or a quad must not leak into each other:
        // equal blocks, and all-zero beside all-one blocks, in both orders.
        for (name, pairs) in loops() {
            let mut rng = SplitMix64(12);
            let r = rng.blocks::<128>(1)[0];
            let cases = [
                [[0u8; 128], [0xff; 128]],
                [[0xff; 128], [0u8; 128]],
                [r, r],
                [r, [0; 128]],
            ];
            // Four blocks, for the four-block loop's lanes.
            let (z, f) = ([0u8; 128], [0xff; 128]);
            let quads = [
                [z, f, z, f],
                [f, z, f, z],
                [r, r, r, r],
                [r, z, z, z],
                [z, z, z, r],
                [z, r, f, z],
            ];
            let cases = cases
                .iter()
                .map(|c| &c[..])
                .chain(quads.iter().map(|c| &c[..]));
            for blocks in cases {
                for state in [
                    [0u64; 8],
                    [u64::MAX; 8],
                    core::array::from_fn(|_| rng.next()),
                ] {
                    let mut ours = state;
                    pairs(&mut ours, blocks);
                    assert_eq!(
                        ours,
                        portable(state, blocks),
                        "{name}, {} blocks",
                        blocks.len()
                    );
                }
            }
        }
    }

    /// A [`Compress`] over a pair loop, for the streaming hash.
    struct Pairs(Loop);

    impl Compress<Sha384> for Pairs {
        fn compress(&self, state: &mut [u64; 8], blocks: &[[u8; 128]]) {
            (self.0)(state, blocks)
        }
    }

    impl Compress<Sha512> for Pairs {
        fn compress(&self, state: &mut [u64; 8], blocks: &[[u8; 128]]) {
            (self.0)(state, blocks)
        }
    }

    #[test]
    fn sha384_and_sha512_of_many_lengths_match_sha2() {
        for (name, pairs) in loops() {
            let c = Pairs(pairs);
            let mut rng = SplitMix64(13);
            let lengths = (0..=1300)
                .step_by(7)
                .chain((1..=12).flat_map(|n| [128 * n - 1, 128 * n, 128 * n + 1]));
            for len in lengths.chain([4096, 16384, 16384 + 111]) {
                let mut msg = vec![0u8; len];
                rng.fill(&mut msg);
                // Two updates, split at a random point, so that the
                // block counts handed to the loop vary.
                let cut = (rng.next() % (len as u64 + 1)) as usize;
                let mut e384 = Engine::<Sha384>::new();
                e384.update(&c, &msg[..cut]);
                e384.update(&c, &msg[cut..]);
                let mut d384 = [0u8; 48];
                <Sha384 as crate::primitives::hash::HashFunction>::write_output(
                    &e384.finish(&c),
                    &mut d384,
                );
                assert_eq!(
                    d384[..],
                    sha2::Sha384::digest(&msg)[..],
                    "{name}, SHA-384, {len} bytes"
                );
                let mut e512 = Engine::<Sha512>::new();
                e512.update(&c, &msg[..cut]);
                e512.update(&c, &msg[cut..]);
                let mut d512 = [0u8; 64];
                <Sha512 as crate::primitives::hash::HashFunction>::write_output(
                    &e512.finish(&c),
                    &mut d512,
                );
                assert_eq!(
                    d512[..],
                    sha2::Sha512::digest(&msg)[..],
                    "{name}, SHA-512, {len} bytes"
                );
            }
        }
    }

    /// Timing, printed only (`cargo test --release --lib
    /// timing_of_the_bulk_loops -- --nocapture`): 16 KiB of SHA-512 on each
    /// bulk loop the CPU can run, one block at a time, in pairs and in fours, in
    /// alternating rounds, for the per-CPU choices in `backends/cpu.rs`.
    /// Asserts only that all agree.
    #[test]
    fn timing_of_the_bulk_loops() {
        use std::time::Instant;
        if cfg!(debug_assertions) {
            eprintln!("SKIPPED: SHA-512 bulk loop timing (debug build; run with --release)");
            return;
        }
        let mut list: Vec<(&'static str, Loop)> = Vec::new();
        if Avx2::detect().is_some() {
            // SAFETY: `Avx2::detect` succeeded, so the CPU has AVX2, BMI1,
            // BMI2, SSSE3 and SSE4.1.
            list.push(("one block, AVX2", |s, b| unsafe {
                super::super::sha512::compress_blocks_avx2(s, b)
            }));
        }
        // The two layouts of the pair loop and the four-block loop, as the
        // correctness tests run them.
        list.extend(
            loops()
                .into_iter()
                .filter(|(name, _)| name.starts_with("pairs") || name.starts_with("quads")),
        );
        if Avx2::detect().zip(Vaes512::detect()).is_some() {
            // SAFETY: both detections succeeded, so the CPU also has
            // AVX-512 F and VL.
            list.push(("one block, AVX-512VL split", |s, b| unsafe {
                super::super::sha512::compress_blocks_avx512(s, b)
            }));
        }
        if list.is_empty() {
            eprintln!("SKIPPED: SHA-512 bulk loop timing (CPU lacks AVX2/BMI2)");
            return;
        }
        const BLOCKS: usize = 128;
        const ROUNDS: usize = 301;
        let blocks = SplitMix64(14).blocks::<128>(BLOCKS);
        let mut states = vec![[0u64; 8]; list.len()];
        let mut ns = vec![Vec::with_capacity(ROUNDS); list.len()];
        for round in 0..ROUNDS {
            for k in 0..list.len() {
                let k = (k + round) % list.len();
                let start = Instant::now();
                (list[k].1)(std::hint::black_box(&mut states[k]), &blocks);
                ns[k].push(start.elapsed().as_nanos() as f64 / BLOCKS as f64);
            }
        }
        for ((name, _), state) in list.iter().zip(&states) {
            assert_eq!(state, &states[0], "{name} disagrees with {}", list[0].0);
        }
        for ((name, _), v) in list.iter().zip(&mut ns) {
            v.sort_by(f64::total_cmp);
            println!(
                "SHA-512, {BLOCKS} blocks, {name}: median {:.1} ns per block, tenth \
                 percentile {:.1} ({ROUNDS} alternating rounds)",
                v[ROUNDS / 2],
                v[ROUNDS / 10]
            );
        }
    }

    /// Timing, printed only (`cargo test --release --lib
    /// timing_of_short_runs -- --nocapture`): runs of one to three
    /// SHA-512 blocks, the lengths of short messages and of a MAC's last
    /// blocks, on each kernel and loop, per call, in alternating rounds.
    /// Asserts only that all agree.
    #[test]
    fn timing_of_short_runs() {
        use std::time::Instant;
        if cfg!(debug_assertions) {
            eprintln!("SKIPPED: SHA-512 short run timing (debug build; run with --release)");
            return;
        }
        let mut list = loops();
        if Avx2::detect().is_some() {
            // SAFETY: `Avx2::detect` succeeded, so the CPU has AVX2, BMI1,
            // BMI2, SSSE3 and SSE4.1.
            list.push(("one block, AVX2", |s, b| unsafe {
                super::super::sha512::compress_blocks_avx2(s, b)
            }));
        }
        if Avx2::detect().zip(Vaes512::detect()).is_some() {
            // SAFETY: both detections succeeded, so the CPU also has
            // AVX-512 F and VL.
            list.push(("one block, AVX-512VL split", |s, b| unsafe {
                super::super::sha512::compress_blocks_avx512(s, b)
            }));
        }
        if list.is_empty() {
            eprintln!("SKIPPED: SHA-512 short run timing (CPU lacks AVX2/BMI2)");
            return;
        }
        const CALLS: usize = 200;
        const ROUNDS: usize = 301;
        let blocks = SplitMix64(16).blocks::<128>(3);
        for n in 1..=3 {
            let run = &blocks[..n];
            let mut states = vec![[0u64; 8]; list.len()];
            let mut ns = vec![Vec::with_capacity(ROUNDS); list.len()];
            for round in 0..ROUNDS {
                for k in 0..list.len() {
                    let k = (k + round) % list.len();
                    let start = Instant::now();
                    for _ in 0..CALLS {
                        (list[k].1)(std::hint::black_box(&mut states[k]), run);
                    }
                    ns[k].push(start.elapsed().as_nanos() as f64 / CALLS as f64);
                }
            }
            for ((name, _), state) in list.iter().zip(&states) {
                assert_eq!(state, &states[0], "{name} disagrees with {}", list[0].0);
            }
            for ((name, _), v) in list.iter().zip(&mut ns) {
                v.sort_by(f64::total_cmp);
                println!(
                    "SHA-512, runs of {n}, {name}: median {:.1} ns per call, tenth \
                     percentile {:.1} ({ROUNDS} alternating rounds)",
                    v[ROUNDS / 2],
                    v[ROUNDS / 10]
                );
            }
        }
    }
}
