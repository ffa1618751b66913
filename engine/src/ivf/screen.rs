//! The nearest centroid of a row, found exactly at a fraction of the cost of scoring every
//! centroid in float: every centroid is first scored by int8 codes, and only the centroids
//! whose float similarity *could* be the best, given a rigorous bound on the codes' error, are
//! scored by [`dot`]. The answer is bit for bit that of [`nearest`]: the same cell (ties: the
//! lower cell) and the same similarity.
//!
//! The bound. Write the row `r ≈ a·q` and a centroid `c ≈ b·p` with int8 codes `q`, `p` and
//! scales `a`, `b`. Then, by Cauchy–Schwarz,
//! `|r·c − ab(q·p)| ≤ ‖r − aq‖·‖c‖ + ‖aq‖·‖c − bp‖ =: B(c)`,
//! and the float dot product [`dot`] differs from the real `r·c` by at most
//! `γ = n·u/(1 − n·u) · ‖r‖·‖c‖` for `n` terms in any summation order, `u = 2⁻²⁴` (Higham,
//! *Accuracy and Stability of Numerical Algorithms*, 2nd ed., 2002, §3.1). With
//! `L = max_c (ab(q·p_c) − B(c))`, the centroid [`nearest`] picks satisfies
//! `ab(q·p_c) + B(c) + 2γ ≥ L`, so scoring in float only the centroids that satisfy it, in
//! cell order, gives [`nearest`]'s answer (an absolute term covers products that underflow). The integer products are exact and the bounds are
//! computed in `f64` with a margin, so the screen never drops the answer.
//!
//! The int8 products run on AVX-512 VNNI (64 products per instruction, chosen at run time);
//! without it no screen is made and every centroid is scored in float. On report vectors of
//! 384 dimensions (10⁵ documents, 567 cells) about 4 centroids per row pass the screen.

// The int8 products are a `target_feature` function; the call states why it is sound.
#![allow(unsafe_code)]

use super::{int8, nearest};
use crate::embed::dot;

/// Fewest cells for which the screen pays: below it [`nearest`] over every cell is as cheap.
pub(super) const MIN_CELLS: usize = 32;

/// The int8 codes of a set of centroids and what the bound needs of each.
pub(super) struct Screen {
    dim: usize,
    /// `cells × dim` codes, row-major.
    codes: Vec<i8>,
    /// Per cell: the sum of its codes.
    sums: Vec<i32>,
    /// Per cell: `b`, the scale of its codes.
    scales: Vec<f64>,
    /// Per cell: `‖c‖`.
    norms: Vec<f64>,
    /// Per cell: `‖c − b·p‖`.
    errors: Vec<f64>,
    /// The largest `‖c‖`.
    max_norm: f64,
}

/// Buffers one thread reuses across rows.
#[derive(Default)]
pub(super) struct Scratch {
    codes: Vec<i8>,
    offset: [Vec<u8>; BLOCK],
    dots: [Vec<i32>; BLOCK],
    /// Per cell: the int8 estimate of the similarity less and plus its bound.
    lower: Vec<f64>,
    upper: Vec<f64>,
}

/// Rows screened together: each piece of a centroid's codes is read once for all of them.
pub(super) const BLOCK: usize = 4;

/// `(‖x − s·q‖, ‖s·q‖, ‖x‖)` in `f64`, over eight lanes (the order does not matter to the
/// bound: [`MARGIN`] covers the rounding).
#[inline(always)]
fn residual(x: &[f32], scale: f32, codes: &[i8]) -> (f64, f64, f64) {
    let s = f64::from(scale);
    let (mut e2, mut q2, mut x2) = ([0.0f64; 8], [0.0f64; 8], [0.0f64; 8]);
    let (cx, cq) = (x.chunks_exact(8), codes.chunks_exact(8));
    let (rx, rq) = (cx.remainder(), cq.remainder());
    for (xs, ks) in cx.zip(cq) {
        for l in 0..8 {
            let v = f64::from(xs[l]);
            let approx = s * f64::from(ks[l]);
            e2[l] += (v - approx) * (v - approx);
            q2[l] += approx * approx;
            x2[l] += v * v;
        }
    }
    for (&v, &k) in rx.iter().zip(rq) {
        let v = f64::from(v);
        let approx = s * f64::from(k);
        e2[0] += (v - approx) * (v - approx);
        q2[0] += approx * approx;
        x2[0] += v * v;
    }
    let sum = |a: [f64; 8]| a.iter().sum::<f64>().sqrt();
    (sum(e2), sum(q2), sum(x2))
}

/// Int8 codes of `x` for the screen (any codes would do: the bound is computed from the codes
/// made): `round(x / scale)` to even, `scale = max|x| / 127`; 0 for a zero vector. `x` is
/// finite.
#[inline(always)]
fn screen_codes(x: &[f32], codes: &mut [i8]) -> f32 {
    let mut max = 0.0f32;
    for &v in x {
        let a = v.abs();
        if a > max {
            max = a;
        }
    }
    if max == 0.0 {
        codes.fill(0);
        return 0.0;
    }
    let scale = max / 127.0;
    let inv = 1.0 / scale;
    for (c, &v) in codes.iter_mut().zip(x) {
        *c = (v * inv).round_ties_even().clamp(-127.0, 127.0) as i8;
    }
    scale
}

/// Relative margin on every bound, for the rounding of the `f64` arithmetic that computes it
/// (about 10⁻¹⁶ per operation, over a few hundred operations).
const MARGIN: f64 = 1e-9;

impl Screen {
    /// The screen of the `cells × dim` row-major `centroids`; `None` when the CPU lacks
    /// AVX-512 VNNI (elsewhere the int8 products cost about what the float ones do, measured),
    /// a centroid is not finite (then only [`nearest`] is exact) or `dim` is 0.
    pub(super) fn new(centroids: &[f32], dim: usize) -> Option<Self> {
        if dim == 0 || !int8::has_vnni() || !centroids.iter().all(|v| v.is_finite()) {
            return None;
        }
        let cells = centroids.len() / dim;
        let mut codes = vec![0i8; centroids.len()];
        let (mut scales, mut norms, mut errors) = (
            Vec::with_capacity(cells),
            Vec::with_capacity(cells),
            Vec::with_capacity(cells),
        );
        for (c, code) in centroids.chunks_exact(dim).zip(codes.chunks_exact_mut(dim)) {
            let scale = screen_codes(c, code);
            let (error, _, norm) = residual(c, scale, code);
            scales.push(f64::from(scale));
            norms.push(norm);
            errors.push(error);
        }
        let max_norm = norms.iter().copied().fold(0.0, f64::max);
        let sums = codes.chunks_exact(dim).map(int8::code_sum).collect();
        Some(Self {
            dim,
            codes,
            sums,
            scales,
            norms,
            errors,
            max_norm,
        })
    }

    /// [`nearest`] of each of `rows` among `centroids` (the ones this screen was made of), bit
    /// for bit; `R` is 1 or [`BLOCK`].
    pub(super) fn nearest<const R: usize>(
        &self,
        centroids: &[f32],
        rows: [&[f32]; R],
        s: &mut Scratch,
    ) -> [(u32, f32); R] {
        debug_assert_eq!(centroids.len(), self.codes.len());
        assert!(R <= BLOCK, "at most a block of rows");
        if rows
            .iter()
            .any(|r| r.len() != self.dim || !r.iter().all(|v| v.is_finite()))
        {
            return rows.map(|r| nearest(centroids, self.dim, r));
        }
        #[cfg(target_arch = "x86_64")]
        {
            // SAFETY: a `Screen` exists only where the CPU has the extensions (`new`).
            unsafe { self.nearest_vnni(centroids, rows, s) }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = s;
            rows.map(|r| nearest(centroids, self.dim, r))
        }
    }

    /// [`Screen::nearest`] of finite rows of `dim` values, compiled for AVX-512 (the float
    /// similarities are [`dot`]'s, whose order of operations the compiler keeps: no
    /// contraction into fused multiply-adds, so the bits are the baseline build's).
    ///
    /// # Safety
    /// The CPU must have AVX-512F, AVX-512BW and AVX-512 VNNI.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    unsafe fn nearest_vnni<const R: usize>(
        &self,
        centroids: &[f32],
        rows: [&[f32]; R],
        s: &mut Scratch,
    ) -> [(u32, f32); R] {
        let dim = self.dim;
        let mut norms = [(0.0f32, 0.0f64, 0.0f64, 0.0f64); R];
        s.codes.resize(dim, 0);
        for ((row, norm), offset) in rows.iter().zip(&mut norms).zip(&mut s.offset) {
            let a = screen_codes(row, &mut s.codes);
            let (row_error, code_norm, row_norm) = residual(row, a, &s.codes);
            *norm = (a, row_error, code_norm, row_norm);
            int8::offset_codes(&s.codes, offset);
        }
        let (offset, dots) = (&s.offset, &mut s.dots);
        let qu: [&[u8]; R] = std::array::from_fn(|r| &offset[r][..]);
        let out: &mut [Vec<i32>; R] = (&mut dots[..R]).try_into().expect("R <= BLOCK");
        // SAFETY: the CPU has the extensions (this function's contract).
        unsafe { int8::dots_vnni(qu, &self.codes, &self.sums, out) };
        let cells = self.norms.len();
        let mut best = [(0u32, f32::NEG_INFINITY); R];
        for (r, (row, &(a, row_error, code_norm, row_norm))) in rows.iter().zip(&norms).enumerate()
        {
            let a = f64::from(a);
            // Per cell the interval the similarity lies in, up to the float error of `dot`.
            s.lower.resize(cells, 0.0);
            s.upper.resize(cells, 0.0);
            let per_cell = s.lower.iter_mut().zip(s.upper.iter_mut()).zip(&s.dots[r]);
            for (((lo, up), &d), ((&scale, &norm), &error)) in
                per_cell.zip(self.scales.iter().zip(&self.norms).zip(&self.errors))
            {
                let estimate = a * scale * f64::from(d);
                let bound = (row_error * norm + code_norm * error) * (1.0 + MARGIN)
                    + MARGIN * row_norm * norm;
                *lo = estimate - bound;
                *up = estimate + bound;
            }
            // The largest lower end, over eight lanes (a maximum is exact in any order).
            let mut lanes = [f64::NEG_INFINITY; 8];
            let chunks = s.lower.chunks_exact(8);
            for v in chunks.remainder() {
                lanes[0] = lanes[0].max(*v);
            }
            for ch in chunks {
                for (l, &v) in lanes.iter_mut().zip(ch) {
                    *l = if v > *l { v } else { *l };
                }
            }
            let lower = lanes.into_iter().fold(f64::NEG_INFINITY, f64::max);
            // Twice the float error of a dot product of `dim` terms (Higham's γ), with the
            // margin.
            let n = dim as f64 + 1.0;
            let unit = f64::from(f32::EPSILON) / 2.0;
            let gamma = n * unit / (1.0 - n * unit) * row_norm * self.max_norm;
            // Products that underflow to subnormals lose up to half the smallest subnormal
            // each, beyond γ (which assumes no underflow).
            let underflow = n * f64::from(f32::from_bits(1));
            let slack =
                2.0 * (gamma + underflow) * (1.0 + MARGIN) + MARGIN * row_norm * self.max_norm;
            let floor = lower - slack * (1.0 + MARGIN);
            for (c, &up) in s.upper.iter().enumerate() {
                if up >= floor {
                    let sim = dot(row, &centroids[c * dim..(c + 1) * dim]);
                    if sim > best[r].1 {
                        best[r] = (c as u32, sim);
                    }
                }
            }
        }
        best
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ivf::mix;

    /// Deterministic values in [−1, 1).
    fn values(seed: u64, n: usize) -> Vec<f32> {
        (0..n)
            .map(|i| (mix(seed, i as u64) % 2001) as f32 / 1000.0 - 1.0)
            .collect()
    }

    fn unit(mut v: Vec<f32>) -> Vec<f32> {
        crate::embed::l2_normalize(&mut v);
        v
    }

    /// Rows that test the bound where it is tight or the arithmetic is unusual: copies of
    /// centroids, midpoints of two centroids (two cells at nearly equal similarity), zeros,
    /// subnormal and huge rows, sparse rows, and plain random rows.
    fn hard_rows(centroids: &[f32], dim: usize, count: usize) -> Vec<Vec<f32>> {
        let cells = centroids.len() / dim;
        let cen = |c: usize| &centroids[c * dim..(c + 1) * dim];
        let mut rows = vec![vec![0.0; dim], cen(0).to_vec(), cen(cells - 1).to_vec()];
        for k in 0..count {
            let (a, b) = (k % cells, (k * 7 + 3) % cells);
            let mid: Vec<f32> = cen(a).iter().zip(cen(b)).map(|(x, y)| x + y).collect();
            rows.push(unit(mid));
            rows.push(unit(values(500 + k as u64, dim)));
            let sparse: Vec<f32> = values(900 + k as u64, dim)
                .iter()
                .map(|&v| if v.abs() > 0.9 { v } else { 0.0 })
                .collect();
            rows.push(sparse);
        }
        let r = unit(values(77, dim));
        rows.push(r.iter().map(|v| v * 1e-40).collect());
        rows.push(r.iter().map(|v| v * 1e30).collect());
        rows.push(r.iter().map(|v| v * 1e-3).collect());
        rows
    }

    #[test]
    fn screened_answers_are_the_plain_scans_bits() {
        for (dim, cells) in [
            (384, 567),
            (384, 33),
            (100, 40),
            (16, 64),
            (385, 35),
            (64, 32),
        ] {
            let mut centroids: Vec<f32> = (0..cells)
                .flat_map(|c| unit(values(c as u64, dim)))
                .collect();
            // A duplicated centroid: its two cells tie on every row (the lower one wins).
            let first = centroids[..dim].to_vec();
            centroids[5 * dim..6 * dim].copy_from_slice(&first);
            let Some(screen) = Screen::new(&centroids, dim) else {
                // No AVX-512 VNNI here: `nearest_all` scores every cell in float instead.
                return;
            };
            let rows = hard_rows(&centroids, dim, 40);
            let mut s = Scratch::default();
            for (i, row) in rows.iter().enumerate() {
                let want = nearest(&centroids, dim, row);
                let [got] = screen.nearest(&centroids, [&row[..]], &mut s);
                assert_eq!(
                    (got.0, got.1.to_bits()),
                    (want.0, want.1.to_bits()),
                    "dim {dim}, {cells} cells, row {i}"
                );
            }
            for (b, block) in rows.chunks_exact(BLOCK).enumerate() {
                let block: [&[f32]; BLOCK] = std::array::from_fn(|k| &block[k][..]);
                let got = screen.nearest(&centroids, block, &mut s);
                for (k, (g, row)) in got.iter().zip(block).enumerate() {
                    let want = nearest(&centroids, dim, row);
                    assert_eq!(
                        (g.0, g.1.to_bits()),
                        (want.0, want.1.to_bits()),
                        "dim {dim}, {cells} cells, block {b} row {k}"
                    );
                }
            }
        }
    }

    #[test]
    fn rows_that_are_not_finite_are_scanned_in_full() {
        let (dim, cells) = (32, 40);
        let centroids: Vec<f32> = (0..cells)
            .flat_map(|c| unit(values(c as u64, dim)))
            .collect();
        let Some(screen) = Screen::new(&centroids, dim) else {
            return;
        };
        let good = unit(values(9, dim));
        let mut nan = good.clone();
        nan[3] = f32::NAN;
        let mut inf = good.clone();
        inf[0] = f32::INFINITY;
        let mut s = Scratch::default();
        let got = screen.nearest(&centroids, [&good[..], &nan, &inf, &good], &mut s);
        for (g, row) in got.iter().zip([&good, &nan, &inf, &good]) {
            let want = nearest(&centroids, dim, row);
            assert_eq!((g.0, g.1.to_bits()), (want.0, want.1.to_bits()));
        }
        // A centroid that is not finite: no screen.
        let mut bad = centroids.clone();
        bad[7] = f32::NAN;
        assert!(Screen::new(&bad, dim).is_none());
    }
}
