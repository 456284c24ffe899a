//! The constant-time core of opening a MAC-then-encrypt record.
//!
//! After CBC decryption the record body is `plaintext || MAC || padding`,
//! and where the plaintext ends is secret until the MAC has been checked.
//! Lucky Thirteen (CVE-2013-0169) recovered plaintext from the timing of
//! implementations that hashed only the plaintext; padding oracles
//! (Vaudenay 2002, POODLE) from telling bad padding apart from a bad MAC;
//! and OpenSSL's CVE-2016-2107 came from a fast path that dropped a public
//! length check. So, after the public length checks the caller does first:
//!
//! 1. [`check_padding`] checks the largest possible padding span (256
//!    bytes) with masks and yields a mask, never a branch;
//! 2. [`digest_record`] computes the HMAC over a plaintext of secret length
//!    with [`finish_with_secret_len`], whose work covers every length the
//!    padding allows; the public prefix before that is hashed while it is
//!    decrypted, in one pass ([`DecryptAbsorb`]: the backend may fuse the
//!    two loops, as the x86-64 SHA-NI kernels do);
//! 3. [`mac_matches`] compares the received MAC, wherever the secret length
//!    puts it: a logarithmic shifter moves it to the front of the window,
//!    one stage per bit of the secret offset, each a public shift kept or
//!    dropped by a mask (no secret index, no secret-dependent work);
//! 4. [`open_mac_then_encrypt`] composes them and returns one mask; the
//!    caller declassifies exactly that.
//!
//! Bad padding is treated as zero-length padding, so the MAC is still
//! computed and checked over a plausible split: a failure costs the same
//! whether padding or MAC was wrong. All of this is generic over the
//! compression function and shared by every backend.
//!
//! [`finish_with_secret_len`]: crate::primitives::ct_digest::finish_with_secret_len

use crate::backends::{AesKey, DecryptAbsorb, with_compressor};
use crate::primitives::ct;
use crate::primitives::ct_digest::finish_with_secret_len;
use crate::primitives::hash::{Compress, Engine, HashFunction};
use crate::primitives::hmac::{AnyStates, HmacStates, MAX_TLS_TAG_LEN};
use crate::record::mac_header_after;

/// The padding span: up to 255 padding bytes plus the length byte.
const MAX_PADDING_SPAN: usize = 256;

/// Checks the CBC padding of `body` (`len >= mac_len + 1`, public) in
/// constant time. Returns `(good, padding_total)`: `good` is a mask, and
/// `padding_total` is the number of padding bytes including the length
/// byte when good, 0 otherwise.
pub(crate) fn check_padding(body: &[u8], mac_len: usize) -> (usize, usize) {
    check_padding_by(body, mac_len, padding_diff)
}

/// [`check_padding`], the bytes of the span compared by `diff(tail, first,
/// pad)`: nonzero if a byte of `tail` at or after index `first` is not
/// `pad` (a backend's vector kernel, or [`padding_diff`]).
#[inline(always)]
pub(crate) fn check_padding_by(
    body: &[u8],
    mac_len: usize,
    diff: impl FnOnce(&[u8], u8, u8) -> usize,
) -> (usize, usize) {
    let len = body.len();
    debug_assert!(len > mac_len);
    let pad = ct::barrier(body[len - 1] as usize);
    // The padding and the MAC must fit in the record. Each mask goes
    // through the barrier: known to be 0 or all ones, the compiler would
    // otherwise be free to select with a `cmov` or a branch.
    let fits = ct::barrier(ct::ge(len, mac_len + 1 + pad));
    let window = len.min(MAX_PADDING_SPAN);
    let tail = &body[len - window..];
    // Index in `tail` of the first padding byte, clamped at 0 (a padding
    // that long does not fit anyway).
    let too_long = ct::barrier(ct::lt(window - 1, pad));
    let first = ct::select(too_long, 0, (window - 1).wrapping_sub(pad)) as u8;
    let differs = ct::barrier(diff(tail, first, pad as u8));
    let good = ct::barrier(fits & ct::is_zero(differs));
    (good, good & (pad + 1))
}

/// Nonzero if a byte of `tail` (at most 256 bytes) at or after index
/// `first` is not `p`: every byte is read, the ones before `first`
/// masked off.
#[inline(always)]
pub(crate) fn padding_diff(tail: &[u8], first: u8, p: u8) -> usize {
    // On u8 lanes (`window <= 256`) in whole 16-byte chunks, each chunk's
    // bytes side by side: sixteen accumulators and sixteen indices, one
    // 16-byte vector each. Left to itself the compiler vectorises across
    // chunks instead, gathering every sixteenth byte one at a time (12 KiB
    // of code, a sixth of the time of a short record's open); the
    // accumulator through a barrier keeps each chunk in its own iteration.
    let (chunks, rest) = tail.as_chunks::<16>();
    let mut acc = [0u8; 16];
    let mut index: [u8; 16] = core::array::from_fn(|j| j as u8);
    for chunk in chunks {
        for j in 0..16 {
            let in_pad = ct::le_u8(first, index[j]);
            acc[j] |= in_pad & (chunk[j] ^ p);
            index[j] = index[j].wrapping_add(16);
        }
        acc = ct::barrier16(acc);
    }
    let mut diff = acc.iter().fold(0, |d, &a| d | a);
    // Only for a body that is not whole blocks (no caller has one).
    for (j, &b) in rest.iter().enumerate() {
        let k = (16 * chunks.len() + j) as u8;
        let in_pad = ct::barrier(ct::le_u8(first, k) as usize) as u8;
        diff |= in_pad & (b ^ p);
    }
    diff as usize
}

/// Whether `body[data_len..data_len + expected.len()]` equals `expected`,
/// as a mask, for a secret `data_len` with `body.len() - 256 - mac_len <=
/// data_len <= body.len() - mac_len`. Memory accesses depend only on
/// `body.len()` and `expected.len()`.
///
/// The window that can hold the MAC is loaded into 64-bit words at public
/// offsets, and a logarithmic shifter moves the MAC to its front: stage `k`
/// shifts the words down by the public amount `2^k` bytes and keeps the
/// shifted or the unshifted words by a mask made from bit `k` of the secret
/// offset. The first `mac_len` bytes are then compared with `expected`.
/// Every stage reads and writes the same words whatever the offset, and
/// touches only as many words as the later stages can still move to the
/// front, so a 20-byte tag in a short record costs a few dozen word
/// operations, all in registers.
#[inline(always)]
pub(crate) fn mac_matches(body: &[u8], data_len: usize, expected: &[u8]) -> usize {
    let (window, d) = mac_window(body, data_len, expected.len());
    // Public choice of the word count: the windows of short records (the
    // latency-sensitive case) fit 8 or 16 words, which the compiler keeps
    // in registers.
    if window.len() <= 64 {
        shifted_matches::<8>(window, d, expected)
    } else if window.len() <= 128 {
        shifted_matches::<16>(window, d, expected)
    } else {
        shifted_matches::<WINDOW_WORDS>(window, d, expected)
    }
}

/// The bytes of `body` that can hold a `mac_len`-byte MAC after a secret
/// `data_len` bytes of plaintext (public: the last `mac_len + 256` at
/// most), and the MAC's secret offset in them.
#[inline(always)]
pub(crate) fn mac_window(body: &[u8], data_len: usize, mac_len: usize) -> (&[u8], usize) {
    let len = body.len();
    let start = len - len.min(mac_len + MAX_PADDING_SPAN);
    (&body[start..], ct::barrier(data_len - start))
}

/// 64-bit words in the largest window: a 48-byte tag and the padding span.
const WINDOW_WORDS: usize = (MAX_TLS_TAG_LEN + MAX_PADDING_SPAN).div_ceil(8);

/// [`mac_matches`] on `window` (at most `8 * N` bytes), with the MAC at
/// the secret offset `d <= window.len() - expected.len()`.
#[inline(always)]
fn shifted_matches<const N: usize>(window: &[u8], d: usize, expected: &[u8]) -> usize {
    // Public lengths only: `d` is secret and is never compared.
    debug_assert!(window.len() <= 8 * N && expected.len() <= window.len());
    let m = expected.len();
    let mut w = [0u64; N];
    // Public loads; bytes past the window read as zero. Written per word
    // (not as one copy) so that short windows stay in registers.
    for (i, word) in w.iter_mut().enumerate() {
        let at = 8 * i;
        if at + 8 <= window.len() {
            *word = u64::from_le_bytes(window[at..at + 8].try_into().expect("8 bytes"));
        } else if at < window.len() && window.len() >= 8 {
            // The window's last eight bytes, shifted down to the partial
            // word, instead of a byte copy into a zeroed word that the
            // word load right after cannot take from the store buffer.
            let end = window.len();
            let tail = u64::from_le_bytes(window[end - 8..].try_into().expect("8 bytes"));
            *word = tail >> (8 * (at + 8 - end));
        } else if at < window.len() {
            let mut last = [0u8; 8];
            last[..window.len() - at].copy_from_slice(&window[at..]);
            *word = u64::from_le_bytes(last);
        }
    }
    // Largest stage first: `d < 2^9` as the window is at most 304 bytes.
    // Stages of `8 N` bytes or more compile to nothing: their bit of `d`
    // is zero, as `d < window.len() <= 8 N`.
    shift_stage::<N, 8>(&mut w, d, m);
    shift_stage::<N, 7>(&mut w, d, m);
    shift_stage::<N, 6>(&mut w, d, m);
    shift_stage::<N, 5>(&mut w, d, m);
    shift_stage::<N, 4>(&mut w, d, m);
    shift_stage::<N, 3>(&mut w, d, m);
    shift_stage::<N, 2>(&mut w, d, m);
    shift_stage::<N, 1>(&mut w, d, m);
    shift_stage::<N, 0>(&mut w, d, m);

    let (whole, rest) = expected.as_chunks::<8>();
    let mut diff = 0u64;
    for (x, e) in w.iter().zip(whole) {
        diff |= x ^ u64::from_le_bytes(*e);
    }
    if !rest.is_empty() {
        let mut last = [0u8; 8];
        last[..rest.len()].copy_from_slice(rest);
        let used = u64::MAX >> (64 - 8 * rest.len());
        diff |= (w[whole.len()] ^ u64::from_le_bytes(last)) & used;
    }
    ct::is_zero_u64(diff)
}

/// Stage `K` of the shifter: moves the words down by `2^K` bytes when bit
/// `K` of the secret `d` is set, by a mask. Only the words the remaining
/// stages can still bring into the first `m` bytes are kept up to date:
/// after this stage at most `2^K - 1` bytes of shift remain, so the bytes
/// `[0, m + 2^K - 1)` are the ones that matter.
#[inline(always)]
fn shift_stage<const N: usize, const K: u32>(w: &mut [u64; N], d: usize, m: usize) {
    let bytes = 1usize << K;
    if bytes >= 8 * N {
        return;
    }
    // Through the barrier before the negation, so the compiler cannot know
    // the mask is 0 or all ones and branch on it.
    let take = (ct::barrier((d >> K) & 1) as u64).wrapping_neg();
    let live = (m + bytes - 1).div_ceil(8).min(N);
    if bytes >= 8 {
        // Whole words; words past the end read as zero (they can only
        // reach bytes no later stage brings to the front).
        let q = bytes / 8;
        for i in 0..live {
            let moved = if i + q < N { w[i + q] } else { 0 };
            w[i] = ct::select_u64(take, moved, w[i]);
        }
    } else {
        let bits = 8 * bytes as u32;
        for i in 0..live {
            let next = if i + 1 < N { w[i + 1] } else { 0 };
            let moved = (w[i] >> bits) | (next << (64 - bits));
            w[i] = ct::select_u64(take, moved, w[i]);
        }
    }
}

/// The HMAC of `header || body[..data_len]` into `out`, for a secret
/// `data_len` in `[body.len() - mac_len - 256, body.len() - mac_len]`,
/// given `engine`, which has absorbed the key block, the header and the
/// public minimum `body[..public_prefix_len(body.len(), mac_len)]`.
pub(crate) fn digest_record<H: HashFunction, C: Compress<H>>(
    c: &C,
    states: &HmacStates<H>,
    engine: &Engine<H>,
    body: &[u8],
    data_len: usize,
    out: &mut [u8],
) {
    let (tail, len) = secret_tail(body, H::OUTPUT_LEN, data_len);
    let inner = finish_with_secret_len(c, engine, tail, len);
    states.finish_outer(c, &inner, out);
}

/// The part of the plaintext whose length is secret, after the public
/// prefix, with the secret length of its real part: what the HMAC is
/// finished over.
pub(crate) fn secret_tail(body: &[u8], mac_len: usize, data_len: usize) -> (&[u8], usize) {
    let max_data = body.len() - mac_len;
    let min_data = public_prefix_len(body.len(), mac_len);
    (&body[min_data..max_data], data_len - min_data)
}

/// The part of the plaintext every valid padding leaves in place: public.
pub(crate) fn public_prefix_len(body_len: usize, mac_len: usize) -> usize {
    (body_len - mac_len).saturating_sub(MAX_PADDING_SPAN)
}

/// CBC-decrypts the padding span of `body` (its last blocks, up to 256
/// bytes) in place and returns where it starts (a block boundary, public);
/// `next_iv` receives the last ciphertext block. The rest, `body[..split]`,
/// is left encrypted and chains from `iv`.
pub(crate) fn decrypt_padding_span(
    aes: &AesKey,
    iv: &[u8; 16],
    next_iv: &mut [u8; 16],
    body: &mut [u8],
) -> usize {
    let split = body.len().saturating_sub(MAX_PADDING_SPAN);
    let mut chain = *iv;
    if split > 0 {
        chain.copy_from_slice(&body[split - 16..split]);
    }
    let (tail, _) = body[split..].as_chunks_mut::<16>();
    aes.decrypt_cbc(&mut chain, tail);
    *next_iv = chain;
    split
}

/// From a body whose padding span is decrypted: `(good, data_len,
/// header)`, the padding mask, the plaintext length (secret) and the MAC
/// header `prefix || data_len`. Bad padding reads as none, so the MAC is
/// still checked over a plausible split.
pub(crate) fn split_record(
    body: &[u8],
    mac_len: usize,
    prefix: &[u8; 11],
) -> (usize, usize, [u8; 13]) {
    split_record_by(body, mac_len, prefix, padding_diff)
}

/// [`split_record`] with the padding span compared by `diff` (see
/// [`check_padding_by`]).
#[inline(always)]
pub(crate) fn split_record_by(
    body: &[u8],
    mac_len: usize,
    prefix: &[u8; 11],
    diff: impl FnOnce(&[u8], u8, u8) -> usize,
) -> (usize, usize, [u8; 13]) {
    let (good, padding_total) = check_padding_by(body, mac_len, diff);
    let data_len = body.len() - mac_len - padding_total;
    (good, data_len, mac_header_after(prefix, data_len))
}

/// The MAC check of a decrypted body, given `engine`, which has absorbed
/// the key block, the header and the public prefix
/// `body[..public_prefix_len(body.len(), mac_len)]`: a mask.
pub(crate) fn check_record_mac<H: HashFunction, C: Compress<H>>(
    c: &C,
    states: &HmacStates<H>,
    engine: &Engine<H>,
    body: &[u8],
    data_len: usize,
) -> usize {
    let m = H::OUTPUT_LEN;
    let mut tag = [0u8; MAX_TLS_TAG_LEN];
    digest_record(c, states, engine, body, data_len, &mut tag[..m]);
    mac_matches(body, data_len, &tag[..m])
}

/// Decrypts a MAC-then-encrypt `body` in place (CBC from `iv`) and checks
/// its padding and MAC in constant time; `prefix` is the MAC header before
/// the length (`seq || type || version`, see `mac_prefix`). `body.len()` (public) is whole
/// blocks and at least `mac_len + 1`. Returns `(ok, data_len)`: `ok` is a
/// mask; `data_len` is meaningful only when `ok` is set. `next_iv`
/// receives the last ciphertext block (TLS 1.0's next IV).
///
/// The last blocks (the padding span) are decrypted first: their padding
/// fixes the MAC header's length field, the first bytes hashed. The rest is
/// then decrypted and its public prefix hashed in one pass.
pub(crate) fn open_mac_then_encrypt(
    states: &AnyStates,
    compressor: &crate::backends::Compressor,
    aes: &AesKey,
    iv: &[u8; 16],
    next_iv: &mut [u8; 16],
    prefix: &[u8; 11],
    body: &mut [u8],
) -> (usize, usize) {
    fn run<H: HashFunction, C: DecryptAbsorb<H>>(
        c: &C,
        states: &HmacStates<H>,
        aes: &AesKey,
        iv: &[u8; 16],
        next_iv: &mut [u8; 16],
        prefix: &[u8; 11],
        body: &mut [u8],
    ) -> (usize, usize) {
        let split = decrypt_padding_span(aes, iv, next_iv, body);
        let (good, data_len, header) = split_record(body, H::OUTPUT_LEN, prefix);
        let mut engine = states.inner_engine();
        let prefix = public_prefix_len(body.len(), H::OUTPUT_LEN);
        c.decrypt_absorb(aes, iv, &mut body[..split], &mut engine, &header, prefix);
        let mac_ok = check_record_mac(c, states, &engine, body, data_len);
        (good & mac_ok, data_len)
    }
    with_compressor!(*compressor, |c| match states {
        AnyStates::Sha1(s) => run(c, s, aes, iv, next_iv, prefix, body),
        AnyStates::Sha256(s) => run(c, s, aes, iv, next_iv, prefix, body),
        AnyStates::Sha384(s) => run(c, s, aes, iv, next_iv, prefix, body),
        // No TLS combination has HMAC-SHA512 (the record layer builds its
        // key from a `Combination`), and its tag would not fit the window:
        // reject, as a bad record, should one ever get here.
        AnyStates::Sha512(_) => (0, 0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn padded(data_and_mac: usize, pad: u8, fill: u8) -> ([u8; 600], usize) {
        let mut buf = [fill; 600];
        let len = data_and_mac + pad as usize + 1;
        for b in &mut buf[data_and_mac..len] {
            *b = pad;
        }
        (buf, len)
    }

    #[test]
    fn padding_every_length() {
        for pad in 0..=255u8 {
            let (buf, len) = padded(40, pad, 0xaa);
            let (good, total) = check_padding(&buf[..len], 20);
            assert_eq!(good, usize::MAX, "pad {pad}");
            assert_eq!(total, pad as usize + 1);
        }
    }

    #[test]
    fn padding_rejects_any_wrong_byte() {
        for pad in [0u8, 1, 15, 16, 100, 254] {
            // Any padding byte other than the length byte.
            for wrong in 1..=pad as usize {
                let (mut buf, len) = padded(40, pad, 0xaa);
                buf[len - 1 - wrong] ^= 1;
                let (good, total) = check_padding(&buf[..len], 20);
                assert_eq!((good, total), (0, 0), "pad {pad} byte {wrong}");
            }
            // A length byte claiming one more padding byte than there is.
            let (mut buf, len) = padded(40, pad, 0xaa);
            buf[len - 1] = pad + 1;
            assert_eq!(check_padding(&buf[..len], 20), (0, 0), "pad {pad} + 1");
        }
    }

    #[test]
    fn padding_must_leave_room_for_the_mac() {
        // 21 bytes of body, padding byte 1: 20-byte MAC + 2 padding bytes
        // does not fit.
        let buf = [1u8; 21];
        assert_eq!(check_padding(&buf, 20), (0, 0));
        let buf = [0u8; 21];
        assert_eq!(check_padding(&buf, 20), (usize::MAX, 1));
    }

    #[test]
    fn mac_found_at_every_offset() {
        let expected: [u8; 20] = core::array::from_fn(|i| i as u8 + 1);
        let len = 400;
        for data_len in (len - 20 - 256)..=(len - 20) {
            let mut body = [0x55u8; 400];
            body[data_len..data_len + 20].copy_from_slice(&expected);
            assert_eq!(mac_matches(&body, data_len, &expected), usize::MAX);
            // One wrong byte anywhere in the MAC is caught.
            for k in [0, 7, 19] {
                let mut bad = body;
                bad[data_len + k] ^= 0x80;
                assert_eq!(mac_matches(&bad, data_len, &expected), 0, "{data_len} {k}");
            }
            // Bytes outside the MAC do not matter.
            let mut other = body;
            if data_len > 0 {
                other[data_len - 1] ^= 1;
            }
            if data_len + 20 < len {
                other[data_len + 20] ^= 1;
            }
            assert_eq!(mac_matches(&other, data_len, &expected), usize::MAX);
        }
    }

    /// Every tag length, every body length (whole blocks) up to past the
    /// largest window, every offset the padding allows: the tag is found;
    /// one flipped bit anywhere in it is caught; bytes around it do not
    /// matter. Covers each word count of the shifter.
    #[test]
    fn mac_found_for_every_tag_length_and_offset() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for m in [20usize, 32, 48] {
            for len in (16..=352).step_by(16).filter(|&len| len > m) {
                let lowest = (len - m).saturating_sub(MAX_PADDING_SPAN);
                for data_len in lowest..=len - m {
                    let mut body = [0u8; 352];
                    body.iter_mut().for_each(|b| *b = next() as u8);
                    let body = &mut body[..len];
                    let expected: [u8; 48] = core::array::from_fn(|i| body[(data_len + i) % len]);
                    let expected = &expected[..m];
                    assert_eq!(
                        mac_matches(body, data_len, expected),
                        usize::MAX,
                        "{m} {len} {data_len}"
                    );
                    let r = next() as usize;
                    let at = data_len + r % m;
                    body[at] ^= 1 << ((r >> 8) % 8);
                    assert_eq!(
                        mac_matches(body, data_len, expected),
                        0,
                        "{m} {len} {data_len} flip"
                    );
                    body[at] = expected[at - data_len];
                    if data_len > 0 {
                        body[data_len - 1] ^= 0xff;
                    }
                    if data_len + m < len {
                        body[data_len + m] ^= 0xff;
                    }
                    assert_eq!(
                        mac_matches(body, data_len, expected),
                        usize::MAX,
                        "{m} {len} {data_len} around"
                    );
                }
            }
        }
    }

    #[test]
    fn mac_in_short_bodies_and_long_tags() {
        let expected = [0xc3u8; 48];
        for len in 48..=120 {
            for data_len in 0..=(len - 48) {
                let mut body = [0u8; 120];
                body[data_len..data_len + 48].copy_from_slice(&expected);
                assert_eq!(mac_matches(&body[..len], data_len, &expected), usize::MAX);
                body[data_len + 47] = 0;
                assert_eq!(mac_matches(&body[..len], data_len, &expected), 0);
            }
        }
    }
}
