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

/// Whether [`dots_vnni`] can run here: AVX-512 with its byte/word and VNNI extensions.
pub(super) fn has_vnni() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::is_x86_feature_detected!("avx512bw") && std::is_x86_feature_detected!("avx512vnni")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// `q` as unsigned bytes, `q + 128` (the unsigned operand of [`dots_vnni`]).
pub(super) fn offset_codes(q: &[i8], out: &mut Vec<u8>) {
    out.clear();
    out.extend(q.iter().map(|&v| (v as u8) ^ 0x80));
}

/// The sum of a code's values: `q · p = (q + 128) · p − 128 Σ p`.
pub(super) fn code_sum(p: &[i8]) -> i32 {
    p.iter().map(|&v| i32::from(v)).sum()
}

/// The integer dot products `q_r · codes[i]` of `R` rows with every code of `codes`
/// (consecutive codes of `n` bytes, with their [`code_sum`]s in `sums`), given each row's
/// `qu[r]` = [`offset_codes`]`(q_r)` of `n` bytes, written to `out[r]` (cleared first).
///
/// Exact: `vpdpbusd` adds four products of an unsigned and a signed byte into an `i32` lane
/// without saturation, 64 products per instruction. Four codes meet the `R` rows together,
/// so each 64-byte piece of a code is loaded once for `R` rows and `4R` sums are in flight.
///
/// # Safety
/// The CPU must have AVX-512F, AVX-512BW and AVX-512 VNNI ([`has_vnni`]).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
pub(super) unsafe fn dots_vnni<const R: usize>(
    qu: [&[u8]; R],
    codes: &[i8],
    sums: &[i32],
    out: &mut [Vec<i32>; R],
) {
    use std::arch::x86_64::{
        __m512i, _mm_add_epi32, _mm_storeu_si128, _mm256_add_epi32, _mm256_castsi256_si128,
        _mm256_extracti128_si256, _mm512_add_epi32, _mm512_castsi512_si256, _mm512_dpbusd_epi32,
        _mm512_extracti64x4_epi64, _mm512_loadu_si512, _mm512_setzero_si512, _mm512_unpackhi_epi32,
        _mm512_unpackhi_epi64, _mm512_unpacklo_epi32, _mm512_unpacklo_epi64,
    };
    let cells = sums.len();
    for o in out.iter_mut() {
        o.clear();
    }
    if cells == 0 {
        return;
    }
    let n = codes.len() / cells;
    assert!(
        qu.iter().all(|q| q.len() == n) && codes.len() == n * cells,
        "codes shape"
    );
    for o in out.iter_mut() {
        o.clear();
        o.resize(cells.next_multiple_of(4), 0);
    }
    let whole = n - n % 64;
    let p = codes.as_ptr();
    // Codes past the last are read as the last one (their sums are dropped).
    let code_at = |c: usize| p.wrapping_add(c.min(cells - 1) * n);
    let mut c = 0;
    while c < cells {
        let base = [code_at(c), code_at(c + 1), code_at(c + 2), code_at(c + 3)];
        let mut acc: [[__m512i; 4]; R] = [[_mm512_setzero_si512(); 4]; R];
        let mut o = 0;
        while o < whole {
            // SAFETY: `o + 64 <= whole <= n`; every `base[j]` starts a code of `n` bytes
            // inside `codes`, and every row has `n` bytes (asserted).
            unsafe {
                let y = base.map(|b| _mm512_loadu_si512(b.add(o).cast()));
                for (a, q) in acc.iter_mut().zip(&qu) {
                    let x = _mm512_loadu_si512(q.as_ptr().add(o).cast());
                    for (aj, yj) in a.iter_mut().zip(y) {
                        *aj = _mm512_dpbusd_epi32(*aj, x, yj);
                    }
                }
            }
            o += 64;
        }
        for ((a, q), row_out) in acc.iter().zip(&qu).zip(out.iter_mut()) {
            // The four sums at once: interleave and add (integer sums: any order is exact),
            // then add the four 128-bit lanes.
            let t0 = _mm512_add_epi32(
                _mm512_unpacklo_epi32(a[0], a[1]),
                _mm512_unpackhi_epi32(a[0], a[1]),
            );
            let t1 = _mm512_add_epi32(
                _mm512_unpacklo_epi32(a[2], a[3]),
                _mm512_unpackhi_epi32(a[2], a[3]),
            );
            let t = _mm512_add_epi32(_mm512_unpacklo_epi64(t0, t1), _mm512_unpackhi_epi64(t0, t1));
            let h = _mm256_add_epi32(_mm512_castsi512_si256(t), _mm512_extracti64x4_epi64::<1>(t));
            let four = _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256::<1>(h));
            let mut raw = [0i32; 4];
            // SAFETY: `raw` is four writable `i32`s.
            unsafe { _mm_storeu_si128(raw.as_mut_ptr().cast(), four) };
            for (j, r) in raw.iter().enumerate() {
                let cell = (c + j).min(cells - 1);
                let code = &codes[cell * n..(cell + 1) * n];
                let tail: i32 = q[whole..]
                    .iter()
                    .zip(&code[whole..])
                    .map(|(&x, &y)| i32::from(x) * i32::from(y))
                    .sum();
                row_out[c + j] = r + tail - 128 * sums[cell];
            }
        }
        c += 4;
    }
    for o in out.iter_mut() {
        o.truncate(cells);
    }
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
            #[cfg(target_arch = "x86_64")]
            if has_vnni() {
                // Five codes: a group of four and one alone.
                let mut qu = Vec::new();
                offset_codes(&q, &mut qu);
                let sums: Vec<i32> = codes.chunks_exact(dim).map(code_sum).collect();
                let want: Vec<i32> = codes.chunks_exact(dim).map(|c| reference(&q, c)).collect();
                for cells in 1..=rows {
                    let (codes, sums) = (&codes[..cells * dim], &sums[..cells]);
                    let mut one = [vec![7]];
                    // SAFETY: the CPU has the extensions (checked just above).
                    unsafe { dots_vnni([&qu[..]], codes, sums, &mut one) };
                    assert_eq!(one[0], want[..cells], "dim {dim}, {cells} codes");
                    // Four rows: the same row, its negation, zeros and extremes.
                    let rows4: [Vec<i8>; 4] = [
                        q.clone(),
                        q.iter().map(|&v| -v).collect(),
                        vec![0; dim],
                        (0..dim)
                            .map(|i| if i % 2 == 0 { 127 } else { -127 })
                            .collect(),
                    ];
                    let qu4: Vec<Vec<u8>> = rows4
                        .iter()
                        .map(|r| {
                            let mut u = Vec::new();
                            offset_codes(r, &mut u);
                            u
                        })
                        .collect();
                    let mut four: [Vec<i32>; 4] = Default::default();
                    // SAFETY: as above.
                    unsafe {
                        dots_vnni(
                            [&qu4[0][..], &qu4[1], &qu4[2], &qu4[3]],
                            codes,
                            sums,
                            &mut four,
                        )
                    };
                    for (r, got) in rows4.iter().zip(&four) {
                        let want: Vec<i32> =
                            codes.chunks_exact(dim).map(|c| reference(r, c)).collect();
                        assert_eq!(*got, want, "dim {dim}, {cells} codes, four rows");
                    }
                }
            }
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
        #[cfg(target_arch = "x86_64")]
        if has_vnni() {
            let mut qu = Vec::new();
            for (x, y) in [(127i8, -127i8), (-127, -127), (-128, 127), (-128, -128)] {
                let (a, b) = (vec![x; 384], vec![y; 384]);
                offset_codes(&a, &mut qu);
                let mut dots = [Vec::new()];
                // SAFETY: the CPU has the extensions (checked just above).
                unsafe { dots_vnni([&qu[..]], &b, &[code_sum(&b)], &mut dots) };
                assert_eq!(dots[0], [i32::from(x) * i32::from(y) * 384]);
            }
        }
    }
}
