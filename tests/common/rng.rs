//! SplitMix64 (Steele, Lea, Flood 2014): a small deterministic generator
//! for test inputs, seeded per test and replayable.

/// The generator.
pub struct Rng(u64);

impl Rng {
    /// Seeded from `CBC_HMAC_TEST_SEED` (decimal or 0x-hex) when set, else
    /// from `default_seed`; prints the seed so a failure can be replayed.
    pub fn from_env(test: &str, default_seed: u64) -> Self {
        let seed = match std::env::var("CBC_HMAC_TEST_SEED") {
            Ok(s) => {
                let s = s.trim();
                match s.strip_prefix("0x") {
                    Some(h) => u64::from_str_radix(h, 16),
                    None => s.parse(),
                }
                .expect("CBC_HMAC_TEST_SEED: a u64 (decimal or 0x-hex)")
            }
            Err(_) => default_seed,
        };
        eprintln!("{test}: seed {seed:#018x} (set CBC_HMAC_TEST_SEED to replay)");
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (the bias is negligible here).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// Uniform in `0..=max`.
    pub fn upto(&mut self, max: usize) -> usize {
        self.below(max + 1)
    }

    /// `len` random bytes.
    pub fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next() as u8).collect()
    }

    /// `N` random bytes.
    pub fn array<const N: usize>(&mut self) -> [u8; N] {
        core::array::from_fn(|_| self.next() as u8)
    }
}
