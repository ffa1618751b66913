//! Seeded random streams: one independent stream per (seed, purpose, index), so that what a task
//! draws never depends on which thread runs it or in which order tasks finish.

use rand_pcg::Pcg64;
use rand_pcg::rand_core::{Rng, SeedableRng};

/// What a stream is used for; part of the stream's key.
#[derive(Debug, Clone, Copy)]
#[repr(u64)]
pub(crate) enum Purpose {
    /// The node order of one local-moving phase.
    MoveOrder = 1,
    /// The refinement of one community.
    Refine = 2,
    /// The seed of the Leiden run that splits one community of the hierarchy.
    SubRun = 3,
}

/// SplitMix64 finaliser: a bijective mix of 64 bits.
#[inline]
pub(crate) fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Derives a 64-bit key from a seed and a path of indices.
pub(crate) fn derive(seed: u64, purpose: Purpose, path: &[u64]) -> u64 {
    let mut h = mix64(seed ^ mix64(purpose as u64));
    for &p in path {
        h = mix64(h ^ mix64(p.wrapping_add(0x632b_e59b_d9b4_e019)));
    }
    h
}

/// A PCG-64 stream keyed by a seed, a purpose and indices.
pub(crate) struct Stream(Pcg64);

impl Stream {
    /// The stream for `(seed, purpose, path)`.
    pub(crate) fn new(seed: u64, purpose: Purpose, path: &[u64]) -> Self {
        Stream(Pcg64::seed_from_u64(derive(seed, purpose, path)))
    }

    /// A uniform `f64` in `[0, 1)` with 53 random bits.
    #[inline]
    pub(crate) fn uniform(&mut self) -> f64 {
        (self.0.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// A uniform integer in `0..n` (`n > 0`), by 128-bit multiply-shift (bias below `n / 2^64`).
    #[inline]
    pub(crate) fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.0.next_u64()) * n as u128) >> 64) as usize
    }

    /// Fisher–Yates shuffle.
    pub(crate) fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i + 1);
            items.swap(i, j);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_reproducible_and_distinct() {
        let mut s1 = Stream::new(7, Purpose::Refine, &[1, 2]);
        let mut s2 = Stream::new(7, Purpose::Refine, &[1, 2]);
        let mut s3 = Stream::new(7, Purpose::Refine, &[2, 1]);
        let x: Vec<usize> = (0..8).map(|_| s1.below(1000)).collect();
        let y: Vec<usize> = (0..8).map(|_| s2.below(1000)).collect();
        let z: Vec<usize> = (0..8).map(|_| s3.below(1000)).collect();
        assert_eq!(x, y);
        assert_ne!(x, z);
        let u = s1.uniform();
        assert!((0.0..1.0).contains(&u));
    }

    #[test]
    fn shuffle_is_a_permutation() {
        let mut v: Vec<u32> = (0..100).collect();
        Stream::new(1, Purpose::Refine, &[]).shuffle(&mut v);
        let mut s = v.clone();
        s.sort_unstable();
        assert_eq!(s, (0..100).collect::<Vec<_>>());
        assert_ne!(v, s);
    }
}
