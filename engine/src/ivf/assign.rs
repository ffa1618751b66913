//! Assignment of rows to their most similar centroid, the inner loop of k-means training
//! and of the final assignment: blocks of rows against pairs of centroids, with AVX when the
//! CPU has it (chosen at run time: the binary stays portable).

// `#[target_feature]` functions are unsafe to call from code compiled without the feature;
// the call states why it is sound.
#![allow(unsafe_code)]

use super::nearest;
#[cfg(target_arch = "x86_64")]
use crate::embed::dot;

/// Rows scored together by [`nearest_block`].
pub(super) const BLOCK_ROWS: usize = 4;

/// [`nearest`] of each of `rows` (at most [`BLOCK_ROWS`] of them), written to `out`.
///
/// A full block on a CPU with AVX goes through [`nearest_block_avx`]; anything else is scored
/// a row at a time by [`nearest`] (a tile compiled for the baseline target, whose sixteen
/// 128-bit registers cannot hold its eight sums, measured slower than that).
pub(super) fn nearest_block(
    centroids: &[f32],
    dim: usize,
    rows: &[&[f32]],
    out: &mut [(u32, f32)],
) {
    debug_assert!(rows.len() <= BLOCK_ROWS && out.len() == rows.len());
    #[cfg(target_arch = "x86_64")]
    if let [r0, r1, r2, r3] = rows
        && std::is_x86_feature_detected!("avx")
    {
        // SAFETY: the CPU has AVX (checked just above).
        let best = unsafe { nearest_block_avx(centroids, dim, [r0, r1, r2, r3]) };
        out.copy_from_slice(&best);
        return;
    }
    for (o, r) in out.iter_mut().zip(rows) {
        *o = nearest(centroids, dim, r);
    }
}

/// [`nearest`] of four rows at once: the rows meet two centroids at a time, each centroid
/// read once for the four rows, and the eight dot products of a tile accumulate in eight
/// independent 256-bit registers ([`dots_4x2_avx`]), so the loop is bound by arithmetic, not
/// by the latency of one running sum, the plain loop's limit. Every similarity is summed in
/// [`dot`]'s order (eight lanes over whole chunks of eight, the same pairwise reduction, then
/// the remainder), so the cells and similarities are bit for bit those of [`nearest`].
///
/// # Safety
/// The CPU must have AVX.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
unsafe fn nearest_block_avx(
    centroids: &[f32],
    dim: usize,
    rows: [&[f32]; BLOCK_ROWS],
) -> [(u32, f32); BLOCK_ROWS] {
    let mut best = [(0u32, f32::NEG_INFINITY); BLOCK_ROWS];
    let mut consider = |c: usize, sims: [f32; BLOCK_ROWS]| {
        for (b, s) in best.iter_mut().zip(sims) {
            if s > b.1 {
                *b = (c as u32, s);
            }
        }
    };
    let cells = centroids.len() / dim;
    let mut c = 0;
    while c + 2 <= cells {
        let pair = [
            &centroids[c * dim..(c + 1) * dim],
            &centroids[(c + 1) * dim..(c + 2) * dim],
        ];
        // SAFETY: this function runs only where AVX is present (its own contract).
        let sims = unsafe { dots_4x2_avx(rows, pair) };
        consider(c, sims.map(|p| p[0]));
        consider(c + 1, sims.map(|p| p[1]));
        c += 2;
    }
    if c < cells {
        let cen = &centroids[c * dim..(c + 1) * dim];
        consider(c, rows.map(|r| dot(r, cen)));
    }
    best
}

/// The dot products of four rows with two centroids, with AVX intrinsics: each accumulator is
/// one 256-bit register, multiplied and added lane by lane (never fused), so each lane sums
/// exactly what [`dot`]'s lane does, and the lanes are reduced in `dot`'s order.
///
/// # Safety
/// The CPU must have AVX.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
unsafe fn dots_4x2_avx(rows: [&[f32]; 4], cens: [&[f32]; 2]) -> [[f32; 2]; 4] {
    use std::arch::x86_64::{
        __m256, _mm256_add_ps, _mm256_loadu_ps, _mm256_mul_ps, _mm256_setzero_ps, _mm256_storeu_ps,
    };
    let n = cens[0].len();
    assert!(
        cens[1].len() == n && rows.iter().all(|r| r.len() == n),
        "equal lengths"
    );
    let whole = n - n % 8;
    let [r0, r1, r2, r3] = rows.map(<[f32]>::as_ptr);
    let [c0, c1] = cens.map(<[f32]>::as_ptr);
    let mut acc: [__m256; 8] = [_mm256_setzero_ps(); 8];
    let mut o = 0;
    while o < whole {
        // SAFETY: `o + 8 <= whole <= n`, the length of every row and centroid (asserted).
        unsafe {
            let y0 = _mm256_loadu_ps(c0.add(o));
            let y1 = _mm256_loadu_ps(c1.add(o));
            let x = _mm256_loadu_ps(r0.add(o));
            acc[0] = _mm256_add_ps(acc[0], _mm256_mul_ps(x, y0));
            acc[1] = _mm256_add_ps(acc[1], _mm256_mul_ps(x, y1));
            let x = _mm256_loadu_ps(r1.add(o));
            acc[2] = _mm256_add_ps(acc[2], _mm256_mul_ps(x, y0));
            acc[3] = _mm256_add_ps(acc[3], _mm256_mul_ps(x, y1));
            let x = _mm256_loadu_ps(r2.add(o));
            acc[4] = _mm256_add_ps(acc[4], _mm256_mul_ps(x, y0));
            acc[5] = _mm256_add_ps(acc[5], _mm256_mul_ps(x, y1));
            let x = _mm256_loadu_ps(r3.add(o));
            acc[6] = _mm256_add_ps(acc[6], _mm256_mul_ps(x, y0));
            acc[7] = _mm256_add_ps(acc[7], _mm256_mul_ps(x, y1));
        }
        o += 8;
    }
    let mut lanes = [[0.0f32; 8]; 8];
    for (l, a) in lanes.iter_mut().zip(acc) {
        // SAFETY: `l` is 8 writable floats.
        unsafe { _mm256_storeu_ps(l.as_mut_ptr(), a) };
    }
    let finish = |l: &[f32; 8], r: &[f32], c: &[f32]| {
        let mut s = ((l[0] + l[4]) + (l[1] + l[5])) + ((l[2] + l[6]) + (l[3] + l[7]));
        for (x, y) in r[whole..n].iter().zip(&c[whole..n]) {
            s += x * y;
        }
        s
    };
    let mut out = [[0.0f32; 2]; 4];
    for (i, res) in out.iter_mut().enumerate() {
        for (j, cell) in res.iter_mut().enumerate() {
            *cell = finish(&lanes[2 * i + j], rows[i], cens[j]);
        }
    }
    out
}
