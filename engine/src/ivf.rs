//! Inverted-file (IVF) index over report embeddings: the candidate read of `search_themes` at
//! scale.
//!
//! An exact scan scores every report embedding: at 100,000 communities × 384 dimensions that
//! reads 154 MB per query, several milliseconds at memory speed. An IVF index partitions the
//! embeddings into `lists` cells around centroids; a query scores the centroids, scores the
//! int8 codes of the rows of the cells whose centroids are most similar, and re-scores the best
//! of those *exactly* (the same dot product as the exact scan) to keep the best `k`.
//!
//! - Partition: spherical k-means (Dhillon & Modha, "Concept decompositions for large sparse
//!   text data using clustering", Machine Learning 42, 2001): centroids are unit vectors,
//!   similarity is the dot product, trained on a deterministic sample, Lloyd iterations.
//! - Search: the IVF coarse quantizer of Jégou, Douze & Schmid, "Product quantization for
//!   nearest neighbor search", IEEE TPAMI 33(1), 2011, with per-row int8 scalar quantization
//!   of the cell contents and an exact float re-rank of the shortlist.
//!
//! The result is **approximate**: a row whose cell was not probed is never a candidate. The
//! `query-bench` binary measures the recall against the exact scan; set
//! [`CandidateSearch::Exact`] to always scan everything. Building is deterministic: the same
//! matrix and parameters give the same partition with any number of threads (rows are assigned
//! in parallel by a pure function; sums are accumulated in row order).

use rayon::prelude::*;

use crate::embed::dot;

mod assign;
mod int8;
mod screen;

/// Fewest rows for which a run gets an IVF index. Below it, an exact scan is already cheap
/// (8,192 × 384 floats = 12.6 MB, about a millisecond).
pub const MIN_ROWS: usize = 8192;

/// How `search_themes` reads its candidate window.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum CandidateSearch {
    /// Use the run's IVF index when it has one (runs of at least [`MIN_ROWS`] communities with
    /// normalized embeddings), probing as [`Probe::default`] says; else scan exactly.
    #[default]
    Auto,
    /// Use the IVF index when present, probing as given.
    Ivf(Probe),
    /// Always score every report embedding.
    Exact,
}

/// How many cells a query probes: cells in descending centroid similarity until both minima
/// are met (or every cell is probed).
///
/// The cell fraction counts *communities*, not vectors: in an index whose communities hold
/// `m` vectors on average (see [`IvfIndex::from_parts_grouped`]) it is divided by `m`, so a
/// query scores about the same number of int8 codes whatever `m` is. A community is a
/// candidate as soon as any one of its vectors sits in a probed cell, so its chance of being
/// found does not fall as fast as the fraction of vectors scored.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Probe {
    /// Fewest cells probed, as a fraction of all cells (0 < f ≤ 1) for one vector per
    /// community; divided by the mean number of vectors per community.
    pub min_list_fraction: f32,
    /// Fewest rows (vectors) scored, as a multiple of the number of candidates asked for.
    pub min_rows_per_candidate: usize,
    /// Communities re-scored exactly, as a multiple of the number of candidates asked for.
    pub rerank: usize,
}

impl Default for Probe {
    /// One cell in 32 (per vector of a community), at least 64 rows per candidate, 4 exact
    /// re-scores per candidate: at 100,000 communities of one vector (316 cells) that scores
    /// the int8 codes of about 3,200 rows (1.2 MB, 0.8 % of the bytes an exact scan reads)
    /// and re-scores 60 communities exactly; at 100,000 communities of 6 vectors (775 cells)
    /// it probes 5 cells, about 3,900 rows.
    fn default() -> Self {
        Self {
            min_list_fraction: 1.0 / 32.0,
            min_rows_per_candidate: 64,
            rerank: 4,
        }
    }
}

/// Build parameters of an IVF partition.
#[derive(Debug, Clone, PartialEq)]
pub struct IvfParams {
    /// Number of cells (k of k-means).
    pub lists: usize,
    /// Most Lloyd iterations (stops early when no sample row changes cell).
    pub iterations: usize,
    /// Rows sampled to train the centroids.
    pub train_rows: usize,
    /// Seed of the sample and of the initial centroids.
    pub seed: u64,
}

impl IvfParams {
    /// The default parameters for `rows` embeddings: `round(√rows)` cells, 10 iterations,
    /// 64 training rows per cell. `None` below [`MIN_ROWS`].
    pub fn for_rows(rows: usize) -> Option<Self> {
        if rows < MIN_ROWS {
            return None;
        }
        let lists = ((rows as f64).sqrt().round() as usize).clamp(16, 1 << 16);
        Some(Self {
            lists,
            iterations: 10,
            train_rows: (lists * 64).min(rows),
            seed: 0x005e_ed1f,
        })
    }
}

/// A trained partition: `lists × dim` unit centroids (row-major) and each row's cell.
#[derive(Debug, Clone, PartialEq)]
pub struct IvfPartition {
    /// Centroids, row-major, `lists × dim`, each of unit length.
    pub centroids: Vec<f32>,
    /// The cell of each input row (`rows` values, each `< lists`).
    pub assignment: Vec<u32>,
}

/// SplitMix64: a stateless, well-mixed hash of `seed` and `i` (Steele, Lea & Flood 2014).
fn mix(seed: u64, i: u64) -> u64 {
    let mut z = seed ^ i.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn normalize(v: &mut [f32]) -> bool {
    let n = dot(v, v).sqrt();
    if n > 0.0 && n.is_finite() {
        v.iter_mut().for_each(|x| *x /= n);
        true
    } else {
        false
    }
}

/// The most similar centroid of `row` (ties: the lower cell) and its similarity.
pub(super) fn nearest(centroids: &[f32], dim: usize, row: &[f32]) -> (u32, f32) {
    let mut best = (0u32, f32::NEG_INFINITY);
    for (c, cen) in centroids.chunks_exact(dim).enumerate() {
        let s = dot(row, cen);
        if s > best.1 {
            best = (c as u32, s);
        }
    }
    best
}

/// [`nearest`] of every row `row(i)` for `i < count`, in order, in parallel: screened by
/// int8 codes when there are at least [`screen::MIN_CELLS`] cells (see [`screen`]), else a
/// block of rows at a time (see [`assign::nearest_block`]). Either way bit for bit
/// [`nearest`]'s answers.
fn nearest_all<'m>(
    centroids: &[f32],
    dim: usize,
    count: usize,
    row: impl Fn(usize) -> &'m [f32] + Sync,
) -> Vec<(u32, f32)> {
    use assign::BLOCK_ROWS;
    if centroids.len() / dim.max(1) >= screen::MIN_CELLS
        && let Some(screen) = screen::Screen::new(centroids, dim)
    {
        // Rows a task screens with one set of buffers.
        const CHUNK: usize = 256;
        return (0..count.div_ceil(CHUNK))
            .into_par_iter()
            .flat_map_iter(|b| {
                let mut scratch = screen::Scratch::default();
                let span = b * CHUNK..((b + 1) * CHUNK).min(count);
                let mut out = Vec::with_capacity(span.len());
                let mut i = span.start;
                while i + screen::BLOCK <= span.end {
                    let rows: [&[f32]; screen::BLOCK] = std::array::from_fn(|k| row(i + k));
                    out.extend(screen.nearest(centroids, rows, &mut scratch));
                    i += screen::BLOCK;
                }
                for i in i..span.end {
                    out.extend(screen.nearest(centroids, [row(i)], &mut scratch));
                }
                out
            })
            .collect();
    }
    (0..count.div_ceil(BLOCK_ROWS))
        .into_par_iter()
        .flat_map_iter(|b| {
            let span = b * BLOCK_ROWS..((b + 1) * BLOCK_ROWS).min(count);
            let rows: Vec<&[f32]> = span.map(&row).collect();
            let mut out = [(0u32, 0.0f32); BLOCK_ROWS];
            assign::nearest_block(centroids, dim, &rows, &mut out[..rows.len()]);
            out.into_iter().take(rows.len())
        })
        .collect()
}

/// Rows a windowed pass over the matrix reads at a time (a multiple of the assignment's
/// block, so windows change no result): 16 Ki rows, 24 MiB at 384 dimensions.
const WINDOW_ROWS: usize = 16 * 1024;

/// Trains a spherical k-means partition of the `rows × dim` row-major `matrix`.
///
/// `params.lists` is capped at the number of rows. Empty cells are re-seeded with the sample
/// row least similar to its centroid, so no cell ends empty while rows remain.
///
/// # Panics
/// When `dim` is 0 or `matrix.len()` is not a multiple of `dim`.
pub fn build(matrix: &[f32], dim: usize, params: &IvfParams) -> IvfPartition {
    build_releasing(matrix, dim, params, &|_| {})
}

/// [`build`] for a matrix read from a map that drops what it has read (`release` gets each
/// range once read): the seed rows are read, then the training sample is copied out in row
/// order, then every row is assigned a window of 16 Ki rows at a time, in order. The
/// partition is bit for bit [`build`]'s.
///
/// # Panics
/// As [`build`].
pub fn build_releasing(
    matrix: &[f32],
    dim: usize,
    params: &IvfParams,
    release: &dyn Fn(&[f32]),
) -> IvfPartition {
    assert!(dim > 0 && matrix.len().is_multiple_of(dim), "matrix shape");
    let rows = matrix.len() / dim;
    let row = |r: usize| &matrix[r * dim..(r + 1) * dim];
    let lists = params.lists.clamp(1, rows.max(1));
    if rows == 0 {
        return IvfPartition {
            centroids: Vec::new(),
            assignment: Vec::new(),
        };
    }
    // A deterministic sample: rows ordered by a seeded hash; the first `lists` seed the centroids.
    let mut order: Vec<(u64, u32)> = (0..rows as u32)
        .map(|r| (mix(params.seed, u64::from(r)), r))
        .collect();
    order.sort_unstable();
    let train = params.train_rows.clamp(lists, rows);
    let mut sample: Vec<u32> = order[..train].iter().map(|&(_, r)| r).collect();
    let mut centroids: Vec<f32> = Vec::with_capacity(lists * dim);
    for &r in &sample[..lists] {
        let mut c = row(r as usize).to_vec();
        normalize(&mut c);
        centroids.extend_from_slice(&c);
    }
    // The seeds were read at random: drop them before the sample is read in order.
    release(matrix);
    sample.sort_unstable();
    // The sample's rows, in sample order: the iterations read them many times, at random.
    // Gathered in row order, each window of the matrix released once passed.
    let mut trained: Vec<f32> = Vec::with_capacity(sample.len() * dim);
    let mut passed = 0usize;
    for &r in &sample {
        let window_start = r as usize / WINDOW_ROWS * WINDOW_ROWS;
        if window_start > passed {
            release(&matrix[passed * dim..window_start * dim]);
            passed = window_start;
        }
        trained.extend_from_slice(row(r as usize));
    }
    drop(sample);
    release(&matrix[passed * dim..]);
    let sample_row = |i: usize| &trained[i * dim..(i + 1) * dim];
    let mut cells: Vec<u32> = vec![u32::MAX; trained.len() / dim];
    for _ in 0..params.iterations.max(1) {
        let assigned = nearest_all(&centroids, dim, cells.len(), sample_row);
        let changed = assigned
            .iter()
            .zip(&cells)
            .filter(|(a, c)| a.0 != **c)
            .count();
        cells = assigned.iter().map(|a| a.0).collect();
        if changed == 0 {
            break;
        }
        // Sums in sample order: the same result whatever the thread count.
        let mut sums = vec![0.0f32; lists * dim];
        let mut counts = vec![0usize; lists];
        for (i, &c) in cells.iter().enumerate() {
            counts[c as usize] += 1;
            let s = &mut sums[c as usize * dim..(c as usize + 1) * dim];
            s.iter_mut().zip(sample_row(i)).for_each(|(a, b)| *a += b);
        }
        // Re-seed empty cells with the worst-served sample rows (lowest similarity first).
        let mut worst: Vec<(f32, usize)> =
            assigned.iter().enumerate().map(|(i, a)| (a.1, i)).collect();
        worst.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let mut next_worst = worst.into_iter();
        for c in 0..lists {
            let slot = &mut sums[c * dim..(c + 1) * dim];
            if counts[c] == 0
                && let Some((_, i)) = next_worst.next()
            {
                slot.copy_from_slice(sample_row(i));
            }
            if normalize(slot) {
                centroids[c * dim..(c + 1) * dim].copy_from_slice(slot);
            }
        }
    }
    drop(trained);
    let mut assignment = Vec::with_capacity(rows);
    for first in (0..rows).step_by(WINDOW_ROWS) {
        let n = WINDOW_ROWS.min(rows - first);
        let window = &matrix[first * dim..(first + n) * dim];
        let assigned = nearest_all(&centroids, dim, n, |i| &window[i * dim..(i + 1) * dim]);
        assignment.extend(assigned.into_iter().map(|(c, _)| c));
        release(window);
    }
    IvfPartition {
        centroids,
        assignment,
    }
}

/// Scalar quantization of one vector to int8: `(scale, codes)` with `x ≈ scale × code`,
/// `scale = max|x| / 127` (0 for a zero vector).
pub fn quantize(x: &[f32]) -> (f32, Vec<i8>) {
    let mut codes = vec![0; x.len()];
    let scale = quantize_into(x, &mut codes);
    (scale, codes)
}

/// [`quantize`] into `codes` (`x.len()` values); returns the scale.
fn quantize_into(x: &[f32], codes: &mut [i8]) -> f32 {
    let max = x.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    if max == 0.0 || !max.is_finite() {
        codes.fill(0);
        return 0.0;
    }
    let scale = max / 127.0;
    for (c, v) in codes.iter_mut().zip(x) {
        *c = (v / scale).round().clamp(-127.0, 127.0) as i8;
    }
    scale
}

/// A loaded IVF index: unit centroids and, per cell, its rows (ascending) with int8 codes of
/// their vectors, stored contiguously in cell order.
///
/// A search scores the probed cells' codes (1 byte per dimension: a quarter of the float
/// matrix's bytes, read sequentially), keeps the best `rerank × k` by that approximate score,
/// and re-scores those exactly from the float matrix: candidates and their scores are those
/// of the exact dot product.
#[derive(Debug, Clone)]
pub struct IvfIndex {
    dim: usize,
    /// Number of indexed rows (communities); the entries may be more (several per row).
    groups: usize,
    centroids: Vec<f32>,
    offsets: Vec<u32>,
    rows: Vec<u32>,
    scales: Vec<f32>,
    codes: arrow_buffer::ScalarBuffer<i8>,
}

/// What one IVF read did, besides its candidates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IvfStats {
    /// Cells probed.
    pub lists_probed: usize,
    /// Rows scored by their int8 codes.
    pub rows_scored: usize,
    /// Rows (communities, for a grouped index) re-scored exactly.
    pub rows_reranked: usize,
}

/// One stored entry of an index, in cell order (see [`IvfIndex::entries`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IvfEntry<'a> {
    /// Cell.
    pub list: u32,
    /// Row of the indexed matrix (community id).
    pub row: u32,
    /// Quantization scale of the row.
    pub scale: f32,
    /// Int8 codes of the row (`dim` values).
    pub code: &'a [i8],
}

impl IvfIndex {
    /// Builds the index of `partition` over the `rows × dim` `matrix` it was trained on.
    ///
    /// # Panics
    /// When the partition does not match the matrix (a programming error).
    pub fn from_partition(matrix: &[f32], dim: usize, partition: &IvfPartition) -> Self {
        Self::from_partition_releasing(matrix, dim, partition, &|_| {})
    }

    /// [`from_partition`](Self::from_partition) reading `matrix` once, in order, a window of
    /// rows at a time, `release` getting each window once it is read (for a map that drops
    /// what it has read). Each row's codes go straight to its place in cell order, so the
    /// only buffer as large as the matrix is the index's own codes (a quarter of its bytes).
    ///
    /// # Panics
    /// As [`from_partition`](Self::from_partition).
    pub fn from_partition_releasing(
        matrix: &[f32],
        dim: usize,
        partition: &IvfPartition,
        release: &dyn Fn(&[f32]),
    ) -> Self {
        let rows = matrix.len() / dim;
        assert_eq!(
            partition.assignment.len(),
            rows,
            "partition of another matrix"
        );
        // Entries in (cell, row) order: a counting sort by cell, rows ascending within one.
        let lists = partition.centroids.len() / dim;
        let mut next = vec![0usize; lists + 1];
        for &c in &partition.assignment {
            next[c as usize + 1] += 1;
        }
        for c in 0..lists {
            next[c + 1] += next[c];
        }
        let cells: Vec<u32> = (0..lists)
            .flat_map(|c| std::iter::repeat_n(c as u32, next[c + 1] - next[c]))
            .collect();
        let mut rows_in_order = vec![0u32; rows];
        let mut place = vec![0u32; rows];
        for (r, &c) in partition.assignment.iter().enumerate() {
            let at = &mut next[c as usize];
            rows_in_order[*at] = r as u32;
            place[r] = *at as u32;
            *at += 1;
        }
        let mut scales = vec![0.0f32; rows];
        let mut codes = vec![0i8; rows * dim];
        let mut window_codes = vec![0i8; WINDOW_ROWS * dim];
        let mut window_scales = vec![0.0f32; WINDOW_ROWS];
        for first in (0..rows).step_by(WINDOW_ROWS) {
            let n = WINDOW_ROWS.min(rows - first);
            let window = &matrix[first * dim..(first + n) * dim];
            window_codes[..n * dim]
                .par_chunks_mut(dim)
                .zip(window_scales[..n].par_iter_mut())
                .zip(window.par_chunks(dim))
                .for_each(|((c, s), x)| *s = quantize_into(x, c));
            for i in 0..n {
                let at = place[first + i] as usize;
                scales[at] = window_scales[i];
                codes[at * dim..(at + 1) * dim]
                    .copy_from_slice(&window_codes[i * dim..(i + 1) * dim]);
            }
            release(window);
        }
        drop(place);
        Self::from_parts(
            dim,
            partition.centroids.clone(),
            &cells,
            rows_in_order,
            scales,
            codes.into(),
            rows,
        )
        .expect("a partition's own index is valid")
    }

    /// Assembles an index from stored parts: `lists × dim` centroids; per entry in cell order
    /// its cell (`cells`, ascending), its row (`rows`, ascending within a cell, each row of
    /// `0..num_rows` exactly once), its scale and its `dim` codes.
    ///
    /// # Errors
    /// A message naming the first inconsistency (lengths, order, range, duplicates).
    pub fn from_parts(
        dim: usize,
        centroids: Vec<f32>,
        cells: &[u32],
        rows: Vec<u32>,
        scales: Vec<f32>,
        codes: arrow_buffer::ScalarBuffer<i8>,
        num_rows: usize,
    ) -> Result<Self, String> {
        let once = vec![1u32; num_rows];
        Self::from_parts_grouped(dim, centroids, cells, rows, scales, codes, &once)
    }

    /// [`from_parts`](Self::from_parts) for an index whose entries name *groups* of rows (the
    /// communities of a run whose communities hold one or more vectors each): group `g` has
    /// `group_rows[g]` entries, which may share a cell (`rows` is then non-decreasing within
    /// a cell, not strictly ascending).
    ///
    /// # Errors
    /// A message naming the first inconsistency (lengths, order, range, a group with another
    /// number of entries than `group_rows` says).
    pub fn from_parts_grouped(
        dim: usize,
        centroids: Vec<f32>,
        cells: &[u32],
        rows: Vec<u32>,
        scales: Vec<f32>,
        codes: arrow_buffer::ScalarBuffer<i8>,
        group_rows: &[u32],
    ) -> Result<Self, String> {
        let num_rows = group_rows.len();
        let num_entries: usize = group_rows.iter().map(|&n| n as usize).sum();
        if dim == 0 || !centroids.len().is_multiple_of(dim) {
            return Err(format!(
                "{} centroid values are not a multiple of dimension {dim}",
                centroids.len()
            ));
        }
        let n = cells.len();
        if rows.len() != n || scales.len() != n || codes.len() != n * dim || n != num_entries {
            return Err(format!(
                "{n} cells, {} rows, {} scales, {} codes for {num_entries} rows of dimension {dim}",
                rows.len(),
                scales.len(),
                codes.len()
            ));
        }
        let lists = centroids.len() / dim;
        let mut offsets = vec![0u32; lists + 1];
        let mut seen = vec![0u32; num_rows];
        for e in 0..n {
            let (c, r) = (cells[e], rows[e]);
            if c as usize >= lists {
                return Err(format!("entry {e}: cell {c} out of range (0..{lists})"));
            }
            if r as usize >= num_rows || seen[r as usize] == group_rows[r as usize] {
                return Err(format!("entry {e}: row {r} out of range or repeated"));
            }
            seen[r as usize] += 1;
            let strict = group_rows[r as usize] == 1;
            if e > 0
                && ((cells[e - 1], rows[e - 1]) > (c, r)
                    || (strict && (cells[e - 1], rows[e - 1]) == (c, r)))
            {
                return Err(format!("entry {e}: not in (cell, row) order"));
            }
            if !scales[e].is_finite() {
                return Err(format!("entry {e}: scale is not finite"));
            }
            offsets[c as usize + 1] += 1;
        }
        if let Some(r) = (0..num_rows).find(|&r| seen[r] != group_rows[r]) {
            return Err(format!(
                "row {r} has {} entries, {} expected",
                seen[r], group_rows[r]
            ));
        }
        for i in 1..offsets.len() {
            offsets[i] += offsets[i - 1];
        }
        Ok(Self {
            dim,
            groups: num_rows,
            centroids,
            offsets,
            rows,
            scales,
            codes,
        })
    }

    /// Number of cells.
    pub fn lists(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Number of entries (vectors): the indexed rows, or their vectors when a row is a
    /// group of several (see [`from_parts_grouped`](Self::from_parts_grouped)).
    pub fn rows(&self) -> usize {
        self.rows.len()
    }

    /// Number of indexed rows (communities), each with one or more entries.
    pub fn groups(&self) -> usize {
        self.groups
    }

    /// The centroids, row-major, `lists × dim`.
    pub fn centroids(&self) -> &[f32] {
        &self.centroids
    }

    /// The int8 codes of every entry in cell order, row-major (`entries × dim`): the codes of
    /// [`entries`](Self::entries), one shared buffer (cloning it copies no code).
    pub fn codes(&self) -> &arrow_buffer::ScalarBuffer<i8> {
        &self.codes
    }

    /// Every entry in cell order (what the run's index file stores).
    pub fn entries(&self) -> impl Iterator<Item = IvfEntry<'_>> + '_ {
        (0..self.lists()).flat_map(move |c| {
            (self.offsets[c] as usize..self.offsets[c + 1] as usize).map(move |e| IvfEntry {
                list: c as u32,
                row: self.rows[e],
                scale: self.scales[e],
                code: &self.codes[e * self.dim..(e + 1) * self.dim],
            })
        })
    }

    /// The best `k` rows of the probed cells by the exact `dot(query, matrix row)`, descending
    /// (ties: the lower row), with what was read. `matrix` is the `rows × dim` matrix the index
    /// was built on; `query` has `dim` values.
    pub fn search(
        &self,
        matrix: &[f32],
        query: &[f32],
        k: usize,
        probe: Probe,
    ) -> (Vec<(u32, f32)>, IvfStats) {
        let dim = self.dim;
        self.search_by(query, k, probe, |r| {
            dot(query, &matrix[r as usize * dim..(r as usize + 1) * dim])
        })
    }

    /// [`search`](Self::search) with the exact score of a row (or of a group of rows, for an
    /// index built by [`from_parts_grouped`](Self::from_parts_grouped)) given by `exact`.
    /// A group's approximate score is that of its best scored entry; the `rerank × k` best
    /// groups by it are re-scored, each once, by `exact`.
    pub fn search_by(
        &self,
        query: &[f32],
        k: usize,
        probe: Probe,
        exact: impl Fn(u32) -> f32,
    ) -> (Vec<(u32, f32)>, IvfStats) {
        let dim = self.dim;
        let lists = self.lists();
        let mut order: Vec<(u32, f32)> = self
            .centroids
            .chunks_exact(dim)
            .enumerate()
            .map(|(c, cen)| (c as u32, dot(query, cen)))
            .collect();
        order.sort_unstable_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        // Mean entries per group: the cell fraction is one of communities (see `Probe`).
        let per_group = (self.rows.len() as f32 / self.groups.max(1) as f32).max(1.0);
        let fraction = probe.min_list_fraction.clamp(0.0, 1.0) / per_group;
        let min_lists = ((lists as f32 * fraction).ceil() as usize).clamp(1, lists.max(1));
        let min_rows = k.saturating_mul(probe.min_rows_per_candidate).max(k);
        let (_, q8) = quantize(query);
        // (approximate score, entry)
        let mut scored: Vec<(f32, u32)> = Vec::with_capacity(min_rows * 2);
        let mut probed = 0;
        for &(c, _) in &order {
            if probed >= min_lists && scored.len() >= min_rows {
                break;
            }
            probed += 1;
            let (a, b) = (
                self.offsets[c as usize] as usize,
                self.offsets[c as usize + 1] as usize,
            );
            int8::score_codes(
                &q8,
                &self.codes[a * dim..b * dim],
                &self.scales[a..b],
                a as u32,
                &mut scored,
            );
        }
        let rows_scored = scored.len();
        let keep = k.saturating_mul(probe.rerank.max(1)).max(k);
        let cmp = |a: &(f32, u32), b: &(f32, u32)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
        // The best entries of as many groups as `keep`: a group's entries often score alike
        // (they sit in one cell), so `keep` entries alone could name few groups. Taking
        // `keep × ⌈per_group⌉` entries, then each group's best, bounds the exact re-scores
        // by `keep` groups.
        let take = keep.saturating_mul(per_group.ceil() as usize);
        if take < scored.len() {
            scored.select_nth_unstable_by(take, cmp);
            scored.truncate(take);
        }
        let mut shortlist: Vec<(u32, f32)> = scored
            .iter()
            .map(|&(s, e)| (self.rows[e as usize], s))
            .collect();
        // Each group's best approximate score (ties: the lower group), best first.
        shortlist.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(b.1.total_cmp(&a.1)));
        shortlist.dedup_by_key(|g| g.0);
        let by_score = |a: &(u32, f32), b: &(u32, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
        if keep < shortlist.len() {
            shortlist.select_nth_unstable_by(keep, by_score);
            shortlist.truncate(keep);
        }
        let exact_score = exact;
        let mut exact: Vec<(u32, f32)> = shortlist
            .into_iter()
            .map(|(r, _)| (r, exact_score(r)))
            .collect();
        let stats = IvfStats {
            lists_probed: probed,
            rows_scored,
            rows_reranked: exact.len(),
        };
        exact.sort_by(by_score);
        exact.truncate(k);
        (exact, stats)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` unit vectors around `topics` random unit centers (deterministic).
    fn clustered(n: usize, topics: usize, dim: usize) -> Vec<f32> {
        let unit = |seed: u64| {
            let mut v: Vec<f32> = (0..dim)
                .map(|i| (mix(seed, i as u64) % 2001) as f32 / 1000.0 - 1.0)
                .collect();
            normalize(&mut v);
            v
        };
        let centers: Vec<Vec<f32>> = (0..topics).map(|t| unit(1000 + t as u64)).collect();
        let mut m = Vec::with_capacity(n * dim);
        for r in 0..n {
            let c = &centers[r % topics];
            let noise = unit(1_000_000 + r as u64);
            let mut v: Vec<f32> = c.iter().zip(&noise).map(|(a, b)| a + 0.4 * b).collect();
            normalize(&mut v);
            m.extend(v);
        }
        m
    }

    #[test]
    fn the_blocked_scan_gives_the_plain_scans_bits() {
        // Dimensions with and without a remainder after the chunks of eight, an odd number of
        // centroids (the last scored alone), row counts that leave a partial block, and ties.
        for (dim, cells, rows) in [(16, 7, 10), (13, 8, 9), (384, 33, 41), (5, 1, 3)] {
            let m = clustered(rows, 3, dim);
            let mut centroids = clustered(cells, 2, dim);
            centroids[..dim].copy_from_slice(&m[..dim]);
            if cells > 1 {
                let first = centroids[..dim].to_vec();
                centroids[dim..2 * dim].copy_from_slice(&first);
            }
            let row = |r: usize| &m[r * dim..(r + 1) * dim];
            let blocked = nearest_all(&centroids, dim, rows, row);
            for (r, &(c, s)) in blocked.iter().enumerate() {
                let (pc, ps) = nearest(&centroids, dim, row(r));
                assert_eq!((c, s.to_bits()), (pc, ps.to_bits()), "dim {dim}, row {r}");
            }
        }
    }

    #[test]
    fn build_is_deterministic_across_thread_counts() {
        let dim = 16;
        let m = clustered(2000, 20, dim);
        let p = IvfParams {
            lists: 20,
            iterations: 10,
            train_rows: 800,
            seed: 3,
        };
        let pool = |t| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(t)
                .build()
                .unwrap()
        };
        let a = pool(1).install(|| build(&m, dim, &p));
        let b = pool(4).install(|| build(&m, dim, &p));
        assert_eq!(a, b);
        assert_eq!(a.assignment.len(), 2000);
        assert_eq!(a.centroids.len(), 20 * dim);
        // Every cell is used and centroids are unit vectors.
        let mut used = [false; 20];
        a.assignment.iter().for_each(|&c| used[c as usize] = true);
        assert!(used.iter().all(|&u| u));
        for c in a.centroids.chunks_exact(dim) {
            assert!((dot(c, c) - 1.0).abs() < 1e-4);
        }
    }

    #[test]
    fn probing_every_cell_equals_the_exact_scan() {
        let dim = 16;
        let m = clustered(1500, 12, dim);
        let part = build(&m, dim, &IvfParams::for_rows(MIN_ROWS).unwrap());
        let index = IvfIndex::from_partition(&m, dim, &part);
        assert_eq!(index.rows(), 1500);
        let q = &m[7 * dim..8 * dim];
        let all = Probe {
            min_list_fraction: 1.0,
            min_rows_per_candidate: 1,
            rerank: 100,
        };
        let (hits, stats) = index.search(&m, q, 15, all);
        assert_eq!(stats.rows_scored, 1500);
        let scores: Vec<f32> = m.chunks_exact(dim).map(|r| dot(q, r)).collect();
        assert_eq!(hits, crate::query::theme::top_k(&scores, 15));
        assert_eq!(hits[0].0, 7);
    }

    #[test]
    fn default_probe_finds_the_neighbours_of_clustered_data() {
        let dim = 32;
        let m = clustered(MIN_ROWS, 64, dim);
        let p = IvfParams::for_rows(MIN_ROWS).unwrap();
        assert_eq!(p.lists, 91);
        let part = build(&m, dim, &p);
        let index = IvfIndex::from_partition(&m, dim, &part);
        let scores_of =
            |q: &[f32]| -> Vec<f32> { m.chunks_exact(dim).map(|r| dot(q, r)).collect() };
        let (mut found, mut total) = (0, 0);
        for qi in (0..MIN_ROWS).step_by(97) {
            let q = &m[qi * dim..(qi + 1) * dim];
            let (hits, stats) = index.search(&m, q, 15, Probe::default());
            assert!(stats.rows_scored >= 15 * 64 && stats.rows_scored < MIN_ROWS);
            let exact = crate::query::theme::top_k(&scores_of(q), 15);
            total += exact.len();
            found += exact.iter().filter(|e| hits.contains(e)).count();
        }
        let recall = found as f64 / total as f64;
        assert!(recall > 0.95, "recall@15 {recall}");
    }

    #[test]
    fn rejects_inconsistent_parts() {
        let ok = |cells: &[u32], rows: Vec<u32>| {
            IvfIndex::from_parts(
                2,
                vec![1.0, 0.0, 0.0, 1.0],
                cells,
                rows,
                vec![1.0; cells.len()],
                vec![0i8; 2 * cells.len()].into(),
                2,
            )
        };
        assert!(ok(&[0, 1], vec![0, 1]).is_ok());
        assert!(
            ok(&[0, 2], vec![0, 1])
                .unwrap_err()
                .contains("cell 2 out of range")
        );
        assert!(ok(&[0, 0], vec![1, 1]).unwrap_err().contains("repeated"));
        assert!(ok(&[1, 0], vec![0, 1]).unwrap_err().contains("order"));
        assert!(ok(&[0], vec![0]).is_err());
    }

    #[test]
    fn a_grouped_index_probes_by_communities_and_rescores_each_once() {
        // 4,096 communities of 4 vectors each, all of one community about one topic.
        let (dim, groups, per) = (32, 4096, 4);
        let m = clustered(groups * per, 64, dim);
        // Entry `v` belongs to community `v % groups`, so a community's vectors share a topic
        // (`clustered` cycles over 64 topics, and 64 divides 4,096).
        let group = |v: usize| (v % groups) as u32;
        let p = IvfParams::for_rows(groups * per).unwrap();
        let part = build(&m, dim, &p);
        let mut order: Vec<(u32, u32, usize)> = part
            .assignment
            .iter()
            .enumerate()
            .map(|(v, &c)| (c, group(v), v))
            .collect();
        order.sort_unstable();
        let (mut scales, mut codes) = (Vec::new(), Vec::new());
        for &(_, _, v) in &order {
            let (s, c) = quantize(&m[v * dim..(v + 1) * dim]);
            scales.push(s);
            codes.extend(c);
        }
        let cells: Vec<u32> = order.iter().map(|o| o.0).collect();
        let index = IvfIndex::from_parts_grouped(
            dim,
            part.centroids.clone(),
            &cells,
            order.iter().map(|o| o.1).collect(),
            scales,
            codes.into(),
            &vec![per as u32; groups],
        )
        .unwrap();
        assert_eq!((index.rows(), index.groups()), (groups * per, groups));
        let best = |q: &[f32], g: u32| -> f32 {
            (0..per)
                .map(|j| {
                    let v = g as usize + j * groups;
                    dot(q, &m[v * dim..(v + 1) * dim])
                })
                .fold(f32::NEG_INFINITY, f32::max)
        };
        let (mut found, mut total) = (0, 0);
        for qi in (0..groups * per).step_by(101) {
            let q = &m[qi * dim..(qi + 1) * dim];
            // Without the row minimum: one cell in 32 × 4, not one in 32.
            let few = Probe {
                min_rows_per_candidate: 1,
                ..Probe::default()
            };
            let (_, stats) = index.search_by(q, 15, few, |g| best(q, g));
            let lists = index.lists();
            assert_eq!(stats.lists_probed, lists.div_ceil(128), "{stats:?}");
            let (hits, stats) = index.search_by(q, 15, Probe::default(), |g| best(q, g));
            assert!(stats.rows_reranked <= 60, "{stats:?}");
            let mut ids: Vec<u32> = hits.iter().map(|h| h.0).collect();
            ids.sort_unstable();
            ids.dedup();
            assert_eq!(ids.len(), hits.len(), "a community listed twice");
            for h in &hits {
                assert_eq!(h.1, best(q, h.0));
            }
            let scores: Vec<f32> = (0..groups as u32).map(|g| best(q, g)).collect();
            let exact = crate::query::theme::top_k(&scores, 15);
            total += exact.len();
            found += exact.iter().filter(|e| hits.contains(e)).count();
        }
        let recall = found as f64 / total as f64;
        assert!(recall > 0.95, "recall@15 {recall}");
    }

    #[test]
    fn quantization_round_trips_within_half_a_step() {
        let x = [0.5f32, -0.25, 0.0, 0.125];
        let (s, c) = quantize(&x);
        assert_eq!(c[0], 127);
        for (v, q) in x.iter().zip(&c) {
            assert!((v - s * f32::from(*q)).abs() <= s / 2.0 + 1e-7);
        }
        assert_eq!(quantize(&[0.0, 0.0]), (0.0, vec![0, 0]));
    }
}
