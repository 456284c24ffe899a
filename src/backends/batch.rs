//! Many records at once, format-free: the engine that runs a window of
//! independent seal jobs in the lanes of the multi-lane kernels.
//!
//! A job is what the single-record seal takes (keys, the 13-byte MAC
//! prefix, the IV, the buffer and the plaintext length); the format layer
//! above builds them and groups them by kind (cipher, MAC, order). Where
//! the kernels exist (the `vaes512-shani` backend) a window runs in two
//! phases, each across the lanes:
//!
//! - MAC-then-encrypt: HMAC of every job (16 lanes of SHA-1/SHA-256, 8 of
//!   SHA-512), then padding, then CBC encryption of every job (16 VAES
//!   lanes). Eight or fewer SHA-1 jobs run both in one loop instead
//!   (`sha1_cbc_x8`: the AES rounds of a few CBC chains between the hash
//!   rounds), which hides the chains' latency, and where `cpu::Tuning`
//!   says so, six or fewer SHA-256 jobs, and four or fewer SHA-1 jobs,
//!   run two at a time in such a loop over two SHA-NI streams (`ni_cbc`);
//!   the CBC of the last bytes, tag and padding follows the HMAC.
//! - Encrypt-then-MAC: padding, CBC encryption, then the HMAC of every
//!   job's IV and ciphertext.
//!
//! A window holds at most 16 records of 16 KiB, so its data stays in the
//! L2 cache between the two phases. Lanes whose records end are retired;
//! once only a few are left, the rest of their hashing runs two streams at
//! a time on SHA-NI (one stream for an odd last one, or for SHA-384),
//! which is faster for so few. Windows too small for the sixteen-lane
//! kernels take lanes only where `cpu::Tuning` says the two-stream hashing
//! beats the stitched single-record seal.
//!
//! On the `aesni-shani` backend (SHA-NI without AVX-512) the same CPUs
//! give windows of enough long records lanes too: the hashing two SHA-NI
//! streams at a time (eight AVX2 lanes for SHA-1 where `cpu::Tuning` says
//! so), the CBC encryption in eight AES-NI lanes at a time. Where
//! `cpu::Tuning` says so, MAC-then-encrypt SHA-1 and SHA-256 windows run
//! two lanes at a time in `ni_cbc`'s loop with AES-NI chains instead, up
//! to a whole window. Elsewhere, and for a window of one, every job runs
//! the single-record seal.

use crate::HmacKey;
use crate::backends::{AesKey, Backend, pad, seal_encrypt_then_mac, seal_mac_then_encrypt};
use crate::primitives::ct_digest::finish_with_secret_len;
use crate::primitives::hash::{Compress, Engine, HashFunction, Sha1, Sha256, Sha384};
use crate::primitives::hmac::{AnyStates, HmacStates};

/// Jobs per window: the lanes of the widest kernel.
pub(crate) const WINDOW: usize = 16;

/// Fewer jobs than this never share lanes (no hash's lane kernel pays below
/// three busy lanes), so callers seal or open them one by one, without a
/// window.
pub(crate) const FEWEST_LANES: usize = 3;

/// The same for sealing, where two MAC-then-encrypt SHA-1 or SHA-256
/// records may run hash and CBC chains in one loop
/// (`Tuning::stitched_ni_pairs`);
/// [`seal_may_pay`] turns away the windows that would not.
pub(crate) const FEWEST_SEAL_LANES: usize = 2;

/// Which comes first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Order {
    /// Hash the prefix and plaintext, then encrypt plaintext, tag and
    /// padding (TLS MAC-then-encrypt).
    HashThenCipher,
    /// Encrypt plaintext and padding, then hash the prefix, IV and
    /// ciphertext (encrypt-then-MAC).
    CipherThenHash,
}

/// One record's seal, as [`seal_mac_then_encrypt`] or
/// [`seal_encrypt_then_mac`] take it, lengths already checked.
pub(crate) struct SealLane<'a> {
    pub(crate) aes: &'a AesKey,
    pub(crate) mac: &'a HmacKey,
    pub(crate) header: [u8; 13],
    /// In: the CBC IV. Out: the last ciphertext block.
    pub(crate) iv: [u8; 16],
    pub(crate) order: Order,
    /// `HashThenCipher`: the body (whole blocks, plaintext in front).
    /// `CipherThenHash`: `iv_len` bytes of explicit IV, the body, then
    /// room for the tag, sized exactly.
    pub(crate) buf: &'a mut [u8],
    pub(crate) iv_len: usize,
    pub(crate) plaintext_len: usize,
}

impl SealLane<'_> {
    /// The single-record seal.
    pub(crate) fn seal_one(&mut self) {
        match self.order {
            Order::HashThenCipher => seal_mac_then_encrypt(
                self.aes,
                self.mac,
                &self.header,
                &mut self.iv,
                self.buf,
                self.plaintext_len,
            ),
            Order::CipherThenHash => seal_encrypt_then_mac(
                self.aes,
                self.mac,
                &self.header,
                &mut self.iv,
                self.buf,
                self.iv_len,
                self.plaintext_len,
            ),
        }
    }

    /// The region CBC encrypts.
    fn body_range(&self) -> core::ops::Range<usize> {
        match self.order {
            Order::HashThenCipher => 0..self.buf.len(),
            Order::CipherThenHash => self.iv_len..self.buf.len() - self.mac.output_len(),
        }
    }
}

/// A window of jobs; `None` entries are skipped.
pub(crate) type Window<'a> = [Option<SealLane<'a>>; WINDOW];

/// Whether `count` jobs of one kind (keys `aes` and `mac`, MAC order
/// `order`), the shortest with `shortest` bytes of plaintext, would run in
/// lanes: when not, the caller seals them one by one without building a
/// window. Public counts and lengths only.
pub(crate) fn seal_may_pay(
    aes: &AesKey,
    mac: &HmacKey,
    order: Order,
    count: usize,
    shortest: usize,
) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        lanes::seal_pays(aes, mac, order, count, shortest)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (aes, mac, order, count, shortest);
        false
    }
}

/// Seals every job of `window`. Jobs of one kind (cipher, MAC algorithm,
/// order) share lanes; the format layer groups them so.
pub(crate) fn seal(window: &mut Window<'_>) {
    #[cfg(target_arch = "x86_64")]
    if lanes::seal(window) {
        return;
    }
    for lane in window.iter_mut().flatten() {
        lane.seal_one();
    }
}

/// The message one job hashes after the HMAC key block: the 13-byte
/// prefix, then `data`. With a tag buffer the HMAC is finished into it;
/// without one the hash stops after the message and `engine` receives the
/// state and the bytes left over (the constant-time open finishes it over
/// a secret length).
pub(crate) struct HashJob<'a, H: HashFunction> {
    pub(crate) states: &'a HmacStates<H>,
    pub(crate) prefix: [u8; 13],
    pub(crate) data: &'a [u8],
    pub(crate) tag: Option<&'a mut [u8]>,
    pub(crate) engine: Option<Engine<H>>,
}

impl<'a, H: HashFunction> HashJob<'a, H> {
    /// The job, as one stream.
    fn run_one(&mut self, c: &impl Compress<H>) {
        let mut e = self.states.inner_engine();
        e.update(c, &self.prefix);
        e.update(c, self.data);
        match self.tag.as_deref_mut() {
            Some(tag) => {
                let inner = e.finish(c);
                self.states.finish_outer(c, &inner, tag);
            }
            None => self.engine = Some(e),
        }
    }
}

/// The last step of a MAC-then-encrypt open, for one record: the inner
/// hash, held by `engine`, finished over `data[..len]` for a secret `len`
/// (as `ct_digest::finish_with_secret_len` does), then the outer hash,
/// into `tag`.
pub(crate) struct SecretTailJob<'a, H: HashFunction> {
    pub(crate) states: &'a HmacStates<H>,
    pub(crate) engine: &'a Engine<H>,
    pub(crate) data: &'a [u8],
    pub(crate) len: usize,
    pub(crate) tag: &'a mut [u8],
}

impl<H: HashFunction> SecretTailJob<'_, H> {
    /// The job, as one stream.
    fn run_one(&mut self, c: &impl Compress<H>) {
        let inner = finish_with_secret_len(c, self.engine, self.data, self.len);
        self.states.finish_outer(c, &inner, self.tag);
    }
}

/// Whether `window[d..]` starts with `expected` (`d` secret), as a mask,
/// where `backend` has a vector kernel for the MAC shifter of a
/// MAC-then-encrypt open (`record::ct_open::mac_matches`); `None` where
/// it has not. Memory accesses depend only on the lengths.
pub(crate) fn mac_at(backend: Backend, window: &[u8], d: usize, expected: &[u8]) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    if backend == Backend::Vaes512ShaNi
        && let Some(t) = crate::backends::x86_64::Vaes512::detect()
    {
        return Some(crate::backends::x86_64::mac_window::matches(
            t, window, d, expected,
        ));
    }
    let _ = (backend, window, d, expected);
    None
}

/// The padding check's byte comparison (`record::ct_open::padding_diff`)
/// where `backend` has a vector kernel for it; `None` where it has not.
pub(crate) fn padding_diff_at(backend: Backend, tail: &[u8], first: u8, pad: u8) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    if backend == Backend::Vaes512ShaNi
        && let Some(t) = crate::backends::x86_64::Vaes512::detect()
    {
        return Some(crate::backends::x86_64::padding::diff(t, tail, first, pad));
    }
    let _ = (backend, tail, first, pad);
    None
}

/// The hashes the batch engine runs: SHA-1, SHA-256 and SHA-384.
pub(crate) trait BatchHash: HashFunction + Sized {
    /// Whether `jobs` jobs, the shortest of them `shortest` bytes, run
    /// faster in the lanes of `backend` than one stream per job (`false`
    /// where the backend, or this CPU, has no lane kernels).
    fn lanes_pay(backend: Backend, jobs: usize, shortest: usize) -> bool;

    /// The HMAC states of `s`, if they are of this hash.
    fn states(s: &AnyStates) -> Option<&HmacStates<Self>>;

    /// Runs every job's hash: in lanes where `backend` has them, else one
    /// stream per job on `single`. The work depends only on the jobs'
    /// lengths.
    fn hash_jobs(
        backend: Backend,
        jobs: &mut [Option<HashJob<'_, Self>>],
        single: &impl Compress<Self>,
    );

    /// Runs every job's secret-length finish: the same blocks of every
    /// job through the lanes where `backend` has them, else one stream per
    /// job. The work depends only on the jobs' public lengths.
    fn finish_secret_len(
        backend: Backend,
        jobs: &mut [Option<SecretTailJob<'_, Self>>],
        single: &impl Compress<Self>,
    );
}

macro_rules! batch_hash {
    ($h:ty, $variant:ident) => {
        impl BatchHash for $h {
            fn lanes_pay(backend: Backend, jobs: usize, shortest: usize) -> bool {
                #[cfg(target_arch = "x86_64")]
                if backend == Backend::Vaes512ShaNi
                    && crate::backends::x86_64::Vaes512::detect().is_some()
                {
                    return <$h as lanes::LaneHash>::lanes_beat_single(jobs, shortest);
                }
                #[cfg(target_arch = "x86_64")]
                if backend == Backend::AesNiShaNi {
                    return <$h as lanes::LaneHash>::open_pairs_beat_single(jobs, shortest)
                        || <$h as lanes::LaneHash>::avx2_beat_single(jobs, shortest, true);
                }
                let _ = (backend, jobs, shortest);
                false
            }

            fn states(s: &AnyStates) -> Option<&HmacStates<Self>> {
                match s {
                    AnyStates::$variant(s) => Some(s),
                    _ => None,
                }
            }

            fn hash_jobs(
                backend: Backend,
                jobs: &mut [Option<HashJob<'_, Self>>],
                single: &impl Compress<Self>,
            ) {
                #[cfg(target_arch = "x86_64")]
                if backend == Backend::Vaes512ShaNi
                    && let Some(t) = crate::backends::x86_64::Vaes512::detect()
                {
                    return lanes::hash_jobs(Some(t), jobs, single);
                }
                // SHA-NI without AVX-512: two streams at a time.
                #[cfg(target_arch = "x86_64")]
                if backend == Backend::AesNiShaNi {
                    return lanes::hash_jobs(None, jobs, single);
                }
                let _ = backend;
                for job in jobs.iter_mut().flatten() {
                    job.run_one(single);
                }
            }

            fn finish_secret_len(
                backend: Backend,
                jobs: &mut [Option<SecretTailJob<'_, Self>>],
                single: &impl Compress<Self>,
            ) {
                #[cfg(target_arch = "x86_64")]
                if backend == Backend::Vaes512ShaNi
                    && let Some(t) = crate::backends::x86_64::Vaes512::detect()
                {
                    return lanes::finish_secret_len(lanes::TailLanes::Vaes(t), jobs);
                }
                // Without AVX-512: in the AVX2 lanes or SHA-NI pairs where
                // they finish a few records faster than one stream each.
                #[cfg(target_arch = "x86_64")]
                if backend == Backend::AesNiShaNi
                    && let Some(kernel) = lanes::TailLanes::without_avx512::<$h>()
                {
                    return lanes::finish_secret_len(kernel, jobs);
                }
                let _ = backend;
                for job in jobs.iter_mut().flatten() {
                    job.run_one(single);
                }
            }
        }
    };
}
batch_hash!(Sha1, Sha1);
batch_hash!(Sha256, Sha256);
batch_hash!(Sha384, Sha384);

#[cfg(target_arch = "x86_64")]
mod lanes {
    use super::{BatchHash, HashJob, HmacKey, Order, SealLane, SecretTailJob, WINDOW, Window, pad};
    use crate::backends::cpu::Tuning;
    use crate::backends::portable::CrateCompress;
    use crate::backends::x86_64::aes::{AesNiKey, Schedule};
    use crate::backends::x86_64::lanes::{
        Cbc, cbc_aesni_x8, cbc_x16, ni_cbc, secret_tail, sha_ni_x2, sha_x8, sha1_avx2_x8,
        sha1_cbc_x8, sha1_x16, sha256_x16, sha512_avx2_x4, sha512_x8,
    };
    use crate::backends::x86_64::sha::ShaNiCompress;
    use crate::backends::x86_64::sha_avx2::Avx2Compress;
    use crate::backends::x86_64::vaes::VaesKey;
    use crate::backends::x86_64::{Avx2, ShaNi, Vaes512};
    use crate::backends::{AesKey, Compressor, with_compressor};
    use crate::primitives::ct_digest::SecretLenPlan;
    use crate::primitives::hash::{Compress, Engine, HashFunction, Sha1, Sha256, Sha384};
    use crate::primitives::hmac::AnyStates;
    use secret_tail::Ends;

    /// Whether `count` jobs of one kind (keys of `aes` and `mac`, MAC
    /// order `order`), the shortest with `shortest` bytes of plaintext,
    /// would run in lanes (`seal` decides the same way).
    pub(super) fn seal_pays(
        aes: &AesKey,
        mac: &HmacKey,
        order: Order,
        count: usize,
        shortest: usize,
    ) -> bool {
        // Two jobs only pair up, and only from `TWO_JOBS_FROM` on: shorter
        // pairs are answered before the kind and the tuning are looked at
        // (some 5 ns of a call of two records of 1 to 64 bytes).
        if count < super::FEWEST_LANES && shortest < TWO_JOBS_FROM {
            return false;
        }
        Kind::from_parts(aes, mac, order).is_some_and(|k| decide(k, count, shortest).0)
    }

    /// Whether a window of `count` jobs of `kind` runs in lanes, and
    /// whether in a stitched loop. Public counts and lengths only.
    fn decide(kind: Kind, count: usize, shortest: usize) -> (bool, bool) {
        // Below the hash's crossover the lanes would hash one or two
        // streams at a time anyway, before the encryption instead of beside
        // it: the stitched single-record seal is faster, except where two
        // SHA-NI streams nearly double the hash's speed (`Tuning`).
        let pays = match (kind.mac, kind.lanes) {
            (1, Cbc::Vaes(_)) => <Sha1 as LaneHash>::lanes_beat_single(count, shortest),
            (2, Cbc::Vaes(_)) => <Sha256 as LaneHash>::lanes_beat_single(count, shortest),
            (_, Cbc::Vaes(_)) => <Sha384 as LaneHash>::lanes_beat_single(count, shortest),
            (1, Cbc::AesNi(_)) => <Sha1 as LaneHash>::pairs_beat_single(count, shortest),
            (2, Cbc::AesNi(_)) => <Sha256 as LaneHash>::pairs_beat_single(count, shortest),
            (_, Cbc::AesNi(_)) => <Sha384 as LaneHash>::avx2_beat_single(count, shortest, false),
        };
        // Few SHA-1 records sealed MAC-then-encrypt run hash and CBC in one
        // loop (`seal_stitched`), which pays from fewer of them. Only
        // where it was measured (`Tuning::stitched_sha1`) or where the
        // eight-lane hash would run anyway: elsewhere small windows hash
        // two SHA-NI streams at a time instead. Where it was measured to
        // pay (`Tuning::stitched_ni_pairs`), SHA-256 windows that would
        // hash two SHA-NI streams at a time, and SHA-1 windows of a few
        // records, run their CBC chains in the loop of two SHA-NI streams,
        // two lanes at a time.
        let tuning = Tuning::get();
        let early = tuning.stitched_sha1;
        let mte = kind.order == Order::HashThenCipher;
        let vaes = matches!(kind.lanes, Cbc::Vaes(_));
        let sized = |sizes: &[(usize, usize)]| {
            sizes
                .iter()
                .any(|&(j, bytes)| count >= j && shortest >= bytes)
        };
        match kind.mac {
            1 => {
                let pairs = mte
                    && sha1_pairs_pay(kind.lanes, count, ((13 + shortest) / 64).saturating_sub(1))
                    && <Sha1 as Stitched>::features(kind.lanes).is_some_and(|ni| ni.is_some());
                let stitched = mte
                    && vaes
                    && count <= <Sha1 as Stitched>::max(kind.lanes)
                    && (early || count >= <Sha1 as LaneHash>::MIN_BUSY);
                (
                    pays || pairs || (stitched && early && sized(&STITCHED_SHA1)),
                    stitched || pairs,
                )
            }
            2 => {
                let sizes = match kind.lanes {
                    Cbc::Vaes(_) => &STITCHED_SHA256[..],
                    Cbc::AesNi(_) => &STITCHED_SHA256_AES_NI[..],
                };
                let stitched = mte
                    && tuning.stitched_ni_pairs
                    && count <= <Sha256 as Stitched>::max(kind.lanes)
                    && sized(sizes)
                    && <Sha256 as Stitched>::features(kind.lanes).is_some();
                (pays || stitched, stitched)
            }
            _ => (pays, false),
        }
    }

    /// Runs the window in lanes if its jobs allow it; `false` if not (the
    /// caller then seals one by one).
    pub(super) fn seal(window: &mut Window<'_>) -> bool {
        let mut jobs = window.iter().flatten();
        let Some(first) = jobs.next() else {
            return true;
        };
        let kind = Kind::of(first);
        let count = 1 + jobs.filter(|j| Kind::of(j) == kind).count();
        let Some(kind) = kind else {
            return false;
        };
        let shortest = window
            .iter()
            .flatten()
            .map(|j| j.plaintext_len)
            .min()
            .unwrap_or(0);
        let (pays, stitched) = decide(kind, count, shortest);
        if count != window.iter().flatten().count() || !pays {
            return false;
        }
        // The sixteen-lane hash kernels with the VAES lanes; without
        // AVX-512, two SHA-NI streams at a time.
        let x16 = match kind.lanes {
            Cbc::Vaes(t) => Some(t),
            Cbc::AesNi(_) => None,
        };
        let order = first.order;
        if stitched {
            let cbc = kind.lanes;
            let sealed = match (kind.mac, aes_ni_key(first.aes)) {
                (1, AesNiKey::Aes128(..)) => seal_stitched::<Sha1, 11>(cbc, window),
                (1, AesNiKey::Aes256(..)) => seal_stitched::<Sha1, 15>(cbc, window),
                (_, AesNiKey::Aes128(..)) => seal_stitched::<Sha256, 11>(cbc, window),
                (_, AesNiKey::Aes256(..)) => seal_stitched::<Sha256, 15>(cbc, window),
            };
            if sealed {
                return true;
            }
        }
        let none = [0; WINDOW];
        if order == Order::CipherThenHash {
            pad_all(window);
            encrypt_all(kind.lanes, window, &none);
        }
        hash_all(x16, window);
        if order == Order::HashThenCipher {
            pad_all(window);
            encrypt_all(kind.lanes, window, &none);
        }
        true
    }

    /// A hash whose MAC-then-encrypt lanes run hash and CBC in one loop:
    /// SHA-1 in eight vector lanes (`sha1_cbc_x8`) or, for a few lanes
    /// where `Tuning::stitched_ni_pairs` holds, two SHA-NI streams at a
    /// time (`ni_cbc`), as SHA-256 always is.
    trait Stitched: LaneHash<State: Copy> {
        /// The most jobs a window on `cbc`'s chains may hold.
        fn max(cbc: Cbc) -> usize;

        /// What the loop needs beyond its CBC kernel.
        type Features: Copy;

        /// Those features, if this CPU has them and the loop runs beside
        /// `cbc`'s chains here.
        fn features(cbc: Cbc) -> Option<Self::Features>;

        /// Hashes the first block of each lane below `headed` (`heads`).
        fn first_blocks(
            cbc: Cbc,
            f: Self::Features,
            states: &mut [Self::State; WINDOW],
            heads: &[[u8; 64]; WINDOW],
            headed: usize,
        );

        /// Hashes and encrypts the `middle[lane]` whole blocks after each
        /// lane's first (lanes longest first), hashed from `64 - 13` bytes
        /// into the plaintext and encrypted from its start; returns how
        /// many blocks of each lane it ran (the rest is left to the
        /// caller).
        fn middle<const N: usize>(
            cbc: Cbc,
            f: Self::Features,
            states: &mut [Self::State; WINDOW],
            keys: &cbc_x16::LaneKeys<N>,
            ivs: &mut [[u8; 16]; WINDOW],
            bufs: &mut [&mut [u8]; WINDOW],
            middle: &[usize; WINDOW],
        ) -> [usize; WINDOW];
    }

    impl Stitched for Sha1 {
        /// The eight-lane loop's lanes; with AES-NI chains, which run
        /// two lanes at a time, a whole window.
        fn max(cbc: Cbc) -> usize {
            match cbc {
                Cbc::Vaes(_) => sha1_cbc_x8::LANES,
                Cbc::AesNi(_) => WINDOW,
            }
        }

        /// SHA-NI where the pairs loop pays (`Tuning::stitched_ni_pairs`),
        /// which the AES-NI chains need: they run only there.
        type Features = Option<ShaNi>;

        fn features(cbc: Cbc) -> Option<Option<ShaNi>> {
            let ni = ShaNi::detect().filter(|_| Tuning::get().stitched_ni_pairs);
            match cbc {
                Cbc::Vaes(_) => Some(ni),
                Cbc::AesNi(_) => ni.map(Some),
            }
        }

        fn first_blocks(
            cbc: Cbc,
            ni: Option<ShaNi>,
            states: &mut [[u32; 5]; WINDOW],
            heads: &[[u8; 64]; WINDOW],
            headed: usize,
        ) {
            // One pair of SHA-NI streams costs less than eight lanes.
            let t = match (cbc, ni) {
                (Cbc::Vaes(t), None) => t,
                (Cbc::Vaes(t), Some(_)) if headed > 2 => t,
                (_, Some(ni)) => return first_blocks_pairs::<Sha1>(ni, states, heads, headed),
                (Cbc::AesNi(_), None) => unreachable!("`features` holds SHA-NI here"),
            };
            const L: usize = sha1_cbc_x8::LANES;
            // The lanes past `headed` hash a copy of the first, thrown away.
            let mut s: [[u32; 5]; L] = core::array::from_fn(|l| states[l]);
            let data: [&[u8]; L] = core::array::from_fn(|l| heads[l.min(headed - 1)].as_slice());
            sha_x8::sha1_x8(t, &mut s, &data, 1);
            states[..headed].copy_from_slice(&s[..headed]);
        }

        fn middle<const N: usize>(
            cbc: Cbc,
            ni: Option<ShaNi>,
            states: &mut [[u32; 5]; WINDOW],
            keys: &cbc_x16::LaneKeys<N>,
            ivs: &mut [[u8; 16]; WINDOW],
            bufs: &mut [&mut [u8]; WINDOW],
            middle: &[usize; WINDOW],
        ) -> [usize; WINDOW] {
            const L: usize = sha1_cbc_x8::LANES;
            let b = <Sha1 as HashFunction>::BLOCK_LEN;
            let mut active = middle.iter().filter(|&&m| m > 0).count();
            if let Some(ni) = ni
                && sha1_pairs_pay(cbc, active, middle[active.max(1) - 1])
            {
                let ahead = matches!(cbc, Cbc::Vaes(_));
                return middle_pairs::<Sha1, N>(cbc, ni, states, keys, ivs, bufs, middle, ahead);
            }
            // The AES-NI chains run only in pairs; `run_group` and
            // `encrypt_all` do the rest.
            let Cbc::Vaes(t) = cbc else {
                return [0; WINDOW];
            };
            let mut s: [[u32; 5]; L] = core::array::from_fn(|l| states[l]);
            let mut done = 0;
            // Down to one lane the loop is slower than that lane's hash
            // on SHA-NI followed by its encryption: the last one is left
            // to `run_group` and `encrypt_all`.
            while active >= 2 {
                let step = middle[active - 1] - done;
                let (hash_at, cbc_at) = (b - 13 + b * done, b * done);
                let (ivs, bufs) = (&mut ivs[..active], &mut bufs[..active]);
                sha1_cbc_x8::sha1_cbc_x8(t, &mut s, keys, ivs, bufs, hash_at, cbc_at, step);
                done += step;
                while active > 0 && middle[active - 1] == done {
                    active -= 1;
                }
            }
            states[..L].copy_from_slice(&s);
            core::array::from_fn(|lane| middle[lane].min(done))
        }
    }

    impl Stitched for Sha256 {
        /// With VAES, from seven lanes on, hashing the pairs first and
        /// then encrypting all lanes in zmm chains is as fast
        /// (`STITCHED_SHA256`); eight AES-NI chains are not
        /// (`STITCHED_SHA256_AES_NI`).
        fn max(cbc: Cbc) -> usize {
            match cbc {
                Cbc::Vaes(_) => 6,
                Cbc::AesNi(_) => WINDOW,
            }
        }

        type Features = ShaNi;

        fn features(_: Cbc) -> Option<ShaNi> {
            ShaNi::detect()
        }

        fn first_blocks(
            _: Cbc,
            ni: ShaNi,
            states: &mut [[u32; 8]; WINDOW],
            heads: &[[u8; 64]; WINDOW],
            headed: usize,
        ) {
            first_blocks_pairs::<Sha256>(ni, states, heads, headed);
        }

        fn middle<const N: usize>(
            cbc: Cbc,
            ni: ShaNi,
            states: &mut [[u32; 8]; WINDOW],
            keys: &cbc_x16::LaneKeys<N>,
            ivs: &mut [[u8; 16]; WINDOW],
            bufs: &mut [&mut [u8]; WINDOW],
            middle: &[usize; WINDOW],
        ) -> [usize; WINDOW] {
            let ahead = matches!(cbc, Cbc::AesNi(_));
            middle_pairs::<Sha256, N>(cbc, ni, states, keys, ivs, bufs, middle, ahead)
        }
    }

    /// [`Stitched::first_blocks`] two SHA-NI streams at a time.
    fn first_blocks_pairs<H: LaneHash>(
        ni: ShaNi,
        states: &mut [H::State; WINDOW],
        heads: &[[u8; 64]; WINDOW],
        headed: usize,
    ) {
        for p in 0..headed.div_ceil(2) {
            let (a, b) = (2 * p, (2 * p + 1).min(headed - 1));
            let mut s = [states[a], states[b]];
            H::compress2(ni, &mut s, &[&heads[a], &heads[b]], 1);
            [states[a], states[b]] = s;
        }
    }

    /// [`Stitched::middle`] two lanes at a time (`ni_cbc`), pair by pair,
    /// longest first: each pair runs to the end of its longer lane, one
    /// lane alone after the shorter ends (still faster than its hash
    /// followed by its encryption: the loop runs at about the speed of the
    /// CBC chain).
    ///
    /// With `ahead`, three or four lanes run otherwise: the lanes past the
    /// first pair are hashed first (two SHA-NI streams), then the first
    /// pair's hash runs beside all the lanes' chains (one `ni_cbc` call): for
    /// a hash faster than the chains (SHA-1), that is one pair's hash and
    /// one set of chains instead of two sets of chains. On AMD family
    /// 0x19 model 0x11 (Zen 4), 16 KiB lanes, `stitched_against_separate`: SHA-1
    /// 22.0-22.3 against 23.4-24.0 us for three or four lanes, and 4 x 16
    /// KiB SHA-1 records sealed 1.32-1.39x OpenSSL's multi-block against
    /// 1.25-1.30x. SHA-256 kernels gained 0.99-1.07x, its 4 x 16 KiB batch
    /// nothing (2.38 against 2.37 GB/s, medians of 5 alternating runs), so
    /// it keeps the pair calls. With AES-NI chains it is the other way
    /// round (AMD family 0x17 model 0x31, Zen 2, one build, 2 alternating
    /// runs each way, ns a record): SHA-256 three of 16 KiB 9420-9467
    /// against 9806-9822 pair by pair, four 7564-7582 against 7680-7691,
    /// three of 2 KiB 1583-1592 against 1621; SHA-1 four of 16 KiB
    /// 7037-7046 against 6931-6944 pair by pair, three 9067-9100 either
    /// way.
    #[allow(clippy::too_many_arguments)]
    fn middle_pairs<H: sha_ni_x2::NiPair + LaneHash, const N: usize>(
        cbc: Cbc,
        ni: ShaNi,
        states: &mut [<H as HashFunction>::State; WINDOW],
        keys: &cbc_x16::LaneKeys<N>,
        ivs: &mut [[u8; 16]; WINDOW],
        bufs: &mut [&mut [u8]; WINDOW],
        middle: &[usize; WINDOW],
        ahead: bool,
    ) -> [usize; WINDOW] {
        let b = <H as HashFunction>::BLOCK_LEN;
        // Where block `done` of the middle is hashed and encrypted.
        let at = |done: usize| (b - 13 + b * done, b * done);
        let mut active = middle.iter().filter(|&&m| m > 0).count();
        // Blocks of the first pair already run.
        let mut done = 0;
        let mut pairs = WINDOW / 2;
        if ahead && (3..=ni_cbc::WIDE_LANES).contains(&active) {
            // Lane 2, and 3 if busy: both streams for their common
            // blocks, then the longer alone (twice, as one pair).
            let (x, y) = (2, active - 1);
            for (from, to, lanes) in [(0, middle[y], [x, y]), (middle[y], middle[x], [x, x])] {
                let mut s = lanes.map(|l| states[l]);
                let data = lanes.map(|l| &bufs[l][at(from).0..]);
                H::compress2(ni, &mut s, &data, to - from);
                states[lanes[1]] = s[1];
                states[lanes[0]] = s[0];
            }
            while active > 2 {
                let step = middle[active - 1] - done;
                let (hash_at, cbc_at) = at(done);
                let mut pair = [states[0], states[1]];
                let (ivs, bufs) = (&mut ivs[..active], &mut bufs[..active]);
                ni_cbc::ni_cbc::<H, N>(
                    cbc, ni, &mut pair, keys, 0, ivs, bufs, hash_at, cbc_at, step,
                );
                [states[0], states[1]] = pair;
                done += step;
                while active > 0 && middle[active - 1] == done {
                    active -= 1;
                }
            }
            pairs = 1;
        }
        for (p, ((states, ivs), bufs)) in states
            .chunks_exact_mut(2)
            .zip(ivs.chunks_exact_mut(2))
            .zip(bufs.chunks_exact_mut(2))
            .enumerate()
            .take(pairs)
        {
            let mut done = if p == 0 { done } else { 0 };
            let mut active = middle[2 * p..2 * p + 2]
                .iter()
                .filter(|&&m| m > done)
                .count();
            while active >= 1 {
                let step = middle[2 * p + active - 1] - done;
                let (hash_at, cbc_at) = at(done);
                let mut pair = [states[0], states[1]];
                let (ivs, bufs) = (&mut ivs[..active], &mut bufs[..active]);
                ni_cbc::ni_cbc::<H, N>(
                    cbc, ni, &mut pair, keys, p, ivs, bufs, hash_at, cbc_at, step,
                );
                states.copy_from_slice(&pair);
                done += step;
                active -= 1;
            }
        }
        *middle
    }

    /// MAC-then-encrypt jobs whose hash is [`Stitched`], at most its
    /// `max`: each lane's first block is hashed, then its whole blocks
    /// after it are hashed and the plaintext behind them encrypted in one
    /// loop; then the rest of the hashing as `hash_window` runs it, and
    /// the encryption of the rest. `false` if this CPU lacks the loop's
    /// [`Stitched::Features`] (then nothing was done).
    fn seal_stitched<H: Stitched, const N: usize>(cbc: Cbc, window: &mut Window<'_>) -> bool
    where
        Aes: KeySize<N>,
        CrateCompress: Compress<H>,
        ShaNiCompress: Compress<H>,
        Avx2Compress: Compress<H>,
    {
        let Some(f) = H::features(cbc) else {
            return false;
        };
        let b = <H as HashFunction>::BLOCK_LEN;
        let (order, lanes, rank) = longest_first(window, |_, j| j.plaintext_len);
        debug_assert!(lanes <= H::max(cbc));
        let mut keys = cbc_x16::LaneKeys::<N>::new();
        let mut ivs = [[0u8; 16]; WINDOW];
        let mut states = [<H as HashFunction>::ZERO_STATE; WINDOW];
        let mut heads = [[0u8; 64]; WINDOW];
        // Whole blocks after the first: hashed and encrypted together.
        let mut middle = [0usize; WINDOW];
        let mut headed = 0;
        for (lane, &i) in order[..lanes].iter().enumerate() {
            let job = window[i].as_ref().expect("a job per lane");
            keys.set_lane(lane, Aes::schedule(aes_ni_key(job.aes)));
            ivs[lane] = job.iv;
            let s = H::states(job.mac.states()).expect("one kind per window");
            states[lane] = s.inner;
            let msg = 13 + job.plaintext_len;
            if msg >= b {
                heads[lane][..13].copy_from_slice(&job.header);
                heads[lane][13..].copy_from_slice(&job.buf[..b - 13]);
                middle[lane] = msg / b - 1;
                headed += 1;
            }
        }
        if headed > 0 {
            H::first_blocks(cbc, f, &mut states, &heads, headed);
        }
        let stitched = {
            let mut bufs: [&mut [u8]; WINDOW] = Default::default();
            for (i, job) in window.iter_mut().enumerate() {
                if let Some(job) = job {
                    bufs[rank[i]] = &mut job.buf[..];
                }
            }
            H::middle(cbc, f, &mut states, &keys, &mut ivs, &mut bufs, &middle)
        };
        // The rest of the hashing, as `hash_window` would from here.
        let mut from = [0usize; WINDOW];
        {
            let mut jobs: [Option<HashJob<'_, H>>; WINDOW] = Default::default();
            let mut lane_of: [Option<Lane<'_, H>>; WINDOW] = core::array::from_fn(|_| None);
            let mut state = [<H as HashFunction>::ZERO_STATE; WINDOW];
            let mut compressor = None;
            for (i, job) in window.iter_mut().enumerate() {
                let Some(job) = job else { continue };
                let lane = rank[i];
                job.iv = ivs[lane];
                from[i] = b * stitched[lane];
                compressor = Some(*job.mac.compressor());
                let m = job.mac.output_len();
                let s = H::states(job.mac.states()).expect("one kind per window");
                let (data, rest) = job.buf.split_at_mut(job.plaintext_len);
                let data = &*data;
                state[lane] = states[lane];
                if 13 + data.len() >= b {
                    Lane::past_in(&mut lane_of[lane], data, stitched[lane]);
                } else {
                    Lane::new_in(&mut lane_of[lane], &job.header, data, true);
                }
                jobs[lane] = Some(HashJob {
                    states: s,
                    prefix: job.header,
                    data,
                    tag: Some(&mut rest[..m]),
                    engine: None,
                });
            }
            let mut group: [Option<&mut HashJob<'_, H>>; WINDOW] = Default::default();
            for (slot, job) in group.iter_mut().zip(jobs.iter_mut()) {
                *slot = job.as_mut();
            }
            if let Some(compressor) = compressor {
                // The few blocks left a lane (the last data blocks, the
                // outer hash) hash in SHA-NI pairs, not in the AVX2
                // lanes: not measured against them.
                let x16 = match cbc {
                    Cbc::Vaes(t) => Some(t),
                    Cbc::AesNi(_) => None,
                };
                with_compressor!(compressor, |c| run_group(
                    x16,
                    None,
                    &mut group,
                    &mut lane_of,
                    &mut state,
                    c
                ));
            }
        }
        pad_all(window);
        encrypt_all(cbc, window, &from);
        true
    }

    /// The window's jobs in lane order, longest first by `len(slot, job)`
    /// (public lengths), so the lanes still running are always the first
    /// ones: (slot of each lane, lane count, lane of each slot).
    fn longest_first(
        window: &Window<'_>,
        len: impl Fn(usize, &SealLane<'_>) -> usize,
    ) -> ([usize; WINDOW], usize, [usize; WINDOW]) {
        let mut order = [0usize; WINDOW];
        let mut lanes = 0;
        for (i, job) in window.iter().enumerate() {
            if job.is_some() {
                order[lanes] = i;
                lanes += 1;
            }
        }
        let key = |i: usize| window[i].as_ref().map_or(0, |j| len(i, j));
        order[..lanes].sort_unstable_by_key(|&i| core::cmp::Reverse(key(i)));
        let mut rank = [0usize; WINDOW];
        for (lane, &i) in order[..lanes].iter().enumerate() {
            rank[i] = lane;
        }
        (order, lanes, rank)
    }

    /// Where `Tuning::stitched_sha1` holds, (jobs, shortest record in
    /// bytes) from which MAC-then-encrypt SHA-1 jobs take the stitched
    /// lanes, measured on Intel family 6 model 0xA7 against one by one:
    /// three of 16 KiB 1.20-1.24x, of 2 KiB 1.11x, of 1408 bytes 1.05x;
    /// four of 768 bytes 1.13-1.15x, of 512 bytes 1.02-1.04x; five of 512
    /// bytes 1.16-1.19x, of 256 bytes 0.97-0.98x; six of 256 bytes 1.11x.
    /// On AMD family 0x19 model 0x11 (Zen 4), against one by one: three of
    /// 16 KiB 1.35x, of 2 KiB 1.09x; four of 768 bytes 1.18x.
    const STITCHED_SHA1: [(usize, usize); 4] = [(3, 2048), (4, 768), (5, 512), (6, 0)];

    /// With VAES chains where `Tuning::stitched_ni_pairs` holds, (jobs,
    /// shortest record in bytes) from which MAC-then-encrypt SHA-256 jobs,
    /// at most six, take the stitched pairs (`ni_cbc`). Measured on AMD
    /// family 0x19 model 0x11 (Zen 4), 2 to 4 alternating runs: against one by one,
    /// two of 16 KiB 1.72-1.82x, of 4 KiB 1.29-1.52x, of 2 KiB 1.31-1.33x,
    /// of 1408 bytes 1.10-1.22x, of 1 KiB 1.00-1.04x, of 512 bytes 0.82x;
    /// three of 16 KiB 1.28x, of 4 KiB 1.12-1.29x, of 2 KiB 0.97-1.16x,
    /// of 1408 bytes 1.05-1.09x (a pair and a lone lane, which costs as
    /// much as a pair); five of 1408 bytes 1.22-1.27x; four of 1 KiB
    /// 1.03-1.18x, of 768 bytes 0.93-1.15x; six of 768 bytes 1.27-1.30x,
    /// of 512 bytes 0.95-1.05x. Against the lanes hashed in SHA-NI
    /// pairs and then encrypted in zmm chains: four of 16 KiB 2.59-2.61
    /// against 2.05-2.13 GB/s, of 1408 bytes 1.68-1.74 against 1.21-1.23
    /// (there the lanes lost to one by one); six of 16 KiB 6.3 against
    /// 6.9-7.9 us a record, of 1 KiB 650-680 against 663-767 ns; eight of
    /// 16 KiB 2.59-2.64 GB/s either way, of 1408 bytes 1.76-1.92 against
    /// 1.85-1.98: from seven records on the CBC lanes after the hash cost
    /// less than a pair's chains beside its hash.
    const STITCHED_SHA256: [(usize, usize); 3] = [(2, 1408), (4, 1024), (6, 768)];

    /// With AES-NI chains where `Tuning::stitched_ni_pairs` holds, (jobs,
    /// shortest record in bytes) from which MAC-then-encrypt SHA-256 jobs
    /// take the stitched pairs, up to a whole window. Measured on AMD
    /// family 0x17 model 0x31 (Zen 2), 3 alternating rounds, against one
    /// by one: two of 16 KiB 1.61x, of 2 KiB 1.20x, of 1408 bytes 1.08x,
    /// of 1 KiB 0.97x; three of 1408 bytes 1.02x, of 1 KiB 0.95x; four of
    /// 768 bytes 1.09x, of 512 bytes 0.96x; six of 512 bytes 1.05x; eight
    /// of 512 bytes 1.12x. Against the lanes hashed in SHA-NI pairs, then
    /// encrypted in the AES-NI CBC lanes: eight of 16 KiB 1.66x against
    /// 1.55x one by one, sixteen 1.67x against 1.55x, sixteen of 768 bytes
    /// 1.29x against 0.99x; the one loss, seven of 1 KiB, 1.18x against
    /// 1.24x (the odd lane runs its pair's loop alone).
    const STITCHED_SHA256_AES_NI: [(usize, usize); 3] = [(2, 1408), (4, 768), (6, 512)];

    /// Where `Tuning::avx2_sha512_lanes` holds, (jobs, shortest record in
    /// bytes) from which SHA-384 jobs are sealed in lanes: hashed four at
    /// a time on AVX2 (`sha512_avx2_x4`), then the AES-NI CBC lanes.
    /// Measured on AMD family 0x17 model 0x31 (Zen 2), AES-256, one
    /// connection, 3 alternating rounds, against one by one: three of 64
    /// bytes 1.03x, of 1 KiB 1.25x, of 16 KiB 1.34x; four of 64 bytes
    /// 1.31x, of 16 KiB 1.79x; eight of 256 bytes 1.61x, of 16 KiB 1.96x.
    const SHA384_AVX2_SEAL: [(usize, usize); 1] = [(3, 0)];

    /// The same for opening, the public part of each record and the
    /// secret-length finishes both in the AVX2 lanes: three of 64 bytes
    /// 0.94x, of 256 bytes 1.05x, of 1 KiB 1.12x; four of 1 byte 1.19x, of
    /// 16 KiB 1.38x; five of 64 bytes 0.99x (a lane alone in its call),
    /// of 256 bytes 1.04x; six of 1 byte 1.14x; eight of 64 bytes 1.65x;
    /// sixteen of 256 bytes 1.62x.
    const SHA384_AVX2_OPEN: [(usize, usize); 2] = [(3, 256), (4, 0)];

    /// With AES-NI chains where `Tuning::stitched_ni_pairs` holds, (jobs,
    /// whole blocks after the first of the shortest) from which
    /// MAC-then-encrypt SHA-1 jobs run two at a time (`ni_cbc`), up to a
    /// whole window: 1408-byte records for two, 768 for four, 512 for six.
    /// Measured on AMD family 0x17 model 0x31 (Zen 2), 3 alternating
    /// rounds, against one by one: two of 16 KiB 1.78-1.79x, of 2 KiB
    /// 1.26x, of 1408 bytes 1.11x, of 1 KiB 0.97x; three of 1408 bytes
    /// 1.04x, of 1 KiB 0.96x; four of 768 bytes 1.07x, of 512 bytes 0.92x;
    /// five of 768 bytes 1.03x; six of 512 bytes 1.02x; eight of 512 bytes
    /// 1.06x. Against the AVX2 hash lanes followed by the AES-NI CBC lanes:
    /// eight of 16 KiB 1.86x against 1.74x one by one, sixteen 1.86x
    /// against 1.73x, sixteen of 768 bytes 1.28x against 1.00x.
    const SHA1_AES_NI_PAIRS: [(usize, usize); 3] = [(2, 21), (4, 11), (6, 7)];

    /// Where `Tuning::stitched_ni_pairs` holds, whether `lanes` busy
    /// MAC-then-encrypt SHA-1 lanes, the shortest with `blocks` whole
    /// blocks after its first, run two at a time (`ni_cbc`) beside `cbc`'s
    /// chains. With AES-NI chains, as `SHA1_AES_NI_PAIRS` says. With VAES
    /// ones, rather than all in the eight-lane loop (`sha1_cbc_x8`) or one
    /// by one (three or four with one pair hashed ahead: `middle_pairs`):
    /// from two to four lanes of 2 KiB records (31 blocks). Measured on
    /// AMD family 0x19 model 0x11 (Zen 4), 3 alternating runs, against one by one:
    /// two records of 16 KiB 1.68-1.72x, of 4 KiB 1.26-1.49x, of 2 KiB
    /// 1.05-1.25x, of 1408 bytes 0.87-1.03x, of 1 KiB 0.78-0.87x; against
    /// the eight-lane loop, ns a record: three of 16 KiB 8542-8835 against
    /// 9012-9312, four 6474-6667 against 6809-7509; four of 2 KiB
    /// 1096-1179 against 1158-1273, of 1 KiB 727-978 against 749-820.
    fn sha1_pairs_pay(cbc: Cbc, lanes: usize, blocks: usize) -> bool {
        match cbc {
            Cbc::Vaes(_) => (2..=4).contains(&lanes) && blocks >= SHA1_VAES_PAIR_BLOCKS,
            Cbc::AesNi(_) => SHA1_AES_NI_PAIRS
                .iter()
                .any(|&(j, b)| lanes >= j && blocks >= b),
        }
    }

    /// Whole blocks after the first from which two to four MAC-then-encrypt
    /// SHA-1 jobs pair up beside VAES chains (`sha1_pairs_pay`).
    const SHA1_VAES_PAIR_BLOCKS: usize = 31;

    /// The shortest plaintext from which a window of two jobs may run in
    /// lanes on any CPU: the least of the two-job sizes of the pair tables
    /// (`decide`'s only two-job paths; every other table starts from
    /// `FEWEST_LANES` jobs, as the assertions below and beside
    /// `FEW_LANES` hold).
    const TWO_JOBS_FROM: usize = {
        let sha256 = min(
            two_jobs_from(&STITCHED_SHA256),
            two_jobs_from(&STITCHED_SHA256_AES_NI),
        );
        let sha1 = min(
            sha1_plaintext(two_jobs_from(&SHA1_AES_NI_PAIRS)),
            sha1_plaintext(SHA1_VAES_PAIR_BLOCKS),
        );
        min(sha256, sha1)
    };

    const _: () = assert!(TWO_JOBS_FROM > 64 && TWO_JOBS_FROM < usize::MAX);

    /// The least size of `sizes`' entries for two jobs or fewer
    /// (`usize::MAX` if none).
    const fn two_jobs_from(sizes: &[(usize, usize)]) -> usize {
        let mut least = usize::MAX;
        let mut i = 0;
        while i < sizes.len() {
            if sizes[i].0 <= 2 {
                least = min(least, sizes[i].1);
            }
            i += 1;
        }
        least
    }

    /// The shortest plaintext with `blocks` whole blocks after the first
    /// of its MAC input (13-byte prefix first), as `decide` counts them.
    const fn sha1_plaintext(blocks: usize) -> usize {
        match blocks.checked_add(1) {
            Some(b) => b * 64 - 13,
            None => usize::MAX,
        }
    }

    const fn min(a: usize, b: usize) -> usize {
        if a < b { a } else { b }
    }

    const _: () = assert!(
        STITCHED_SHA1[0].0 >= super::FEWEST_LANES
            && STITCHED_SHA256[0].0 >= super::FEWEST_SEAL_LANES
            && STITCHED_SHA256_AES_NI[0].0 >= super::FEWEST_SEAL_LANES
            && SHA1_AES_NI_PAIRS[0].0 >= super::FEWEST_SEAL_LANES
    );

    /// What must agree for jobs to share lanes.
    #[derive(Clone, Copy, PartialEq, Eq)]
    struct Kind {
        aes256: bool,
        mac: u8,
        order: Order,
        lanes: Cbc,
    }

    impl Kind {
        fn of(job: &SealLane<'_>) -> Option<Kind> {
            Kind::from_parts(job.aes, job.mac, job.order)
        }

        fn from_parts(aes: &AesKey, mac: &HmacKey, order: Order) -> Option<Kind> {
            let (key, lanes) = match aes {
                AesKey::Vaes512(k) => (&k.key, Cbc::Vaes(k.token())),
                // Two-stream hashing needs SHA-NI, which the SHA-NI
                // compressor proves allowed.
                AesKey::AesNi(k) | AesKey::Vaes256(VaesKey { key: k, .. })
                    if matches!(mac.compressor(), Compressor::ShaNi(_)) =>
                {
                    let (AesNiKey::Aes128(_, t) | AesNiKey::Aes256(_, t)) = k;
                    (k, Cbc::AesNi(*t))
                }
                _ => return None,
            };
            let aes256 = matches!(key, AesNiKey::Aes256(..));
            let mac = match mac.states() {
                AnyStates::Sha1(_) => 1,
                AnyStates::Sha256(_) => 2,
                AnyStates::Sha384(_) => 3,
                // No TLS combination has it: not given lanes.
                AnyStates::Sha512(_) => return None,
            };
            Some(Kind {
                aes256,
                mac,
                order,
                lanes,
            })
        }
    }

    fn pad_all(window: &mut Window<'_>) {
        for job in window.iter_mut().flatten() {
            match job.order {
                Order::HashThenCipher => {
                    let m = job.mac.output_len();
                    pad(job.buf, job.plaintext_len + m);
                }
                Order::CipherThenHash => {
                    let body = job.body_range();
                    pad(&mut job.buf[body], job.plaintext_len);
                }
            }
        }
    }

    // ---- CBC encryption across lanes ----

    /// The AES-NI key schedules of a lane job's key (VAES keys hold them
    /// too).
    fn aes_ni_key(aes: &AesKey) -> &AesNiKey {
        aes.aes_ni().expect("checked by Kind")
    }

    /// The encryption schedule of a key of `N` round keys (one key size
    /// per window).
    trait KeySize<const N: usize> {
        fn schedule(k: &AesNiKey) -> &Schedule<N>;
    }

    /// The key sizes.
    struct Aes;

    impl KeySize<11> for Aes {
        fn schedule(k: &AesNiKey) -> &Schedule<11> {
            match k {
                AesNiKey::Aes128(s, _) => &s.enc,
                AesNiKey::Aes256(..) => unreachable!("one kind per window"),
            }
        }
    }

    impl KeySize<15> for Aes {
        fn schedule(k: &AesNiKey) -> &Schedule<15> {
            match k {
                AesNiKey::Aes256(s, _) => &s.enc,
                AesNiKey::Aes128(..) => unreachable!("one kind per window"),
            }
        }
    }

    /// CBC-encrypts every job's body from byte `from[i]` of job `i`'s
    /// (the bytes before are ciphertext already, `iv` their last block).
    fn encrypt_all(cbc: Cbc, window: &mut Window<'_>, from: &[usize; WINDOW]) {
        let Some(first) = window.iter().flatten().next() else {
            return;
        };
        match aes_ni_key(first.aes) {
            AesNiKey::Aes128(..) => encrypt_lanes::<11>(cbc, window, from),
            AesNiKey::Aes256(..) => encrypt_lanes::<15>(cbc, window, from),
        }
    }

    /// CBC-encrypts every job's body, each job in its own lane. Lanes are
    /// ordered longest first, so the lanes still running are always the
    /// first ones and the kernel runs only the registers they fill.
    fn encrypt_lanes<const N: usize>(cbc: Cbc, window: &mut Window<'_>, from: &[usize; WINDOW])
    where
        Aes: KeySize<N>,
    {
        // Each job's body, IV and round keys, in lane order.
        let mut bodies: [&mut [u8]; WINDOW] = Default::default();
        let mut ivs = [[0u8; 16]; WINDOW];
        let mut schedules: [Option<&Schedule<N>>; WINDOW] = [None; WINDOW];
        let (order, lanes, _) = longest_first(window, |i, j| j.body_range().len() - from[i]);
        // Jobs taken by slot in lane order: slot `order[lane]` to `lane`.
        let mut slots = window.each_mut().map(Option::as_mut);
        for (lane, &i) in order[..lanes].iter().enumerate() {
            let job = slots[i].take().expect("a job per lane");
            schedules[lane] = Some(Aes::schedule(aes_ni_key(job.aes)));
            ivs[lane] = job.iv;
            let range = job.body_range();
            bodies[lane] = &mut job.buf[range.start + from[i]..range.end];
        }
        match cbc {
            Cbc::Vaes(t) => {
                let mut keys = cbc_x16::LaneKeys::<N>::new();
                for (lane, s) in schedules[..lanes].iter().enumerate() {
                    keys.set_lane(lane, s.expect("a key per lane"));
                }
                by_length(
                    &mut ivs[..lanes],
                    &mut bodies[..lanes],
                    |ivs, views, step| {
                        cbc_x16::cbc_encrypt_x16(t, &keys, ivs, views, step);
                    },
                );
            }
            Cbc::AesNi(t) => {
                // Eight lanes at a time, the longest together.
                let groups = ivs[..lanes]
                    .chunks_mut(cbc_aesni_x8::LANES)
                    .zip(bodies[..lanes].chunks_mut(cbc_aesni_x8::LANES))
                    .zip(schedules[..lanes].chunks(cbc_aesni_x8::LANES));
                for ((ivs, bodies), schedules) in groups {
                    let mut keys = [schedules[0].expect("a key per lane"); cbc_aesni_x8::LANES];
                    for (k, s) in keys.iter_mut().zip(schedules) {
                        *k = s.expect("a key per lane");
                    }
                    // The kernel takes the first `views.len()` keys: the
                    // lanes still running, longest first like `keys`.
                    by_length(ivs, bodies, |ivs, views, step| {
                        cbc_aesni_x8::cbc_encrypt_x8(t, &keys, ivs, views, step);
                    });
                }
            }
        }
        for (iv, &i) in ivs.iter().zip(&order[..lanes]) {
            if let Some(job) = window[i].as_mut() {
                job.iv = *iv;
            }
        }
    }

    /// Runs `kernel` over `bodies` (whole blocks, longest first) until every
    /// one is encrypted: each call takes the lanes still running and the
    /// blocks the shortest of them has left.
    fn by_length(
        ivs: &mut [[u8; 16]],
        bodies: &mut [&mut [u8]],
        mut kernel: impl FnMut(&mut [[u8; 16]], &mut [&mut [u8]], usize),
    ) {
        let mut done = 0;
        let mut active = bodies.len();
        while active > 0 {
            // Every active lane has at least the last one's blocks left.
            let step = bodies[active - 1].len() / 16 - done;
            let mut views: [&mut [u8]; WINDOW] = Default::default();
            for (v, b) in views.iter_mut().zip(bodies[..active].iter_mut()) {
                *v = &mut b[16 * done..];
            }
            kernel(&mut ivs[..active], &mut views[..active], step);
            done += step;
            while active > 0 && bodies[active - 1].len() / 16 == done {
                active -= 1;
            }
        }
    }

    // ---- HMAC across lanes ----

    /// A hash the lane kernels run, sixteen or eight lanes at a time.
    pub(super) trait LaneHash: BatchHash {
        /// The fewest busy lanes for which the lane kernel beats one
        /// stream per lane (measured on Intel family 6 model 0xCF; idle
        /// lanes cost as much as busy ones).
        const MIN_BUSY: usize;

        /// The same for the eight-lane kernel, where `Tuning::eight_lanes`
        /// says it is cheap enough to start below [`LaneHash::MIN_BUSY`]
        /// (measured on Intel family 6 model 0xA7, against two SHA-NI
        /// streams at a time).
        const MIN_BUSY8: usize;

        /// The same where `Tuning::halved_512` says 512-bit instructions
        /// cost two 256-bit ones (measured on AMD family 0x19 model 0x11,
        /// against two SHA-NI streams at a time).
        const MIN_BUSY_HALVED: usize;

        /// Where `Tuning::eight_lanes` holds, (jobs, shortest record in
        /// bytes) from which a batch takes lanes instead of
        /// [`LaneHash::MIN_BUSY`] jobs of any length: the eight-lane
        /// kernels pay from fewer jobs, but short records lose to the
        /// stitched single-record paths.
        const EIGHT_LANES: &'static [(usize, usize)];

        /// The fewest busy lanes that run in a lane kernel on this CPU.
        fn min_busy() -> usize {
            let t = Tuning::get();
            if t.eight_lanes {
                Self::MIN_BUSY8
            } else if t.halved_512 {
                Self::MIN_BUSY_HALVED
            } else {
                Self::MIN_BUSY
            }
        }

        /// Compresses `blocks` blocks of each of eight lanes (as
        /// [`LaneHash::compress16`], at most half the cost).
        fn compress8(t: Vaes512, states: &mut [Self::State; 8], data: &[&[u8]; 8], blocks: usize);

        /// Compresses `blocks` blocks of all sixteen lanes.
        fn compress_x16(
            t: Vaes512,
            states: &mut [Self::State; 16],
            data: &[&[u8]; 16],
            blocks: usize,
        );

        /// Compresses `blocks` blocks of every lane; lanes at `used` and
        /// above may be left alone, so up to eight take the eight-lane
        /// kernel.
        fn compress16(
            t: Vaes512,
            states: &mut [Self::State; 16],
            data: &[&[u8]; 16],
            blocks: usize,
            used: usize,
        ) {
            if used > 8 {
                return Self::compress_x16(t, states, data, blocks);
            }
            let (states, _) = states.split_first_chunk_mut::<8>().expect("8 of 16");
            let (data, _) = data.split_first_chunk::<8>().expect("8 of 16");
            Self::compress8(t, states, data, blocks);
        }

        /// The secret-length finish of every lane with the masks applied
        /// in the kernel, then its outer block from `outer` (`secret_tail`;
        /// lanes at `used` and beyond are not looked at, and eight or
        /// fewer run in the eight-lane kernel), where the hash has one:
        /// `states` ends as each lane's outer hash state. `false` if not,
        /// and the caller masks block by block.
        fn secret_tail16(
            t: Vaes512,
            states: &mut [Self::State; 16],
            outer: &[Self::State; 16],
            data: &[&[u8]; 16],
            blocks: usize,
            ends: &Ends,
            used: usize,
        ) -> bool {
            let _ = (t, states, outer, data, blocks, ends, used);
            false
        }

        /// Whether lanes of this hash run on [`LaneHash::compress8_avx2`]
        /// where there is no AVX-512: where the hash has such a kernel and
        /// `tuning` says it beats the alternative on this CPU.
        fn avx2_lanes(tuning: Tuning) -> bool;

        /// Lanes per call of [`LaneHash::compress8_avx2`].
        const AVX2_WIDTH: usize;

        /// Whether the opens' secret-length finishes run on the AVX2 lanes
        /// too, where [`LaneHash::avx2_lanes`] (else one stream a job).
        const AVX2_TAILS: bool = false;

        /// The fewest busy lanes worth one call of
        /// [`LaneHash::compress8_avx2`].
        const AVX2_MIN_BUSY: usize;

        /// (jobs, shortest record in bytes) from which the AVX2 lanes
        /// alone make a sealed batch, and an opened one, beat one by one
        /// (where [`LaneHash::avx2_lanes`]); none for hashes whose SHA-NI
        /// pairs decide that ([`LaneHash::pairs_beat_single`]).
        const AVX2_BEATS_SINGLE: [&'static [(usize, usize)]; 2] = [&[], &[]];

        /// Compresses `blocks` blocks of each of the first
        /// [`LaneHash::AVX2_WIDTH`] lanes with AVX2 alone (where the hash
        /// has such a kernel: [`LaneHash::avx2_lanes`]), for CPUs without
        /// AVX-512. Lanes beyond the width are not looked at.
        fn compress8_avx2(t: Avx2, states: &mut [Self::State; 8], data: &[&[u8]; 8], blocks: usize);

        /// Whether [`LaneHash::compress2`] has a kernel.
        const PAIRS: bool;

        /// Compresses `blocks` blocks of two streams at once on SHA-NI
        /// (where the hash has such a kernel: [`LaneHash::PAIRS`]); for
        /// when fewer than [`LaneHash::min_busy`] lanes are busy.
        fn compress2(ni: ShaNi, states: &mut [Self::State; 2], data: &[&[u8]; 2], blocks: usize);

        /// Whether `jobs` jobs, the shortest `shortest` bytes long, run
        /// faster in lanes than one by one: from the sixteen-lane kernel's
        /// crossover on, or, where this CPU gains by two-stream SHA-NI
        /// hashing (`Tuning::few_lanes_sha_ni`), as [`FEW_LANES`] allows.
        /// Public lengths only.
        fn lanes_beat_single(jobs: usize, shortest: usize) -> bool {
            let lanes = if Tuning::get().eight_lanes {
                Self::EIGHT_LANES
                    .iter()
                    .any(|&(j, bytes)| jobs >= j && shortest >= bytes)
            } else {
                // Where 512-bit instructions are halved, windows of short
                // records still take the lanes from `MIN_BUSY` on (the
                // open's secret-length tails gain there: twelve 256-byte
                // SHA-256 records opened 1.40x one by one on AMD Zen 4,
                // 0.97x with `MIN_BUSY_HALVED` here); only the bulk hashing
                // turns to SHA-NI pairs below `MIN_BUSY_HALVED` busy lanes
                // (`run_group`).
                jobs >= Self::MIN_BUSY
            };
            lanes || Self::pairs_beat_single(jobs, shortest)
        }

        /// (jobs, shortest record in bytes) from which an opened batch
        /// beats one by one where its finishes run in SHA-NI pairs too
        /// (`Tuning::pair_tails`): [`LaneHash::open_pairs_beat_single`].
        const PAIR_TAILS_OPEN: &'static [(usize, usize)] = &[];

        /// Whether `jobs` records, the shortest `shortest` bytes long,
        /// opened in lanes hashed two SHA-NI streams at a time beat one by
        /// one: from the sizes in [`LaneHash::PAIR_TAILS_OPEN`] where the
        /// finishes run in the pairs too (`Tuning::pair_tails`), else as
        /// [`LaneHash::pairs_beat_single`] says.
        fn open_pairs_beat_single(jobs: usize, shortest: usize) -> bool {
            if Self::PAIRS && Tuning::get().pair_tails && ShaNi::detect().is_some() {
                return Self::PAIR_TAILS_OPEN
                    .iter()
                    .any(|&(j, bytes)| jobs >= j && shortest >= bytes);
            }
            Self::pairs_beat_single(jobs, shortest)
        }

        /// The same where the CPU has SHA-NI but no sixteen-lane kernels
        /// (no AVX-512): only the two-stream hashing can pay.
        fn pairs_beat_single(jobs: usize, shortest: usize) -> bool {
            Self::PAIRS
                && Tuning::get().few_lanes_sha_ni
                && FEW_LANES
                    .iter()
                    .any(|&(j, bytes)| jobs >= j && shortest >= bytes)
        }

        /// Whether `jobs` jobs, the shortest `shortest` bytes long, sealed
        /// (or opened, with `open`) in lanes beat one by one without
        /// AVX-512 or SHA-NI pairs: hashed on the AVX2 lanes where
        /// [`LaneHash::avx2_lanes`], from the sizes in
        /// [`LaneHash::AVX2_BEATS_SINGLE`].
        fn avx2_beat_single(jobs: usize, shortest: usize, open: bool) -> bool {
            Self::avx2_lanes(Tuning::get())
                && Avx2::allowed().is_some()
                && Self::AVX2_BEATS_SINGLE[usize::from(open)]
                    .iter()
                    .any(|&(j, bytes)| jobs >= j && shortest >= bytes)
        }
    }

    /// (jobs, shortest record in bytes) from which lanes hashed two streams
    /// at a time beat the single-record seal and open, measured on AMD
    /// family 0x1A model 2 with AES-128-CBC-SHA256 (the slower case; ratios
    /// against one by one, sealed / opened): four of 4096 bytes 1.26x /
    /// 1.10x, four of 1408 bytes 1.18x / 0.82x, six of 1408 bytes 1.30x /
    /// 1.11x, six of 256 bytes 1.10x / 0.77x, three of 4096 bytes 1.01x /
    /// 0.98x. Below this, the single-record paths' stitching wins. The same
    /// holds on AMD family 0x19 model 1 without AVX-512 (eight AES-NI CBC
    /// lanes): sixteen of 1408 bytes 1.07-1.27x sealed, 1.01-1.07x opened;
    /// and on model 0x11 (Zen 4, with VAES lanes): four of 16 KiB sealed
    /// 1.41-1.46x, opened 1.48-1.54x, four of 4096 bytes opened 1.37x.
    /// Where the opens' finishes run in the pairs too (`Tuning::pair_tails`,
    /// Zen 2), the opens follow `LaneHash::PAIR_TAILS_OPEN` instead.
    const FEW_LANES: [(usize, usize); 2] = [(4, 4096), (6, 1024)];

    // `LaneHash::PAIR_TAILS_OPEN`, measured on AMD family 0x17 model 0x31
    // (one connection, every window in lanes by a temporary edit, ratios
    // against one by one, SHA-1 / SHA-256): four of 1408 bytes 0.92x /
    // 1.02x, of 2048 bytes 0.97x / 1.09x, of 3072 bytes 1.02x / 1.16x;
    // five of 2048 bytes 0.93x / 1.02x; six of 1024 bytes 0.95x / 1.03x, of
    // 2048 bytes 1.02x / 1.14x; eight of 512 bytes 0.96x / 0.98x, of 1024
    // bytes 1.06x / 1.08x; twelve of 64 bytes 1.02x / 1.07x, of 1 byte
    // 0.97x / 1.03x; sixteen of 1 byte 1.05x / 1.07x. Fewer or shorter
    // records lose more: a window's fixed costs outweigh the pairs' gain
    // (three of 1 byte 0.49x / 0.56x).
    const SHA1_PAIR_TAILS_OPEN: [(usize, usize); 5] =
        [(4, 4096), (6, 2048), (8, 1024), (12, 64), (16, 0)];
    const SHA256_PAIR_TAILS_OPEN: [(usize, usize); 4] = [(4, 2048), (6, 1024), (12, 64), (16, 0)];

    const _: () = assert!(
        Sha1::MIN_BUSY >= super::FEWEST_LANES
            && Sha256::MIN_BUSY >= super::FEWEST_LANES
            && Sha384::MIN_BUSY >= super::FEWEST_LANES
            && Sha1::MIN_BUSY8 >= super::FEWEST_LANES
            && Sha256::MIN_BUSY8 >= super::FEWEST_LANES
            && Sha384::MIN_BUSY8 >= super::FEWEST_LANES
            && Sha1::MIN_BUSY_HALVED >= super::FEWEST_LANES
            && Sha256::MIN_BUSY_HALVED >= super::FEWEST_LANES
            && Sha384::MIN_BUSY_HALVED >= super::FEWEST_LANES
            && Sha1::EIGHT_LANES[0].0 >= super::FEWEST_LANES
            && Sha256::EIGHT_LANES[0].0 >= super::FEWEST_LANES
            && Sha384::EIGHT_LANES[0].0 >= super::FEWEST_LANES
            && SHA1_PAIR_TAILS_OPEN[0].0 >= super::FEWEST_LANES
            && SHA256_PAIR_TAILS_OPEN[0].0 >= super::FEWEST_LANES
            && FEW_LANES[0].0 >= super::FEWEST_LANES
            && SHA384_AVX2_SEAL[0].0 >= super::FEWEST_LANES
            && SHA384_AVX2_OPEN[0].0 >= super::FEWEST_LANES
    );

    // SHA-1 on model 0xA7, ns per busy lane-block: eight lanes 89 / k
    // (22 for k = 4, 30 for k = 3), two SHA-NI streams 28-29. Batches
    // against one by one (sealed / opened): four of 1408 bytes 1.08x /
    // 1.05x, four of 256 bytes 0.80x / 0.77x, six of 256 bytes 1.05x /
    // 0.98x, eight of 256 bytes 1.28x / 1.15x. On AMD family 0x19 model
    // 0x11 (Zen 4): eight lanes 90 / k (18.0 for k = 5), sixteen lanes
    // 150 / k (16.9 for k = 9), two SHA-NI streams 18.5-21.5.
    impl LaneHash for Sha1 {
        const MIN_BUSY: usize = 5;
        const MIN_BUSY8: usize = 4;
        const MIN_BUSY_HALVED: usize = 5;
        const EIGHT_LANES: &'static [(usize, usize)] = &[(4, 1024), (7, 0)];

        fn compress8(t: Vaes512, s: &mut [[u32; 5]; 8], d: &[&[u8]; 8], n: usize) {
            sha_x8::sha1_x8(t, s, d, n);
        }

        fn compress_x16(t: Vaes512, s: &mut [[u32; 5]; 16], d: &[&[u8]; 16], n: usize) {
            sha1_x16::compress_x16(t, s, d, n);
        }

        fn secret_tail16(
            t: Vaes512,
            s: &mut [[u32; 5]; 16],
            o: &[[u32; 5]; 16],
            d: &[&[u8]; 16],
            n: usize,
            ends: &Ends,
            used: usize,
        ) -> bool {
            if used > 8 {
                secret_tail::sha1_x16(t, s, o, d, n, ends);
            } else {
                let (s, _) = s.split_first_chunk_mut::<8>().expect("8 of 16");
                let (o, _) = o.split_first_chunk::<8>().expect("8 of 16");
                let (d, _) = d.split_first_chunk::<8>().expect("8 of 16");
                secret_tail::sha1_x8(t, s, o, d, n, ends);
            }
            true
        }

        fn avx2_lanes(tuning: Tuning) -> bool {
            tuning.avx2_sha1_lanes
        }

        const AVX2_WIDTH: usize = 8;
        const PAIR_TAILS_OPEN: &'static [(usize, usize)] = &SHA1_PAIR_TAILS_OPEN;

        /// On AMD family 0x17 model 0x31 a call of the eight AVX2 lanes
        /// costs as much per block as three pairs of SHA-NI streams
        /// (`sha1_avx2_x8`).
        const AVX2_MIN_BUSY: usize = 7;

        fn compress8_avx2(t: Avx2, s: &mut [[u32; 5]; 8], d: &[&[u8]; 8], n: usize) {
            sha1_avx2_x8::sha1_x8(t, s, d, n);
        }

        const PAIRS: bool = true;

        fn compress2(ni: ShaNi, s: &mut [[u32; 5]; 2], d: &[&[u8]; 2], n: usize) {
            sha_ni_x2::compress_x2::<Sha1>(ni, s, d, n);
        }
    }

    // SHA-256 on model 0xA7: eight lanes 170 / k (28 for k = 6, 34 for
    // k = 5), two SHA-NI streams 30. Batches against one by one: six of
    // 4096 bytes 1.06x / 1.03x, six of 1408 bytes 0.98x / 0.87x, eight of
    // 1408 bytes 1.24x / 1.07x, eight of 256 bytes 0.95x / 0.83x. On AMD
    // family 0x19 model 0x11 (Zen 4): sixteen lanes 298 / k (22.8 for
    // k = 13, 21.2 for k = 14), two SHA-NI streams 20-22.5.
    impl LaneHash for Sha256 {
        const MIN_BUSY: usize = 9;
        const MIN_BUSY8: usize = 6;
        const MIN_BUSY_HALVED: usize = 14;
        const EIGHT_LANES: &'static [(usize, usize)] = &[(6, 4096), (8, 1024), (9, 0)];

        fn compress8(t: Vaes512, s: &mut [[u32; 8]; 8], d: &[&[u8]; 8], n: usize) {
            sha_x8::sha256_x8(t, s, d, n);
        }

        fn compress_x16(t: Vaes512, s: &mut [[u32; 8]; 16], d: &[&[u8]; 16], n: usize) {
            sha256_x16::compress_x16(t, s, d, n);
        }

        fn secret_tail16(
            t: Vaes512,
            s: &mut [[u32; 8]; 16],
            o: &[[u32; 8]; 16],
            d: &[&[u8]; 16],
            n: usize,
            ends: &Ends,
            used: usize,
        ) -> bool {
            if used > 8 {
                secret_tail::sha256_x16(t, s, o, d, n, ends);
            } else {
                let (s, _) = s.split_first_chunk_mut::<8>().expect("8 of 16");
                let (o, _) = o.split_first_chunk::<8>().expect("8 of 16");
                let (d, _) = d.split_first_chunk::<8>().expect("8 of 16");
                secret_tail::sha256_x8(t, s, o, d, n, ends);
            }
            true
        }

        // Its AVX2 rounds take 2.2 times as long as two SHA-NI streams
        // (`sha1_avx2_x8`).
        fn avx2_lanes(_: Tuning) -> bool {
            false
        }

        const PAIR_TAILS_OPEN: &'static [(usize, usize)] = &SHA256_PAIR_TAILS_OPEN;
        const AVX2_WIDTH: usize = 8;
        const AVX2_MIN_BUSY: usize = 8;

        fn compress8_avx2(_: Avx2, _: &mut [[u32; 8]; 8], _: &[&[u8]; 8], _: usize) {
            unreachable!("SHA-256 has no AVX2 lane kernel (avx2_lanes is false)")
        }

        const PAIRS: bool = true;

        fn compress2(ni: ShaNi, s: &mut [[u32; 8]; 2], d: &[&[u8]; 2], n: usize) {
            sha_ni_x2::compress_x2::<Sha256>(ni, s, d, n);
        }
    }

    impl LaneHash for Sha384 {
        const MIN_BUSY: usize = 3;
        const MIN_BUSY8: usize = 3;
        const MIN_BUSY_HALVED: usize = 3;
        const EIGHT_LANES: &'static [(usize, usize)] = &[(3, 0)];

        fn compress8(t: Vaes512, s: &mut [[u64; 8]; 8], d: &[&[u8]; 8], n: usize) {
            sha512_x8::compress_x8(t, s, d, n);
        }

        /// Two eight-lane calls (SHA-512 has no sixteen-lane kernel).
        fn compress_x16(t: Vaes512, s: &mut [[u64; 8]; 16], d: &[&[u8]; 16], n: usize) {
            let (s, _) = s.as_chunks_mut::<8>();
            let (d, _) = d.as_chunks::<8>();
            for (s, d) in s.iter_mut().zip(d) {
                sha512_x8::compress_x8(t, s, d, n);
            }
        }

        fn avx2_lanes(tuning: Tuning) -> bool {
            tuning.avx2_sha512_lanes
        }

        const AVX2_WIDTH: usize = 4;
        const AVX2_TAILS: bool = true;

        /// Four busy lanes take 0.65 of the single stream's time per block
        /// of each on AMD family 0x17 model 0x31 (`sha512_avx2_x4`), so
        /// three in a call of four take 0.87 of it and still gain.
        const AVX2_MIN_BUSY: usize = 3;

        const AVX2_BEATS_SINGLE: [&'static [(usize, usize)]; 2] =
            [&SHA384_AVX2_SEAL, &SHA384_AVX2_OPEN];

        fn compress8_avx2(t: Avx2, s: &mut [[u64; 8]; 8], d: &[&[u8]; 8], n: usize) {
            let (s, _) = s.split_first_chunk_mut::<4>().expect("4 of 8");
            let (d, _) = d.split_first_chunk::<4>().expect("4 of 8");
            sha512_avx2_x4::compress_x4(t, s, d, n);
        }

        // SHA-NI has no SHA-512.
        const PAIRS: bool = false;

        fn compress2(_: ShaNi, _: &mut [[u64; 8]; 2], _: &[&[u8]; 2], _: usize) {
            unreachable!("SHA-384 has no two-stream kernel (PAIRS is false)")
        }
    }

    fn hash_all(t: Option<Vaes512>, window: &mut Window<'_>) {
        let Some(first) = window.iter().flatten().next() else {
            return;
        };
        let compressor = *first.mac.compressor();
        match first.mac.states() {
            AnyStates::Sha1(_) => {
                with_compressor!(compressor, |c| hash_window::<Sha1>(t, window, c))
            }
            AnyStates::Sha256(_) => {
                with_compressor!(compressor, |c| hash_window::<Sha256>(t, window, c))
            }
            AnyStates::Sha384(_) => {
                with_compressor!(compressor, |c| hash_window::<Sha384>(t, window, c))
            }
            // `Kind::of` keeps HMAC-SHA512 jobs out of lane windows.
            AnyStates::Sha512(_) => unreachable!("HMAC-SHA512 jobs never run in lanes"),
        }
    }

    fn hash_window<H: LaneHash>(
        t: Option<Vaes512>,
        window: &mut Window<'_>,
        single: &impl Compress<H>,
    ) {
        let mut jobs: [Option<HashJob<'_, H>>; WINDOW] = Default::default();
        for (slot, job) in jobs.iter_mut().zip(window.iter_mut()) {
            let Some(job) = job else { continue };
            let m = job.mac.output_len();
            let s = H::states(job.mac.states()).expect("one kind per window");
            let (data, tag) = match job.order {
                Order::HashThenCipher => {
                    let (data, rest) = job.buf.split_at_mut(job.plaintext_len);
                    (&*data, &mut rest[..m])
                }
                Order::CipherThenHash => {
                    let end = job.buf.len() - m;
                    let (data, tag) = job.buf.split_at_mut(end);
                    (&*data, tag)
                }
            };
            *slot = Some(HashJob {
                states: s,
                prefix: job.header,
                data,
                tag: Some(tag),
                engine: None,
            });
        }
        hash_jobs(t, &mut jobs, single);
    }

    /// Runs every job's hash, sixteen lanes at a time (with `t`; else
    /// on the AVX2 lanes where [`LaneHash::avx2_lanes`] says so, and two
    /// SHA-NI streams at a time).
    pub(super) fn hash_jobs<H: LaneHash>(
        t: Option<Vaes512>,
        jobs: &mut [Option<HashJob<'_, H>>],
        single: &impl Compress<H>,
    ) {
        let avx2 = if t.is_none() && H::avx2_lanes(Tuning::get()) {
            Avx2::allowed()
        } else {
            None
        };
        hash_jobs_on(t, avx2, jobs, single);
    }

    /// [`hash_jobs`] on the lane kernels given: `t`'s, else `avx2`'s,
    /// then two SHA-NI streams at a time.
    fn hash_jobs_on<H: LaneHash>(
        t: Option<Vaes512>,
        avx2: Option<Avx2>,
        jobs: &mut [Option<HashJob<'_, H>>],
        single: &impl Compress<H>,
    ) {
        let mut queue = jobs.iter_mut().flatten().peekable();
        while queue.peek().is_some() {
            let mut group: [Option<&mut HashJob<'_, H>>; 16] = Default::default();
            for slot in group.iter_mut() {
                *slot = queue.next();
            }
            hash_group(t, avx2, &mut group, single);
        }
    }

    /// Segments of one lane's hashing, in order: the first block (prefix
    /// and the start of the data, copied), the data's whole blocks in
    /// place, the final block or two (copied, with the padding), and the
    /// outer hash's one block.
    #[derive(Clone, Copy, PartialEq, Eq)]
    enum Segment {
        Head,
        Middle,
        Tail,
        Outer,
        Done,
    }

    /// One lane: its copied blocks and where it is.
    struct Lane<'a, H: HashFunction> {
        /// The copied blocks, one after another: the first block at 0;
        /// from one block on, the bytes after the whole blocks (when
        /// finishing, with the padding: up to two blocks); from three
        /// blocks on, the outer hash's block. Sized for 128-byte blocks.
        scratch: [u8; 4 * 128],
        /// `data[middle..]` holds the whole blocks hashed in place.
        data: &'a [u8],
        middle: usize,
        middle_blocks: usize,
        tail_blocks: usize,
        rest_len: usize,
        /// Finish the HMAC, or stop after the message's whole blocks.
        finish: bool,
        segment: Segment,
        /// Where the current segment's next block starts: in `data` for
        /// `Middle`, else in `scratch`. With `left`, kept as the lane
        /// advances, so that the loop over the lanes does not work them
        /// out from the segment for every lane at every step.
        pos: usize,
        /// Blocks left in the current segment.
        left: usize,
        _hash: core::marker::PhantomData<H>,
    }

    impl<'a, H: HashFunction> Lane<'a, H> {
        const TAIL: usize = H::BLOCK_LEN;
        const OUTER: usize = 3 * H::BLOCK_LEN;

        /// A lane from the first block, built in `slot`.
        fn new_in<'s>(
            slot: &'s mut Option<Self>,
            prefix: &[u8; 13],
            data: &'a [u8],
            finish: bool,
        ) -> &'s mut Self {
            Self::start_in(slot, prefix, data, finish, Segment::Head)
        }

        /// A finishing lane of a message of at least a block whose first
        /// block and `hashed` whole blocks after it were hashed elsewhere
        /// (the stitched seal, which has encrypted them in place since),
        /// built in `slot`.
        fn past_in(slot: &mut Option<Self>, data: &'a [u8], hashed: usize) {
            debug_assert!(13 + data.len() >= H::BLOCK_LEN);
            let lane = Self::start_in(slot, &[0; 13], data, true, Segment::Middle);
            if hashed < lane.middle_blocks {
                lane.pos += hashed * H::BLOCK_LEN;
                lane.left -= hashed;
            } else {
                lane.enter(Segment::Tail);
            }
        }

        /// A lane from segment `from`: `Head`, or `Middle` if the first
        /// block was hashed elsewhere (then it is not read). Built in
        /// `slot`, its bytes written there: a lane built aside and moved in
        /// would be read back right after its narrow, unaligned stores,
        /// which the store buffer cannot forward to the copy's loads.
        fn start_in<'s>(
            slot: &'s mut Option<Self>,
            prefix: &[u8; 13],
            data: &'a [u8],
            finish: bool,
            from: Segment,
        ) -> &'s mut Self {
            let b = H::BLOCK_LEN;
            let msg_len = 13 + data.len();
            let (segment, middle, middle_blocks, rest_len) = if msg_len >= b {
                let full = msg_len / b;
                let middle = b - 13;
                let rest = middle + (full - 1) * b;
                (from, middle, full - 1, data.len() - rest)
            } else {
                let first = if finish { Segment::Tail } else { Segment::Done };
                (first, 0, 0, msg_len)
            };
            let tail_blocks = match finish {
                false => 0,
                true if rest_len + 1 + H::LENGTH_FIELD_LEN > b => 2,
                true => 1,
            };
            let lane = slot.insert(Lane {
                scratch: [0u8; 4 * 128],
                data,
                middle,
                middle_blocks,
                tail_blocks,
                rest_len,
                finish,
                segment,
                pos: 0,
                left: 0,
                _hash: core::marker::PhantomData,
            });
            lane.enter(segment);
            let (head, rest) = lane.scratch.split_at_mut(Self::TAIL);
            let tail = &mut rest[..2 * b];
            if msg_len >= b {
                if from == Segment::Head {
                    head[..13].copy_from_slice(prefix);
                    head[13..b].copy_from_slice(&data[..b - 13]);
                }
                tail[..rest_len].copy_from_slice(&data[data.len() - rest_len..]);
            } else {
                tail[..13].copy_from_slice(prefix);
                tail[13..msg_len].copy_from_slice(data);
            }
            if finish {
                let t = &mut tail[..tail_blocks * b];
                t[rest_len] = 0x80;
                let bits = ((b + msg_len) as u64) * 8;
                let end = t.len();
                t[end - 8..].copy_from_slice(&bits.to_be_bytes());
            }
            lane
        }

        /// Moves to the start of `segment`.
        fn enter(&mut self, segment: Segment) {
            self.segment = segment;
            (self.pos, self.left) = match segment {
                Segment::Head => (0, 1),
                Segment::Middle => (self.middle, self.middle_blocks),
                Segment::Tail => (Self::TAIL, self.tail_blocks),
                Segment::Outer => (Self::OUTER, 1),
                Segment::Done => (0, 0),
            };
        }

        /// Where a lane that does not finish stopped, into `slot`: `state`
        /// after the message's whole blocks, and the bytes left over.
        fn engine_into(&self, state: &H::State, slot: &mut Option<Engine<H>>) {
            let e = slot.insert(Engine::<H>::resume(*state, 0));
            let rest = &self.scratch[Self::TAIL..Self::TAIL + self.rest_len];
            e.buffer.as_mut()[..self.rest_len].copy_from_slice(rest);
            e.buffered = self.rest_len;
            e.total = (H::BLOCK_LEN + 13 + self.data.len()) as u64;
        }

        fn busy(&self) -> bool {
            self.segment != Segment::Done
        }

        /// Blocks left in the current segment.
        fn left(&self) -> usize {
            self.left
        }

        /// The current segment's unhashed bytes.
        fn input(&self) -> &[u8] {
            let from = match self.segment {
                Segment::Middle => self.data,
                _ => &self.scratch[..],
            };
            &from[self.pos..self.pos + self.left * H::BLOCK_LEN]
        }

        /// Records `n` hashed blocks; on finishing a segment moves on,
        /// switching `state` to the outer hash after the inner one and
        /// writing the tag after that (or, not finishing, handing the
        /// engine to the job once the whole blocks are done: the lane's
        /// state is then reused as a filler).
        fn advance(&mut self, n: usize, state: &mut H::State, job: &mut HashJob<'_, H>) {
            self.left -= n;
            self.pos += n * H::BLOCK_LEN;
            while self.busy() && self.left == 0 {
                let next = match self.segment {
                    Segment::Head => Segment::Middle,
                    Segment::Middle if self.finish => Segment::Tail,
                    Segment::Middle => {
                        self.engine_into(state, &mut job.engine);
                        Segment::Done
                    }
                    Segment::Tail => {
                        let o = &mut self.scratch[Self::OUTER..Self::OUTER + H::BLOCK_LEN];
                        H::write_output(state, &mut o[..H::OUTPUT_LEN]);
                        o[H::OUTPUT_LEN] = 0x80;
                        let bits = ((H::BLOCK_LEN + H::OUTPUT_LEN) as u64) * 8;
                        let end = o.len();
                        o[end - 8..].copy_from_slice(&bits.to_be_bytes());
                        *state = job.states.outer;
                        Segment::Outer
                    }
                    Segment::Outer => {
                        if let Some(tag) = job.tag.as_deref_mut() {
                            H::write_output(state, tag);
                        }
                        Segment::Done
                    }
                    Segment::Done => Segment::Done,
                };
                self.enter(next);
            }
        }
    }

    fn hash_group<H: LaneHash>(
        t: Option<Vaes512>,
        avx2: Option<Avx2>,
        group: &mut [Option<&mut HashJob<'_, H>>; 16],
        single: &impl Compress<H>,
    ) {
        let mut state = [H::ZERO_STATE; 16];
        let mut lanes: [Option<Lane<'_, H>>; 16] = core::array::from_fn(|_| None);
        for ((lane, st), job) in lanes.iter_mut().zip(&mut state).zip(group.iter_mut()) {
            if let Some(job) = job {
                if job.tag.is_none() && 13 + job.data.len() < H::BLOCK_LEN {
                    // Shorter than a block and not finished here (the
                    // prefix of a short record being opened): nothing to
                    // hash (the engine only buffers the bytes), and no lane
                    // to build.
                    // Built in place: a copy of an engine just written by
                    // narrow stores would load it back wider, which the
                    // store buffer cannot forward.
                    let e = job
                        .engine
                        .insert(Engine::<H>::resume(job.states.inner, H::BLOCK_LEN as u64));
                    e.update(single, &job.prefix);
                    e.update(single, job.data);
                    continue;
                }
                *st = job.states.inner;
                let l = Lane::new_in(lane, &job.prefix, job.data, job.tag.is_some());
                if !l.busy() {
                    // A message shorter than a block: nothing to hash.
                    l.engine_into(st, &mut job.engine);
                }
            }
        }
        run_group(t, avx2, group, &mut lanes, &mut state, single);
    }

    /// Runs the lanes of `group` to their ends from `state`: in the lane
    /// kernels (`t`'s, else `avx2`'s) while enough are busy, then two
    /// SHA-NI streams at a time, then one.
    fn run_group<'a, H: LaneHash>(
        t: Option<Vaes512>,
        avx2: Option<Avx2>,
        group: &mut [Option<&mut HashJob<'_, H>>; 16],
        lanes: &mut [Option<Lane<'a, H>>; 16],
        state: &mut [H::State; 16],
        single: &impl Compress<H>,
    ) {
        while let Some(t) = t {
            let busy = lanes.iter().flatten().filter(|l| l.busy());
            let (count, step) = busy.fold((0, usize::MAX), |(n, s), l| (n + 1, s.min(l.left())));
            if count < H::min_busy().max(2) {
                break;
            }
            let used = lanes
                .iter()
                .rposition(|l| l.as_ref().is_some_and(Lane::busy))
                .map_or(0, |i| i + 1);
            {
                // Idle lanes hash a busy lane's input, into a state that
                // is thrown away.
                let filler = lanes
                    .iter()
                    .flatten()
                    .find(|l| l.busy())
                    .map_or(&[][..], Lane::input);
                let mut inputs: [&[u8]; 16] = [filler; 16];
                for (input, lane) in inputs.iter_mut().zip(lanes.iter()) {
                    if let Some(l) = lane.as_ref().filter(|l| l.busy()) {
                        *input = l.input();
                    }
                }
                if count <= 8 {
                    // The busy lanes, wherever they are, in one eight-lane
                    // call; the others keep their states.
                    let mut at = [usize::MAX; 8];
                    let busy = (0..16).filter(|&i| lanes[i].as_ref().is_some_and(Lane::busy));
                    for (slot, i) in at.iter_mut().zip(busy) {
                        *slot = i;
                    }
                    let mut packed = [H::ZERO_STATE; 8];
                    let mut data: [&[u8]; 8] = [filler; 8];
                    for ((st, d), &i) in packed.iter_mut().zip(&mut data).zip(&at) {
                        if i < 16 {
                            (*st, *d) = (state[i], inputs[i]);
                        }
                    }
                    H::compress8(t, &mut packed, &data, step);
                    for (st, &i) in packed.iter().zip(&at) {
                        if i < 16 {
                            state[i] = *st;
                        }
                    }
                } else {
                    H::compress16(t, state, &inputs, step, used);
                }
            }
            for ((lane, st), job) in lanes.iter_mut().zip(state.iter_mut()).zip(group.iter_mut()) {
                if let (Some(lane), Some(job)) = (lane, job)
                    && lane.busy()
                {
                    lane.advance(step, st, job);
                }
            }
        }
        // Without AVX-512, where the AVX2 lanes out-hash two SHA-NI
        // streams at a time, or one for a hash without pairs (`hash_jobs`).
        if let Some(a) = avx2 {
            avx2_lanes(a, group, lanes, state);
        }
        // The few left: two at a time on SHA-NI where the hash has such a
        // kernel (faster than one stream each on every CPU measured), then
        // the last one alone. Which lanes pair depends only on their
        // public lengths.
        if let Some(ni) = ShaNi::detect().filter(|_| H::PAIRS) {
            loop {
                let mut busy = lanes
                    .iter_mut()
                    .zip(state.iter_mut())
                    .zip(group.iter_mut())
                    .filter_map(|((lane, st), job)| match (lane, job) {
                        (Some(lane), Some(job)) if lane.busy() => Some((lane, st, job)),
                        _ => None,
                    });
                let (Some((l0, s0, j0)), Some((l1, s1, j1))) = (busy.next(), busy.next()) else {
                    break;
                };
                let n = l0.left().min(l1.left());
                let mut pair = [*s0, *s1];
                H::compress2(ni, &mut pair, &[l0.input(), l1.input()], n);
                [*s0, *s1] = pair;
                l0.advance(n, s0, j0);
                l1.advance(n, s1, j1);
            }
        }
        for ((lane, st), job) in lanes.iter_mut().zip(state.iter_mut()).zip(group.iter_mut()) {
            if let (Some(lane), Some(job)) = (lane, job) {
                while lane.busy() {
                    let n = lane.left();
                    let (blocks, _) = H::split_blocks(lane.input());
                    single.compress(st, &blocks[..n]);
                    lane.advance(n, st, job);
                }
            }
        }
    }

    /// [`run_group`]'s AVX2 lanes: runs the busy lanes of `lanes`
    /// [`LaneHash::AVX2_WIDTH`] at a time, chosen by their public lengths,
    /// until fewer than [`LaneHash::AVX2_MIN_BUSY`] are busy.
    fn avx2_lanes<H: LaneHash>(
        a: Avx2,
        group: &mut [Option<&mut HashJob<'_, H>>; 16],
        lanes: &mut [Option<Lane<'_, H>>; 16],
        state: &mut [H::State; 16],
    ) {
        loop {
            let mut order = [0usize; 16];
            let mut count = 0;
            for (i, lane) in lanes.iter().enumerate() {
                if lane.as_ref().is_some_and(Lane::busy) {
                    order[count] = i;
                    count += 1;
                }
            }
            if count < H::AVX2_MIN_BUSY {
                return;
            }
            let left = |i: usize| lanes[i].as_ref().map_or(0, Lane::left);
            order[..count].sort_unstable_by_key(|&i| core::cmp::Reverse(left(i)));
            let chosen = &order[..count.min(H::AVX2_WIDTH)];
            let step = chosen.iter().map(|&i| left(i)).min().unwrap_or(0);
            {
                // A lane short of eight hashes the first one's input into
                // a state that is thrown away.
                let input = |i: usize| lanes[i].as_ref().map_or(&[][..], Lane::input);
                let mut packed = [H::ZERO_STATE; 8];
                let mut data: [&[u8]; 8] = [input(chosen[0]); 8];
                for ((st, d), &i) in packed.iter_mut().zip(&mut data).zip(chosen) {
                    (*st, *d) = (state[i], input(i));
                }
                H::compress8_avx2(a, &mut packed, &data, step);
                for (st, &i) in packed.iter().zip(chosen) {
                    state[i] = *st;
                }
            }
            for &i in chosen {
                if let (Some(lane), Some(job)) = (lanes[i].as_mut(), group[i].as_mut()) {
                    lane.advance(step, &mut state[i], job);
                }
            }
        }
    }

    /// Bytes of one lane's staged stream in [`masked_in_kernel`]: up to a
    /// block buffered, the 256 bytes the padding may cover and the hash's
    /// own padding, in whole blocks (6 of 64 bytes).
    const STAGE: usize = 384;

    /// The secret-length finishes of jobs whose hash has a masking kernel
    /// (SHA-1, SHA-256): each job's stream staged once, unmasked, and every
    /// block of all lanes masked and compressed in the kernel, which keeps
    /// each lane's state after its real last block and compresses the
    /// outer block from there; `result` gets the outer hash states.
    /// `false` (nothing done) where that does not apply.
    fn masked_in_kernel<H: LaneHash>(
        t: Vaes512,
        group: &[Option<SecretTailJob<'_, H>>],
        plans: &[Option<SecretLenPlan<H>>; 16],
        rounds: usize,
        used: usize,
        result: &mut [H::State; 16],
    ) -> bool {
        if rounds * H::BLOCK_LEN > STAGE {
            return false;
        }
        let mut stage = [[0u8; STAGE]; 16];
        let mut ends = Ends::default();
        let mut state = [H::ZERO_STATE; 16];
        let mut outer = [H::ZERO_STATE; 16];
        for (i, (plan, job)) in plans.iter().zip(group).enumerate() {
            if let (Some(plan), Some(job)) = (plan, job) {
                SecretLenPlan::stage(job.engine, job.data, &mut stage[i]);
                // Below 2^20 bytes (`SecretLenPlan::new`), so these fit.
                ends.end[i] = plan.end as u32;
                ends.last_block[i] = plan.last_block as u32;
                ends.bits[i] = plan.bits;
                state[i] = job.engine.state;
                outer[i] = job.states.outer;
            }
        }
        let inputs: [&[u8]; 16] = core::array::from_fn(|i| &stage[i][..rounds * H::BLOCK_LEN]);
        if !H::secret_tail16(t, &mut state, &outer, &inputs, rounds, &ends, used) {
            return false;
        }
        *result = state;
        true
    }

    /// The lane kernels the secret-length finishes run on.
    #[derive(Clone, Copy)]
    pub(super) enum TailLanes {
        /// Sixteen or eight lanes with AVX-512 ([`LaneHash::compress16`]).
        Vaes(Vaes512),
        /// [`LaneHash::AVX2_WIDTH`] lanes a call with AVX2 alone
        /// ([`LaneHash::compress8_avx2`]).
        Avx2(Avx2),
        /// Two SHA-NI streams a call ([`LaneHash::compress2`]; only for a
        /// hash with [`LaneHash::PAIRS`]).
        Pairs(ShaNi),
    }

    impl TailLanes {
        /// The finishes' kernel where there is SHA-NI but no AVX-512: the
        /// AVX2 lanes where the hash runs on them ([`LaneHash::AVX2_TAILS`]
        /// and [`LaneHash::avx2_lanes`]), else SHA-NI pairs where
        /// `Tuning::pair_tails` says they beat one stream a job; `None`
        /// for one stream a job.
        pub(super) fn without_avx512<H: LaneHash>() -> Option<TailLanes> {
            let tuning = Tuning::get();
            if H::AVX2_TAILS && H::avx2_lanes(tuning) {
                return Avx2::allowed().map(TailLanes::Avx2);
            }
            ShaNi::detect()
                .filter(|_| H::PAIRS && tuning.pair_tails)
                .map(TailLanes::Pairs)
        }

        /// Compresses `blocks` blocks of every lane below `used` (a public
        /// count; lanes at `used` and beyond may be left alone).
        fn compress<H: LaneHash>(
            self,
            states: &mut [H::State; 16],
            data: &[&[u8]; 16],
            blocks: usize,
            used: usize,
        ) {
            let (busy, busy_data) = (&mut states[..used], &data[..used]);
            match self {
                TailLanes::Vaes(t) => H::compress16(t, states, data, blocks, used),
                TailLanes::Avx2(a) => in_calls::<H, 8>(busy, busy_data, H::AVX2_WIDTH, |s, d| {
                    H::compress8_avx2(a, s, d, blocks)
                }),
                TailLanes::Pairs(ni) => {
                    in_calls::<H, 2>(busy, busy_data, 2, |s, d| H::compress2(ni, s, d, blocks));
                }
            }
        }
    }

    /// Runs `kernel` over `states` and `data`, `width` (at most `W`) lanes
    /// a call: a call's idle lanes hash a copy of its first lane's data,
    /// and their states are dropped.
    fn in_calls<H: LaneHash, const W: usize>(
        states: &mut [H::State],
        data: &[&[u8]],
        width: usize,
        mut kernel: impl FnMut(&mut [H::State; W], &[&[u8]; W]),
    ) {
        for (s, d) in states.chunks_mut(width).zip(data.chunks(width)) {
            // A full call runs on the lanes in place: copies of a run-time
            // length were `memcpy` calls, three a call, some 6% of the
            // opens of sixteen 256-byte SHA-1 records on Zen 2.
            if let (Ok(s), Ok(d)) = (
                <&mut [H::State; W]>::try_from(&mut *s),
                <&[&[u8]; W]>::try_from(d),
            ) {
                kernel(s, d);
                continue;
            }
            // Element by element up to the constant `W`, not as one copy,
            // for the same reason.
            let mut packed = [H::ZERO_STATE; W];
            let lanes: [&[u8]; W] = core::array::from_fn(|i| d.get(i).copied().unwrap_or(d[0]));
            for (i, p) in packed.iter_mut().enumerate() {
                if let Some(x) = s.get(i) {
                    *p = *x;
                }
            }
            kernel(&mut packed, &lanes);
            for (i, p) in packed.iter().enumerate() {
                if let Some(x) = s.get_mut(i) {
                    *x = *p;
                }
            }
        }
    }

    /// The secret-length finishes of up to sixteen jobs at a time, then
    /// their outer blocks: in the kernel ([`masked_in_kernel`]) where the
    /// hash has one (on AVX-512), else block by block
    /// ([`masked_by_block`]). Which lanes take part depends only on their
    /// public lengths.
    pub(super) fn finish_secret_len<H: LaneHash>(
        kernel: TailLanes,
        jobs: &mut [Option<SecretTailJob<'_, H>>],
    ) {
        for group in jobs.chunks_mut(16) {
            // Lanes up to the last job's (a public count): the window's
            // slots past it are empty, and eight or fewer run in the
            // eight-lane kernels.
            let used = group.iter().rposition(Option::is_some).map_or(0, |i| i + 1);
            let plans: [Option<SecretLenPlan<H>>; 16] = core::array::from_fn(|i| {
                let job = group.get(i)?.as_ref()?;
                Some(SecretLenPlan::new(job.engine, job.data, job.len))
            });
            let rounds = plans
                .iter()
                .flatten()
                .map(|p| p.max_blocks)
                .max()
                .unwrap_or(0);
            let mut state = [H::ZERO_STATE; 16];
            let in_kernel = match kernel {
                TailLanes::Vaes(t) => masked_in_kernel(t, group, &plans, rounds, used, &mut state),
                TailLanes::Avx2(_) | TailLanes::Pairs(_) => false,
            };
            if !in_kernel {
                masked_by_block(kernel, group, &plans, rounds, used, &mut state);
            }
            for (st, job) in state.iter().zip(group.iter_mut()) {
                if let Some(job) = job {
                    H::write_output(st, job.tag);
                }
            }
        }
    }

    /// [`finish_secret_len`] without a masking kernel: round `r` builds
    /// block `r` of every job's padded message with the masks of the
    /// single-stream finish (`SecretLenPlan::block`), compresses all lanes
    /// at once and keeps each lane's state where its real last block is;
    /// then one lane-parallel outer block. `result` gets the outer hash
    /// states.
    fn masked_by_block<H: LaneHash>(
        kernel: TailLanes,
        group: &[Option<SecretTailJob<'_, H>>],
        plans: &[Option<SecretLenPlan<H>>; 16],
        rounds: usize,
        used: usize,
        result: &mut [H::State; 16],
    ) {
        let mut state = [H::ZERO_STATE; 16];
        for (st, job) in state.iter_mut().zip(group) {
            if let Some(job) = job {
                *st = job.engine.state;
            }
        }
        let mut inner = [H::ZERO_STATE; 16];
        let mut blocks = [H::ZERO_BLOCK; 16];
        for r in 0..rounds {
            let mut last = [0usize; 16];
            for (((block, last), plan), job) in
                blocks.iter_mut().zip(&mut last).zip(plans).zip(group)
            {
                if let (Some(plan), Some(job)) = (plan, job)
                    && r < plan.max_blocks
                {
                    *last = plan.block(job.engine, job.data, job.len, r, block);
                }
            }
            let inputs: [&[u8]; 16] = core::array::from_fn(|i| blocks[i].as_ref());
            kernel.compress::<H>(&mut state, &inputs, 1, used);
            for ((acc, st), &last) in inner.iter_mut().zip(&state).zip(&last) {
                H::or_masked(acc, st, last as u64);
            }
        }
        // The outer hash: one block per lane.
        for (((block, st), acc), job) in blocks
            .iter_mut()
            .zip(result.iter_mut())
            .zip(&inner)
            .zip(group)
        {
            let Some(job) = job else { continue };
            let o = block.as_mut();
            o.fill(0);
            H::write_output(acc, &mut o[..H::OUTPUT_LEN]);
            o[H::OUTPUT_LEN] = 0x80;
            let bits = ((H::BLOCK_LEN + H::OUTPUT_LEN) as u64) * 8;
            let end = o.len();
            o[end - 8..].copy_from_slice(&bits.to_be_bytes());
            *st = job.states.outer;
        }
        let inputs: [&[u8]; 16] = core::array::from_fn(|i| blocks[i].as_ref());
        kernel.compress::<H>(result, &inputs, 1, used);
    }

    #[cfg(test)]
    mod tests {
        use super::*;
        use crate::backends::x86_64::test_rng::SplitMix64;
        use crate::primitives::hmac::HmacStates;
        use crate::{Backend, Combination};

        /// `seal_pays` turns two jobs shorter than `TWO_JOBS_FROM` away
        /// before asking `decide`: `decide` itself must say no to them, for
        /// every kind this CPU's backends make under its tuning. A two-job
        /// path added below the floor without lowering it fails here.
        #[test]
        fn two_jobs_floor_agrees_with_decide() {
            let mut kinds = 0;
            for backend in Backend::available() {
                for combination in Combination::ALL {
                    let aes = AesKey::new(
                        backend,
                        combination.cipher(),
                        &[3; 32][..combination.cipher().key_len()],
                    );
                    let mac = HmacKey::with_backend(combination.mac(), &[5; 48], backend).unwrap();
                    for order in [Order::HashThenCipher, Order::CipherThenHash] {
                        let Some(kind) = Kind::from_parts(&aes, &mac, order) else {
                            continue;
                        };
                        kinds += 1;
                        for count in [1, 2] {
                            for shortest in
                                [0, 1, 15, 16, 63, 64, 255, 256, 1023, TWO_JOBS_FROM - 1]
                            {
                                assert!(
                                    !decide(kind, count, shortest).0,
                                    "{backend} {combination:?} {count} x {shortest}"
                                );
                            }
                        }
                    }
                }
            }
            if kinds == 0 {
                println!("SKIPPED: no backend here has lane kernels (AES-NI with SHA-NI, or VAES)");
            } else {
                println!(
                    "{kinds} kinds: no window of two shorter than {TWO_JOBS_FROM} bytes takes the lanes"
                );
            }
        }

        /// One job per tag, finished into it where `finish` says.
        fn jobs<'a, H: HashFunction>(
            states: &'a [HmacStates<H>],
            prefixes: &[[u8; 13]],
            datas: &'a [Vec<u8>],
            finish: &[bool],
            tags: &'a mut [Vec<u8>],
        ) -> Vec<Option<HashJob<'a, H>>> {
            tags.iter_mut()
                .enumerate()
                .map(|(i, tag)| {
                    Some(HashJob {
                        states: &states[i],
                        prefix: prefixes[i],
                        data: &datas[i],
                        tag: finish[i].then_some(&mut tag[..]),
                        engine: None,
                    })
                })
                .collect()
        }

        /// The AVX2 lanes' glue (`avx2_lanes`, run here whatever this
        /// CPU's tuning says): jobs of `lengths` (across the block
        /// boundaries of every segment), finished into tags or stopped
        /// after the whole blocks (the open's prefixes), `counts` at a
        /// time, each against its job run as one stream on the portable
        /// compression. A lane advanced by the wrong count, handed another
        /// lane's state or left unfinished fails it.
        fn avx2_lanes_against_one_stream<H: LaneHash>(
            avx2: Avx2,
            lengths: &[usize],
            counts: &[usize],
            seed: u64,
        ) where
            CrateCompress: Compress<H>,
        {
            let mut rng = SplitMix64(seed);
            for &count in counts {
                for _ in 0..6 {
                    let states: Vec<HmacStates<H>> = (0..count)
                        .map(|_| {
                            let mut key = [0u8; 20];
                            rng.fill(&mut key);
                            HmacStates::new(&CrateCompress, &key)
                        })
                        .collect();
                    let datas: Vec<Vec<u8>> = (0..count)
                        .map(|_| {
                            let len = lengths[rng.next() as usize % lengths.len()];
                            let mut d = vec![0u8; len];
                            rng.fill(&mut d);
                            d
                        })
                        .collect();
                    let finish: Vec<bool> =
                        (0..count).map(|_| !rng.next().is_multiple_of(3)).collect();
                    let mut prefixes = vec![[0u8; 13]; count];
                    for p in &mut prefixes {
                        rng.fill(p);
                    }
                    let mut tags = vec![vec![0u8; H::OUTPUT_LEN]; 2 * count];
                    let (ours, theirs) = tags.split_at_mut(count);
                    let mut lane_jobs = jobs(&states, &prefixes, &datas, &finish, ours);
                    hash_jobs_on(None, Some(avx2), &mut lane_jobs, &CrateCompress);
                    let mut one_jobs = jobs(&states, &prefixes, &datas, &finish, theirs);
                    for job in one_jobs.iter_mut().flatten() {
                        job.run_one(&CrateCompress);
                    }
                    for (i, (a, b)) in lane_jobs.into_iter().zip(one_jobs).enumerate() {
                        let (a, b) = (a.expect("a job"), b.expect("a job"));
                        let what = format!("{count} jobs, job {i}, {} bytes", datas[i].len());
                        match (a.engine, b.engine) {
                            (None, None) => assert!(finish[i], "{what}: no engine"),
                            (Some(x), Some(y)) => {
                                assert!(!finish[i], "{what}: an engine");
                                assert_eq!((x.buffered, x.total), (y.buffered, y.total), "{what}");
                                assert_eq!(
                                    x.finish(&CrateCompress),
                                    y.finish(&CrateCompress),
                                    "{what}"
                                );
                            }
                            _ => panic!("{what}: one side handed an engine"),
                        }
                    }
                    assert_eq!(ours, theirs, "{count} jobs: tags");
                }
            }
        }

        /// SHA-1's eight AVX2 lanes (seven busy at least).
        #[test]
        fn avx2_lanes_match_one_stream() {
            let Some(avx2) = Avx2::detect() else {
                eprintln!("SKIPPED: AVX2 SHA-1 lanes in the batch hash (CPU lacks AVX2)");
                return;
            };
            const LENGTHS: [usize; 20] = [
                0, 1, 50, 51, 52, 55, 56, 63, 64, 114, 115, 116, 119, 120, 243, 500, 1024, 1408,
                2000, 4096,
            ];
            let counts = [1, 2, 6, 7, 8, 9, 12, 15, 16, 17, 20];
            avx2_lanes_against_one_stream::<Sha1>(avx2, &LENGTHS, &counts, 0xa2a8_1a9e);
        }

        /// The secret-length finishes on `kernel` (run here whatever this
        /// CPU's tuning says): 1 to 17 jobs, each with a random prefix
        /// already absorbed and a window of up to 400 bytes of which a
        /// random length counts, every tag against the single-stream
        /// finish. A lane masked at the wrong block, left out of a call,
        /// or handed another lane's state fails it.
        fn tails_against_one_stream<H: LaneHash>(kernel: TailLanes, seed: u64)
        where
            CrateCompress: Compress<H>,
        {
            let mut rng = SplitMix64(seed);
            for count in [1usize, 2, 3, 4, 5, 8, 9, 16, 17] {
                for _ in 0..8 {
                    let states: Vec<HmacStates<H>> = (0..count)
                        .map(|_| {
                            let mut key = [0u8; 48];
                            rng.fill(&mut key);
                            HmacStates::new(&CrateCompress, &key)
                        })
                        .collect();
                    let engines: Vec<Engine<H>> = states
                        .iter()
                        .map(|st| {
                            let mut e = st.inner_engine();
                            let mut prefix = vec![0u8; (rng.next() % 300) as usize];
                            rng.fill(&mut prefix);
                            e.update(&CrateCompress, &prefix);
                            e
                        })
                        .collect();
                    let datas: Vec<Vec<u8>> = (0..count)
                        .map(|_| {
                            let mut d = vec![0u8; (rng.next() % 401) as usize];
                            rng.fill(&mut d);
                            d
                        })
                        .collect();
                    let lens: Vec<usize> = datas
                        .iter()
                        .map(|d| (rng.next() % (d.len() as u64 + 1)) as usize)
                        .collect();
                    let mut tags = vec![vec![0u8; H::OUTPUT_LEN]; 2 * count];
                    let (ours, theirs) = tags.split_at_mut(count);
                    fn jobs<'a, H: HashFunction>(
                        states: &'a [HmacStates<H>],
                        engines: &'a [Engine<H>],
                        datas: &'a [Vec<u8>],
                        lens: &[usize],
                        tags: &'a mut [Vec<u8>],
                    ) -> Vec<Option<SecretTailJob<'a, H>>> {
                        tags.iter_mut()
                            .enumerate()
                            .map(|(i, tag)| {
                                Some(SecretTailJob {
                                    states: &states[i],
                                    engine: &engines[i],
                                    data: &datas[i],
                                    len: lens[i],
                                    tag: &mut tag[..],
                                })
                            })
                            .collect()
                    }
                    let mut lane_jobs = jobs(&states, &engines, &datas, &lens, ours);
                    finish_secret_len(kernel, &mut lane_jobs);
                    drop(lane_jobs);
                    for job in jobs(&states, &engines, &datas, &lens, theirs)
                        .iter_mut()
                        .flatten()
                    {
                        job.run_one(&CrateCompress);
                    }
                    assert_eq!(ours, theirs, "{count} jobs, lengths {lens:?}");
                }
            }
        }

        /// The finishes on SHA-384's four AVX2 lanes.
        #[test]
        fn avx2_sha384_tails_match_one_stream() {
            let Some(avx2) = Avx2::detect() else {
                eprintln!("SKIPPED: AVX2 SHA-384 secret-length tails (CPU lacks AVX2)");
                return;
            };
            tails_against_one_stream::<Sha384>(TailLanes::Avx2(avx2), 0x7a11_5124);
        }

        /// The finishes of SHA-1 and SHA-256 two SHA-NI streams at a time.
        #[test]
        fn pair_tails_match_one_stream() {
            let Some(ni) = ShaNi::detect() else {
                eprintln!("SKIPPED: SHA-NI pairs of secret-length tails (CPU lacks SHA-NI)");
                return;
            };
            tails_against_one_stream::<Sha1>(TailLanes::Pairs(ni), 0x9a12_7a11);
            tails_against_one_stream::<Sha256>(TailLanes::Pairs(ni), 0x2560_7a11);
        }

        /// SHA-384's four AVX2 lanes (three busy at least), with 128-byte
        /// blocks: the first block ends 115 bytes into the data, the
        /// padding needs 17.
        #[test]
        fn avx2_sha384_lanes_match_one_stream() {
            let Some(avx2) = Avx2::detect() else {
                eprintln!("SKIPPED: AVX2 SHA-384 lanes in the batch hash (CPU lacks AVX2)");
                return;
            };
            const LENGTHS: [usize; 20] = [
                0, 1, 97, 98, 99, 114, 115, 116, 225, 226, 227, 242, 243, 244, 500, 1024, 1408,
                2000, 4096, 5000,
            ];
            let counts = [1, 2, 3, 4, 5, 7, 8, 9, 12, 16, 17, 20];
            avx2_lanes_against_one_stream::<Sha384>(avx2, &LENGTHS, &counts, 0x5124_a2a8);
        }
    }
}
