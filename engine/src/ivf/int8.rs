//! The int8 scan of an IVF cell: `scale × (q · code)` for every code of a cell, compiled for
//! AVX-512BW and for AVX2 as well as for the baseline target, and chosen at run time (the
//! binary stays portable; `std::is_x86_feature_detected!` caches its answer, so the choice
//! costs one load per cell).
//!
//! The kernel is plain Rust that the compiler vectorises: each product of two int8 values fits
//! an `i16` (|x·y| ≤ 127² = 16,129), and the sum of two neighbouring products fits the `i32`
//! lane they are added into, which is the shape of the `pmaddwd` instruction (multiply `i16`
//! pairs, add neighbours into `i32`). Compiled for the baseline x86-64 target (SSE2) that is
//! 8 products per instruction; with AVX2 16 and with AVX-512BW 32, which is what makes the
//! scan of the probed cells cheaper than their float re-rank. Sums are exact integers, so every
//! path gives the same scores bit for bit.

// `#[target_feature]` functions are unsafe to call from code compiled without the feature;
// each call states why it is sound.
#![allow(unsafe_code)]

/// Integer dot product of two int8 vectors of equal length (exact: at most 127² × len in
/// magnitude, which fits an `i32` for any len below 133,000).
#[inline(always)]
pub(super) fn dot_i8(a: &[i8], b: &[i8]) -> i32 {
    const LANES: usize = 32;
    let mut acc = [0i32; LANES];
    let (ca, cb) = (a.chunks_exact(2 * LANES), b.chunks_exact(2 * LANES));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for k in 0..LANES {
            let lo = i16::from(x[2 * k]) * i16::from(y[2 * k]);
            let hi = i16::from(x[2 * k + 1]) * i16::from(y[2 * k + 1]);
            acc[k] += i32::from(lo) + i32::from(hi);
        }
    }
    let mut s: i32 = acc.iter().sum();
    for (x, y) in ra.iter().zip(rb) {
        s += i32::from(*x) * i32::from(*y);
    }
    s
}

/// Appends `(scales[i] × (q · codes[i]), first + i)` for every code of `codes` (consecutive
/// rows of `q.len()` bytes; `scales` has one scale per row).
#[inline(always)]
fn score_codes_body(q: &[i8], codes: &[i8], scales: &[f32], first: u32, out: &mut Vec<(f32, u32)>) {
    let dim = q.len();
    for ((i, code), &scale) in codes.chunks_exact(dim).enumerate().zip(scales) {
        out.push((scale * dot_i8(q, code) as f32, first + i as u32));
    }
}

/// Scores the codes of one cell against the quantized query `q`: see [`score_codes_body`].
pub(super) fn score_codes(
    q: &[i8],
    codes: &[i8],
    scales: &[f32],
    first: u32,
    out: &mut Vec<(f32, u32)>,
) {
    debug_assert_eq!(codes.len(), q.len() * scales.len());
    if q.is_empty() {
        return;
    }
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx512f,avx512bw")]
        fn avx512(q: &[i8], codes: &[i8], scales: &[f32], first: u32, out: &mut Vec<(f32, u32)>) {
            score_codes_body(q, codes, scales, first, out)
        }
        #[target_feature(enable = "avx2")]
        fn avx2(q: &[i8], codes: &[i8], scales: &[f32], first: u32, out: &mut Vec<(f32, u32)>) {
            score_codes_body(q, codes, scales, first, out)
        }
        if std::is_x86_feature_detected!("avx512bw") {
            // SAFETY: the CPU has AVX-512F and AVX-512BW (AVX-512BW implies F; checked above).
            return unsafe { avx512(q, codes, scales, first, out) };
        }
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2 (checked just above).
            return unsafe { avx2(q, codes, scales, first, out) };
        }
    }
    score_codes_body(q, codes, scales, first, out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plain definition the kernels must equal.
    fn reference(a: &[i8], b: &[i8]) -> i32 {
        a.iter()
            .zip(b)
            .map(|(x, y)| i32::from(*x) * i32::from(*y))
            .sum()
    }

    #[test]
    fn every_path_equals_the_plain_sum() {
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % 255) as i16 - 127
        };
        for dim in [1usize, 7, 63, 64, 65, 384, 1000] {
            let q: Vec<i8> = (0..dim).map(|_| next() as i8).collect();
            let rows = 5;
            let codes: Vec<i8> = (0..dim * rows).map(|_| next() as i8).collect();
            let scales: Vec<f32> = (0..rows).map(|r| 0.5 + r as f32).collect();
            let mut got = Vec::new();
            score_codes(&q, &codes, &scales, 10, &mut got);
            let mut plain = Vec::new();
            score_codes_body(&q, &codes, &scales, 10, &mut plain);
            assert_eq!(got, plain, "dim {dim}");
            for (r, &(s, e)) in got.iter().enumerate() {
                let want = scales[r] * reference(&q, &codes[r * dim..(r + 1) * dim]) as f32;
                assert_eq!((s, e), (want, 10 + r as u32), "dim {dim} row {r}");
            }
        }
        // The extremes: every product at ±127², over a long vector.
        let a = vec![127i8; 384];
        let b = vec![-127i8; 384];
        assert_eq!(dot_i8(&a, &b), -127 * 127 * 384);
        assert_eq!(dot_i8(&[1; 20], &[-2; 20]), -40);
    }
}
