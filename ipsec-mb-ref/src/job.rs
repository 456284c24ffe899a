//! AES-CBC + HMAC jobs, encrypting or decrypting, and the batch call that
//! runs them.

use std::fmt;
use std::ops::Range;

use crate::Manager;
use crate::error::{Error, Result};
use crate::ffi::JobDesc;
use crate::keys::{AesKey, HmacKey};

/// `IMB_STATUS_COMPLETED`.
const STATUS_COMPLETED: i32 = 3;

/// The order of the two halves of a job (`IMB_CHAIN_ORDER`).
///
/// For a [`Direction::Decrypt`] job the names keep their meaning, so the
/// record shapes swap: [`Order::CipherThenHash`] decrypts and then MACs the
/// plaintext (opening a TLS MAC-then-encrypt record), and
/// [`Order::HashThenCipher`] MACs the ciphertext and then decrypts it
/// (opening an encrypt-then-MAC record or an ESP packet).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Order {
    /// Encrypt, then MAC (`IMB_ORDER_CIPHER_HASH`): the hash region is read
    /// after encryption, so where it covers the cipher region it MACs the
    /// ciphertext (the ESP and encrypt-then-MAC shape). Decrypting: the
    /// hash region is read after decryption, so it MACs the plaintext.
    CipherThenHash,
    /// MAC, then encrypt (`IMB_ORDER_HASH_CIPHER`): the hash region is read
    /// before encryption. With the tag placed inside the cipher region
    /// ([`CbcHmacJob::with_tag_at`]) the tag is encrypted too: the TLS
    /// MAC-then-encrypt shape, given a buffer laid out as `header(13) ||
    /// plaintext || tag || padding` by the caller. Decrypting: the hash
    /// region is read before decryption, so it MACs the ciphertext.
    HashThenCipher,
}

/// Which way the cipher half of a job runs (`IMB_CIPHER_DIRECTION`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    /// `IMB_DIR_ENCRYPT`: sealing.
    Encrypt,
    /// `IMB_DIR_DECRYPT`: the cipher half of an open, and no more. The job
    /// decrypts and computes a tag over the region it is given (a public
    /// range the caller picks); it checks no padding, compares no MAC, and
    /// nothing in it runs in constant time with respect to a record's
    /// padding or plaintext length. The caller compares the tag.
    Decrypt,
}

/// One AES-CBC encryption (or decryption: [`CbcHmacJob::new_decrypt`]) +
/// HMAC job over `buf`, in place: `buf[cipher]` is CBC-encrypted (or
/// decrypted) under `aes` from `iv`, and `buf[hash]` is MAC'd under
/// `hmac`, in the order `order` says. The tag (the full digest: 20, 32 or
/// 48 bytes) goes to [`CbcHmacJob::tag`], or into `buf` at the offset given
/// to [`CbcHmacJob::with_tag_at`].
///
/// After [`Manager::cbc_hmac_batch`], `result` says how the job ended.
///
/// A decrypt job is not a record open: it checks no padding, verifies no
/// MAC (it only computes one) and is not constant-time with respect to
/// secret lengths ([`Direction::Decrypt`]).
pub struct CbcHmacJob<'a> {
    /// The expanded AES key.
    pub aes: &'a AesKey,
    /// The HMAC states.
    pub hmac: &'a HmacKey,
    /// The CBC IV.
    pub iv: [u8; 16],
    /// The buffer both halves work on.
    pub buf: &'a mut [u8],
    /// The bytes to encrypt: whole 16-byte blocks.
    pub cipher: Range<usize>,
    /// The bytes to MAC.
    pub hash: Range<usize>,
    /// Which half runs first.
    pub order: Order,
    /// Whether the cipher half encrypts or decrypts.
    pub direction: Direction,
    /// `Some(offset)`: the tag is written to `buf[offset..][..tag_len]`
    /// (outside `hash`; for [`Order::CipherThenHash`] outside `cipher`
    /// too). `None`: to [`CbcHmacJob::tag`].
    pub tag_at: Option<usize>,
    tag: [u8; 48],
    /// How the job ended; [`Error::NotReturned`] until it has run.
    pub result: Result<()>,
}

impl<'a> CbcHmacJob<'a> {
    /// A job with its tag going to [`CbcHmacJob::tag`].
    pub fn new(
        aes: &'a AesKey,
        hmac: &'a HmacKey,
        iv: [u8; 16],
        buf: &'a mut [u8],
        cipher: Range<usize>,
        hash: Range<usize>,
        order: Order,
    ) -> Self {
        CbcHmacJob {
            aes,
            hmac,
            iv,
            buf,
            cipher,
            hash,
            order,
            direction: Direction::Encrypt,
            tag_at: None,
            tag: [0; 48],
            result: Err(Error::NotReturned),
        }
    }

    /// A decrypt job (`IMB_DIR_DECRYPT`) with its tag going to
    /// [`CbcHmacJob::tag`]: `buf[cipher]` is CBC-decrypted in place and
    /// `buf[hash]` MAC'd, before decryption for [`Order::HashThenCipher`]
    /// (encrypt-then-MAC: the MAC of the ciphertext) or after it for
    /// [`Order::CipherThenHash`] (TLS MAC-then-encrypt: the MAC of `header
    /// || plaintext`, once the caller has written the 13-byte MAC header
    /// just before the ciphertext, for example over the explicit IV it
    /// copied into `iv`, and chosen the plaintext length, a public value
    /// here). No padding is checked and no tag compared, and nothing runs
    /// in constant time: see [`Direction::Decrypt`].
    pub fn new_decrypt(
        aes: &'a AesKey,
        hmac: &'a HmacKey,
        iv: [u8; 16],
        buf: &'a mut [u8],
        cipher: Range<usize>,
        hash: Range<usize>,
        order: Order,
    ) -> Self {
        CbcHmacJob {
            direction: Direction::Decrypt,
            ..CbcHmacJob::new(aes, hmac, iv, buf, cipher, hash, order)
        }
    }

    /// The same job with its tag written into `buf` at `offset`.
    pub fn with_tag_at(mut self, offset: usize) -> Self {
        self.tag_at = Some(offset);
        self
    }

    /// The tag, when it does not go into `buf` (empty otherwise); valid
    /// once `result` is `Ok`.
    pub fn tag(&self) -> &[u8] {
        match self.tag_at {
            None => &self.tag[..self.hmac.tag_len()],
            Some(_) => &[],
        }
    }

    /// Checks the regions against the buffer and each other (public values
    /// only).
    fn check(&self) -> Result<()> {
        let len = self.buf.len();
        let within = |r: &Range<usize>| r.start <= r.end && r.end <= len;
        if !within(&self.cipher) || !within(&self.hash) {
            return Err(Error::InvalidInput("job region outside its buffer"));
        }
        if !self.cipher.len().is_multiple_of(16) {
            return Err(Error::InvalidInput("cipher region not whole blocks"));
        }
        if let Some(at) = self.tag_at {
            let tag = at..at.saturating_add(self.hmac.tag_len());
            if !within(&tag) {
                return Err(Error::InvalidInput("tag outside the job's buffer"));
            }
            let overlaps =
                |r: &Range<usize>| !r.is_empty() && tag.start < r.end && r.start < tag.end;
            if overlaps(&self.hash) {
                return Err(Error::InvalidInput("tag overlaps the hash region"));
            }
            if self.order == Order::CipherThenHash && overlaps(&self.cipher) {
                return Err(Error::InvalidInput(
                    "tag overlaps the cipher region of a cipher-then-hash job",
                ));
            }
            if self.direction == Direction::Decrypt && overlaps(&self.cipher) {
                return Err(Error::InvalidInput(
                    "tag overlaps the cipher region of a decrypt job",
                ));
            }
        }
        if ![16, 24, 32].contains(&self.aes.key_len()) {
            return Err(Error::InvalidInput("AES keys are 16, 24 or 32 bytes"));
        }
        Ok(())
    }

    /// The shim's description of the job, pointing into `self`.
    fn desc(&mut self, index: usize) -> JobDesc {
        let buf = self.buf.as_mut_ptr();
        let tag = match self.tag_at {
            // In bounds: checked by `check`.
            Some(at) => buf.wrapping_add(at),
            None => self.tag.as_mut_ptr(),
        };
        JobDesc {
            enc_keys: self.aes.enc_ptr(),
            dec_keys: self.aes.dec_ptr(),
            ipad: self.hmac.ipad_ptr(),
            opad: self.hmac.opad_ptr(),
            iv: self.iv.as_ptr(),
            buf,
            tag,
            key_len: self.aes.key_len() as u64,
            cipher_offset: self.cipher.start as u64,
            cipher_len: self.cipher.len() as u64,
            hash_offset: self.hash.start as u64,
            hash_len: self.hash.len() as u64,
            tag_len: self.hmac.tag_len() as u64,
            user: index as u64,
            hash: self.hmac.hash().code(),
            hash_first: u32::from(self.order == Order::HashThenCipher),
            decrypt: u32::from(self.direction == Direction::Decrypt),
        }
    }
}

impl fmt::Debug for CbcHmacJob<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CbcHmacJob")
            .field("buf_len", &self.buf.len())
            .field("cipher", &self.cipher)
            .field("hash", &self.hash)
            .field("order", &self.order)
            .field("direction", &self.direction)
            .field("tag_at", &self.tag_at)
            .field("result", &self.result)
            .finish_non_exhaustive()
    }
}

impl Manager {
    /// Runs `jobs`: submits each valid one (an invalid one gets its error
    /// in `result` and is skipped), then flushes the manager, so that every
    /// job has finished when this returns. Each job's outcome is in its
    /// `result`; the return value is the first failure, if any. Allocates
    /// nothing.
    pub fn cbc_hmac_batch(&mut self, jobs: &mut [CbcHmacJob<'_>]) -> Result<()> {
        for i in 0..jobs.len() {
            jobs[i].result = jobs[i].check().and(Err(Error::NotReturned));
            if jobs[i].result != Err(Error::NotReturned) {
                continue;
            }
            let desc = jobs[i].desc(i);
            // SAFETY: `desc` points into `jobs[i]` (its buffer, IV and tag
            // array) and the keys it borrows, all of which outlive this call
            // and are not touched again until the job comes back: only other
            // jobs' `result` fields are written meanwhile, and the flush
            // below returns every job before this function does. The regions
            // are within `buf` (checked by `check`).
            let done = unsafe { self.raw().submit(&desc) };
            let mut done = match done {
                Ok(done) => done,
                Err(e) => {
                    jobs[i].result = Err(e);
                    None
                }
            };
            // Results are written through the element place alone (no
            // reference to the whole slice), so the pointers of the jobs
            // still in flight stay as they were handed out.
            while let Some(d) = done.take().or_else(|| self.raw().completed()) {
                if let Some(k) = usize::try_from(d.user).ok().filter(|&k| k < jobs.len()) {
                    jobs[k].result = outcome(d.status);
                }
            }
        }
        while let Some(d) = self.raw().flush() {
            if let Some(k) = usize::try_from(d.user).ok().filter(|&k| k < jobs.len()) {
                jobs[k].result = outcome(d.status);
            }
        }
        while let Some(d) = self.raw().completed() {
            if let Some(k) = usize::try_from(d.user).ok().filter(|&k| k < jobs.len()) {
                jobs[k].result = outcome(d.status);
            }
        }
        jobs.iter().find_map(|j| j.result.err()).map_or(Ok(()), Err)
    }
}

/// A job's result from its `IMB_STATUS`.
fn outcome(status: i32) -> Result<()> {
    if status == STATUS_COMPLETED {
        Ok(())
    } else {
        Err(Error::JobFailed { status })
    }
}
