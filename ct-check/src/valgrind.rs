//! Valgrind client requests, without a bindings crate.
//!
//! A client request is a no-op instruction sequence that valgrind's JIT
//! recognises: four `rol`s of `rdi` by 3, 13, 61 and 51 bits (128 in all,
//! so `rdi` is unchanged) followed by `xchg rbx, rbx`, with `rax` pointing
//! at six words (request code and five arguments) and the default result in
//! `rdx`, where valgrind writes the answer. On a real CPU it does nothing
//! and `rdx` keeps the default. (`valgrind.h`, `__SPECIAL_INSTRUCTION_PREAMBLE`
//! and `VALGRIND_DO_CLIENT_REQUEST_EXPR` for amd64-linux.)

/// `VG_USERREQ__RUNNING_ON_VALGRIND` (valgrind.h).
const RUNNING_ON_VALGRIND: u64 = 0x1001;
/// `VG_USERREQ__COUNT_ERRORS` (valgrind.h).
const COUNT_ERRORS: u64 = 0x1201;
/// `VG_USERREQ_TOOL_BASE('M', 'C')`: memcheck's requests (memcheck.h).
const MEMCHECK_BASE: u64 = ((b'M' as u64) << 24) | ((b'C' as u64) << 16);
/// `VG_USERREQ__MAKE_MEM_UNDEFINED`.
const MAKE_MEM_UNDEFINED: u64 = MEMCHECK_BASE + 1;
/// `VG_USERREQ__MAKE_MEM_DEFINED`.
const MAKE_MEM_DEFINED: u64 = MEMCHECK_BASE + 2;
/// `VG_USERREQ__GET_VBITS`.
const GET_VBITS: u64 = MEMCHECK_BASE + 8;

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn request(default: u64, args: [u64; 6]) -> u64 {
    let result: u64;
    // SAFETY: the sequence only rotates `rdi` by a multiple of 64 bits (it
    // ends unchanged) and exchanges `rbx` with itself, so outside valgrind
    // no register or memory changes but `rdx`, declared as an output.
    // Under valgrind the request reads the six words at `rax` (kept alive
    // by the borrow) and may change memcheck's shadow state of the memory
    // an argument names, which the caller owns; the asm is not `nomem`, so
    // the compiler stores values before it and reloads them after it.
    unsafe {
        core::arch::asm!(
            "rol rdi, 3",
            "rol rdi, 13",
            "rol rdi, 61",
            "rol rdi, 51",
            "xchg rbx, rbx",
            in("rax") args.as_ptr(),
            inout("rdx") default => result,
            options(nostack, preserves_flags),
        );
    }
    result
}

#[cfg(not(target_arch = "x86_64"))]
fn request(default: u64, _args: [u64; 6]) -> u64 {
    default
}

/// Whether the program runs under valgrind (0 outside it).
pub fn running_on_valgrind() -> bool {
    request(0, [RUNNING_ON_VALGRIND, 0, 0, 0, 0, 0]) != 0
}

/// Errors valgrind has reported so far (0 outside it).
pub fn error_count() -> u64 {
    request(0, [COUNT_ERRORS, 0, 0, 0, 0, 0])
}

/// Marks `bytes` as secret: memcheck then reports any branch or memory
/// address that depends on them (or on anything computed from them).
pub fn secret(bytes: &mut [u8]) {
    let args = [
        MAKE_MEM_UNDEFINED,
        bytes.as_mut_ptr() as u64,
        bytes.len() as u64,
        0,
        0,
        0,
    ];
    request(0, args);
}

/// Marks `bytes` as public again.
pub fn public(bytes: &mut [u8]) {
    let args = [
        MAKE_MEM_DEFINED,
        bytes.as_mut_ptr() as u64,
        bytes.len() as u64,
        0,
        0,
        0,
    ];
    request(0, args);
}

/// Declassifies a whole value (a `Result`, a length): the harness's own
/// decisions about an output are not the library's leaks.
pub fn declassify<T>(mut value: T) -> T {
    let args = [
        MAKE_MEM_DEFINED,
        (&raw mut value) as u64,
        size_of::<T>() as u64,
        0,
        0,
        0,
    ];
    request(0, args);
    // The request took the address, so the compiler reloads `value`.
    core::hint::black_box(value)
}

/// How many of `bytes` memcheck considers secret (any bit undefined), or
/// `None` outside valgrind. Reading the shadow bits is not itself a use, so
/// it reports nothing.
pub fn secret_bytes(bytes: &[u8]) -> Option<usize> {
    let mut vbits = vec![0u8; bytes.len()];
    let args = [
        GET_VBITS,
        bytes.as_ptr() as u64,
        vbits.as_mut_ptr() as u64,
        bytes.len() as u64,
        0,
        0,
    ];
    match request(0, args) {
        1 => Some(vbits.iter().filter(|&&v| v != 0).count()),
        _ => None,
    }
}

/// Marks a copy of `bytes` secret and returns it.
pub fn secret_copy(bytes: &[u8]) -> Vec<u8> {
    let mut v = bytes.to_vec();
    secret(&mut v);
    v
}
