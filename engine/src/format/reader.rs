//! Reading tables of a run back, with the checks that turn a damaged file into a clear error.

use std::fs::File;
use std::path::Path;

use arrow_array::{Array, RecordBatch};
use arrow_schema::Schema;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::file::metadata::{ParquetMetaData, RowGroupMetaData};

use super::META_RUN_ID;
use crate::error::{EngineError, Result};

/// Reads a whole Parquet table into one batch, checking that every column of `expected` is
/// present with its type, and (when given) that the file's `run_id` metadata is `run_id`.
///
/// # Errors
/// [`EngineError::Io`] when the file cannot be opened; [`EngineError::Corrupt`] when it is not
/// Parquet, is truncated, lacks a column, has a column of another type, or belongs to another
/// run.
pub fn read_parquet(path: &Path, expected: &Schema, run_id: Option<&str>) -> Result<RecordBatch> {
    read_parquet_row_groups(path, expected, run_id, |_| true)
}

/// As [`read_parquet`], reading only the row groups `keep` accepts (by their metadata, e.g.
/// the min/max statistics of a sort column), so a lookup of a few keys in a sorted table
/// reads a few row groups instead of the file.
///
/// # Errors
/// As [`read_parquet`].
pub fn read_parquet_row_groups(
    path: &Path,
    expected: &Schema,
    run_id: Option<&str>,
    keep: impl Fn(&RowGroupMetaData) -> bool,
) -> Result<RecordBatch> {
    let file = File::open(path).map_err(|e| EngineError::io(path, e))?;
    let builder = ParquetRecordBatchReaderBuilder::try_new(file)
        .map_err(|e| EngineError::corrupt_because(path, "not a readable Parquet file", e))?;
    if let Some(want) = run_id {
        check_run_id(path, builder.metadata(), want)?;
    }
    let schema = builder.schema().clone();
    check_schema(path, &schema, expected)?;
    let row_groups: Vec<usize> = (0..builder.metadata().num_row_groups())
        .filter(|&g| keep(builder.metadata().row_group(g)))
        .collect();
    let reader = builder
        .with_row_groups(row_groups)
        .with_batch_size(64 * 1024)
        .build()
        .map_err(|e| EngineError::corrupt_because(path, "Parquet decode", e))?;
    let mut batches = Vec::new();
    for batch in reader {
        batches.push(batch.map_err(|e| EngineError::corrupt_because(path, "Parquet decode", e))?);
    }
    let batch = arrow_select::concat::concat_batches(&schema, &batches)
        .map_err(|e| EngineError::corrupt_because(path, "Parquet decode", e))?;
    // Project to the expected column order so callers can index by position if they like.
    let indices: Vec<usize> = expected
        .fields()
        .iter()
        .map(|f| schema.index_of(f.name()).unwrap_or(0))
        .collect();
    batch
        .project(&indices)
        .map_err(|e| EngineError::corrupt_because(path, "Parquet decode", e))
}

/// Checks that the Parquet file at `path`, whose metadata is `metadata`, belongs to run `want`
/// (its `run_id` key-value metadata).
///
/// # Errors
/// [`EngineError::Corrupt`] naming the file when the key is missing or names another run.
pub fn check_run_id(path: &Path, metadata: &ParquetMetaData, want: &str) -> Result<()> {
    let found = metadata
        .file_metadata()
        .key_value_metadata()
        .and_then(|kv| kv.iter().find(|k| k.key == META_RUN_ID))
        .and_then(|k| k.value.clone());
    if found.as_deref() == Some(want) {
        Ok(())
    } else {
        Err(EngineError::corrupt(
            path,
            format!("run_id metadata is {found:?}, expected {want:?}"),
        ))
    }
}

/// Checks that `found` has every field of `expected`, with the same data type.
///
/// # Errors
/// [`EngineError::Corrupt`] naming the first missing or mistyped column.
pub fn check_schema(path: &Path, found: &Schema, expected: &Schema) -> Result<()> {
    for field in expected.fields() {
        match found.field_with_name(field.name()) {
            Err(_) => {
                return Err(EngineError::corrupt(
                    path,
                    format!("missing column {:?}", field.name()),
                ));
            }
            Ok(f) if !types_match(f.data_type(), field.data_type()) => {
                return Err(EngineError::corrupt(
                    path,
                    format!(
                        "column {:?} has type {}, expected {}",
                        field.name(),
                        f.data_type(),
                        field.data_type()
                    ),
                ));
            }
            Ok(_) => {}
        }
    }
    Ok(())
}

/// Types equal up to the names and nullability of nested list items.
fn types_match(a: &arrow_schema::DataType, b: &arrow_schema::DataType) -> bool {
    use arrow_schema::DataType as D;
    match (a, b) {
        (D::List(x), D::List(y)) | (D::LargeList(x), D::LargeList(y)) => {
            types_match(x.data_type(), y.data_type())
        }
        (D::FixedSizeList(x, n), D::FixedSizeList(y, m)) => {
            n == m && types_match(x.data_type(), y.data_type())
        }
        _ => a == b,
    }
}

/// The column `name` of `batch` downcast to `T`.
///
/// # Errors
/// [`EngineError::Corrupt`] naming `path` and the column when it is missing or of another type.
pub fn column<'a, T: Array + 'static>(
    batch: &'a RecordBatch,
    name: &str,
    path: &Path,
) -> Result<&'a T> {
    batch
        .column_by_name(name)
        .ok_or_else(|| EngineError::corrupt(path, format!("missing column {name:?}")))?
        .as_any()
        .downcast_ref::<T>()
        .ok_or_else(|| {
            EngineError::corrupt(path, format!("column {name:?} has an unexpected type"))
        })
}

/// Like [`column()`], and also refuses nulls in the column.
///
/// # Errors
/// As [`column()`], and [`EngineError::Corrupt`] when the column holds a null.
pub fn column_no_nulls<'a, T: Array + 'static>(
    batch: &'a RecordBatch,
    name: &str,
    path: &Path,
) -> Result<&'a T> {
    let c = column::<T>(batch, name, path)?;
    if c.null_count() > 0 {
        return Err(EngineError::corrupt(
            path,
            format!("column {name:?} holds nulls"),
        ));
    }
    Ok(c)
}

/// Checks that the column `name` of `batch` holds 0, 1, 2, … row for row (the dense ids of
/// `entities.parquet`).
///
/// # Errors
/// As [`column_no_nulls`], and [`EngineError::Corrupt`] when an id is not its row number.
pub fn check_dense_ids(batch: &RecordBatch, name: &str, path: &Path) -> Result<()> {
    let ids = column_no_nulls::<arrow_array::UInt32Array>(batch, name, path)?;
    if ids
        .values()
        .iter()
        .enumerate()
        .any(|(i, &e)| e as usize != i)
    {
        return Err(EngineError::corrupt(
            path,
            format!("{name} must be dense from 0, in order"),
        ));
    }
    Ok(())
}

/// The rows of a content-addressed IPC file (`batches` of the file at `path`, each checked
/// against `expected`, without nulls) by the 32-byte key of column `key` (a BLAKE3): `(batch,
/// row within it)` of each key. `what` names a key in messages ("text hash").
///
/// # Errors
/// [`EngineError::Corrupt`] naming `path` for a batch of another schema, a null, a key of
/// another size, a key listed twice (with its row), or another number of rows than
/// `expected_rows` (the manifest's).
pub(crate) fn index_by_key(
    path: &Path,
    batches: &[RecordBatch],
    expected: &Schema,
    key: &str,
    what: &str,
    expected_rows: u64,
) -> Result<std::collections::HashMap<[u8; 32], (u32, u32)>> {
    use arrow_array::cast::AsArray;
    let mut index =
        std::collections::HashMap::with_capacity(usize::try_from(expected_rows).unwrap_or(0));
    let mut row = 0usize;
    for (b, batch) in batches.iter().enumerate() {
        check_schema(path, &batch.schema(), expected)?;
        if batch.columns().iter().any(|c| c.null_count() > 0) {
            return Err(EngineError::corrupt(path, "null values"));
        }
        let keys = batch
            .column_by_name(key)
            .and_then(|c| c.as_fixed_size_binary_opt())
            .ok_or_else(|| EngineError::corrupt(path, format!("no column {key}")))?;
        for (i, k) in keys.iter().enumerate() {
            let k: [u8; 32] = k
                .and_then(|k| k.try_into().ok())
                .ok_or_else(|| EngineError::corrupt(path, format!("a {what} of another size")))?;
            if index.insert(k, (b as u32, i as u32)).is_some() {
                return Err(EngineError::corrupt(
                    path,
                    format!("row {}: {what} listed twice", row + i),
                ));
            }
        }
        row += batch.num_rows();
    }
    if row as u64 != expected_rows {
        return Err(EngineError::corrupt(
            path,
            format!("{row} rows, the manifest says {expected_rows}"),
        ));
    }
    Ok(index)
}
