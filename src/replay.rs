//! Anti-replay windows for ESP (RFC 4303 section 3.4.3) and DTLS record
//! layers (RFC 6347 section 4.1.2.6).
//!
//! The window remembers the highest sequence number accepted and a bitmap
//! of which of the numbers just below it were seen. The bitmap is RFC
//! 6479's ring of 64-bit words: the bit of number `n` sits at a fixed
//! place (`n` modulo the ring's bits), so sliding the window forward
//! clears only the words it enters, never shifts the whole map. One word
//! of the ring is kept as the slack that lets the window slide a word at a
//! time, so a ring of `WORDS` words is a window of `(WORDS - 1) * 64`
//! numbers.
//!
//! The order matters (RFC 4303 section 3.4.3): [`ReplayWindow::check`]
//! before authenticating (cheap rejection of replays and stale packets
//! before any MAC work), [`ReplayWindow::update`] only after the packet
//! authenticated, so forged packets cannot move the window.
//!
//! ```
//! use cbc_hmac::{Error, ReplayWindow};
//!
//! let mut window = ReplayWindow::<16>::new(); // 960 numbers
//! for seq in [1, 2, 5, 3] {
//!     window.check(seq)?;
//!     // ... authenticate the packet, then:
//!     window.update(seq)?;
//! }
//! assert_eq!(window.check(2), Err(Error::Replayed { seq: 2 }));
//! assert!(window.check(4).is_ok());
//! window.update(2000)?;
//! assert_eq!(window.check(5), Err(Error::Replayed { seq: 5 })); // left of the window
//! # Ok::<(), cbc_hmac::Error>(())
//! ```

use crate::error::Error;

/// An anti-replay window over 64-bit sequence numbers: a ring of `WORDS`
/// 64-bit words (a power of two, at least 2), covering
/// [`ReplayWindow::SIZE`] `= (WORDS - 1) * 64` numbers. The default, 16
/// words, is a 960-number window; RFC 4303 asks for at least 32 and
/// recommends 64 (`ReplayWindow<2>`), but fast links reorder more.
///
/// No call allocates. Sequence number 0 is accepted once (DTLS's first
/// record); ESP senders start at 1.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplayWindow<const WORDS: usize = 16> {
    /// Highest sequence number accepted so far (0 before any).
    top: u64,
    bitmap: [u64; WORDS],
}

impl<const WORDS: usize> Default for ReplayWindow<WORDS> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const WORDS: usize> ReplayWindow<WORDS> {
    /// How many sequence numbers the window covers, the highest accepted
    /// one included.
    pub const SIZE: u64 = (WORDS as u64 - 1) * 64;

    const BITS: u64 = WORDS as u64 * 64;

    /// An empty window: nothing seen, right edge at 0.
    pub const fn new() -> Self {
        const {
            assert!(
                WORDS >= 2 && WORDS.is_power_of_two(),
                "WORDS must be a power of two, at least 2"
            )
        };
        ReplayWindow {
            top: 0,
            bitmap: [0; WORDS],
        }
    }

    /// The highest sequence number accepted so far (0 before any).
    pub fn top(&self) -> u64 {
        self.top
    }

    /// Whether `seq` may be new: above the highest accepted, or inside the
    /// window and not seen yet. Changes nothing. Otherwise
    /// [`Error::Replayed`].
    pub fn check(&self, seq: u64) -> Result<(), Error> {
        if seq > self.top {
            return Ok(());
        }
        if self.top - seq >= Self::SIZE || self.bitmap[Self::word(seq)] & Self::bit(seq) != 0 {
            return Err(Error::Replayed { seq });
        }
        Ok(())
    }

    /// Records `seq` as seen, sliding the window forward when `seq` is
    /// above its right edge. Call only once the packet has authenticated.
    /// Checks again first ([`Error::Replayed`] when `seq` was seen since
    /// [`ReplayWindow::check`], or is left of the window).
    pub fn update(&mut self, seq: u64) -> Result<(), Error> {
        self.check(seq)?;
        if seq > self.top {
            let old = self.top / 64;
            let new = seq / 64;
            // Clear the words the window slides into (all of them on a jump
            // of a whole ring or more).
            let entered = (new - old).min(WORDS as u64);
            for i in 1..=entered {
                self.bitmap[((old + i) % WORDS as u64) as usize] = 0;
            }
            self.top = seq;
        }
        self.bitmap[Self::word(seq)] |= Self::bit(seq);
        Ok(())
    }

    /// The full 64-bit sequence number of an ESP packet whose header
    /// carries only its low 32 bits, with extended sequence numbers (RFC
    /// 4303 Appendix A2.2): the candidate nearest the window. `None` when
    /// that candidate would lie below 0 (a stale packet from before the
    /// first subspace).
    ///
    /// ```
    /// use cbc_hmac::ReplayWindow;
    ///
    /// let mut window = ReplayWindow::<2>::new(); // 64 numbers
    /// window.update((1 << 32) + 10)?;
    /// assert_eq!(window.infer_esn(12), Some((1 << 32) + 12));
    /// assert_eq!(window.infer_esn(u32::MAX - 5), Some(u32::MAX as u64 - 5)); // just before the wrap
    /// # Ok::<(), cbc_hmac::Error>(())
    /// ```
    pub fn infer_esn(&self, seq_lo: u32) -> Option<u64> {
        let w = Self::SIZE as u32;
        let tl = self.top as u32;
        let th = (self.top >> 32) as u32;
        let bottom = tl.wrapping_sub(w).wrapping_add(1);
        let hi = if tl >= w - 1 {
            // The window lies inside one 2^32 subspace.
            if seq_lo >= bottom {
                th
            } else {
                th.checked_add(1)?
            }
        } else if seq_lo >= bottom {
            // The window spans two subspaces; this one is in the lower.
            th.checked_sub(1)?
        } else {
            th
        };
        Some(((hi as u64) << 32) | seq_lo as u64)
    }

    #[inline]
    fn word(seq: u64) -> usize {
        ((seq % Self::BITS) / 64) as usize
    }

    #[inline]
    fn bit(seq: u64) -> u64 {
        1 << (seq % 64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A plain model: the set of accepted numbers and the highest.
    struct Model {
        seen: std::collections::BTreeSet<u64>,
        top: u64,
        size: u64,
    }

    impl Model {
        fn check(&self, seq: u64) -> bool {
            seq > self.top || (self.top - seq < self.size && !self.seen.contains(&seq))
        }
    }

    #[test]
    fn edges_of_the_window() {
        let mut w = ReplayWindow::<2>::new();
        assert_eq!(ReplayWindow::<2>::SIZE, 64);
        w.update(100).unwrap();
        // 100 - 63 is the left edge, inside; 100 - 64 is outside.
        assert!(w.check(37).is_ok());
        assert_eq!(w.check(36), Err(Error::Replayed { seq: 36 }));
        w.update(37).unwrap();
        assert_eq!(w.check(37), Err(Error::Replayed { seq: 37 }));
        assert_eq!(w.update(37), Err(Error::Replayed { seq: 37 }));
        assert_eq!(w.check(100), Err(Error::Replayed { seq: 100 }));
        // Sliding by one moves 37 out of the window.
        w.update(101).unwrap();
        assert_eq!(w.check(37), Err(Error::Replayed { seq: 37 }));
        assert!(w.check(38).is_ok());
        // A jump of more than the ring clears everything.
        w.update(1000).unwrap();
        assert!(w.check(999).is_ok());
        assert!(w.check(937).is_ok());
        assert!(w.check(936).is_err());
        assert!(w.check(101).is_err());
        // Zero is accepted once, for DTLS.
        let mut d = ReplayWindow::<4>::new();
        d.check(0).unwrap();
        d.update(0).unwrap();
        assert_eq!(d.check(0), Err(Error::Replayed { seq: 0 }));
    }

    /// Random walks against the model, for a small and the default ring.
    #[test]
    fn agrees_with_a_model() {
        fn run<const W: usize>(mut seed: u64) {
            let mut w = ReplayWindow::<W>::new();
            let mut m = Model {
                seen: Default::default(),
                top: 0,
                size: ReplayWindow::<W>::SIZE,
            };
            let mut next = move || {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                seed
            };
            for _ in 0..20_000 {
                let r = next();
                let span = 3 * m.size;
                let seq = match r % 4 {
                    0 => m.top + 1 + (r >> 8) % 4,
                    1 => m.top.saturating_sub((r >> 8) % span),
                    2 => m.top + (r >> 8) % span,
                    _ => m.top.saturating_sub(m.size - 1 + (r >> 8) % 3),
                };
                let expected = m.check(seq);
                assert_eq!(w.check(seq).is_ok(), expected, "check {seq} top {}", m.top);
                if r & (1 << 40) != 0 {
                    assert_eq!(w.update(seq).is_ok(), expected, "update {seq}");
                    if expected {
                        m.seen.insert(seq);
                        m.top = m.top.max(seq);
                    }
                }
                assert_eq!(w.top(), m.top);
            }
        }
        run::<2>(1);
        run::<4>(2);
        run::<16>(3);
    }

    #[test]
    fn esn_inference_across_the_wrap() {
        let mut w = ReplayWindow::<2>::new(); // 64
        // Start of the first subspace: numbers "before 0" are stale.
        w.update(10).unwrap();
        assert_eq!(w.infer_esn(11), Some(11));
        assert_eq!(w.infer_esn(3), Some(3));
        assert_eq!(w.infer_esn(u32::MAX - 10), None);
        // Window inside one subspace, near its end.
        let near = u32::MAX as u64 - 20;
        w.update(near).unwrap();
        assert_eq!(w.infer_esn(u32::MAX), Some(u32::MAX as u64));
        assert_eq!(w.infer_esn(near as u32 - 63), Some(near - 63));
        // Below the window: taken as the next subspace (RFC 4303 A2.2).
        assert_eq!(w.infer_esn(near as u32 - 64), Some((1 << 32) + near - 64));
        assert_eq!(w.infer_esn(5), Some((1 << 32) + 5));
        // Across the wrap: the window spans both subspaces.
        w.update((1 << 32) + 5).unwrap();
        assert_eq!(w.infer_esn(2), Some((1 << 32) + 2));
        assert_eq!(w.infer_esn(u32::MAX), Some(u32::MAX as u64));
        assert_eq!(w.infer_esn(u32::MAX - 57), Some(u32::MAX as u64 - 57));
        // Outside the window below: in the wrapped subspace's future.
        assert_eq!(
            w.infer_esn(u32::MAX - 58),
            Some((1 << 32) + u32::MAX as u64 - 58)
        );
        // The old subspace's numbers inside the window are still tracked.
        assert!(w.check(u32::MAX as u64).is_ok());
        assert!(w.check(near).is_err());
        w.update(u32::MAX as u64).unwrap();
        assert!(w.check(u32::MAX as u64).is_err());
        // At the very top of the 64-bit space there is no next subspace.
        let mut top = ReplayWindow::<2>::new();
        top.update(u64::MAX - 100).unwrap();
        assert_eq!(top.infer_esn(5), None);
    }
}
