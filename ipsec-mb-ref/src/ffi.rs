//! The C shim's functions (`shim/shim.c`) and the owned manager. The shim
//! keeps the library's macros and its `IMB_JOB` layout on the C side, so
//! nothing here mirrors a struct of the library's; [`JobDesc`] is the
//! shim's own `struct ref_job`.

use std::ffi::{CStr, c_char, c_int, c_void};
use std::ptr::NonNull;

use crate::error::{Error, Result};

/// `struct ref_job` of the shim: one AES-CBC (encrypt or decrypt) + HMAC
/// job, in place over `buf`.
#[repr(C)]
pub(crate) struct JobDesc {
    pub(crate) enc_keys: *const u8,
    pub(crate) dec_keys: *const u8,
    pub(crate) ipad: *const u8,
    pub(crate) opad: *const u8,
    pub(crate) iv: *const u8,
    pub(crate) buf: *mut u8,
    pub(crate) tag: *mut u8,
    pub(crate) key_len: u64,
    pub(crate) cipher_offset: u64,
    pub(crate) cipher_len: u64,
    pub(crate) hash_offset: u64,
    pub(crate) hash_len: u64,
    pub(crate) tag_len: u64,
    pub(crate) user: u64,
    pub(crate) hash: u32,
    pub(crate) hash_first: u32,
    pub(crate) decrypt: u32,
}

/// An opaque `IMB_MGR`.
#[repr(C)]
pub(crate) struct ImbMgr {
    _private: [u8; 0],
}

/// An opaque `IMB_JOB`.
#[repr(C)]
pub(crate) struct ImbJob {
    _private: [u8; 0],
}

unsafe extern "C" {
    fn ref_version() -> *const c_char;
    fn ref_mgr_new(arch: c_int, arch_out: *mut c_int, err: *mut c_int) -> *mut ImbMgr;
    fn ref_mgr_free(m: *mut ImbMgr);
    fn ref_mgr_features(m: *const ImbMgr) -> u64;
    fn ref_strerror(err: c_int) -> *const c_char;
    fn ref_aes_keyexp(
        m: *mut ImbMgr,
        key: *const u8,
        key_len: usize,
        enc: *mut c_void,
        dec: *mut c_void,
    ) -> c_int;
    fn ref_hmac_pads(
        m: *mut ImbMgr,
        hash: c_int,
        key: *const u8,
        key_len: usize,
        ipad: *mut u8,
        opad: *mut u8,
    ) -> c_int;
    fn ref_submit(m: *mut ImbMgr, d: *const JobDesc, err: *mut c_int) -> *mut ImbJob;
    fn ref_get_completed(m: *mut ImbMgr) -> *mut ImbJob;
    fn ref_flush(m: *mut ImbMgr) -> *mut ImbJob;
    fn ref_job_result(job: *const ImbJob, user: *mut u64, status: *mut c_int);
}

/// `imb_get_version_str()`.
pub(crate) fn version() -> &'static str {
    // SAFETY: returns a pointer to a static NUL-terminated string.
    let p = unsafe { ref_version() };
    if p.is_null() {
        return "(unknown)";
    }
    // SAFETY: non-NULL, static, NUL-terminated (above).
    unsafe { CStr::from_ptr(p) }
        .to_str()
        .unwrap_or("(not UTF-8)")
}

/// `imb_get_strerror(err)`.
pub(crate) fn strerror(err: i32) -> &'static str {
    match err {
        -1 => return "no error number",
        // The shim's own (REF_ERR_CPU): checked before the library is asked.
        -2 => return "this CPU lacks the features that manager needs",
        _ => {}
    }
    // SAFETY: takes any integer; returns a static NUL-terminated string or
    // NULL.
    let p = unsafe { ref_strerror(err) };
    if p.is_null() {
        return "unknown error";
    }
    // SAFETY: non-NULL, static, NUL-terminated (above).
    unsafe { CStr::from_ptr(p) }
        .to_str()
        .unwrap_or("(not UTF-8)")
}

/// An owned, initialised `IMB_MGR`.
pub(crate) struct Mgr {
    ptr: NonNull<ImbMgr>,
}

// SAFETY: a manager is plain heap state owned by this value alone; the
// library does not tie it to the creating thread, and every operation takes
// `&mut self`, so it is never used from two threads at once.
unsafe impl Send for Mgr {}

/// The result of one finished job: its index and `IMB_STATUS`.
pub(crate) struct Done {
    pub(crate) user: u64,
    pub(crate) status: i32,
}

impl Mgr {
    /// Allocates and initialises a manager for `arch` (an `IMB_ARCH`
    /// value, 0 for the best this CPU runs); returns it with the `IMB_ARCH`
    /// it runs.
    pub(crate) fn new(arch: i32, what: &'static str) -> Result<(Mgr, i32)> {
        let mut picked: c_int = 0;
        let mut err: c_int = 0;
        // SAFETY: both out-parameters are valid; the shim returns an owned
        // manager or NULL.
        let ptr = unsafe { ref_mgr_new(arch, &mut picked, &mut err) };
        match NonNull::new(ptr) {
            Some(ptr) => Ok((Mgr { ptr }, picked)),
            None => Err(Error::Unavailable { what, errno: err }),
        }
    }

    /// The manager's `features` (`IMB_FEATURE_*` bits).
    pub(crate) fn features(&self) -> u64 {
        // SAFETY: the manager is valid; the shim reads one field.
        unsafe { ref_mgr_features(self.ptr.as_ptr()) }
    }

    /// AES key expansion into two 240-byte, 16-byte-aligned schedules.
    pub(crate) fn aes_keyexp(
        &mut self,
        key: &[u8],
        enc: &mut [u8; 240],
        dec: &mut [u8; 240],
    ) -> Result<()> {
        if ![16, 24, 32].contains(&key.len()) {
            return Err(Error::InvalidInput("AES keys are 16, 24 or 32 bytes"));
        }
        if !(enc.as_ptr() as usize).is_multiple_of(16)
            || !(dec.as_ptr() as usize).is_multiple_of(16)
        {
            return Err(Error::InvalidInput("key schedules must be 16-byte aligned"));
        }
        // SAFETY: the manager is valid; `key` holds `key.len()` (16, 24 or
        // 32) bytes; the schedules are 240 bytes (15 round keys, the most
        // AES-256 needs), 16-byte aligned (checked) and writable.
        let r = unsafe {
            ref_aes_keyexp(
                self.ptr.as_ptr(),
                key.as_ptr(),
                key.len(),
                enc.as_mut_ptr().cast(),
                dec.as_mut_ptr().cast(),
            )
        };
        if r == 0 {
            Ok(())
        } else {
            Err(Error::InvalidInput("AES keys are 16, 24 or 32 bytes"))
        }
    }

    /// The HMAC inner and outer states for `hash` (the shim's code: 1
    /// SHA-1, 2 SHA-256, 3 SHA-384) into 64-byte buffers.
    pub(crate) fn hmac_pads(
        &mut self,
        hash: u32,
        key: &[u8],
        ipad: &mut [u8; 64],
        opad: &mut [u8; 64],
    ) -> Result<()> {
        if !(1..=3).contains(&hash) {
            return Err(Error::InvalidInput("unknown hash"));
        }
        // SAFETY: the manager is valid; `key` is valid for `key.len()`
        // bytes (the shim hashes keys longer than a block first, so reads
        // no more); `ipad` and `opad` are 64 writable bytes, the largest
        // state (SHA-384's eight 64-bit words) the shim writes.
        let r = unsafe {
            ref_hmac_pads(
                self.ptr.as_ptr(),
                hash as c_int,
                key.as_ptr(),
                key.len(),
                ipad.as_mut_ptr(),
                opad.as_mut_ptr(),
            )
        };
        if r == 0 {
            Ok(())
        } else {
            Err(Error::InvalidInput("unknown hash"))
        }
    }

    /// Submits one job.
    ///
    /// # Safety
    /// Every pointer in `d` must stay valid (and the regions it names
    /// unaliased by anything else) until the job comes back from
    /// [`Mgr::submit`], [`Mgr::completed`] or [`Mgr::flush`]: `buf` for
    /// `max(cipher_offset + cipher_len, hash_offset + hash_len)` bytes of
    /// reads and writes, `tag` for `tag_len` writable bytes, `iv` for 16
    /// bytes, the key schedules and states as [`Mgr::aes_keyexp`] and
    /// [`Mgr::hmac_pads`] wrote them.
    pub(crate) unsafe fn submit(&mut self, d: &JobDesc) -> Result<Option<Done>> {
        let mut err: c_int = 0;
        // SAFETY: the manager is valid; `d` is a valid `struct ref_job`
        // whose pointers the caller keeps valid (this function's contract);
        // `err` is a valid out-parameter.
        let job = unsafe { ref_submit(self.ptr.as_ptr(), d, &mut err) };
        if err != 0 {
            return Err(Error::NotReturned);
        }
        Ok(Self::result(job))
    }

    /// The next completed job, if any, without waiting for more.
    pub(crate) fn completed(&mut self) -> Option<Done> {
        // SAFETY: the manager is valid.
        let job = unsafe { ref_get_completed(self.ptr.as_ptr()) };
        Self::result(job)
    }

    /// Finishes the oldest job in flight; `None` once none is left.
    pub(crate) fn flush(&mut self) -> Option<Done> {
        // SAFETY: the manager is valid.
        let job = unsafe { ref_flush(self.ptr.as_ptr()) };
        Self::result(job)
    }

    fn result(job: *mut ImbJob) -> Option<Done> {
        if job.is_null() {
            return None;
        }
        let mut user = 0u64;
        let mut status: c_int = 0;
        // SAFETY: `job` is a job the manager just returned (non-NULL): it
        // stays valid until the next call into the manager; both
        // out-parameters are valid.
        unsafe { ref_job_result(job, &mut user, &mut status) };
        Some(Done { user, status })
    }
}

impl Drop for Mgr {
    fn drop(&mut self) {
        // SAFETY: the manager is owned by this value and freed exactly once;
        // no job is in flight (every batch is flushed before it returns).
        unsafe { ref_mgr_free(self.ptr.as_ptr()) }
    }
}
