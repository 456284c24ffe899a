//! The x86-64 kernels: AES-NI (and VAES) CBC, SHA-1/SHA-256 on SHA-NI
//! or AVX2, SHA-512 on AVX2 or AVX-512, and the stitched seal and fused
//! open that interleave them.
//!
//! This is the only module where `unsafe` appears. Kernels are
//! `#[target_feature]` functions; `unsafe` is left for unaligned loads and
//! stores (each on a reference of the right size), for `asm!` (empty
//! optimisation barriers, and the SHA-512 rounds), and for calls from a
//! non-feature context into a kernel, justified by a witness token: a
//! zero-sized value ([`AesNi`], [`ShaNi`], [`ShaNiAvx`], [`ShaNiAvx512`],
//! [`Avx2`], [`Avx512Bmi`], [`Vaes256`], [`Vaes512`]) that can only be obtained from
//! run-time CPU detection, so no kernel is reachable without proof that the
//! CPU has its instructions.
//!
//! Whether a backend is *chosen* is policy (`CBC_HMAC_CPUID_OVERRIDE`, see
//! [`super::cpu`]); the tokens are about safety only.

pub(crate) mod aes;
pub(crate) mod lanes;
pub(crate) mod mac_window;
mod open_pairs;
pub(crate) mod padding;
pub(crate) mod sha;
pub(crate) mod sha512;
mod sha512_pair;
mod sha512_quad;
pub(crate) mod sha_avx2;
pub(crate) mod stitch;
#[cfg(test)]
pub(crate) mod test_rng;
pub(crate) mod vaes;

use core::arch::x86_64::__m128i;

cpufeatures::new!(cpuid_aesni, "aes", "sse2", "ssse3", "sse4.1");
cpufeatures::new!(cpuid_shani, "sha", "sse2", "ssse3", "sse4.1");
cpufeatures::new!(cpuid_avx, "avx");
cpufeatures::new!(cpuid_avx2, "avx", "avx2", "bmi1", "bmi2", "ssse3", "sse4.1");
cpufeatures::new!(
    cpuid_vaes512,
    "avx512f",
    "avx512bw",
    "avx512vl",
    "vaes",
    "aes",
    "sse4.1"
);

/// Proof that the CPU has AES-NI, SSE2, SSSE3 and SSE4.1.
#[derive(Clone, Copy, Debug)]
pub(crate) struct AesNi(());

/// Proof that the CPU has the SHA extensions, SSE2, SSSE3 and SSE4.1.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ShaNi(());

/// Proof that the CPU has AVX, AVX2, BMI1, BMI2, SSSE3 and SSE4.1 (and the
/// OS saves the ymm registers): the hash kernels for CPUs without SHA-NI.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Avx2(());

/// Proof that the CPU has the features of [`ShaNi`] and AVX (with the OS
/// saving ymm state): the SHA-NI kernels compiled with VEX encodings,
/// whose three-operand forms spare the register copies that otherwise
/// spill AES round keys in the stitched loops.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ShaNiAvx(());

impl ShaNiAvx {
    pub(crate) fn detect() -> Option<Self> {
        (cpuid_shani::get() && cpuid_avx::get()).then_some(ShaNiAvx(()))
    }
}

/// Proof that the CPU has the features of both [`ShaNiAvx`] and
/// [`Vaes512`]: for SHA-NI kernels whose message schedule runs partly on
/// AVX-512VL (`sha::Sha1NiVl`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct ShaNiAvx512(());

impl ShaNiAvx512 {
    pub(crate) fn new(_: ShaNiAvx, _: Vaes512) -> Self {
        ShaNiAvx512(())
    }
}

/// Proof that the CPU has the features of both [`Avx2`] and [`Vaes512`]:
/// for AVX-512VL kernels that also use BMI2.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Avx512Bmi(());

impl Avx512Bmi {
    pub(crate) fn new(_: Avx2, _: Vaes512) -> Self {
        Avx512Bmi(())
    }
}

/// Proof that the CPU has AVX-512 F/BW/VL, VAES and AES-NI (and the OS saves
/// the zmm registers).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Vaes512(());

/// Proof that the CPU has AVX2, VAES and AES-NI (and the OS saves the ymm
/// registers): VAES on ymm registers, for CPUs without AVX-512.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Vaes256(());

impl AesNi {
    pub(crate) fn detect() -> Option<Self> {
        cpuid_aesni::get().then_some(AesNi(()))
    }
}

impl ShaNi {
    pub(crate) fn detect() -> Option<Self> {
        cpuid_shani::get().then_some(ShaNi(()))
    }
}

impl Vaes512 {
    pub(crate) fn detect() -> Option<Self> {
        cpuid_vaes512::get().then_some(Vaes512(()))
    }

    /// A VAES-capable CPU has AES-NI too (checked in the same detection).
    pub(crate) fn aes_ni(self) -> AesNi {
        AesNi(())
    }
}

impl Vaes256 {
    pub(crate) fn detect() -> Option<Self> {
        (cpuid_avx2::get() && cpuid_aesni::get() && vaes_bit()).then_some(Vaes256(()))
    }

    /// [`Vaes256::detect`] where `CBC_HMAC_CPUID_OVERRIDE` allows AES-NI
    /// and AVX code (bits `0x2` and `0x4`): VEX-encoded VAES counts as
    /// both.
    pub(crate) fn allowed() -> Option<Self> {
        use crate::backends::cpu::{AES_NI, AVX2, enabled};
        let needed = AES_NI | AVX2;
        (enabled() & needed == needed).then(Self::detect).flatten()
    }

    /// A VAES-capable CPU has AES-NI too (checked in the same detection).
    pub(crate) fn aes_ni(self) -> AesNi {
        AesNi(())
    }
}

/// CPUID leaf 7's VAES bit, read once. (`cpufeatures` ties VAES to the
/// zmm state, which CPUs without AVX-512 lack; the ymm state it needs here
/// comes with the AVX2 check.)
fn vaes_bit() -> bool {
    use core::sync::atomic::{AtomicU8, Ordering::Relaxed};
    static VAES: AtomicU8 = AtomicU8::new(0);
    match VAES.load(Relaxed) {
        1 => false,
        2 => true,
        _ => {
            use core::arch::x86_64::{__cpuid, __cpuid_count};
            // SAFETY: CPUID exists on every x86-64 CPU; leaf 7 is read only
            // where leaf 0 says it exists.
            #[allow(unused_unsafe)]
            let has = unsafe { __cpuid(0).eax >= 7 && __cpuid_count(7, 0).ecx & (1 << 9) != 0 };
            VAES.store(1 + u8::from(has), Relaxed);
            has
        }
    }
}

/// The CPU's identity from CPUID leaves 0 and 1: vendor string and the
/// display family and model (base plus extended fields, as the vendors'
/// manuals define them).
pub(crate) fn cpu_identity() -> ([u8; 12], u32, u32) {
    use core::arch::x86_64::__cpuid;
    // SAFETY: CPUID exists on every x86-64 CPU; leaves 0 and 1 always.
    // (Safe to call in newer Rust; the block keeps older ones building.)
    #[allow(unused_unsafe)]
    let (l0, l1) = unsafe { (__cpuid(0), __cpuid(1)) };
    let mut vendor = [0u8; 12];
    vendor[..4].copy_from_slice(&l0.ebx.to_le_bytes());
    vendor[4..8].copy_from_slice(&l0.edx.to_le_bytes());
    vendor[8..].copy_from_slice(&l0.ecx.to_le_bytes());
    let base_family = (l1.eax >> 8) & 0xf;
    let base_model = (l1.eax >> 4) & 0xf;
    let family = if base_family == 0xf {
        base_family + ((l1.eax >> 20) & 0xff)
    } else {
        base_family
    };
    let model = if base_family == 0x6 || base_family == 0xf {
        base_model | (((l1.eax >> 16) & 0xf) << 4)
    } else {
        base_model
    };
    (vendor, family, model)
}

impl Avx2 {
    pub(crate) fn detect() -> Option<Self> {
        cpuid_avx2::get().then_some(Avx2(()))
    }

    /// [`Avx2::detect`] where `CBC_HMAC_CPUID_OVERRIDE` allows AVX2 (bit
    /// `0x4`): for kernels chosen outside the keyed objects.
    pub(crate) fn allowed() -> Option<Self> {
        use crate::backends::cpu::{AVX2, enabled};
        (enabled() & AVX2 != 0).then(Self::detect).flatten()
    }
}

/// Pins `v` at this point of the instruction stream: an empty `asm!`
/// takes it in a register and hands it back. The compiler must compute `v`
/// before it and anything that uses the result after it, and it keeps
/// `asm!` statements in program order, so pins placed in two interleaved
/// dependency chains keep them interleaved (left alone, the scheduler may
/// gather all AES rounds of a step in one place, beyond the reach of the
/// core's out-of-order window).
#[inline(always)]
pub(crate) fn pin_xmm(v: &mut __m128i) {
    // SAFETY: the assembly is empty: it reads and writes only `v`'s
    // register, touches no memory, stack or flags.
    unsafe {
        core::arch::asm!(
            "/* {0} */",
            inout(xmm_reg) * v,
            options(nomem, nostack, preserves_flags)
        );
    }
}

/// [`pin_xmm`] for a general-purpose register.
#[inline(always)]
pub(crate) fn pin_u64(v: &mut u64) {
    // SAFETY: as in `pin_xmm`.
    unsafe {
        core::arch::asm!(
            "/* {0} */",
            inout(reg) * v,
            options(nomem, nostack, preserves_flags)
        );
    }
}

/// `x`, opaque to the optimiser: sums formed before it are not
/// reassociated with the terms added after it, which fixes the order of an
/// addition chain (the term on the critical path last). It compiles to
/// nothing.
#[inline(always)]
pub(crate) fn opaque_u32(mut x: u32) -> u32 {
    // SAFETY: the assembly is empty: it reads and writes only `x`'s
    // register, touches no memory, stack or flags.
    unsafe {
        core::arch::asm!(
            "/* {0:e} */",
            inout(reg) x,
            options(pure, nomem, nostack, preserves_flags)
        );
    }
    x
}

/// Sixteen bytes through [`pin_xmm`]: one vector register, no memory.
#[inline(always)]
pub(crate) fn opaque_bytes16(x: [u8; 16]) -> [u8; 16] {
    // SAFETY: `[u8; 16]` and `__m128i` are both 16 bytes with every bit
    // pattern valid.
    let mut v: __m128i = unsafe { core::mem::transmute(x) };
    pin_xmm(&mut v);
    // SAFETY: as above.
    unsafe { core::mem::transmute(v) }
}

/// [`opaque_u32`] for 64-bit values.
#[inline(always)]
pub(crate) fn opaque_u64(mut x: u64) -> u64 {
    // SAFETY: as in `opaque_u32`.
    unsafe {
        core::arch::asm!(
            "/* {0} */",
            inout(reg) x,
            options(pure, nomem, nostack, preserves_flags)
        );
    }
    x
}

/// Hands `x` through [`pin_u64`], so that it is computed at this
/// point of the instruction stream.
#[inline(always)]
pub(crate) fn pin_u32(x: &mut u32) {
    let mut wide = u64::from(*x);
    pin_u64(&mut wide);
    *x = wide as u32;
}

/// Unaligned 16-byte load.
#[inline(always)]
pub(crate) fn load(bytes: &[u8; 16]) -> __m128i {
    // SAFETY: `bytes` is 16 readable bytes; `loadu` has no alignment
    // requirement, and SSE2 is part of the x86-64 baseline.
    unsafe { core::arch::x86_64::_mm_loadu_si128(bytes.as_ptr().cast()) }
}

/// Unaligned 16-byte store.
#[inline(always)]
pub(crate) fn store(bytes: &mut [u8; 16], value: __m128i) {
    // SAFETY: `bytes` is 16 writable bytes; `storeu` has no alignment
    // requirement, and SSE2 is part of the x86-64 baseline.
    unsafe { core::arch::x86_64::_mm_storeu_si128(bytes.as_mut_ptr().cast(), value) }
}

/// The 16-byte block at `bytes[at..at + 16]`.
#[inline(always)]
pub(crate) fn block(bytes: &[u8], at: usize) -> &[u8; 16] {
    bytes[at..at + 16].try_into().expect("16 bytes")
}

/// The mutable 16-byte block at `bytes[at..at + 16]`.
#[inline(always)]
pub(crate) fn block_mut(bytes: &mut [u8], at: usize) -> &mut [u8; 16] {
    (&mut bytes[at..at + 16]).try_into().expect("16 bytes")
}
