//! AES-CBC encryption in up to sixteen lanes (stand-in: one lane after
//! another on AES-NI).
use zeroize::Zeroize;

use crate::backends::x86_64::Vaes512;
use crate::backends::x86_64::aes::Schedule;

/// Round keys of sixteen lanes, stored per register: `rk[r][i]` holds
/// round key `i` of lanes `4r..4r + 4` (lane `4r` in the low 128 bits).
#[repr(C, align(64))]
pub(crate) struct LaneKeys<const N: usize> {
    rk: [[[u8; 64]; N]; 4],
}

impl<const N: usize> LaneKeys<N> {
    pub(crate) fn new() -> Self {
        LaneKeys {
            rk: [[[0; 64]; N]; 4],
        }
    }

    /// Copies lane `lane`'s encryption schedule in.
    pub(crate) fn set_lane(&mut self, lane: usize, s: &Schedule<N>) {
        let (r, l) = (lane / 4, lane % 4);
        for (dst, src) in self.rk[r].iter_mut().zip(&s.0) {
            dst[16 * l..16 * l + 16].copy_from_slice(src);
        }
    }

    fn lane(&self, lane: usize) -> Schedule<N> {
        let (r, l) = (lane / 4, lane % 4);
        Schedule(core::array::from_fn(|i| {
            self.rk[r][i][16 * l..16 * l + 16].try_into().unwrap()
        }))
    }
}

impl<const N: usize> Drop for LaneKeys<N> {
    fn drop(&mut self) {
        self.rk.as_flattened_mut().as_flattened_mut().zeroize();
    }
}

/// CBC-encrypts `blocks` blocks in place in each lane `i < data.len()`
/// (at most 16; `data[i]` holds at least `16 * blocks` bytes), chaining from
/// `ivs[i]`, which becomes the lane's last ciphertext block.
pub(crate) fn cbc_encrypt_x16<const N: usize>(
    t: Vaes512,
    keys: &LaneKeys<N>,
    ivs: &mut [[u8; 16]],
    data: &mut [&mut [u8]],
    blocks: usize,
) {
    for (i, (iv, d)) in ivs.iter_mut().zip(data.iter_mut()).enumerate() {
        let s = keys.lane(i);
        let (b, _) = d[..16 * blocks].as_chunks_mut::<16>();
        super::super::aes::encrypt_cbc_with(t.aes_ni(), &s, iv, b);
    }
}
