//! The BERT encoder of all-MiniLM-L6-v2, written over the `gemm` crate's matrix products.
//!
//! Same arithmetic as Hugging Face's `BertModel` (Devlin et al. 2019,
//! <https://arxiv.org/abs/1810.04805>; candle-transformers' port is the reference the tests
//! compare against), arranged for a CPU:
//! * **no padding**: the word pieces of every sequence of a micro-batch are packed row after
//!   row, the dense layers run once over all of them, and attention runs per sequence over
//!   its own length, so no product is spent on padding and no mask is needed;
//! * **no transposes or copies**: weights are stored `in × out` once at load time, the query,
//!   key and value projections are one `384 × 1152` product, and each head's `Q·Kᵀ` and `P·V`
//!   read their 32 columns in place through the strides `gemm` accepts;
//! * **bias and residual inside the product**: the destination is filled with the bias (plus
//!   the residual) and `gemm` accumulates into it;
//! * **reused buffers**: one [`Scratch`] per thread, grown to the largest micro-batch seen, so
//!   the kernel does not zero fresh pages on every call;
//! * **vectorised element-wise work**: GELU's erf and softmax's exp are polynomial
//!   approximations in straight-line `f32` code that the compiler vectorises, compiled for
//!   AVX-512 and AVX2 and chosen at run time, as `gemm` chooses its kernels.
//!
//! Every product runs on the calling thread (`Parallelism::None`): callers run micro-batches
//! in parallel on Rayon's pool instead, which keeps one pool and no nested splitting of small
//! products.

// `gemm::gemm` takes raw pointers and strides, and the element-wise kernels are compiled with
// `#[target_feature]`; each `unsafe` block states why it is sound.
#![allow(unsafe_code)]

use safetensors::{Dtype, SafeTensors};

/// Width of the hidden states.
pub(super) const HIDDEN: usize = 384;
/// Attention heads per layer.
const HEADS: usize = 12;
/// Width of one head (`HIDDEN / HEADS`).
const HEAD: usize = HIDDEN / HEADS;
/// Width of the feed-forward layer.
const INTERMEDIATE: usize = 4 * HIDDEN;
/// Layer-norm epsilon of the checkpoint's `config.json`.
const LN_EPS: f32 = 1e-12;

/// Layer-norm scale and shift, `HIDDEN` each.
struct Norm {
    gamma: Vec<f32>,
    beta: Vec<f32>,
}

/// One transformer layer; matrices row-major `in × out`.
struct Layer {
    qkv_w: Vec<f32>,
    qkv_b: Vec<f32>,
    out_w: Vec<f32>,
    out_b: Vec<f32>,
    ln1: Norm,
    up_w: Vec<f32>,
    up_b: Vec<f32>,
    down_w: Vec<f32>,
    down_b: Vec<f32>,
    ln2: Norm,
}

/// The encoder's weights, as `f32`.
pub(super) struct Encoder {
    word: Vec<f32>,
    position: Vec<f32>,
    token_type0: Vec<f32>,
    emb_ln: Norm,
    layers: Vec<Layer>,
    vocab: usize,
    max_positions: usize,
}

/// Buffers of one micro-batch, reused across calls on a thread.
#[derive(Default)]
struct Scratch {
    x: Vec<f32>,
    qkv: Vec<f32>,
    ctx: Vec<f32>,
    up: Vec<f32>,
    scores: Vec<f32>,
}

thread_local! {
    static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::new(Scratch::default());
}

/// The named tensor, with or without the `bert.` prefix some exports carry.
fn view<'a>(tensors: &SafeTensors<'a>, name: &str) -> Option<safetensors::tensor::TensorView<'a>> {
    tensors
        .tensor(name)
        .or_else(|_| tensors.tensor(&format!("bert.{name}")))
        .ok()
}

/// Reads the named tensor as `f32` values, checking its shape and that it is stored as
/// little-endian `f32` (the published all-MiniLM-L6-v2 checkpoint is).
fn take(tensors: &SafeTensors<'_>, name: &str, shape: &[usize]) -> Result<Vec<f32>, String> {
    let t = view(tensors, name).ok_or_else(|| format!("no tensor {name}"))?;
    if t.shape() != shape {
        return Err(format!(
            "{name} has shape {:?}, expected {shape:?}",
            t.shape()
        ));
    }
    if t.dtype() != Dtype::F32 {
        return Err(format!("{name} is stored as {:?}, expected F32", t.dtype()));
    }
    Ok(t.data()
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect())
}

/// `(out, in)` row-major (PyTorch's `Linear.weight`) → `(in, out)` row-major.
fn transposed(w: &[f32], out: usize, inp: usize) -> Vec<f32> {
    let mut t = vec![0.0; w.len()];
    for o in 0..out {
        for i in 0..inp {
            t[i * out + o] = w[o * inp + i];
        }
    }
    t
}

impl Encoder {
    /// Builds the encoder from the checkpoint's tensors.
    ///
    /// # Errors
    /// The name of a missing tensor or one of another shape than all-MiniLM-L6-v2's.
    pub(super) fn from_tensors(tensors: &SafeTensors<'_>, layers: usize) -> Result<Self, String> {
        let word_shape = view(tensors, "embeddings.word_embeddings.weight")
            .map(|t| t.shape().to_vec())
            .ok_or("no tensor embeddings.word_embeddings.weight")?;
        let pos_shape = view(tensors, "embeddings.position_embeddings.weight")
            .map(|t| t.shape().to_vec())
            .ok_or("no tensor embeddings.position_embeddings.weight")?;
        let (vocab, max_positions) = match (word_shape.as_slice(), pos_shape.as_slice()) {
            ([v, HIDDEN], [p, HIDDEN]) => (*v, *p),
            _ => return Err(format!("embedding shapes {word_shape:?} and {pos_shape:?}")),
        };
        let norm = |prefix: &str| -> Result<Norm, String> {
            Ok(Norm {
                gamma: take(tensors, &format!("{prefix}.weight"), &[HIDDEN])?,
                beta: take(tensors, &format!("{prefix}.bias"), &[HIDDEN])?,
            })
        };
        let linear =
            |prefix: &str, out: usize, inp: usize| -> Result<(Vec<f32>, Vec<f32>), String> {
                let w = take(tensors, &format!("{prefix}.weight"), &[out, inp])?;
                let b = take(tensors, &format!("{prefix}.bias"), &[out])?;
                Ok((transposed(&w, out, inp), b))
            };
        let token_types = take(
            tensors,
            "embeddings.token_type_embeddings.weight",
            &[2, HIDDEN],
        )?;
        let mut out = Self {
            word: take(
                tensors,
                "embeddings.word_embeddings.weight",
                &[vocab, HIDDEN],
            )?,
            position: take(
                tensors,
                "embeddings.position_embeddings.weight",
                &[max_positions, HIDDEN],
            )?,
            token_type0: token_types[..HIDDEN].to_vec(),
            emb_ln: norm("embeddings.LayerNorm")?,
            layers: Vec::with_capacity(layers),
            vocab,
            max_positions,
        };
        for l in 0..layers {
            let p = format!("encoder.layer.{l}");
            let (q_w, q_b) = linear(&format!("{p}.attention.self.query"), HIDDEN, HIDDEN)?;
            let (k_w, k_b) = linear(&format!("{p}.attention.self.key"), HIDDEN, HIDDEN)?;
            let (v_w, v_b) = linear(&format!("{p}.attention.self.value"), HIDDEN, HIDDEN)?;
            // One (HIDDEN, 3·HIDDEN) matrix: each row is the row of Q, then of K, then of V.
            let mut qkv_w = Vec::with_capacity(3 * HIDDEN * HIDDEN);
            for i in 0..HIDDEN {
                for w in [&q_w, &k_w, &v_w] {
                    qkv_w.extend_from_slice(&w[i * HIDDEN..(i + 1) * HIDDEN]);
                }
            }
            let qkv_b = [q_b, k_b, v_b].concat();
            let (out_w, out_b) = linear(&format!("{p}.attention.output.dense"), HIDDEN, HIDDEN)?;
            let (up_w, up_b) = linear(&format!("{p}.intermediate.dense"), INTERMEDIATE, HIDDEN)?;
            let (down_w, down_b) = linear(&format!("{p}.output.dense"), HIDDEN, INTERMEDIATE)?;
            out.layers.push(Layer {
                qkv_w,
                qkv_b,
                out_w,
                out_b,
                ln1: norm(&format!("{p}.attention.output.LayerNorm"))?,
                up_w,
                up_b,
                down_w,
                down_b,
                ln2: norm(&format!("{p}.output.LayerNorm"))?,
            });
        }
        Ok(out)
    }

    /// Runs the sequences `seqs` (word-piece ids, `[CLS] … [SEP]` included, each at most the
    /// model's 512 positions and non-empty) and returns, per sequence, the sum of its output
    /// token vectors (`HIDDEN` floats) and its length: mean pooling's two halves.
    ///
    /// # Errors
    /// An id outside the vocabulary or a sequence longer than the position table.
    pub(super) fn token_sums(&self, seqs: &[&[u32]]) -> Result<Vec<(Vec<f32>, f32)>, String> {
        for s in seqs {
            if s.len() > self.max_positions {
                return Err(format!(
                    "a sequence of {} word pieces exceeds the {} positions",
                    s.len(),
                    self.max_positions
                ));
            }
            if let Some(&id) = s.iter().find(|&&id| id as usize >= self.vocab) {
                return Err(format!(
                    "word-piece id {id} outside the vocabulary of {}",
                    self.vocab
                ));
            }
        }
        SCRATCH.with(|cell| {
            let mut scratch = cell.borrow_mut();
            Ok(self.run(seqs, &mut scratch))
        })
    }

    fn run(&self, seqs: &[&[u32]], s: &mut Scratch) -> Vec<(Vec<f32>, f32)> {
        let tokens: usize = seqs.iter().map(|q| q.len()).sum();
        let longest = seqs.iter().map(|q| q.len()).max().unwrap_or(0);
        let grow = |v: &mut Vec<f32>, n: usize| {
            if v.len() < n {
                v.resize(n, 0.0);
            }
        };
        grow(&mut s.x, tokens * HIDDEN);
        grow(&mut s.qkv, tokens * 3 * HIDDEN);
        grow(&mut s.ctx, tokens * HIDDEN);
        grow(&mut s.up, tokens * INTERMEDIATE);
        grow(&mut s.scores, longest * longest);
        let x = &mut s.x[..tokens * HIDDEN];
        let qkv = &mut s.qkv[..tokens * 3 * HIDDEN];
        let ctx = &mut s.ctx[..tokens * HIDDEN];
        let up = &mut s.up[..tokens * INTERMEDIATE];

        // Embeddings: word + position + token type 0, then layer norm.
        let mut row = 0;
        for seq in seqs {
            for (pos, &id) in seq.iter().enumerate() {
                let dst = &mut x[row * HIDDEN..(row + 1) * HIDDEN];
                let w = &self.word[id as usize * HIDDEN..][..HIDDEN];
                let p = &self.position[pos * HIDDEN..][..HIDDEN];
                for (((d, &a), &b), &c) in dst.iter_mut().zip(w).zip(p).zip(&self.token_type0) {
                    *d = a + b + c;
                }
                row += 1;
            }
        }
        layer_norm_rows(x, &self.emb_ln);

        let scale = 1.0 / (HEAD as f32).sqrt();
        for layer in &self.layers {
            // Q, K, V of every token: (tokens, 1152) = x · W_qkv + b.
            fill_rows(qkv, &layer.qkv_b);
            matmul(
                tokens,
                3 * HIDDEN,
                HIDDEN,
                qkv,
                3 * HIDDEN,
                x,
                HIDDEN,
                &layer.qkv_w,
                3 * HIDDEN,
            );
            // Attention, per sequence and head, over the sequence's own length.
            let mut start = 0;
            for seq in seqs {
                let len = seq.len();
                let scores = &mut s.scores[..len * len];
                for h in 0..HEADS {
                    let q = &qkv[start * 3 * HIDDEN + h * HEAD..];
                    let k = &qkv[start * 3 * HIDDEN + HIDDEN + h * HEAD..];
                    let v = &qkv[start * 3 * HIDDEN + 2 * HIDDEN + h * HEAD..];
                    // scores (len, len) = Q_h · K_hᵀ / √32.
                    // SAFETY: Q_h and K_h are read at rows start..start+len of the (tokens,
                    // 1152) buffer, columns h·32..h·32+32 (Q) and 384+h·32.. (K): the last
                    // element read is at offset (len-1)·1152 + 31 of `q`/`k`, inside the slice
                    // because start + len ≤ tokens; `scores` holds len² values; no aliasing.
                    unsafe {
                        gemm::gemm(
                            len,
                            len,
                            HEAD,
                            scores.as_mut_ptr(),
                            1,
                            len as isize,
                            false,
                            q.as_ptr(),
                            1,
                            (3 * HIDDEN) as isize,
                            k.as_ptr(),
                            (3 * HIDDEN) as isize,
                            1,
                            0.0,
                            scale,
                            false,
                            false,
                            false,
                            gemm::Parallelism::None,
                        );
                    }
                    softmax_rows(scores, len);
                    // context_h (len, 32) = P · V_h, written into its columns of ctx.
                    let c = &mut ctx[start * HIDDEN + h * HEAD..];
                    // SAFETY: `scores` is len × len; V_h is read like Q_h above; the
                    // destination's last element is at (len-1)·384 + 31 of `c`, inside `ctx`
                    // because start + len ≤ tokens; `ctx` does not alias `qkv` or `scores`.
                    unsafe {
                        gemm::gemm(
                            len,
                            HEAD,
                            len,
                            c.as_mut_ptr(),
                            1,
                            HIDDEN as isize,
                            false,
                            scores.as_ptr(),
                            1,
                            len as isize,
                            v.as_ptr(),
                            1,
                            (3 * HIDDEN) as isize,
                            0.0,
                            1.0,
                            false,
                            false,
                            false,
                            gemm::Parallelism::None,
                        );
                    }
                }
                start += len;
            }
            // x = LayerNorm(x + ctx · W_o + b_o).
            add_rows(x, &layer.out_b);
            matmul(
                tokens,
                HIDDEN,
                HIDDEN,
                x,
                HIDDEN,
                ctx,
                HIDDEN,
                &layer.out_w,
                HIDDEN,
            );
            layer_norm_rows(x, &layer.ln1);
            // x = LayerNorm(x + GELU(x · W_up + b_up) · W_down + b_down).
            fill_rows(up, &layer.up_b);
            matmul(
                tokens,
                INTERMEDIATE,
                HIDDEN,
                up,
                INTERMEDIATE,
                x,
                HIDDEN,
                &layer.up_w,
                INTERMEDIATE,
            );
            gelu(up);
            add_rows(x, &layer.down_b);
            matmul(
                tokens,
                HIDDEN,
                INTERMEDIATE,
                x,
                HIDDEN,
                up,
                INTERMEDIATE,
                &layer.down_w,
                HIDDEN,
            );
            layer_norm_rows(x, &layer.ln2);
        }

        let mut out = Vec::with_capacity(seqs.len());
        let mut start = 0;
        for seq in seqs {
            let mut sum = vec![0.0f32; HIDDEN];
            for r in start..start + seq.len() {
                for (a, &b) in sum.iter_mut().zip(&x[r * HIDDEN..(r + 1) * HIDDEN]) {
                    *a += b;
                }
            }
            out.push((sum, seq.len() as f32));
            start += seq.len();
        }
        out
    }
}

/// `dst (m, n) += lhs (m, k) · rhs (k, n)`, all row-major with the given row strides
/// (`dst_rs`, `lhs_rs`, `rhs_rs` in elements), on the calling thread.
///
/// # Panics
/// When a slice is shorter than its matrix.
#[allow(clippy::too_many_arguments)]
#[track_caller]
fn matmul(
    m: usize,
    n: usize,
    k: usize,
    dst: &mut [f32],
    dst_rs: usize,
    lhs: &[f32],
    lhs_rs: usize,
    rhs: &[f32],
    rhs_rs: usize,
) {
    if m == 0 {
        return;
    }
    assert!(dst_rs >= n && lhs_rs >= k && rhs_rs >= n);
    assert!(dst.len() >= (m - 1) * dst_rs + n, "dst too short");
    assert!(lhs.len() >= (m - 1) * lhs_rs + k, "lhs too short");
    assert!(rhs.len() >= (k - 1) * rhs_rs + n, "rhs too short");
    // SAFETY: the assertions above keep every element gemm reads or writes inside the slices;
    // `dst` is borrowed mutably, so it aliases neither `lhs` nor `rhs`.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            dst.as_mut_ptr(),
            1,
            dst_rs as isize,
            true,
            lhs.as_ptr(),
            1,
            lhs_rs as isize,
            rhs.as_ptr(),
            1,
            rhs_rs as isize,
            1.0,
            1.0,
            false,
            false,
            false,
            gemm::Parallelism::None,
        );
    }
}

/// Every row of `dst` (rows of `row.len()`) set to `row`.
fn fill_rows(dst: &mut [f32], row: &[f32]) {
    for d in dst.chunks_exact_mut(row.len()) {
        d.copy_from_slice(row);
    }
}

/// `row` added to every row of `dst`.
fn add_rows(dst: &mut [f32], row: &[f32]) {
    for d in dst.chunks_exact_mut(row.len()) {
        for (a, &b) in d.iter_mut().zip(row) {
            *a += b;
        }
    }
}

/// Lanes of the explicit accumulators below: floating-point sums are not reassociated by the
/// compiler, so a reduction vectorises only when written over independent lanes.
const LANES: usize = 16;

#[inline(always)]
fn lane_sum(xs: &[f32], f: impl Fn(f32) -> f32) -> f32 {
    let mut acc = [0.0f32; LANES];
    let mut chunks = xs.chunks_exact(LANES);
    for c in &mut chunks {
        for (a, &x) in acc.iter_mut().zip(c) {
            *a += f(x);
        }
    }
    let mut total = chunks.remainder().iter().map(|&x| f(x)).sum::<f32>();
    for a in acc {
        total += a;
    }
    total
}

/// The largest value of `xs` (`-∞` when empty), over independent lanes like [`lane_sum`].
#[inline(always)]
fn lane_max(xs: &[f32]) -> f32 {
    let mut acc = [f32::NEG_INFINITY; LANES];
    let mut chunks = xs.chunks_exact(LANES);
    for c in &mut chunks {
        for (a, &x) in acc.iter_mut().zip(c) {
            *a = if x > *a { x } else { *a };
        }
    }
    let mut m = chunks
        .remainder()
        .iter()
        .fold(f32::NEG_INFINITY, |m, &x| m.max(x));
    for a in acc {
        m = m.max(a);
    }
    m
}

#[inline(always)]
fn layer_norm_rows_body(x: &mut [f32], norm: &Norm) {
    let n = norm.gamma.len();
    for row in x.chunks_exact_mut(n) {
        let mean = lane_sum(row, |v| v) / n as f32;
        let var = lane_sum(row, |v| (v - mean) * (v - mean)) / n as f32;
        let inv = 1.0 / (var + LN_EPS).sqrt();
        for ((v, &g), &b) in row.iter_mut().zip(&norm.gamma).zip(&norm.beta) {
            *v = (*v - mean) * inv * g + b;
        }
    }
}

/// `e^x` for `x ≤ 88.7` (Cephes' `expf`: `x = n·ln 2 + r`, a degree-6 polynomial in `r`,
/// `2^n` through the exponent bits; relative error about 2e-7; flushes to 0 below -87.3).
/// Branch-free and without float-to-int casts (Rust's saturating `as` is not vectorised), so
/// loops over it vectorise. Moshier, *Methods and Programs for Mathematical
/// Functions* (1989), <https://www.netlib.org/cephes/>.
#[inline(always)]
fn exp_approx(x: f32) -> f32 {
    let x = x.clamp(-87.3, 88.7);
    let n = (x * std::f32::consts::LOG2_E + 0.5).floor();
    let r = x - n * 0.693_359_4 - n * -2.121_944_4e-4;
    let z = r * r;
    let p = (((((1.987_569_1e-4 * r + 1.398_199_9e-3) * r + 8.333_452e-3) * r + 4.166_579_6e-2)
        * r
        + 1.666_666_5e-1)
        * r
        + 0.5)
        * z
        + r
        + 1.0;
    // n is an integer in [-126, 128]: adding 1.5·2²³ puts it in the low mantissa bits (the
    // usual trick, exact for |n| < 2²²), from which the exponent field of 2^n follows.
    let bits = (n + 12_582_912.0).to_bits().wrapping_sub(0x4B40_0000);
    p * f32::from_bits(bits.wrapping_add(127) << 23)
}

#[inline(always)]
fn softmax_rows_body(scores: &mut [f32], len: usize) {
    for row in scores.chunks_exact_mut(len) {
        let max = lane_max(row);
        for v in row.iter_mut() {
            *v = exp_approx(*v - max);
        }
        let inv = 1.0 / lane_sum(row, |v| v);
        for v in row.iter_mut() {
            *v *= inv;
        }
    }
}

/// BERT's GELU, `x·(1 + erf(x/√2))/2`, with `1 + erf` from the complementary error function of
/// Abramowitz & Stegun (1964) 7.1.26 (absolute error ≤ 1.5e-7), which keeps the negative tail
/// accurate: `1 + erf(y) = erfc(-y)` for `y < 0` and `2 - erfc(y)` otherwise.
#[inline(always)]
fn gelu_body(xs: &mut [f32]) {
    for v in xs.iter_mut() {
        let x = *v;
        let y = (x * std::f32::consts::FRAC_1_SQRT_2).abs();
        let t = 1.0 / (1.0 + 0.327_591_1 * y);
        let poly = t
            * (0.254_829_6
                + t * (-0.284_496_74 + t * (1.421_413_8 + t * (-1.453_152_1 + t * 1.061_405_4))));
        let erfc = poly * exp_approx(-y * y);
        let one_plus_erf = if x < 0.0 { erfc } else { 2.0 - erfc };
        *v = 0.5 * x * one_plus_erf;
    }
}

/// Defines `$name(args)`, which runs `$body(args)` compiled for AVX-512 or AVX2+FMA when the
/// CPU has them (detected at run time) and for the baseline target otherwise.
macro_rules! dispatch {
    ($name:ident, $body:ident, ($($arg:ident: $ty:ty),*)) => {
        fn $name($($arg: $ty),*) {
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f")]
                fn avx512($($arg: $ty),*) {
                    $body($($arg),*)
                }
                #[target_feature(enable = "avx2,fma")]
                fn avx2($($arg: $ty),*) {
                    $body($($arg),*)
                }
                if std::is_x86_feature_detected!("avx512f") {
                    // SAFETY: the CPU has AVX-512F (checked just above).
                    return unsafe { avx512($($arg),*) };
                }
                if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
                    // SAFETY: the CPU has AVX2 and FMA (checked just above).
                    return unsafe { avx2($($arg),*) };
                }
            }
            $body($($arg),*)
        }
    };
}

dispatch!(layer_norm_rows, layer_norm_rows_body, (x: &mut [f32], norm: &Norm));
dispatch!(softmax_rows, softmax_rows_body, (scores: &mut [f32], len: usize));
dispatch!(gelu, gelu_body, (xs: &mut [f32]));

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exp_approx_is_close_to_exp() {
        for i in -8000..=800 {
            let x = i as f32 / 100.0;
            let (got, want) = (exp_approx(x), x.exp());
            assert!(
                ((got - want) / want).abs() < 1e-6,
                "exp({x}) = {got}, expected {want}"
            );
        }
        assert_eq!(exp_approx(-1000.0).min(1e-37), exp_approx(-1000.0));
    }

    #[test]
    fn gelu_matches_the_erf_definition() {
        let xs: Vec<f32> = (-1000..=1000).map(|i| i as f32 / 100.0).collect();
        let mut got = xs.clone();
        gelu(&mut got);
        for (&x, &g) in xs.iter().zip(&got) {
            let want = 0.5 * x as f64 * (1.0 + erf_reference(x as f64 / std::f64::consts::SQRT_2));
            assert!(
                (g as f64 - want).abs() < 2e-6,
                "gelu({x}) = {g}, expected {want}"
            );
        }
    }

    /// erf by its Taylor series (|x| ≤ 3) or asymptotic tail, in f64: an independent oracle.
    fn erf_reference(x: f64) -> f64 {
        if x.abs() > 5.0 {
            return x.signum();
        }
        let (mut term, mut sum, mut n) = (x, x, 0.0);
        while term.abs() > 1e-17 {
            n += 1.0;
            term *= -x * x / n;
            sum += term / (2.0 * n + 1.0);
        }
        sum * 2.0 / std::f64::consts::PI.sqrt()
    }

    #[test]
    fn softmax_rows_sum_to_one_and_keep_order() {
        let mut s = vec![1.0, 2.0, 3.0, -50.0, 0.5, 0.5, 0.5, 0.5, 10.0];
        softmax_rows(&mut s, 3);
        for row in s.chunks(3) {
            assert!((row.iter().sum::<f32>() - 1.0).abs() < 1e-6);
        }
        assert!(s[0] < s[1] && s[1] < s[2]);
        let e = [1.0f32.exp(), 2.0f32.exp(), 3.0f32.exp()];
        assert!((s[2] - e[2] / e.iter().sum::<f32>()).abs() < 1e-6);
    }

    #[test]
    fn matmul_accumulates_with_strides() {
        // dst (2, 2) with row stride 3, lhs (2, 3), rhs (3, 2).
        let lhs = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        let rhs = [1.0, 0.0, 0.0, 1.0, 1.0, 1.0];
        let mut dst = [10.0, 20.0, -1.0, 30.0, 40.0, -1.0];
        matmul(2, 2, 3, &mut dst, 3, &lhs, 3, &rhs, 2);
        assert_eq!(dst, [14.0, 25.0, -1.0, 40.0, 51.0, -1.0]);
    }
}
