//! The machine's dense f32 matrix-multiply rate, the yardstick of MiniLM's achieved GFLOP/s.

use std::time::Instant;

/// One measurement of [`gemm_f32_gflops`].
#[derive(Debug, Clone, PartialEq)]
pub struct GemmRate {
    /// Matrix side `n` (the product is `n × n` by `n × n`).
    pub n: usize,
    /// Threads of the Rayon pool the product ran on.
    pub threads: usize,
    /// Seconds of each timed product, in run order.
    pub seconds: Vec<f64>,
    /// `2n³ / median seconds / 10⁹`.
    pub median_gflops: f64,
    /// `2n³ / fastest seconds / 10⁹`.
    pub best_gflops: f64,
}

/// Measures an `n × n` f32 GEMM (`C = A·B`, `2n³` flops) through the `gemm` crate (kernels
/// chosen at run time: AVX-512 with its `x86-v4` feature, else AVX2/FMA or SSE), the products
/// the engine's all-MiniLM-L6-v2 forward pass runs on, so the ratio of MiniLM's rate to this one
/// says how far the model is from the machine's matrix-multiply bound. One warm-up product,
/// then `reps` timed ones split over a fresh Rayon pool of `threads` threads.
///
/// # Errors
/// The pool's error as text, or a product with non-finite values.
///
/// # Complexity
/// * Time: **O(reps · n³)**; space: **3 n²** f32 values (48 MiB at n = 2048).
pub fn gemm_f32_gflops(n: usize, threads: usize, reps: usize) -> Result<GemmRate, String> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| format!("thread pool: {e}"))?;
    // Deterministic, non-trivial values (no denormals, no zeros that could be skipped).
    let values = |k: usize| -> Vec<f32> {
        (0..n * n)
            .map(|i| ((i * 7 + k * 13) % 97) as f32 / 97.0 - 0.5)
            .collect()
    };
    let (a, b) = (values(1), values(2));
    let mut c = vec![0.0f32; n * n];
    let parallelism = if threads > 1 {
        gemm::Parallelism::Rayon(threads)
    } else {
        gemm::Parallelism::None
    };
    let mut product = || {
        let t = Instant::now();
        // SAFETY: a, b and c are n × n row-major (row stride n, column stride 1), and c is a
        // distinct buffer borrowed exclusively for the call.
        #[allow(unsafe_code)]
        unsafe {
            gemm::gemm(
                n,
                n,
                n,
                c.as_mut_ptr(),
                1,
                n as isize,
                false,
                a.as_ptr(),
                1,
                n as isize,
                b.as_ptr(),
                1,
                n as isize,
                0.0,
                1.0,
                false,
                false,
                false,
                parallelism,
            );
        }
        t.elapsed().as_secs_f64()
    };
    let seconds: Vec<f64> = pool.install(|| {
        product();
        (0..reps.max(1)).map(|_| product()).collect()
    });
    if !c.iter().all(|x| x.is_finite()) {
        return Err("the product has non-finite values".into());
    }
    let mut sorted = seconds.clone();
    sorted.sort_by(f64::total_cmp);
    let flops = 2.0 * (n as f64).powi(3);
    Ok(GemmRate {
        n,
        threads,
        median_gflops: flops / sorted[sorted.len() / 2] / 1e9,
        best_gflops: flops / sorted[0] / 1e9,
        seconds,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_gemm_rate_is_positive_and_consistent() {
        let r = gemm_f32_gflops(64, 1, 3).unwrap();
        assert_eq!(r.seconds.len(), 3);
        assert!(r.best_gflops >= r.median_gflops && r.median_gflops > 0.0);
    }
}
