//! Column-projected, streaming reads of a run's Parquet tables for the report.
//!
//! The report reads a handful of columns of a few tables once, in row order, so it never
//! holds a whole table (or a column it does not need, such as the reports' embedded text) in
//! memory: each table is read batch by batch with only the named columns decoded.

use std::fs::File;
use std::path::{Path, PathBuf};

use arrow_array::RecordBatch;
use arrow_schema::{Schema, SchemaRef};
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::{ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder};

use super::progress::Progress;
use crate::error::{EngineError, Result};
use crate::format::reader::{check_run_id, check_schema};

/// Rows decoded per batch: large enough for fast scans, small enough that a batch of the
/// widest projection stays a few MB.
const BATCH_ROWS: usize = 64 * 1024;

/// One open table, yielding batches of the projected columns.
pub(crate) struct Table {
    path: PathBuf,
    reader: ParquetRecordBatchReader,
}

impl Table {
    /// Opens `dir/file` keeping only the columns of `wanted` (checked for presence and type),
    /// after checking that the file belongs to run `run_id`.
    ///
    /// # Errors
    /// [`EngineError::Io`] when the file cannot be opened; [`EngineError::Corrupt`] when it is
    /// not Parquet, belongs to another run, or lacks a wanted column or has it in another type.
    pub(crate) fn open(dir: &Path, file: &str, wanted: &Schema, run_id: &str) -> Result<Self> {
        let path = dir.join(file);
        let handle = File::open(&path).map_err(|e| EngineError::io(&path, e))?;
        let builder = ParquetRecordBatchReaderBuilder::try_new(handle)
            .map_err(|e| EngineError::corrupt_because(&path, "not a readable Parquet file", e))?;
        check_run_id(&path, builder.metadata(), run_id)?;
        let schema: SchemaRef = builder.schema().clone();
        check_schema(&path, &schema, wanted)?;
        let roots: Vec<usize> = wanted
            .fields()
            .iter()
            .filter_map(|f| schema.index_of(f.name()).ok())
            .collect();
        let mask = ProjectionMask::roots(builder.parquet_schema(), roots);
        let reader = builder
            .with_projection(mask)
            .with_batch_size(BATCH_ROWS)
            .build()
            .map_err(|e| EngineError::corrupt_because(&path, "Parquet decode", e))?;
        Ok(Self { path, reader })
    }

    /// Calls `f` on every batch in file order, advancing `progress` by its rows.
    ///
    /// # Errors
    /// [`EngineError::Corrupt`] when a page cannot be decoded; any error of `f`.
    pub(crate) fn for_each(
        self,
        progress: &Progress,
        mut f: impl FnMut(&RecordBatch, &Path) -> Result<()>,
    ) -> Result<()> {
        let Self { path, reader } = self;
        for batch in reader {
            let batch =
                batch.map_err(|e| EngineError::corrupt_because(&path, "Parquet decode", e))?;
            f(&batch, &path)?;
            progress.advance(batch.num_rows() as u64);
        }
        Ok(())
    }
}

/// The schema of `columns` of `full` (a table schema of [`crate::format::tables`]), in that
/// order: what [`Table::open`] checks and projects.
///
/// # Panics
/// When a name is not a column of `full` (a programming error in this module).
#[track_caller]
pub(crate) fn projection(full: &Schema, columns: &[&str]) -> Schema {
    Schema::new(
        columns
            .iter()
            .map(|name| {
                full.field_with_name(name)
                    .unwrap_or_else(|_| panic!("{name} is not a column of this table"))
                    .clone()
            })
            .collect::<Vec<_>>(),
    )
}
