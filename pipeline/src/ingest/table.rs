//! Documents from a table (Parquet or CSV), read with polars.
//!
//! The columns are those of the JSON Lines shape (see the [ingest docs](super)), one row per
//! document:
//!
//! | column | Parquet type | CSV cell |
//! | --- | --- | --- |
//! | `document_key` (required) | string | text |
//! | `title` | string | text |
//! | `year` | any integer type | an integer |
//! | `passages` | list of strings | a JSON array of strings, e.g. `["first", "second"]` |
//! | `text` | string | text, split into passages by [`super::split_passages`] |
//! | `mesh` | list of strings | a JSON array of strings |
//!
//! At least one of `passages` and `text` must be a column; a row with both non-null is refused,
//! as a JSON line with both is. Nulls are absent fields. Other columns are ignored (and named
//! once in a warning). The key, text and title columns may have other names ([`ColumnNames`]). Every CSV cell is read as
//! text (no type inference, so a key such as `00123` stays as written); CSV has no list type,
//! hence the JSON arrays.
//!
//! Rows become the same [`Fields`] the JSON Lines reader makes and pass through the same
//! [`CorpusBuilder`], so both readers enforce one set of rules. Errors name the file and the
//! column, or the file and the 0-based row.

use std::io::Cursor;
use std::path::Path;

use polars_core::prelude::*;
use polars_io::SerReader;
use polars_io::csv::read::CsvReadOptions;
use polars_io::parquet::read::ParquetReader;

use super::{ColumnNames, CorpusBuilder, DocumentSink, Fields, RecordKind, Source};
use crate::error::{PipelineError, Result};

/// The table formats of documents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TableFormat {
    /// Apache Parquet.
    Parquet,
    /// Comma-separated values with a header line.
    Csv,
}

/// Reads the documents of the table at `path` into `sink`.
///
/// # Errors
/// [`PipelineError::Io`] when the file cannot be read; [`PipelineError::Unreadable`] when it
/// is not a table of that format (a truncated Parquet file, say); [`PipelineError::Column`]
/// naming the column when a required column is missing or a column has the wrong type;
/// [`PipelineError::Row`] naming the row for a null key, a bad cell and every rule of
/// [`CorpusBuilder::push`]; [`PipelineError::EmptyInput`] when no document or passage is left.
pub(crate) fn read_table(
    path: &Path,
    format: TableFormat,
    names: &ColumnNames,
    sink: &mut dyn DocumentSink,
) -> Result<Source> {
    let bytes = std::fs::read(path).map_err(|source| PipelineError::Io {
        path: path.to_owned(),
        source,
    })?;
    let fingerprint = blake3::hash(&bytes).to_hex().to_string();
    let df = match format {
        TableFormat::Parquet => ParquetReader::new(Cursor::new(bytes)).finish(),
        TableFormat::Csv => CsvReadOptions::default()
            .with_has_header(true)
            .with_infer_schema_length(Some(0))
            .into_reader_with_file_handle(Cursor::new(bytes))
            .finish(),
    }
    .map_err(|e| PipelineError::Unreadable {
        path: path.to_owned(),
        format: match format {
            TableFormat::Parquet => "Parquet",
            TableFormat::Csv => "CSV",
        },
        reason: e.to_string(),
    })?;
    let table = Table { path, df: &df };
    let key = table.strings(&names.key, true)?;
    let title = table.strings(&names.title, false)?;
    let text = table.strings(&names.text, false)?;
    let year = table.integers("year")?;
    let passages = table.lists("passages")?;
    let mesh = table.lists("mesh")?;
    if passages.is_none() && text.is_none() {
        return Err(PipelineError::Column {
            path: path.to_owned(),
            column: names.text.clone(),
            reason: "missing: the table needs a `passages` column or a text column".into(),
        });
    }
    let read = [
        names.key.as_str(),
        names.title.as_str(),
        names.text.as_str(),
        "year",
        "passages",
        "mesh",
    ];
    let ignored: Vec<String> = df
        .get_column_names()
        .into_iter()
        .filter(|c| !read.contains(&c.as_str()))
        .map(|c| format!("`{c}`"))
        .collect();
    if !ignored.is_empty() {
        // Ignored, as the docs say, but named: a misspelt column should not pass unnoticed.
        tracing::warn!(
            "{}: ignored column(s) that ingest does not read: {}; it reads {}",
            path.display(),
            ignored.join(", "),
            read.join(", ")
        );
    }
    let mut builder = CorpusBuilder::new(path, RecordKind::Row, sink);
    for row in 0..df.height() {
        let at = row as u64;
        let fields = Fields {
            key: key.as_ref().and_then(|c| c.get(row)),
            title: title.as_ref().and_then(|c| c.get(row)),
            year: match &year {
                Some(c) => c.get(row, &builder)?,
                None => None,
            },
            passages: match &passages {
                Some(c) => c.get(row, &builder, "passages")?,
                None => None,
            },
            text: text.as_ref().and_then(|c| c.get(row)),
            mesh: match &mesh {
                Some(c) => c.get(row, &builder, "mesh")?,
                None => None,
            },
        };
        builder.push(at, fields)?;
    }
    builder.finish(fingerprint)
}

struct Table<'a> {
    path: &'a Path,
    df: &'a DataFrame,
}

/// A string column.
struct Strings(StringChunked);

impl Strings {
    fn get(&self, row: usize) -> Option<String> {
        self.0.get(row).map(str::to_owned)
    }
}

/// An integer column (cast to i64) or, in CSV, a text column of integers.
enum Integers {
    Typed(Int64Chunked),
    Text(StringChunked),
}

impl Integers {
    fn get(&self, row: usize, builder: &CorpusBuilder<'_>) -> Result<Option<i64>> {
        match self {
            Integers::Typed(c) => Ok(c.get(row)),
            Integers::Text(c) => match c.get(row).map(str::trim) {
                None | Some("") => Ok(None),
                Some(s) => s.parse::<i64>().map(Some).map_err(|_| {
                    builder.error(row as u64, format!("year {s:?} is not an integer"))
                }),
            },
        }
    }
}

/// A list-of-strings column or, in CSV, a text column of JSON arrays.
enum Lists {
    Typed(ListChunked),
    Json(StringChunked),
}

impl Lists {
    fn get(
        &self,
        row: usize,
        builder: &CorpusBuilder<'_>,
        name: &str,
    ) -> Result<Option<Vec<String>>> {
        let bad = |reason: String| builder.error(row as u64, format!("{name}: {reason}"));
        match self {
            Lists::Typed(c) => {
                let Some(series) = c.get_as_series(row) else {
                    return Ok(None);
                };
                let strings = series
                    .str()
                    .map_err(|e| bad(format!("not a list of strings: {e}")))?;
                (0..strings.len())
                    .map(|i| {
                        strings
                            .get(i)
                            .map(str::to_owned)
                            .ok_or_else(|| bad(format!("item {i} is null")))
                    })
                    .collect::<Result<Vec<_>>>()
                    .map(Some)
            }
            Lists::Json(c) => match c.get(row).map(str::trim) {
                None | Some("") => Ok(None),
                Some(s) => serde_json::from_str::<Vec<String>>(s)
                    .map(Some)
                    .map_err(|e| bad(format!("not a JSON array of strings ({e})"))),
            },
        }
    }
}

impl Table<'_> {
    fn column(&self, name: &str) -> Option<&Column> {
        self.df.column(name).ok()
    }

    fn mistyped(&self, name: &str, found: &DataType, expected: &str) -> PipelineError {
        PipelineError::Column {
            path: self.path.to_owned(),
            column: name.to_owned(),
            reason: format!("is of type {found}; expected {expected}"),
        }
    }

    fn strings(&self, name: &str, required: bool) -> Result<Option<Strings>> {
        let Some(col) = self.column(name) else {
            if required {
                return Err(PipelineError::Column {
                    path: self.path.to_owned(),
                    column: name.to_owned(),
                    reason: "missing (a required column)".into(),
                });
            }
            return Ok(None);
        };
        match col.dtype() {
            DataType::String => Ok(Some(Strings(
                col.str()
                    .map_err(|_| self.mistyped(name, col.dtype(), "string"))?
                    .clone(),
            ))),
            // A column of nulls only (CSV or Parquet written from an empty column).
            DataType::Null => Ok(Some(Strings(StringChunked::full_null(
                name.into(),
                self.df.height(),
            )))),
            other => Err(self.mistyped(name, other, "string")),
        }
    }

    fn integers(&self, name: &str) -> Result<Option<Integers>> {
        let Some(col) = self.column(name) else {
            return Ok(None);
        };
        let dtype = col.dtype();
        if dtype == &DataType::String {
            let c = col
                .str()
                .map_err(|_| self.mistyped(name, dtype, "an integer"))?;
            return Ok(Some(Integers::Text(c.clone())));
        }
        if !(dtype.is_integer() || dtype == &DataType::Null) {
            return Err(self.mistyped(name, dtype, "an integer"));
        }
        let cast = col
            .cast(&DataType::Int64)
            .map_err(|_| self.mistyped(name, dtype, "an integer"))?;
        let c = cast
            .i64()
            .map_err(|_| self.mistyped(name, dtype, "an integer"))?;
        Ok(Some(Integers::Typed(c.clone())))
    }

    fn lists(&self, name: &str) -> Result<Option<Lists>> {
        let Some(col) = self.column(name) else {
            return Ok(None);
        };
        let expected = "a list of strings (in CSV: a JSON array of strings)";
        match col.dtype() {
            DataType::List(inner) if matches!(**inner, DataType::String | DataType::Null) => {
                let c = col
                    .list()
                    .map_err(|_| self.mistyped(name, col.dtype(), expected))?;
                Ok(Some(Lists::Typed(c.clone())))
            }
            DataType::String => {
                let c = col
                    .str()
                    .map_err(|_| self.mistyped(name, col.dtype(), expected))?;
                Ok(Some(Lists::Json(c.clone())))
            }
            DataType::Null => Ok(None),
            other => Err(self.mistyped(name, other, expected)),
        }
    }
}
