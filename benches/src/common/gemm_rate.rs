//! The machine's dense f32 matrix-multiply rate, the yardstick of MiniLM's achieved GFLOP/s.

use std::time::Instant;

use candle_core::{Device, Tensor};

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

/// Measures an `n × n` f32 GEMM (`C = A·B`, `2n³` flops) through candle's CPU matmul, which
/// calls the `gemm` crate (runtime-detected AVX2/AVX-512 kernels): the same code path
/// all-MiniLM-L6-v2 runs in the engine, so the ratio of MiniLM's rate to this one says how far
/// the model is from the machine's matrix-multiply bound. One warm-up product, then `reps`
/// timed ones on a fresh Rayon pool of `threads` threads.
///
/// # Errors
/// Candle's error building the tensors or multiplying; the pool's error as text.
///
/// # Complexity
/// * Time: **O(reps · n³)**; space: **3 n²** f32 values (48 MiB at n = 2048).
pub fn gemm_f32_gflops(n: usize, threads: usize, reps: usize) -> Result<GemmRate, String> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| format!("thread pool: {e}"))?;
    pool.install(|| {
        let dev = Device::Cpu;
        // Deterministic, non-trivial values (no denormals, no zeros that could be skipped).
        let values = |k: usize| -> Vec<f32> {
            (0..n * n)
                .map(|i| ((i * 7 + k * 13) % 97) as f32 / 97.0 - 0.5)
                .collect()
        };
        let a = Tensor::from_vec(values(1), (n, n), &dev).map_err(|e| e.to_string())?;
        let b = Tensor::from_vec(values(2), (n, n), &dev).map_err(|e| e.to_string())?;
        a.matmul(&b).map_err(|e| e.to_string())?;
        let mut seconds = Vec::with_capacity(reps);
        for _ in 0..reps.max(1) {
            let t = Instant::now();
            let c = a.matmul(&b).map_err(|e| e.to_string())?;
            seconds.push(t.elapsed().as_secs_f64());
            drop(c);
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
