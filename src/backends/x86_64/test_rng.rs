//! SplitMix64: the small deterministic generator of the kernels' unit tests
//! (the integration tests have their own in `tests/common`, out of reach of
//! the library's unit tests).

pub(crate) struct SplitMix64(pub(crate) u64);

impl SplitMix64 {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub(crate) fn fill(&mut self, out: &mut [u8]) {
        for chunk in out.chunks_mut(8) {
            let n = chunk.len();
            chunk.copy_from_slice(&self.next().to_le_bytes()[..n]);
        }
    }

    /// `n` random blocks of `B` bytes.
    pub(crate) fn blocks<const B: usize>(&mut self, n: usize) -> Vec<[u8; B]> {
        (0..n)
            .map(|_| {
                let mut b = [0u8; B];
                self.fill(&mut b);
                b
            })
            .collect()
    }
}
