//! Vector matrices too large to hold while a run is written: rows are written out of order
//! into a scratch file of the run's staging folder ([`StagedRows`]), then mapped and streamed
//! to the run's tables ([`RowBuffer`]), whose writers drop each mapped range from the
//! process's resident set once they have read it.
//!
//! At 10⁶ documents a run's community vectors are 3.2 M rows of 1,536 bytes (4.9 GB) and its
//! document vectors 1.5 GB; held on the heap from the embed stage to the last table, they
//! were most of the job's peak memory. In a scratch file they live in the page cache, which
//! the kernel writes back and evicts under pressure, and the process holds at a time only the
//! window a writer is reading.
//!
//! A corpus's passages are staged the same way, as texts appended to a scratch file and read
//! back by index ([`TextColumn`]).
//!
//! The scratch file never reaches a published run: it is removed as soon as it is mapped
//! (the map keeps its bytes), and a failed run's staging folder is removed with it.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_buffer::ScalarBuffer;

use crate::error::{EngineError, Result};
use crate::format::RunWriter;
use crate::store::mmap;

mod text;
pub use text::{TextColumn, TextColumnBuilder};

/// Bytes of one `f32` in a scratch file (native byte order, as the map reads them back).
const F32_BYTES: usize = std::mem::size_of::<f32>();

/// A `rows × dim` matrix of `f32` being written into a scratch file of a run's staging
/// folder: rows in any order ([`StagedRows::write_rows`]), read back as needed
/// ([`StagedRows::read_rows`]), then mapped for the writers ([`StagedRows::finish`]). Rows
/// never written read as zeros.
#[derive(Debug)]
pub struct StagedRows {
    path: PathBuf,
    file: File,
    rows: usize,
    dim: usize,
}

impl StagedRows {
    /// Creates the scratch file `name` (which must not be a table's name) in `w`'s staging
    /// folder, sized for `rows × dim` values of zero (a sparse file: nothing is written yet).
    ///
    /// # Errors
    /// [`EngineError::Io`] naming the file when it cannot be created or sized;
    /// [`EngineError::Internal`] when the size overflows.
    pub fn create(w: &RunWriter, name: &str, rows: usize, dim: usize) -> Result<Self> {
        let path = w.staging_dir().join(name);
        let bytes = rows
            .checked_mul(dim)
            .and_then(|n| n.checked_mul(F32_BYTES))
            .ok_or_else(|| EngineError::Internal(format!("{name}: {rows} × {dim} overflows")))?;
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| EngineError::io(&path, e))?;
        file.set_len(bytes as u64)
            .map_err(|e| EngineError::io(&path, e))?;
        Ok(Self {
            path,
            file,
            rows,
            dim,
        })
    }

    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Values per row.
    pub fn dim(&self) -> usize {
        self.dim
    }

    fn span(&self, first: usize, values: usize) -> Result<u64> {
        if !values.is_multiple_of(self.dim.max(1))
            || first * self.dim + values > self.rows * self.dim
        {
            return Err(EngineError::Internal(format!(
                "{}: {values} values from row {first} do not fit {} rows of {}",
                self.path.display(),
                self.rows,
                self.dim
            )));
        }
        Ok((first * self.dim * F32_BYTES) as u64)
    }

    /// Writes `values` (whole rows, row-major) as the rows from `first` on.
    ///
    /// # Errors
    /// [`EngineError::Io`] naming the file on a write failure; [`EngineError::Internal`] when
    /// the rows do not fit.
    pub fn write_rows(&self, first: usize, values: &[f32]) -> Result<()> {
        let at = self.span(first, values.len())?;
        // The values' own bytes, in native order: the order the map is read back in.
        let bytes = arrow_buffer::ToByteSlice::to_byte_slice(values);
        self.file
            .write_all_at(bytes, at)
            .map_err(|e| EngineError::io(&self.path, e))
    }

    /// Reads the rows from `first` on into `out` (whole rows, row-major).
    ///
    /// # Errors
    /// [`EngineError::Io`] naming the file on a read failure; [`EngineError::Internal`] when
    /// the rows do not fit.
    pub fn read_rows(&self, first: usize, out: &mut [f32]) -> Result<()> {
        let at = self.span(first, out.len())?;
        let mut bytes = vec![0u8; out.len() * F32_BYTES];
        self.file
            .read_exact_at(&mut bytes, at)
            .map_err(|e| EngineError::io(&self.path, e))?;
        for (v, b) in out.iter_mut().zip(bytes.chunks_exact(F32_BYTES)) {
            *v = f32::from_ne_bytes([b[0], b[1], b[2], b[3]]);
        }
        Ok(())
    }

    /// The finished matrix, mapped; the scratch file is removed (the map keeps its bytes).
    ///
    /// # Errors
    /// [`EngineError::Io`] naming the file when it cannot be mapped or removed.
    pub fn finish(self) -> Result<RowBuffer> {
        // No sync: the map reads the page cache the writes went to, and a scratch file need
        // not survive a crash (syncing 10⁶ documents' vectors took seconds).
        let Self { path, file, .. } = self;
        drop(file);
        RowBuffer::map(&path)
    }
}

/// A row-major `f32` matrix handed to the run's writers: on the heap, or a mapped scratch
/// file ([`StagedRows::finish`]) whose pages the writers drop from the resident set as they
/// stream it (they read it in order, a window at a time).
#[derive(Clone, Default)]
pub struct RowBuffer {
    values: ScalarBuffer<f32>,
    map: Option<Arc<memmap2::Mmap>>,
}

impl RowBuffer {
    fn map(path: &Path) -> Result<Self> {
        let (buffer, map) = mmap::map_scratch(path)?;
        if buffer.is_empty() {
            // An empty buffer's pointer need not be aligned for `f32`.
            return Ok(Self::default());
        }
        if !buffer.len().is_multiple_of(F32_BYTES) {
            return Err(EngineError::corrupt(
                path,
                "not a whole number of f32 values",
            ));
        }
        Ok(Self {
            values: ScalarBuffer::new(buffer, 0, map.len() / F32_BYTES),
            map: Some(map),
        })
    }

    /// The values.
    pub fn values(&self) -> &[f32] {
        &self.values
    }

    /// The values as an Arrow buffer (shared, not copied).
    pub fn buffer(&self) -> ScalarBuffer<f32> {
        self.values.clone()
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether there are no values.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Whether the values are a mapped scratch file.
    pub fn is_mapped(&self) -> bool {
        self.map.is_some()
    }

    /// Tells a mapped matrix that `values` (a range of it, read in order) is no longer needed:
    /// their pages leave the resident set (`madvise(MADV_DONTNEED)` of the 64 KiB blocks from
    /// the one holding its start to the last that ends inside it). Nothing for a heap matrix.
    pub fn release(&self, values: &[f32]) {
        if let Some(map) = &self.map {
            // Bytes of the same memory, for the page arithmetic.
            let bytes = arrow_buffer::ToByteSlice::to_byte_slice(values);
            mmap::release(map, bytes);
        }
    }

    /// As [`RowBuffer::release`], for bytes (what an Arrow IPC writer hands its sink).
    pub fn release_bytes(&self, bytes: &[u8]) {
        if let Some(map) = &self.map {
            mmap::release(map, bytes);
        }
    }

    /// Calls `f` on consecutive windows of at most `rows` rows of `dim` values, in order,
    /// releasing each window once `f` returns; stops at the first error.
    ///
    /// # Errors
    /// The first error `f` returns.
    pub fn try_for_each_window<E>(
        &self,
        rows: usize,
        dim: usize,
        mut f: impl FnMut(usize, &[f32]) -> std::result::Result<(), E>,
    ) -> std::result::Result<(), E> {
        let step = rows.max(1) * dim.max(1);
        for (i, window) in self.values.chunks(step).enumerate() {
            f(i * rows.max(1), window)?;
            self.release(window);
        }
        Ok(())
    }
}

impl From<Vec<f32>> for RowBuffer {
    fn from(values: Vec<f32>) -> Self {
        Self {
            values: values.into(),
            map: None,
        }
    }
}

impl std::fmt::Debug for RowBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RowBuffer")
            .field("values", &self.values.len())
            .field("mapped", &self.map.is_some())
            .finish()
    }
}

impl PartialEq for RowBuffer {
    fn eq(&self, other: &Self) -> bool {
        self.values() == other.values()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::Layout;

    #[test]
    fn rows_written_out_of_order_read_back_and_map_without_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout::new(dir.path());
        let w = RunWriter::create(&layout, &crate::format::new_run_id()).unwrap();
        let (rows, dim) = (50_000, 3);
        let staged = StagedRows::create(&w, "scratch.f32", rows, dim).unwrap();
        // Every third row, from the end: the others stay zero.
        for r in (0..rows).rev().step_by(3) {
            let v = [r as f32, -(r as f32), 0.5];
            staged.write_rows(r, &v).unwrap();
        }
        let mut two = [0.0f32; 6];
        staged.read_rows(rows - 2, &mut two).unwrap();
        assert_eq!(
            two,
            [0.0, 0.0, 0.0, (rows - 1) as f32, -((rows - 1) as f32), 0.5]
        );
        assert!(
            staged.write_rows(rows - 1, &[1.0; 6]).is_err(),
            "past the end"
        );
        assert!(staged.write_rows(0, &[1.0; 2]).is_err(), "not a whole row");
        let path = w.staging_dir().join("scratch.f32");
        let m = staged.finish().unwrap();
        assert!(!path.exists(), "the scratch file is gone once mapped");
        assert!(m.is_mapped());
        assert_eq!(m.len(), rows * dim);
        let expected: Vec<f32> = (0..rows)
            .flat_map(|r| {
                if (rows - 1 - r) % 3 == 0 {
                    [r as f32, -(r as f32), 0.5]
                } else {
                    [0.0; 3]
                }
            })
            .collect();
        // Read a window at a time, releasing each: the values are those written, and a
        // released range reads back the same.
        let mut seen = Vec::new();
        m.try_for_each_window(4096, dim, |first, window| {
            assert_eq!(first * dim, seen.len());
            seen.extend_from_slice(window);
            Ok::<(), ()>(())
        })
        .unwrap();
        assert_eq!(seen, expected);
        assert_eq!(m.values(), &expected[..]);
        assert_eq!(m, RowBuffer::from(expected));
        let empty = StagedRows::create(&w, "empty.f32", 0, dim).unwrap();
        assert!(
            empty.finish().unwrap().is_empty(),
            "no rows map to no values"
        );
    }

    /// This process's `RssFile` (resident pages of mapped files) in bytes.
    fn rss_file() -> Option<u64> {
        let status = std::fs::read_to_string("/proc/self/status").ok()?;
        let line = status.lines().find(|l| l.starts_with("RssFile:"))?;
        Some(line.split_whitespace().nth(1)?.parse::<u64>().ok()? * 1024)
    }

    #[test]
    fn released_windows_leave_the_resident_set() {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout::new(dir.path());
        let w = RunWriter::create(&layout, &crate::format::new_run_id()).unwrap();
        let (rows, dim) = (64 * 1024, 256); // 64 MiB
        let staged = StagedRows::create(&w, "scratch.f32", rows, dim).unwrap();
        let row: Vec<f32> = (0..dim).map(|i| i as f32).collect();
        for r in 0..rows {
            staged.write_rows(r, &row).unwrap();
        }
        let m = staged.finish().unwrap();
        let Some(before) = rss_file() else {
            return; // not Linux
        };
        let sum: f64 = m.values().iter().map(|&x| f64::from(x)).sum();
        let touched = rss_file().unwrap();
        m.release(m.values());
        let after = rss_file().unwrap();
        assert_eq!(sum, (rows * dim * (dim - 1) / 2) as f64);
        // Other tests of this process may map files meanwhile: compare with a margin.
        let size = (rows * dim * F32_BYTES) as u64;
        assert!(
            touched >= before + size / 2,
            "reading faults the map in: {before} → {touched}"
        );
        assert!(touched >= after + size / 2, "released: {touched} → {after}");
    }
}
