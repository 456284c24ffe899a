//! CPU feature detection, the per-CPU kernel table, and the two variables
//! that override them: the `CBC_HMAC_CPUID_OVERRIDE` mask and
//! `CBC_HMAC_TUNING_CPU`.
//!
//! Detection runs once per feature set (the `cpufeatures` crate caches the
//! CPUID result in an atomic). The overrides are read once per process,
//! the first time a backend (or a kernel) is chosen, and only with the
//! `std` feature: a `no_std` build always uses everything the CPU has, and
//! its own row of the table.

use core::fmt;

// `0x1` enables nothing: it only makes "no acceleration" (the portable
// backend) a non-zero mask, as in GnuTLS.
/// `0x2`: AES-NI (with SSE2, SSSE3, SSE4.1).
pub(crate) const AES_NI: u32 = 0x2;
/// `0x4`: AVX2 (with BMI1/BMI2, SSSE3, SSE4.1) hash kernels.
pub(crate) const AVX2: u32 = 0x4;
/// `0x8`: the SHA extensions (SHA-NI).
pub(crate) const SHA_NI: u32 = 0x8;
/// `0x10`: AVX-512 (F, BW, VL) with VAES.
pub(crate) const VAES512: u32 = 0x10;

const KNOWN: u32 = AES_NI | AVX2 | SHA_NI | VAES512;

/// The override bits whose features this CPU has.
fn cpu_bits() -> u32 {
    #[cfg(target_arch = "x86_64")]
    {
        use super::x86_64;
        let mut bits = 0;
        if x86_64::AesNi::detect().is_some() {
            bits |= AES_NI;
        }
        if x86_64::Avx2::detect().is_some() {
            bits |= AVX2;
        }
        if x86_64::ShaNi::detect().is_some() {
            bits |= SHA_NI;
        }
        if x86_64::Vaes512::detect().is_some() {
            bits |= VAES512;
        }
        bits
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        0
    }
}

/// Kernel choices that depend on which CPU this is, not only on its
/// features: one table, consulted at this one place.
///
/// | CPU (CPUID vendor, family, model) | MAC-then-encrypt open, public prefix | SHA-384/512 (where AVX-512 is allowed) | SHA-1/SHA-256 batches of 3 jobs up to the lane kernels' crossover | the SHA-1/SHA-256 lane kernels (AVX-512) | stitched seal lanes (SHA-1: `STITCHED_SHA1`; SHA-256: `STITCHED_SHA256`) |
/// |---|---|---|---|---|---|
/// | AMD family 0x17, models 0x30 and up (Zen 2: no AVX-512) | SHA-1/SHA-256: AES-NI decryption fused with SHA-NI; SHA-384: the decryption beside the rounds of the SHA-512 pair loop (see below; model 0x31: AES-256-CBC-SHA384 open at 16 KiB 1.00-1.05x OpenSSL, decrypted then hashed 0.94-0.97x, fused with the one-block kernel 0.72-0.75x) | (no AVX-512) AVX2 schedule, BMI2 rounds, two-block loop rolled (see below; model 0x31: SHA-384 at 16 KiB 0.96-1.03x OpenSSL, unrolled 0.83-0.85x) | in lanes: eight AES-NI CBC lanes, hashed two streams at a time on SHA-NI, SHA-1 eight AVX2 lanes at a time from 7 busy lanes (see below; model 0x31: 4 x 16 KiB seal 1.28x one by one for SHA-1, 1.35x for SHA-256; open 1.20-1.22x and 1.30-1.32x) | (no AVX-512) | (no AVX-512) |
/// | AMD family 0x19, models 0x00-0x0F and 0x20-0x5F (Zen 3: no AVX-512) | SHA-1/SHA-256: AES-NI decryption fused with SHA-NI; SHA-384: AES-NI decryption beside the rounds of the SHA-512 pair loop, as on Zen 2 (model 1: AES-256-CBC-SHA384 open at 16 KiB 1.05x OpenSSL, decrypted then hashed 0.91x; see below) | (no AVX-512) AVX2 schedule, BMI2 rounds, two-block loop rolled, from two blocks, single blocks on its code (model 1: HMAC-SHA384 at 16 KiB / 1 KiB / 256 B 0.99x / 1.00x / 1.03x OpenSSL, unrolled from eight blocks 0.87x / 0.90x / 0.94x; see below) | in lanes: eight AES-NI CBC lanes, hashed two streams at a time on SHA-NI (model 1: two streams hash 1.80x as fast as one for SHA-1, 1.59x for SHA-256) | (no AVX-512) | (no AVX-512) |
/// | AMD family 0x19, other models (Zen 4) | VAES-512 decryption fused with SHA-NI | AVX-512VL schedule and split rounds (6-7% faster than AVX2 there, the split rounds about 5% more), one block at a time (see below) | in lanes, hashed two streams at a time on SHA-NI (model 0x11: two streams hash 1.75x as fast as one for SHA-1, 1.62x for SHA-256) | from 5 busy lanes (SHA-1) and 14 (SHA-256): 512-bit instructions run as two halves (see below) | from 3 records (model 0x11: three of 16 KiB 1.35x one by one, four of 16 KiB 1.73x against 1.44x for two SHA-NI streams, four of 768 bytes 1.18x); SHA-256 two lanes at a time on SHA-NI, 3 to 6 records (see below) |
/// | AMD family 0x1A (Zen 5) and later | VAES-512 decryption fused with SHA-NI; SHA-384: AES-NI decryption beside the rounds of the SHA-512 pair loop, as on Zen 2 (not measured there; see below) | AVX2 schedule, BMI2 rounds (SHA-384 at 16 KiB: 1.06 GB/s against 0.75-0.77 GB/s for the AVX-512VL kernel), two-block loop rolled, on the four-step rounds (not measured there; see below) | in lanes, hashed two streams at a time on SHA-NI (model 2: two streams hash 1.8x as fast as one for SHA-1, 1.5x for SHA-256) | from the sixteen-lane crossover (not measured there) | from 5 records (not measured there) |
/// | Intel | SHA-1/SHA-256: AES-NI decryption fused with SHA-NI; SHA-384: the whole prefix decrypted, then hashed (see below) | AVX-512VL schedule and split rounds (family 6 model 0xCF: SHA-384 at 16 KiB 0.94x OpenSSL against 0.84x for AVX2, medians of 6 alternating runs; model 0xA7: 0.98-1.01x against 0.98-1.03x, a tie); models 0xCF and 0xA7 hash runs of four blocks or more four at a time, their schedules in zmm registers (see below; HMAC-SHA384 at 16 KiB 1.03x OpenSSL on model 0xCF, the two-block loop 0.98x; 1.07x on model 0xA7, on the four-step rounds, the unrolled two-block loop 0.96x); model 0xA7 hashes runs of two and three blocks on the rolled two-block loop (see below) | one record at a time (family 6 models 0xCF and 0xA7: two streams hash only 1.2x as fast as one, less than the stitched single seal gains) | from 4 busy lanes (SHA-1) and 6 (SHA-256) on the eight-lane kernels (model 0xA7: an eight-lane call costs 0.67-0.71 of a sixteen-lane one; see below) | from 3 records (model 0xA7) |
/// | any other | AES-NI decryption fused with SHA-NI | AVX-512VL schedule and split rounds | one record at a time | from the sixteen-lane crossover | from 5 records |
///
/// AMD Zen 2, Zen 3 and Intel open SHA-384 records unfused. On Zen 3 the
/// SHA-512 rounds interleaved with AES-NI decryption ran the 16 KiB open
/// at 0.70-0.74x OpenSSL, decryption first and then the hash at
/// 0.81-0.90x (family 0x19 model 1, 3 alternating runs each, the hash
/// kernel alone 0.81-0.95x); on Zen 2 (family 0x17 model 0x31, the pair
/// loop rolled) at 0.72-0.75x fused and 0.84-0.91x unfused (0.92-0.95x
/// with the loop's sums buffer zeroed once per call). There, and now on
/// Zen 3, the open decrypts beside the pair loop (`sha384_open_pairs`): the loop's second
/// block of each pair leaves the AES units idle, and the next 256 bytes
/// decrypt there, an AES round after each hash round. Against OpenSSL at
/// 16 KiB / 1 KiB (model 0x31, builds with and without it run in turn)
/// 1.00-1.05x / 0.96-1.00x, decrypted then hashed 0.94-0.97x /
/// 0.85-0.92x. On Zen 3 (family 0x19 model 1, the builds before and
/// after run in alternating processes, medians of 5 runs) 1.05x / 0.95x
/// / 1.00x at 16 KiB / 1 KiB / 256 B, against 0.91x / 0.84x / 0.95x
/// decrypted then hashed with the unrolled loop. Not
/// measured on Intel, which keeps decrypt-then-hash. On Intel family 6 model 0xA7 the fused open ran at
/// 0.94-0.96x OpenSSL at 16 KiB, unfused at 1.01-1.04x (4 alternating
/// runs each; equal at 1 KiB and 256 B): AES-NI and the AVX-512 SHA-512
/// rounds there share a vector port. SHA-1 and SHA-256 gain from the
/// fusion on both, as everywhere; on Zen 4 (model 0x11) the SHA-384 open
/// ran the same fused or not (1.10x against 1.08x OpenSSL at 16 KiB, 5
/// alternating runs).
///
/// AMD Zen 4 hashes long SHA-512 runs one block at a time on the
/// AVX-512VL kernel, all other CPUs through the two-block loop. On Zen 4
/// (model 0x11) HMAC-SHA384 ran at 1.03x / 1.10x / 1.05x OpenSSL at 16 /
/// 4 / 1 KiB one block at a time on the AVX-512VL kernel, at 0.97x /
/// 0.94x / 0.88x through the loop (medians of 5 alternating runs); the
/// AVX2 kernel, which runs there only when the override masks AVX-512
/// off, keeps the loop (0.96x against 0.86x at 16 KiB).
///
/// Zen 5 takes the rolled loop without a measurement of it there. On
/// family 0x1A model 2 the unrolled loop (about 25 KB of code) ran between
/// 110 and 158 ns per block depending on the build's code layout, the
/// one-block kernel a steady 113-120 ns (best of 3000 timings), so Zen 5
/// hashed one block at a time: SHA-384 at 16 KiB 0.92x OpenSSL (1.06
/// against 1.14-1.17 GB/s), its open 0.91x (0.94 against 1.03 GB/s). The
/// rolled loop came later, for Zen 2, whose decoded-instruction cache the
/// unrolled one overflows (the swings with code layout on Zen 5 look
/// alike); its code is a third the size, and steadier where the unrolled
/// one varied (Zen 2, Intel model 0xCF). OpenSSL's SHA-512 there (about 111 ns per block) is
/// a rolled two-block loop too, as fast as the unrolled loop's best
/// layout. LLVM's static pipeline model of Zen 4, which it also uses for
/// Zen 5 (`llvm-mca -mcpu=znver5` over the loops' compiled code), puts a
/// block of the rolled loop at 490 cycles, OpenSSL's loop at 488 and the
/// one-block kernel at 605. Its model of Intel model 0xCF's core ranks the
/// one-block kernel first, where the rolled loop took 7-27% less time a
/// block (10 runs of `timing_of_the_bulk_loops`), so the model is a
/// hint, not a measurement. For the SHA-384 open, Zen 2 (a narrower core) ran
/// 1.00-1.05x OpenSSL with the decryption beside the pair loop against
/// 0.94-0.97x decrypted and then hashed. `timing_of_the_bulk_loops`
/// times the bulk loops on any CPU, and `.ci/run` prints it.
///
/// On Zen 5 the rolled loop runs the one-block kernel's four-step rounds
/// (`sha512_pairs_four_step`), not measured in this form there either.
/// The five-step rounds put five dependent operations a round on the e
/// chain, the four-step ones four, for three more instructions a round.
/// A core with four ALUs is bound by the instructions, not the chain: on
/// Zen 3 (family 0x19 model 1) a block took 180 ns on the rolled loop's
/// four-step rounds against 171 ns on its five-step ones (medians of 301
/// alternating rounds of `timing_of_the_bulk_loops`), and on Intel model
/// 0xCF the pair loop ran 11-17% slower. Zen 5 issues to six ALUs, so the
/// chain bounds its rounds: on family 0x1A model 2 the four-step rounds
/// took 110 ns a block in the unrolled pair loop against 118 ns five-step,
/// and 120 against 127 ns in the one-block kernel (best of 3000 timings).
/// The SHA-384 open beside the pair loop (`sha384_open_pairs`) takes the
/// same rounds.
///
/// AMD Zen 2 runs the SHA-512 pair loop rolled, sixteen rounds of code
/// run five times over each block (about 1,640 instructions for a pair of
/// blocks, against about 4,980 unrolled): its decoded-instruction cache
/// holds 4,096 operations, which the unrolled loop overflows. On family
/// 0x17 model 0x31 SHA-384 at 16 KiB ran at 0.89-0.90x OpenSSL rolled and
/// 0.83-0.85x unrolled, at 1 KiB 0.98x against 0.93-0.97x (3 alternating
/// runs each); with the rolled loop's sums buffer zeroed once per call
/// instead of once per pair, 0.96-1.03x at 16 KiB and 0.99-1.02x at 1
/// KiB. Zen 3 runs the loop rolled too, and from two blocks on
/// (`sha512_short_pairs`, where the other CPUs start at eight): runs of
/// two to seven blocks, the SHA-384 open's last prefix blocks after its
/// pairs with decryption beside, and the secret-length finish of the MAC
/// (`ct_digest`), two blocks a call. On family 0x19 model 1, over 128
/// blocks, a block took 171 ns rolled, 187 ns unrolled and 195 ns on the
/// one-block AVX2 kernel (medians of 301 alternating rounds of
/// `timing_of_the_bulk_loops`, two runs alike); at runs of two and of
/// eight blocks the rolled loop took 0.80x and 0.78x the one-block
/// kernel's time. Against OpenSSL (medians of 5 alternating runs, the
/// builds before and after, the unrolled loop from eight blocks in
/// brackets) HMAC-SHA384 ran at 0.99x / 1.00x / 1.03x at 16 KiB / 1 KiB /
/// 256 B (0.87x / 0.90x / 0.94x), and Zen 2's row, the rolled loop from
/// eight blocks, at 0.98x / 1.00x / 0.94x in the same runs; its open at
/// 1.06x / 0.91x / 0.96x against Zen 3's 1.05x / 0.95x / 1.00x. Zen 3
/// also hashes the blocks the pair loop leaves (a run of one, an odd last
/// block, the MAC's last inner block and its outer block) one at a time
/// on the rolled loop's code for block one (`sha512_single_rolled`):
/// about a third of the one-block kernel's code, which with the pair loop
/// overflows the decoded-instruction cache there, so each message
/// decoded the one-block kernel anew. Over 128 blocks in a row, where it
/// stays cached, the one-block kernel took 195-223 ns a block depending
/// on the build's code layout and the rolled code 186 ns; against
/// OpenSSL (family 0x19 model 1, medians of 6 alternating runs, the
/// one-block kernel in brackets) HMAC-SHA384 ran at 1.04x / 0.99x at 256
/// B / 1 KiB (0.99x / 0.97x), the SHA-384 open at 1.10x / 0.99x (1.03x /
/// 0.95x), equal at 16 KiB. Zen 1
/// (family 0x17 below model 0x30) was not measured and keeps the
/// defaults. Intel family 6 model 0xCF runs the loop rolled too (its
/// decoded-instruction cache also holds 4,096 operations): 16 KiB of
/// SHA-512 took 2-13% less time per block rolled than unrolled over 6
/// runs of `timing_of_the_bulk_loops` (medians of 301 alternating rounds,
/// the gap widest when the shared host was busiest), and against OpenSSL
/// (7 alternating runs of each build) SHA-384 records of 16 KiB opened at
/// 1.04-1.11x against 0.92-1.08x, HMAC-SHA384 at 16 KiB 0.89-0.99x against
/// 0.87-0.97x. Block two of each pair on the split rounds (its a half on
/// the idle vector units) took 0.5-1.5% less time than the rolled loop (3
/// runs), within the noise, and is not used. Model 0xA7 runs it rolled
/// as well (over 128 blocks 148.8 ns a block against 152.4 ns unrolled,
/// medians of 301 alternating rounds, two quiet runs alike), though
/// there its AVX-512 kernel hashes long runs four blocks at a time
/// (below) and the rolled loop serves the AVX2 kernel only. Other Intel
/// models were not measured and keep the unrolled loop.
///
/// Model 0xCF now hashes runs of four blocks or more in the four-block
/// loop of `sha512_quad` (`sha512_quads`), the last one to three blocks of
/// a run on the one-block kernel: one zmm schedule serves four blocks,
/// which halves a block's schedule instructions again, and there the
/// rounds share ports 0, 1 and 5 with the vector units. 16 KiB of SHA-512
/// took 2-5% less time per block than the rolled two-block loop with the
/// shared host quiet (five runs of `timing_of_the_bulk_loops`) and 12%
/// less with it busy (three runs), and 4-8% less than the one-block
/// kernel at 4 and 5 blocks. Against OpenSSL (9 alternating runs of each build,
/// medians): HMAC-SHA384 at 16 KiB 1.03x (1.02-1.08x) against 0.98x
/// (0.93-1.01x), at 1 KiB 1.04x against 1.01x; the SHA-384 open at 16
/// KiB 1.08x (1.06-1.12x) against 1.02x (1.01-1.05x), at 1 KiB 1.07x
/// against 1.04x. Model 0xA7 takes it too, on the four-step rounds
/// (`sha512_pairs_four_step`): there, as on Zen 5, the four-step rounds'
/// shorter chain pays for their three more instructions. Over 128 blocks
/// (medians of 301 alternating rounds, two runs alike) the four-block loop took
/// 137.6 ns a block on the four-step rounds, 146.5 ns on the five-step
/// ones, against 152.4 ns for the unrolled two-block loop the row ran
/// before, 144.9 ns for the rolled one on the four-step rounds and 159.8
/// ns for the one-block AVX-512VL kernel. Against OpenSSL (one binary,
/// this CPU's row and another in alternating processes, 4 runs each,
/// medians): the four-block loop on the five-step rounds, against the
/// two-block loop before it, took HMAC-SHA384 at 16 KiB to 1.02x from
/// 0.96x, at 1 KiB to 1.025x from 0.985x, and the SHA-384 open at 16 KiB
/// to 1.065x from 1.01x; the four-step rounds then took HMAC-SHA384 to
/// 1.07x at 16 KiB and 1 KiB (1.015x and 1.03x in those runs) and the open
/// at 16 KiB to 1.11x (1.06x). Model 0xCF keeps the five-step rounds, not
/// measured with the four-step ones. Not measured elsewhere: LLVM's
/// pipeline model of Zen 4,
/// which it also uses for Zen 5, puts sixteen of the loop's rounds at 95
/// cycles with the schedule beside them and without, so there the rounds'
/// latency bounds it, not the ports.
///
/// Model 0xA7 also hashes runs of two and three blocks on the rolled pair
/// loop (`sha512_short_pairs`, which there reaches the AVX-512VL kernel
/// below the four-block loop), and a hash's last two blocks, where the
/// length spills into a second one, in one call. Per call, in a loop
/// (medians of 301 alternating rounds of `timing_of_short_runs`), two
/// blocks took 304 ns on the four-step pair loop against 330 ns on the
/// one-block AVX-512VL kernel, three blocks 473 against 494 ns, one block
/// 164-175 ns on every kernel. Against OpenSSL (the builds before and
/// after in alternating processes, 4 runs, medians) HMAC-SHA384 went from
/// 1.06x / 1.045x / 0.99x to 1.125x / 1.105x / 1.04x at 16 / 111 / 256
/// bytes, the SHA-384 open at 111 and 256 bytes from 1.145x / 1.15x to
/// 1.21x / 1.18x, the SHA-384 hash at 240 and 256 bytes from 0.945x /
/// 0.905x to 0.99x / 0.955x. Model 0xCF was not measured and keeps one
/// block at a time below the four-block loop.
///
/// Models 0xCF and 0xA7 also run SHA-1's message schedule on AVX-512VL
/// (`sha1_avx512_schedule`, `sha::Sha1NiVl`) beside the SHA-NI rounds.
/// There `sha1msg2` issues once every 4-5 cycles (eight independent
/// chains) and its chain through the schedule, not the rounds, bounds the
/// hash; `sha1nexte` takes a share of the `sha1rnds4` unit. `vprold`,
/// `vpternlogd` and a masked add do the same work in single-cycle
/// instructions. The hash, the HMAC, the stitched seals and the fused
/// open take it; the SHA-NI lane kernels do not. On model 0xCF, one
/// binary, SHA-NI throughout and this schedule in alternating processes,
/// 5 runs each, medians against OpenSSL at 16 KiB / 1 KiB / 256 B:
/// HMAC-SHA1 1.11x / 1.13x / 1.19x against 1.04x / 1.09x / 1.12x, the
/// AES-128-CBC-SHA1 seal 1.16x / 1.33x / 1.60x against 1.05x / 1.22x /
/// 1.44x, its open 1.10x / 1.72x / 2.51x against 1.07x / 1.65x / 2.29x;
/// the AES-256-CBC-SHA1 seal, bound by its AES chain, 1.06x at 16 KiB
/// either way. On model 0xA7 (the same way, 4 runs each): HMAC-SHA1 1.04x
/// / 1.07x / 1.10x against 0.98x / 1.015x / 1.08x, the seal 1.12x / 1.25x /
/// 1.465x against 1.07x / 1.21x / 1.405x, the open 1.10x / 1.73x / 2.35x
/// against 1.05x / 1.67x / 2.29x. Not measured on other CPUs.
///
/// Everywhere, eight or fewer busy lanes that the sixteen-lane kernels
/// would take run in the eight-lane ones instead: a 256-bit instruction
/// costs no more than a 512-bit one on any of these CPUs. Intel starts
/// them earlier: there 256-bit integer instructions issue on three ports
/// against two for 512-bit ones, so an eight-lane call costs 0.71 (SHA-1)
/// and 0.67 (SHA-256) of a sixteen-lane one (model 0xA7, 201 alternating
/// rounds) and beats two SHA-NI streams at a time from 4 and 6 busy lanes.
/// AMD Zen 4 runs each 512-bit instruction as two 256-bit halves, and its
/// SHA-NI is fast: there (model 0x11, 201 rounds of 16 KiB per lane) two
/// SHA-NI streams take 18.5-21.5 ns per block for SHA-1 and 20-22.5 ns for
/// SHA-256, an eight-lane call costs 0.60 of a sixteen-lane one, and the
/// sixteen-lane SHA-256 kernel takes 298 ns per block of every lane. So
/// SHA-1 takes the eight-lane kernel from 5 busy lanes (90 ns / 5) as
/// elsewhere, but SHA-256 leaves the lanes for SHA-NI pairs below 14 busy
/// ones: twelve SHA-256 records of 16 KiB sealed at 1.20x intel-ipsec-mb
/// against 1.03x with the lanes down to 9, and opened 1.78x against 1.59x
/// OpenSSL (3 alternating runs). There too, few SHA-256 records sealed
/// MAC-then-encrypt run two at a time with their CBC chains in the loop of
/// the SHA-NI rounds: two lanes of 16 KiB 1.71-1.75x the pair's hash
/// followed by the CBC lanes, four 1.24x (`stitched_against_separate`);
/// four records of 16 KiB sealed 1.72-1.87x one by one against 1.34-1.50x
/// with the hash first (3 alternating runs). So do two to four SHA-1
/// records of 2 KiB or more (`sha1_pairs_pay`): two lanes of 16 KiB 2.16x
/// the eight-lane stitched loop, four 1.08x; three or four with one pair
/// hashed ahead and the other pair's hash beside all four chains
/// (one `ni_cbc` call) 1.08-1.09x the two pair calls. Not measured elsewhere,
/// so enabled on Zen 4 only.
///
/// AMD Zen 2's SHA-NI is slow for SHA-1: there (model 0x31, 8 lanes of 16
/// KiB, 201 alternating rounds) two SHA-NI streams take 24.4-25.3 ns per
/// block of each lane, eight AVX2 lanes without AVX-512's rotates and
/// ternary logic 18.9-19.9 ns (`sha1_avx2_x8`; SHA-256's AVX2 rounds take
/// 2.2 times as long as its SHA-NI pairs). So windows of SHA-1 lanes hash
/// eight at a time on AVX2 while at least 7 are busy (`avx2_sha1_lanes`;
/// an eight-lane call then costs what three pairs do). Sixteen records
/// from sixteen connections, sealed with and without it (one build, 2
/// alternating runs each): 16 KiB 1.00x intel-ipsec-mb against 0.82x
/// (1.57-1.58x one by one against 1.28-1.29x), 1408 bytes 0.93-0.95x
/// against 0.83x. Not measured on Zen 3, whose two SHA-NI streams hash
/// SHA-1 1.80x as fast as one.
///
/// On Zen 2 too, MAC-then-encrypt SHA-1 and SHA-256 windows run two lanes
/// at a time with their CBC chains in the loop of the SHA-NI rounds
/// (`stitched_ni_pairs`), the chains on AES-NI, one xmm register a lane:
/// a lone CBC chain waits on each `aesenc`'s latency and two SHA-NI
/// streams leave the AES units idle. Two lanes of 16 KiB (model 0x31,
/// `stitched_against_separate`, 201 rounds): SHA-1 13.1 against 25.3 us
/// for the pair's hash followed by the AES-NI CBC lanes, SHA-256 14.5
/// against 24.0; four lanes as two calls 26.1 against 38.1 and 29.0
/// against 35.5. Four records of 16 KiB sealed 1.43-1.44x OpenSSL's
/// multi-block for SHA-1 (1.00x without) and 1.27-1.29x for SHA-256
/// (1.04x); up to sixteen records of 512 bytes or more, sizes by count in
/// `SHA1_AES_NI_PAIRS` and `STITCHED_SHA256_AES_NI`.
///
/// SHA-NI has no SHA-512, so SHA-384 batches on Zen 2 ran one by one. Four
/// SHA-512 lanes with AVX2 alone (`sha512_avx2_x4`) take 121.3 ns per
/// block of each lane against 186.8 ns for the single-stream kernel (model
/// 0x31, 16 KiB, 201 alternating rounds). A block of the four lanes takes
/// some 1,460 cycles at 3 GHz and has 1,472 vector shifts, and turning 128
/// of them into byte shuffles took 7% off. The shifts are not the whole
/// bound, though: with the message schedule's words given from memory (a
/// measurement build), the rounds alone took 102.3 ns, some 1,230 cycles
/// for their 960 shifts; and that schedule computed on the scalar units
/// beside the rounds took 142.8 ns in all, so it stays in the vectors.
/// So SHA-384 windows are hashed four at a time there
/// (`avx2_sha512_lanes`), then CBC-encrypted in the AES-NI lanes, and the
/// opens' secret-length finishes run in the same lanes. Sixteen records
/// from sixteen connections against intel-ipsec-mb, one by one before: 16
/// KiB sealed 1.05x (0.54x), opened 1.05x (0.75-0.76x); 1408 bytes sealed
/// 1.02x (0.55-0.56x), opened 0.92-0.93x (0.59x).
///
/// On Zen 2 as well, opened SHA-1 and SHA-256 batches finish their MACs
/// over the secret lengths two SHA-NI streams at a time (`pair_tails`),
/// one stream a record before: a short record's hash is nearly all finish,
/// and one SHA-NI stream waits on its rounds' latency. Sixteen records
/// from sixteen connections (model 0x31, 2 runs, ratios against one by
/// one for SHA-1 / SHA-256, before in brackets): 256 bytes 1.06-1.07x /
/// 1.03-1.08x (0.95x / 0.97x: one by one inside the batch call), 1408
/// bytes 1.19x / 1.15-1.18x (1.13-1.14x / 1.14x). Windows of short records
/// take lanes from twelve or sixteen records, longer ones by their own
/// sizes for each hash (`SHA1_PAIR_TAILS_OPEN`, `SHA256_PAIR_TAILS_OPEN`:
/// SHA-256 from four of 2 KiB, SHA-1 from six of 2 KiB or eight of 1 KiB,
/// where six of 1 KiB lost 5% in lanes).
/// SHA-1's eight AVX2 lanes for the finishes measured no faster than the
/// pairs (16 x 256 bytes 1.03x against 1.06x).
///
/// Intel seals few SHA-256 records one by one. On family 6 model
/// 0xCF, four SHA-256 records of 16 KiB sealed 1.10-1.14 GB/s in lanes
/// hashed two SHA-NI streams at a time (`few_lanes_sha_ni`), against
/// 1.16-1.18 GB/s one by one; in the stitched pairs (`stitched_ni_pairs`)
/// with AES-NI chains 0.78-0.82 GB/s against 1.09-1.12 GB/s; and with
/// VAES chains about a hundredth as fast (2 alternating runs each, the
/// builds changed for the measurement only).
///
/// Why the open differs: on Intel family 6 model 0xCF, 512-bit VAES beside
/// legacy-SSE SHA-NI in one loop took 1.5 ms per 16 KiB record against
/// 13 µs for AES-NI beside SHA-NI; on AMD, VAES keeps 16 blocks in flight
/// beside the hash. The override mask still restricts the features; this
/// only picks among the kernels they allow. `CBC_HMAC_TUNING_CPU` picks
/// another CPU's row (see [`tuning_cpu_override`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Tuning {
    /// Fuse VAES-512 CBC decryption with SHA-NI (else AES-NI with SHA-NI).
    pub(crate) vaes_sha_ni_fusion: bool,
    /// Run SHA-384/512 on the AVX-512VL kernel when AVX-512 is allowed
    /// (else on the AVX2 one).
    pub(crate) sha512_avx512: bool,
    /// Give batches too small for the sixteen-lane SHA-1/SHA-256 kernels,
    /// or any batch on a CPU without them, lanes anyway, hashed two
    /// streams at a time on SHA-NI (else they run the single-record seal
    /// and open, one record at a time).
    pub(crate) few_lanes_sha_ni: bool,
    /// On the AVX2 SHA-512 kernel, hash runs of `sha512::PAIRS_FROM`
    /// blocks or more through the two-block loop of `sha512_pair` (else
    /// one block at a time). Every CPU in the table takes it now (Zen 5
    /// unmeasured, see above); the switch stays for the next one that
    /// measures otherwise.
    pub(crate) sha512_pairs_avx2: bool,
    /// The same on the AVX-512VL kernel (whose pair loop keeps the AVX2
    /// schedule).
    pub(crate) sha512_pairs_avx512: bool,
    /// Fuse the SHA-384 open's prefix hash with its CBC decryption (else
    /// decrypt the whole prefix, then hash it).
    pub(crate) sha384_open_fused: bool,
    /// Run SHA-1/SHA-256 lanes on the eight-lane kernels from
    /// `LaneHash::MIN_BUSY8` busy lanes (else from the sixteen-lane
    /// kernels' crossover, `LaneHash::MIN_BUSY`).
    pub(crate) eight_lanes: bool,
    /// 512-bit instructions issue as two 256-bit halves (AMD Zen 4): the
    /// SHA-1/SHA-256 lane kernels start from `LaneHash::MIN_BUSY_HALVED`
    /// busy lanes, below which two SHA-NI streams at a time are faster.
    pub(crate) halved_512: bool,
    /// Seal small windows of MAC-then-encrypt SHA-1 jobs in the stitched
    /// eight-lane loop (`sha1_cbc_x8`) from the sizes `STITCHED_SHA1`
    /// lists (else only where the lane kernels take them anyway).
    pub(crate) stitched_sha1: bool,
    /// Seal small windows of MAC-then-encrypt SHA-256 jobs (fewer than
    /// `LaneHash::MIN_BUSY`) and of a few SHA-1 jobs two lanes at a
    /// time, their two SHA-NI streams and two CBC chains in one loop
    /// (`ni_cbc`), from the sizes `STITCHED_SHA256` and `sha1_pairs_pay`
    /// give (else SHA-256 in lanes hashed first and encrypted after, or
    /// one by one; SHA-1 in `sha1_cbc_x8`, or one by one). Without VAES,
    /// windows of up to sixteen such jobs, their chains on AES-NI, from
    /// the sizes `STITCHED_SHA256_AES_NI` and `SHA1_AES_NI_PAIRS` give.
    pub(crate) stitched_ni_pairs: bool,
    /// Run the SHA-512 pair loop rolled, sixteen rounds of code five
    /// times a block (else unrolled).
    pub(crate) sha512_pairs_rolled: bool,
    /// On the AVX2 SHA-512 kernel, open SHA-384 records on the pair loop
    /// with the CBC decryption beside its second block's rounds
    /// (`open_pairs`; else as `sha384_open_fused` says).
    pub(crate) sha384_open_pairs: bool,
    /// Without AVX-512, hash SHA-1 lanes eight at a time with AVX2 while
    /// at least seven are busy (else two SHA-NI streams at a time).
    pub(crate) avx2_sha1_lanes: bool,
    /// Without AVX-512, seal (and open) batches of SHA-384 records in
    /// lanes, hashed four at a time with AVX2 (else one by one).
    pub(crate) avx2_sha512_lanes: bool,
    /// Without AVX-512, finish the MACs of opened SHA-1/SHA-256 batches
    /// over their secret lengths two SHA-NI streams at a time, and open
    /// batches in lanes from the sizes `LaneHash::PAIR_TAILS_OPEN` gives (else one stream a record, and
    /// windows in lanes as `few_lanes_sha_ni` says).
    pub(crate) pair_tails: bool,
    /// On the AVX-512VL SHA-512 kernel, hash runs of `sha512::QUADS_FROM`
    /// blocks or more four at a time, their schedules in zmm registers
    /// (`sha512_quad`; else as `sha512_pairs_avx512` says).
    pub(crate) sha512_quads: bool,
    /// Where AVX-512 is allowed, run SHA-1's `sha1msg2` and `sha1nexte` as
    /// AVX-512VL rotates beside the SHA-NI rounds (`sha::Sha1NiVl`; else
    /// SHA-NI throughout).
    pub(crate) sha1_avx512_schedule: bool,
    /// Take the SHA-512 pair loop from two blocks
    /// (`sha512::SHORT_PAIRS_FROM`; else from `sha512::PAIRS_FROM`): short
    /// messages, the last two blocks of a hash, the SHA-384 open's last
    /// prefix blocks, and the MAC's secret-length finish two blocks a call
    /// (else one block at a time). On the AVX-512VL kernel, with the
    /// four-block loop, for runs of two and three blocks.
    pub(crate) sha512_short_pairs: bool,
    /// Run the rolled SHA-512 pair loop and the four-block loop on the
    /// four-step rounds of the one-block kernel (`sha512::e_half4`,
    /// `sha512::a_part`; else the five-step ones, three instructions a
    /// round fewer).
    pub(crate) sha512_pairs_four_step: bool,
    /// On the AVX2 SHA-512 kernel, hash runs too short for the pair loop
    /// one block at a time on the rolled pair loop's code
    /// (`sha512_pair::compress_one`; else on the one-block kernel).
    pub(crate) sha512_single_rolled: bool,
}

/// [`Tuning::get`]'s choices as bits: 0 before CPUID is read; else 1 |
/// fusion << 1 | sha512_avx512 << 2 | few_lanes_sha_ni << 3 |
/// sha512_pairs_avx2 << 4 | sha384_open_fused << 5 | eight_lanes << 6 |
/// sha512_pairs_avx512 << 7 | halved_512 << 8 | stitched_sha1 << 9 |
/// stitched_ni_pairs << 10 | sha512_pairs_rolled << 11 |
/// sha384_open_pairs << 12 | avx2_sha1_lanes << 13 | avx2_sha512_lanes << 14
/// | pair_tails << 15 | sha512_quads << 16 | sha1_avx512_schedule << 17 |
/// sha512_short_pairs << 18 | sha512_pairs_four_step << 19 |
/// sha512_single_rolled << 20.
static CACHE: core::sync::atomic::AtomicU32 = core::sync::atomic::AtomicU32::new(0);

impl Tuning {
    /// The choices for this CPU (CPUID read once per process). Inlined:
    /// the batch paths ask it several times a window for one or two
    /// fields each, which then cost a load and a bit test rather than a
    /// call that unpacks every field.
    #[inline]
    pub(crate) fn get() -> Tuning {
        let bits = match CACHE.load(core::sync::atomic::Ordering::Relaxed) {
            0 => Self::read(),
            v => v,
        };
        Tuning {
            vaes_sha_ni_fusion: bits & 2 != 0,
            sha512_avx512: bits & 4 != 0,
            few_lanes_sha_ni: bits & 8 != 0,
            sha512_pairs_avx2: bits & 16 != 0,
            sha384_open_fused: bits & 32 != 0,
            eight_lanes: bits & 64 != 0,
            sha512_pairs_avx512: bits & 128 != 0,
            halved_512: bits & 256 != 0,
            stitched_sha1: bits & 512 != 0,
            stitched_ni_pairs: bits & 1024 != 0,
            sha512_pairs_rolled: bits & 2048 != 0,
            sha384_open_pairs: bits & 4096 != 0,
            avx2_sha1_lanes: bits & 8192 != 0,
            avx2_sha512_lanes: bits & 16384 != 0,
            pair_tails: bits & 32768 != 0,
            sha512_quads: bits & 65536 != 0,
            sha1_avx512_schedule: bits & 131072 != 0,
            sha512_short_pairs: bits & 262144 != 0,
            sha512_pairs_four_step: bits & 524288 != 0,
            sha512_single_rolled: bits & 1048576 != 0,
        }
    }

    /// Reads CPUID and fills [`CACHE`]: once per process.
    #[cold]
    #[inline(never)]
    fn read() -> u32 {
        let cpu = match tuning_cpu_override() {
            Ok(Some(cpu)) => cpu,
            // Unset, or unparsable (reported by `tuning_cpu_override`):
            // this CPU's row.
            _ => CpuModel::this_cpu(),
        };
        let t = Self::for_cpu(cpu.vendor, cpu.family, cpu.model);
        let bits = 1
            | u32::from(t.vaes_sha_ni_fusion) << 1
            | u32::from(t.sha512_avx512) << 2
            | u32::from(t.few_lanes_sha_ni) << 3
            | u32::from(t.sha512_pairs_avx2) << 4
            | u32::from(t.sha384_open_fused) << 5
            | u32::from(t.eight_lanes) << 6
            | u32::from(t.sha512_pairs_avx512) << 7
            | u32::from(t.halved_512) << 8
            | u32::from(t.stitched_sha1) << 9
            | u32::from(t.stitched_ni_pairs) << 10
            | u32::from(t.sha512_pairs_rolled) << 11
            | u32::from(t.sha384_open_pairs) << 12
            | u32::from(t.avx2_sha1_lanes) << 13
            | u32::from(t.avx2_sha512_lanes) << 14
            | u32::from(t.pair_tails) << 15
            | u32::from(t.sha512_quads) << 16
            | u32::from(t.sha1_avx512_schedule) << 17
            | u32::from(t.sha512_short_pairs) << 18
            | u32::from(t.sha512_pairs_four_step) << 19
            | u32::from(t.sha512_single_rolled) << 20;
        CACHE.store(bits, core::sync::atomic::Ordering::Relaxed);
        bits
    }

    /// The table above, as a function of the CPUID vendor, display family
    /// and display model.
    fn for_cpu(vendor: [u8; 12], family: u32, model: u32) -> Tuning {
        let amd = &vendor == b"AuthenticAMD";
        // Family 0x17 is Zen 1 (models below 0x30) and Zen 2.
        let zen2 = amd && family == 0x17 && model >= 0x30;
        // Family 0x19 is Zen 3 and Zen 4; the models tell them apart.
        let zen3 = amd && family == 0x19 && matches!(model, 0x00..=0x0f | 0x20..=0x5f);
        let zen4 = amd && family == 0x19 && !zen3;
        let zen5 = amd && family >= 0x1a;
        let intel = &vendor == b"GenuineIntel";
        // Intel family 6 models 0xA7 and 0xCF, measured alike (see above).
        let intel_measured = intel && family == 6 && matches!(model, 0xa7 | 0xcf);
        Tuning {
            vaes_sha_ni_fusion: amd,
            sha512_avx512: !amd || family < 0x1a,
            few_lanes_sha_ni: zen2 || (amd && family >= 0x19),
            sha512_pairs_avx2: true,
            sha512_pairs_avx512: !amd || zen3,
            sha384_open_fused: !(zen2 || zen3 || intel),
            eight_lanes: intel,
            halved_512: zen4,
            stitched_sha1: intel || zen4,
            stitched_ni_pairs: zen4 || zen2,
            sha512_pairs_rolled: zen2 || zen3 || zen5 || intel_measured,
            sha384_open_pairs: zen2 || zen3 || zen5,
            avx2_sha1_lanes: zen2,
            avx2_sha512_lanes: zen2,
            pair_tails: zen2,
            sha512_quads: intel_measured,
            sha1_avx512_schedule: intel_measured,
            sha512_short_pairs: zen3 || (intel && family == 6 && model == 0xa7),
            sha512_pairs_four_step: zen5 || (intel && family == 6 && model == 0xa7),
            sha512_single_rolled: zen3,
        }
    }

    /// The open's prefix kernel on the VAES backend, for reports.
    pub(crate) fn open_prefix_kernel(self) -> &'static str {
        match (self.vaes_sha_ni_fusion, self.sha384_open_fused) {
            (true, true) => "VAES-512 decryption fused with SHA-NI",
            (true, false) => {
                "VAES-512 decryption fused with SHA-NI (SHA-384: decrypted, then hashed)"
            }
            (false, true) => "AES-NI decryption fused with SHA-NI",
            (false, false) => {
                "AES-NI decryption fused with SHA-NI (SHA-384: decrypted, then hashed)"
            }
        }
    }
}

/// A CPU as the per-CPU kernel table (in `backends/cpu.rs`) tells CPUs
/// apart: the CPUID vendor string, display family and display model.
///
/// ```
/// let cpu = cbc_hmac::CpuModel::this_cpu();
/// // e.g. "AuthenticAMD family 0x1a model 0x2"
/// assert!(cpu.to_string().contains(" family 0x"));
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct CpuModel {
    /// The twelve bytes of the vendor string: `AuthenticAMD`,
    /// `GenuineIntel`, ...
    pub vendor: [u8; 12],
    /// The display family (base family plus extended family): 0x19 for
    /// AMD Zen 3 and Zen 4, 0x1A for Zen 5, 6 for most Intel cores.
    pub family: u32,
    /// The display model (with the extended model bits where the family
    /// uses them).
    pub model: u32,
}

impl CpuModel {
    /// The CPU this runs on, from CPUID (all zeros on other
    /// architectures).
    pub fn this_cpu() -> CpuModel {
        #[cfg(target_arch = "x86_64")]
        let (vendor, family, model) = super::x86_64::cpu_identity();
        #[cfg(not(target_arch = "x86_64"))]
        let (vendor, family, model) = ([0; 12], 0, 0);
        CpuModel {
            vendor,
            family,
            model,
        }
    }
}

impl fmt::Display for CpuModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for &b in &self.vendor {
            let c = if b.is_ascii_graphic() { b as char } else { '?' };
            write!(f, "{c}")?;
        }
        write!(f, " family {:#x} model {:#x}", self.family, self.model)
    }
}

impl fmt::Debug for CpuModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CpuModel({self})")
    }
}

/// The `CBC_HMAC_TUNING_CPU` environment variable, parsed (read once per
/// process; `std` builds only): the CPU whose row of the per-CPU kernel
/// table to use instead of this one's.
///
/// Where the fastest of two kernels for the same job differs by CPU model,
/// the crate chooses by CPUID vendor, family and model, from one table
/// (the `Tuning` table in `src/backends/cpu.rs`). This variable makes it
/// choose as it would on another CPU, to compare the choices on one
/// machine or to test another CPU's code paths here. It changes only which
/// of the allowed kernels run, never which features are used: those still
/// come from this CPU and [`cpu_override`], so any value is safe.
///
/// The value is `VENDOR:FAMILY:MODEL`, the family and model in
/// hexadecimal with or without `0x`: `AuthenticAMD:0x1a:0x2` chooses as
/// on AMD Zen 5 (family 0x1A model 2), `GenuineIntel:6:0xcf` as on Intel
/// family 6 model 0xCF. Returns `Ok(None)` when the variable is unset or
/// empty (and always in `no_std` builds), `Ok(Some(cpu))` when it parses,
/// and an [`OverrideError`] when it does not; the crate then uses this
/// CPU's row, and a program can report the error (the benchmark binary
/// exits with it).
///
/// ```
/// match cbc_hmac::tuning_cpu_override() {
///     Ok(Some(cpu)) => println!("kernels chosen as on {cpu}"),
///     Ok(None) => println!("kernels chosen for {}", cbc_hmac::CpuModel::this_cpu()),
///     Err(e) => eprintln!("{e}"),
/// }
/// ```
pub fn tuning_cpu_override() -> Result<Option<CpuModel>, OverrideError> {
    #[cfg(feature = "std")]
    {
        static PARSED: std::sync::OnceLock<Result<Option<CpuModel>, OverrideError>> =
            std::sync::OnceLock::new();
        *PARSED.get_or_init(|| read_variable(Variable::TuningCpu, parse_tuning_cpu))
    }
    #[cfg(not(feature = "std"))]
    {
        Ok(None)
    }
}

/// Parses a `CBC_HMAC_TUNING_CPU` value (see [`tuning_cpu_override`]).
#[cfg_attr(not(feature = "std"), allow(dead_code))]
fn parse_tuning_cpu(text: &str) -> Result<Option<CpuModel>, OverrideError> {
    let t = text.trim();
    if t.is_empty() {
        return Ok(None);
    }
    let err = || OverrideError::new(Variable::TuningCpu, text);
    let mut parts = t.split(':');
    let (Some(vendor), Some(family), Some(model), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(err());
    };
    let vendor: [u8; 12] = vendor.as_bytes().try_into().map_err(|_| err())?;
    if !vendor.iter().all(u8::is_ascii_graphic) {
        return Err(err());
    }
    Ok(Some(CpuModel {
        vendor,
        family: parse_hex(family).ok_or_else(err)?,
        model: parse_hex(model).ok_or_else(err)?,
    }))
}

/// The feature bits backends may use: what the CPU has, restricted by the
/// override.
pub(crate) fn enabled() -> u32 {
    use core::sync::atomic::{AtomicU32, Ordering};
    // Neither the CPU nor the override changes within a process, and every
    // keyed object and one-shot hash asks several times: cached, with a
    // bit outside `KNOWN` to say the cache is filled. (Racing first calls
    // store the same value.)
    const FILLED: u32 = 1 << 31;
    static CACHE: AtomicU32 = AtomicU32::new(0);
    let cached = CACHE.load(Ordering::Relaxed);
    if cached & FILLED != 0 {
        return cached & !FILLED;
    }
    let cpu = cpu_bits();
    let bits = match cpu_override() {
        Ok(None) | Ok(Some(0)) => cpu,
        Ok(Some(mask)) => cpu & mask & KNOWN,
        // An unparsable override: the safe choice is no kernel of ours.
        Err(_) => 0,
    };
    CACHE.store(bits | FILLED, Ordering::Relaxed);
    bits
}

/// The `CBC_HMAC_CPUID_OVERRIDE` environment variable, parsed (read once
/// per process; `std` builds only).
///
/// The value is a hexadecimal mask, with or without a `0x` prefix, in the
/// manner of GnuTLS's `GNUTLS_CPUID_OVERRIDE`. Unset, empty or `0` means
/// every feature the CPU has. Otherwise the crate starts from nothing and
/// enables only the requested features that the CPU really has:
///
/// | bit | enables |
/// |---|---|
/// | `0x1` | nothing: the portable backend only ("no acceleration") |
/// | `0x2` | AES-NI: [`Backend::AesNi`](crate::Backend::AesNi) |
/// | `0x4` | AVX2 + BMI2 hash kernels: with `0x2`, [`Backend::AesNiAvx2`](crate::Backend::AesNiAvx2) (for CPUs without SHA-NI); with `0x8`, VEX encodings of the SHA-NI loops |
/// | `0x8` | SHA-NI: with `0x2`, [`Backend::AesNiShaNi`](crate::Backend::AesNiShaNi) |
/// | `0x10` | AVX-512 F/BW/VL + VAES: with `0x2` and `0x8`, [`Backend::Vaes512ShaNi`](crate::Backend::Vaes512ShaNi) |
///
/// So `0x1` selects [`Backend::Portable`](crate::Backend::Portable), `0x6`
/// AES-NI with the AVX2 hash kernels, `0xa` AES-NI with SHA-NI, `0x1e`
/// everything. SHA-NI has no SHA-512, so the accelerated backends hash
/// SHA-384 with our AVX-512 SHA-512 kernel when `0x4` and `0x10` are
/// allowed, our AVX2 one when `0x4` is, and the `sha2` crate's otherwise. Bits above `0x10` are ignored.
///
/// Returns `Ok(None)` when the variable is unset or empty (and always in
/// `no_std` builds), `Ok(Some(mask))` when it parses, and an
/// [`OverrideError`] when it does not; the library then uses the portable
/// backend, the safe choice, and a program can report the error (the
/// benchmark binary exits with it).
///
/// The override governs this crate's own kernels. The RustCrypto crates
/// under the portable backend (`aes`, `sha1`, `sha2`) detect CPU features
/// on their own and ignore it; they can be forced to software only at
/// compile time:
/// `RUSTFLAGS='--cfg aes_backend="soft" --cfg sha1_backend="soft" --cfg sha2_backend="soft"'`.
pub fn cpu_override() -> Result<Option<u32>, OverrideError> {
    #[cfg(feature = "std")]
    {
        static PARSED: std::sync::OnceLock<Result<Option<u32>, OverrideError>> =
            std::sync::OnceLock::new();
        *PARSED.get_or_init(|| read_variable(Variable::Mask, parse_override))
    }
    #[cfg(not(feature = "std"))]
    {
        Ok(None)
    }
}

/// `variable`'s value, parsed by `parse`: `Ok(None)` when it is unset.
#[cfg(feature = "std")]
fn read_variable<T>(
    variable: Variable,
    parse: fn(&str) -> Result<Option<T>, OverrideError>,
) -> Result<Option<T>, OverrideError> {
    match std::env::var_os(variable.name()) {
        None => Ok(None),
        Some(value) => match value.to_str() {
            Some(text) => parse(text),
            None => Err(OverrideError::new(variable, "<not UTF-8>")),
        },
    }
}

/// A hexadecimal number, with or without `0x`, that fits 32 bits.
#[cfg_attr(not(feature = "std"), allow(dead_code))]
fn parse_hex(text: &str) -> Option<u32> {
    let digits = text
        .strip_prefix("0x")
        .or_else(|| text.strip_prefix("0X"))
        .unwrap_or(text);
    let hex = !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_hexdigit());
    hex.then(|| u32::from_str_radix(digits, 16).ok()).flatten()
}

/// Parses an override value (see [`cpu_override`]).
#[cfg_attr(not(feature = "std"), allow(dead_code))]
fn parse_override(text: &str) -> Result<Option<u32>, OverrideError> {
    let t = text.trim();
    if t.is_empty() {
        return Ok(None);
    }
    parse_hex(t)
        .map(Some)
        .ok_or_else(|| OverrideError::new(Variable::Mask, text))
}

/// An unparsable `CBC_HMAC_CPUID_OVERRIDE` value (see [`cpu_override`]) or
/// `CBC_HMAC_TUNING_CPU` value (see [`tuning_cpu_override`]).
///
/// `Display` names the variable and the value, and says what is valid.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct OverrideError {
    variable: Variable,
    bytes: [u8; 32],
    len: u8,
}

/// Which variable an [`OverrideError`] is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Variable {
    Mask,
    TuningCpu,
}

impl Variable {
    /// The environment variable's name.
    fn name(self) -> &'static str {
        match self {
            Variable::Mask => "CBC_HMAC_CPUID_OVERRIDE",
            Variable::TuningCpu => "CBC_HMAC_TUNING_CPU",
        }
    }
}

impl OverrideError {
    /// The valid values, one line each, as the error message lists them.
    pub const VALID_VALUES: &'static str = "\
  unset or 0  everything the CPU has
  0x1         none of this crate's kernels (portable backend)
  0x2         AES-NI
  0x4         AVX2 + BMI2 hash kernels (for CPUs without SHA-NI)
  0x8         SHA-NI
  0x10        AVX-512 + VAES
  (or-ed together, hexadecimal, with or without 0x; e.g. 0xa, 0x1e)";

    fn new(variable: Variable, value: &str) -> Self {
        let mut bytes = [0u8; 32];
        let mut len = value.len().min(32);
        while !value.is_char_boundary(len) {
            len -= 1;
        }
        bytes[..len].copy_from_slice(&value.as_bytes()[..len]);
        OverrideError {
            variable,
            bytes,
            len: len as u8,
        }
    }

    /// The variable's name: `CBC_HMAC_CPUID_OVERRIDE` or
    /// `CBC_HMAC_TUNING_CPU`.
    pub fn variable(&self) -> &'static str {
        self.variable.name()
    }

    /// The rejected value (its first 32 bytes at most).
    pub fn value(&self) -> &str {
        core::str::from_utf8(&self.bytes[..self.len as usize]).unwrap_or("")
    }
}

impl fmt::Debug for OverrideError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("OverrideError")
            .field(&self.variable())
            .field(&self.value())
            .finish()
    }
}

impl fmt::Display for OverrideError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.variable {
            Variable::Mask => write!(
                f,
                "invalid CBC_HMAC_CPUID_OVERRIDE value {:?} (using the portable backend); \
                 expected a hexadecimal mask:\n{}",
                self.value(),
                Self::VALID_VALUES
            ),
            Variable::TuningCpu => write!(
                f,
                "invalid CBC_HMAC_TUNING_CPU value {:?} (using this CPU's kernel choices); \
                 expected VENDOR:FAMILY:MODEL, a 12-character CPUID vendor string and the \
                 family and model in hexadecimal, e.g. AuthenticAMD:0x1a:0x2",
                self.value()
            ),
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for OverrideError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tuning_table() {
        let t = |vendor: &[u8; 12], family, model| {
            let t = Tuning::for_cpu(*vendor, family, model);
            [
                t.vaes_sha_ni_fusion,
                t.sha512_avx512,
                t.few_lanes_sha_ni,
                t.sha512_pairs_avx2,
                t.sha384_open_fused,
                t.eight_lanes,
                t.sha512_pairs_avx512,
                t.halved_512,
                t.stitched_sha1,
                t.stitched_ni_pairs,
                t.sha512_pairs_rolled,
                t.sha384_open_pairs,
                t.avx2_sha1_lanes,
                t.avx2_sha512_lanes,
                t.pair_tails,
                t.sha512_quads,
                t.sha1_avx512_schedule,
                t.sha512_short_pairs,
                t.sha512_pairs_four_step,
                t.sha512_single_rolled,
            ]
        };
        let zen2 = [
            true, true, true, true, false, false, false, false, false, true, true, true, true,
            true, true, false, false, false, false, false,
        ];
        let zen3 = [
            true, true, true, true, false, false, true, false, false, false, true, true, false,
            false, false, false, false, true, false, true,
        ];
        let zen4 = [
            true, true, true, true, true, false, false, true, true, true, false, false, false,
            false, false, false, false, false, false, false,
        ];
        let zen5 = [
            true, false, true, true, true, false, false, false, false, false, true, true, false,
            false, false, false, false, false, true, false,
        ];
        let intel = [
            false, true, false, true, false, true, true, false, true, false, false, false, false,
            false, false, false, false, false, false, false,
        ];
        // Models 0xA7 and 0xCF run the SHA-512 pair loop rolled, the
        // four-block loop from four blocks, and SHA-1's schedule on
        // AVX-512VL.
        let mut intel_cf = intel;
        intel_cf[10] = true;
        intel_cf[15] = true;
        intel_cf[16] = true;
        let other = [
            false, true, false, true, true, false, true, false, false, false, false, false, false,
            false, false, false, false, false, false, false,
        ];
        let zen1 = [
            true, true, false, true, true, false, false, false, false, false, false, false, false,
            false, false, false, false, false, false, false,
        ];
        // Zen 2: Rome, Renoir, Matisse; Zen 1 and Zen+ keep the defaults.
        for model in [0x31, 0x60, 0x71] {
            assert_eq!(t(b"AuthenticAMD", 0x17, model), zen2, "{model:#x}");
        }
        for model in [0x01, 0x08, 0x18] {
            assert_eq!(t(b"AuthenticAMD", 0x17, model), zen1, "{model:#x}");
        }
        // Zen 3: Milan, Vermeer, Rembrandt, Cezanne.
        for model in [0x01, 0x08, 0x21, 0x44, 0x50] {
            assert_eq!(t(b"AuthenticAMD", 0x19, model), zen3, "{model:#x}");
        }
        // Zen 4: Genoa, Storm Peak, Raphael, Phoenix, Bergamo.
        for model in [0x11, 0x18, 0x61, 0x74, 0xa0] {
            assert_eq!(t(b"AuthenticAMD", 0x19, model), zen4, "{model:#x}");
        }
        assert_eq!(t(b"AuthenticAMD", 0x1a, 0x02), zen5);
        assert_eq!(t(b"AuthenticAMD", 0x1a, 0x44), zen5);
        assert_eq!(t(b"AuthenticAMD", 0x1b, 0), zen5);
        assert_eq!(t(b"GenuineIntel", 6, 0xcf), intel_cf);
        // Model 0xA7 also runs those loops on the four-step rounds, and
        // the pair loop from two blocks.
        let mut intel_a7 = intel_cf;
        intel_a7[17] = true;
        intel_a7[18] = true;
        assert_eq!(t(b"GenuineIntel", 6, 0xa7), intel_a7);
        // Sapphire Rapids, not measured.
        assert_eq!(t(b"GenuineIntel", 6, 0x8f), intel);
        // Intel family 0x19 model 1 is not Zen 3.
        assert_eq!(t(b"GenuineIntel", 0x19, 0x01), intel);
        assert_eq!(t(b"HygonGenuine", 0x18, 0x01), other);
        assert_eq!(t(&[0; 12], 0, 0), other);
    }

    #[test]
    fn parses_tuning_cpus() {
        let cpu = |vendor: &[u8; 12], family, model| {
            Ok(Some(CpuModel {
                vendor: *vendor,
                family,
                model,
            }))
        };
        assert_eq!(parse_tuning_cpu(""), Ok(None));
        assert_eq!(parse_tuning_cpu(" \n"), Ok(None));
        assert_eq!(
            parse_tuning_cpu("AuthenticAMD:0x1a:0x2"),
            cpu(b"AuthenticAMD", 0x1a, 2)
        );
        assert_eq!(
            parse_tuning_cpu(" GenuineIntel:6:CF\n"),
            cpu(b"GenuineIntel", 6, 0xcf)
        );
        assert_eq!(
            parse_tuning_cpu("AuthenticAMD:0X17:0x31"),
            cpu(b"AuthenticAMD", 0x17, 0x31)
        );
        for bad in [
            "AuthenticAMD",
            "AuthenticAMD:0x1a",
            "AuthenticAMD:0x1a:0x2:0",
            "AMD:0x1a:0x2",
            "AuthenticAMDx:0x1a:0x2",
            "Authentic AMD:0x1a:0x2",
            "AuthenticAMD:0x:0x2",
            "AuthenticAMD:26z:2",
            "AuthenticAMD:0x1a:-2",
            "AuthenticAMD:0x1a:123456789",
        ] {
            let e = parse_tuning_cpu(bad).unwrap_err();
            assert_eq!(e.value(), bad);
            assert_eq!(e.variable(), "CBC_HMAC_TUNING_CPU");
            let message = e.to_string();
            assert!(message.contains("AuthenticAMD:0x1a:0x2"), "{message}");
            assert!(message.contains("CBC_HMAC_TUNING_CPU"), "{message}");
        }
        let zen5 = CpuModel {
            vendor: *b"AuthenticAMD",
            family: 0x1a,
            model: 2,
        };
        assert_eq!(zen5.to_string(), "AuthenticAMD family 0x1a model 0x2");
        // What `Display` prints parses back in the variable's form.
        let text = format!("AuthenticAMD:{:#x}:{:#x}", zen5.family, zen5.model);
        assert_eq!(parse_tuning_cpu(&text), Ok(Some(zen5)));
    }

    #[test]
    fn parses_masks() {
        assert_eq!(parse_override(""), Ok(None));
        assert_eq!(parse_override("  "), Ok(None));
        assert_eq!(parse_override("0"), Ok(Some(0)));
        assert_eq!(parse_override("0x1"), Ok(Some(1)));
        assert_eq!(parse_override("1e"), Ok(Some(0x1e)));
        assert_eq!(parse_override("0X1E"), Ok(Some(0x1e)));
        assert_eq!(parse_override(" 0xa\n"), Ok(Some(0xa)));
        assert_eq!(parse_override("ffffffff"), Ok(Some(u32::MAX)));
        for bad in ["zz", "0x", "0xg", "1 2", "-1", "+1", "123456789", "0x0x1"] {
            let e = parse_override(bad).unwrap_err();
            assert_eq!(e.value(), bad);
            assert_eq!(e.variable(), "CBC_HMAC_CPUID_OVERRIDE");
            assert!(e.to_string().contains("0x10"), "{e}");
        }
    }
}
