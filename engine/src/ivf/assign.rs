//! Assignment of rows to their most similar centroid, the inner loop of k-means training
//! and of the final assignment: blocks of rows against pairs of centroids.

// `#[target_feature]` functions are unsafe to call from code compiled without the feature;
// the call states why it is sound.
#![allow(unsafe_code)]

use super::nearest;
use crate::embed::dot;

/// Rows scored together by [`nearest_block`].
pub(super) const BLOCK_ROWS: usize = 4;

/// [`nearest`] of each of `rows` (at most [`BLOCK_ROWS`] of them), written to `out`; compiled
/// for AVX as well as for the baseline target and chosen at run time.
///
/// Four rows meet two centroids at a time: each centroid is read once for the four rows, and
/// the eight dot products of a tile accumulate in independent registers (eight 256-bit
/// registers with AVX, which the baseline target's sixteen 128-bit ones cannot hold with the
/// operands beside them), so the loop is bound by arithmetic, not by the latency of one
/// running sum, the plain loop's limit. Every similarity is summed in [`dot`]'s order (eight
/// lanes over whole chunks of eight, the same pairwise reduction, then the remainder), so
/// the cells and similarities are bit for bit those of [`nearest`].
pub(super) fn nearest_block(
    centroids: &[f32],
    dim: usize,
    rows: &[&[f32]],
    out: &mut [(u32, f32)],
) {
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx")]
        fn avx(centroids: &[f32], dim: usize, rows: &[&[f32]], out: &mut [(u32, f32)]) {
            nearest_block_with(centroids, dim, rows, out, |r, c| {
                // SAFETY: this function runs only where AVX is present (see the caller).
                unsafe { dots_4x2_avx(r, c) }
            });
        }
        if std::is_x86_feature_detected!("avx") {
            // SAFETY: the CPU has AVX (checked just above).
            return unsafe { avx(centroids, dim, rows, out) };
        }
    }
    nearest_block_with(centroids, dim, rows, out, dots_4x2);
}

/// The body of [`nearest_block`] with the tile kernel `tile` (see [`dots_4x2`]).
#[inline(always)]
fn nearest_block_with(
    centroids: &[f32],
    dim: usize,
    rows: &[&[f32]],
    out: &mut [(u32, f32)],
    tile: impl Fn([&[f32]; 4], [&[f32]; 2]) -> [[f32; 2]; 4],
) {
    debug_assert!(rows.len() <= BLOCK_ROWS && out.len() == rows.len());
    let [r0, r1, r2, r3] = match rows {
        [a, b, c, d] => [*a, *b, *c, *d],
        _ => {
            for (o, r) in out.iter_mut().zip(rows) {
                *o = nearest(centroids, dim, r);
            }
            return;
        }
    };
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
        let sims = tile(
            [r0, r1, r2, r3],
            [
                &centroids[c * dim..(c + 1) * dim],
                &centroids[(c + 1) * dim..(c + 2) * dim],
            ],
        );
        consider(c, sims.map(|p| p[0]));
        consider(c + 1, sims.map(|p| p[1]));
        c += 2;
    }
    if c < cells {
        let cen = &centroids[c * dim..(c + 1) * dim];
        consider(c, [r0, r1, r2, r3].map(|r| dot(r, cen)));
    }
    out.copy_from_slice(&best);
}

/// The dot products of four rows with two centroids, each summed exactly as [`dot`] sums it.
///
/// Eight named accumulators of eight lanes and one lane-wise step: the shape the compiler
/// keeps in registers and vectorises (an array of accumulators indexed in a loop stays in
/// memory and is summed one float at a time).
#[inline(always)]
fn dots_4x2(rows: [&[f32]; 4], cens: [&[f32]; 2]) -> [[f32; 2]; 4] {
    #[inline(always)]
    fn step(acc: &mut [f32; 8], x: &[f32; 8], y: &[f32; 8]) {
        for k in 0..8 {
            acc[k] += x[k] * y[k];
        }
    }
    #[inline(always)]
    fn chunk(v: &[f32], o: usize) -> &[f32; 8] {
        v[o..o + 8].try_into().expect("a chunk of 8")
    }
    let n = cens[0].len();
    let whole = n - n % 8;
    let [r0, r1, r2, r3] = rows;
    let [c0, c1] = cens;
    let (mut a00, mut a01, mut a10, mut a11) = ([0.0f32; 8], [0.0f32; 8], [0.0f32; 8], [0.0f32; 8]);
    let (mut a20, mut a21, mut a30, mut a31) = ([0.0f32; 8], [0.0f32; 8], [0.0f32; 8], [0.0f32; 8]);
    let mut o = 0;
    while o < whole {
        let (y0, y1) = (chunk(c0, o), chunk(c1, o));
        let x = chunk(r0, o);
        step(&mut a00, x, y0);
        step(&mut a01, x, y1);
        let x = chunk(r1, o);
        step(&mut a10, x, y0);
        step(&mut a11, x, y1);
        let x = chunk(r2, o);
        step(&mut a20, x, y0);
        step(&mut a21, x, y1);
        let x = chunk(r3, o);
        step(&mut a30, x, y0);
        step(&mut a31, x, y1);
        o += 8;
    }
    let finish = |l: &[f32; 8], r: &[f32], c: &[f32]| {
        let mut s = ((l[0] + l[4]) + (l[1] + l[5])) + ((l[2] + l[6]) + (l[3] + l[7]));
        for (x, y) in r[whole..n].iter().zip(&c[whole..n]) {
            s += x * y;
        }
        s
    };
    [
        [finish(&a00, r0, c0), finish(&a01, r0, c1)],
        [finish(&a10, r1, c0), finish(&a11, r1, c1)],
        [finish(&a20, r2, c0), finish(&a21, r2, c1)],
        [finish(&a30, r3, c0), finish(&a31, r3, c1)],
    ]
}

/// [`dots_4x2`] with AVX intrinsics: each accumulator is one 256-bit register, multiplied and
/// added lane by lane (never fused), so each lane sums exactly what [`dot`]'s lane does.
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
