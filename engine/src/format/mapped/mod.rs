//! The column files the engine maps in place (snapshot format 2): the per-corpus columns a
//! query reads — document keys and titles, passage text, entity names and the passages that
//! mention each entity, the members and quoted passages of each community — as uncompressed
//! Arrow IPC files.
//!
//! Parquet stays the contract for data engineers ([`super::tables`]); these files are the
//! engine's accelerators. Each module here owns one file: its name, schema, writer and reader,
//! as each module of [`super::tables`] owns one table.
//!
//! | file | rows | columns |
//! |---|---|---|
//! | [`documents`] | one per document, in `documents.parquet` order | key, title, year, linked, first passage row |
//! | [`passages`] | one per passage, in `passages.parquet` order | document row, position, text |
//! | [`entities`] | one per entity, by `entity_id` | concept id, name, degree, passage rows mentioning it |
//! | [`communities`] | one per community, in `communities.parquet` order | public id, level, parent row, member entities, quoted passage rows |
//! | [`concepts`] | one per vocabulary concept, in `concepts.parquet` order | concept id, preferred term |
//! | [`concept_edges`] | one per hierarchy edge, as `concept_edges.parquet` | child and parent concept rows, relation |
//! | [`terms`] | one per distinct term key, ascending | key, concept rows it names |
//!
//! **Layout.** Each file holds record batches of exactly [`BATCH_ROWS`] rows (the last may be
//! shorter), so row `i` is row `i % BATCH_ROWS` of batch `i / BATCH_ROWS`, found without an
//! index. Arrow IPC aligns every buffer to 8 bytes or more, so the mapped bytes are read in
//! place as `u32`, `i32` and offsets.
//!
//! **Text is `Binary` holding UTF-8.** Opening an Arrow file checks each array's structure
//! (offsets ascend and stay inside the data), which touches the offsets but not the bytes;
//! a `Utf8` column would also be checked for valid UTF-8 byte by byte at open, reading every
//! passage's text (a gigabyte at 10⁶ documents). As `Binary`, a value is checked for UTF-8
//! when it is read ([`Strings::get`]), so opening costs the offsets only and passage text is
//! touched only for the passages an answer returns. polars, pyarrow and DuckDB read the
//! columns as bytes (`cast` to string to see text); the Parquet tables hold the same values
//! as strings.
//!
//! **Damage.** Every accessor is total: a row out of range, or a value that is not UTF-8,
//! reads as a default (`""`, `0`, an empty row), never a panic or a read outside the map.
//! Opening checks the schema, the batch sizes and the row counts, not that each value is
//! right: a file damaged in place reads wrong values; the manifest's checksums
//! ([`Verify::Checksums`](super::Verify::Checksums)) catch that.

pub mod communities;
pub mod concept_edges;
pub mod concepts;
pub mod documents;
pub mod entities;
pub mod passages;
pub mod terms;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{ArrowPrimitiveType, UInt32Type};
use arrow_array::{
    Array, ArrayRef, BinaryArray, BooleanArray, ListArray, PrimitiveArray, RecordBatch,
};
use arrow_buffer::{OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field};

use crate::error::{EngineError, Result};
use crate::store::mmap;

/// Rows per record batch of every mapped column file (the last batch may hold fewer).
pub const BATCH_ROWS: usize = 64 * 1024;

/// The item field of a `List<UInt32>` column.
pub(crate) fn u32_item() -> Arc<Field> {
    Arc::new(Field::new("item", DataType::UInt32, false))
}

/// A `List<UInt32>` array of `rows` (each row's items in order).
pub(crate) fn u32_lists<'r>(rows: impl IntoIterator<Item = &'r [u32]>) -> Result<ArrayRef> {
    let mut offsets = vec![0i32];
    let mut items = Vec::new();
    for row in rows {
        items.extend_from_slice(row);
        offsets.push(i32::try_from(items.len()).map_err(|_| {
            EngineError::Internal("a list column batch holds more than 2^31 items".into())
        })?);
    }
    let list = ListArray::try_new(
        u32_item(),
        OffsetBuffer::new(ScalarBuffer::from(offsets)),
        Arc::new(PrimitiveArray::<UInt32Type>::from(items)),
        None,
    )
    .map_err(|e| EngineError::Internal(format!("list column: {e}")))?;
    Ok(Arc::new(list))
}

/// Writes the column file `name` of `schema` with `rows` rows into the run `w` is writing,
/// [`BATCH_ROWS`] rows per record batch, each batch's columns made by `columns` from its range
/// of rows (so a file is never whole in memory).
///
/// # Errors
/// Those of `columns`; [`EngineError::Io`] / [`EngineError::Parquet`] on write failures.
pub(crate) fn write_file(
    w: &super::RunWriter,
    name: &str,
    schema: &arrow_schema::SchemaRef,
    rows: usize,
    mut columns: impl FnMut(std::ops::Range<usize>) -> Result<Vec<ArrayRef>>,
) -> Result<()> {
    let mut stream = w.start_ipc(name, schema)?;
    for i in 0..rows.div_ceil(BATCH_ROWS) {
        let range = i * BATCH_ROWS..((i + 1) * BATCH_ROWS).min(rows);
        let b = RecordBatch::try_new(schema.clone(), columns(range)?)
            .map_err(|e| EngineError::Internal(format!("{name}: {e}")))?;
        stream.write(&b)?;
    }
    w.finish_ipc(stream)
}

/// A `Binary` array of the UTF-8 bytes of `values`.
pub(crate) fn binary<'s>(values: impl IntoIterator<Item = &'s str>) -> ArrayRef {
    Arc::new(BinaryArray::from_iter_values(
        values.into_iter().map(str::as_bytes),
    ))
}

/// The record batches of a mapped column file, each [`BATCH_ROWS`] rows but the last.
pub(crate) struct Table {
    path: PathBuf,
    batches: Vec<RecordBatch>,
    num_rows: usize,
}

impl Table {
    /// Maps `path`, decodes its batches in place and checks its schema against `schema`, the
    /// batch sizes and that it holds `rows` rows.
    ///
    /// # Errors
    /// [`EngineError::Io`] when it cannot be mapped; [`EngineError::Corrupt`] naming the file
    /// for anything else.
    pub(crate) fn open(path: &Path, schema: &arrow_schema::Schema, rows: usize) -> Result<Self> {
        let buffer = mmap::map_file(path)?;
        let batches = mmap::decode_ipc_file(path, &buffer)?;
        for (i, b) in batches.iter().enumerate() {
            super::reader::check_schema(path, &b.schema(), schema)?;
            let last = i + 1 == batches.len();
            if b.num_rows() > BATCH_ROWS || (!last && b.num_rows() != BATCH_ROWS) {
                return Err(EngineError::corrupt(
                    path,
                    format!(
                        "record batch {i} holds {} rows (every batch but the last holds {BATCH_ROWS})",
                        b.num_rows()
                    ),
                ));
            }
        }
        let num_rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
        if num_rows != rows {
            return Err(EngineError::corrupt(
                path,
                format!("{num_rows} rows where the run has {rows}"),
            ));
        }
        Ok(Self {
            path: path.to_owned(),
            batches,
            num_rows,
        })
    }

    fn columns<A: Array + Clone + 'static>(&self, name: &str, nulls: bool) -> Result<Chunked<A>> {
        let mut chunks = Vec::with_capacity(self.batches.len());
        for b in &self.batches {
            let col = b.column_by_name(name).ok_or_else(|| {
                EngineError::corrupt(&self.path, format!("missing column {name:?}"))
            })?;
            if !nulls && col.null_count() > 0 {
                return Err(EngineError::corrupt(
                    &self.path,
                    format!("column {name:?} holds nulls"),
                ));
            }
            let a = col.as_any().downcast_ref::<A>().ok_or_else(|| {
                EngineError::corrupt(
                    &self.path,
                    format!("column {name:?} has type {}", col.data_type()),
                )
            })?;
            chunks.push(a.clone());
        }
        Ok(Chunked::new(self.num_rows, chunks))
    }

    /// A `Binary` column of UTF-8 text without nulls.
    pub(crate) fn strings(&self, name: &str) -> Result<Strings> {
        self.columns::<BinaryArray>(name, false).map(Strings)
    }

    /// A primitive column; `nulls` says whether it may hold nulls.
    pub(crate) fn primitives<T: ArrowPrimitiveType>(
        &self,
        name: &str,
        nulls: bool,
    ) -> Result<Primitives<T>> {
        self.columns::<PrimitiveArray<T>>(name, nulls)
            .map(Primitives)
    }

    /// A `Boolean` column without nulls.
    pub(crate) fn booleans(&self, name: &str) -> Result<Booleans> {
        self.columns::<BooleanArray>(name, false).map(Booleans)
    }

    /// A `List<UInt32>` column without nulls, as rows of items.
    pub(crate) fn lists(&self, name: &str) -> Result<Csr> {
        let lists = self.columns::<ListArray>(name, false)?;
        let mut chunks = Vec::with_capacity(lists.chunks.len());
        for l in &lists.chunks {
            let items = l
                .values()
                .as_primitive_opt::<UInt32Type>()
                .filter(|v| v.null_count() == 0)
                .ok_or_else(|| {
                    EngineError::corrupt(
                        &self.path,
                        format!("column {name:?}: items are not u32 without nulls"),
                    )
                })?;
            chunks.push((l.offsets().inner().clone(), items.values().clone()));
        }
        Ok(Csr {
            inner: Chunked::new(self.num_rows, chunks),
        })
    }
}

/// The index in `range` at which `probe` answers `Equal`, by binary search: `probe(i)` orders
/// the value at `i` against the one sought, and the values ascend over `range`.
pub(crate) fn binary_search(
    range: std::ops::Range<usize>,
    probe: impl Fn(usize) -> std::cmp::Ordering,
) -> Option<usize> {
    let (mut lo, mut hi) = (range.start, range.end);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        match probe(mid) {
            std::cmp::Ordering::Less => lo = mid + 1,
            std::cmp::Ordering::Greater => hi = mid,
            std::cmp::Ordering::Equal => return Some(mid),
        }
    }
    None
}

/// A column split in chunks of [`BATCH_ROWS`] rows (a single chunk when read from Parquet).
#[derive(Debug, Clone)]
struct Chunked<A> {
    /// Rows per chunk but the last.
    chunk_rows: usize,
    len: usize,
    chunks: Vec<A>,
}

impl<A> Chunked<A> {
    fn new(len: usize, chunks: Vec<A>) -> Self {
        let chunk_rows = if chunks.len() > 1 {
            BATCH_ROWS
        } else {
            len.max(1)
        };
        Self {
            chunk_rows,
            len,
            chunks,
        }
    }

    fn single(len: usize, chunk: A) -> Self {
        Self::new(len, vec![chunk])
    }

    /// The chunk holding row `i` and the row's place in it.
    #[inline]
    fn locate(&self, i: usize) -> Option<(&A, usize)> {
        if i >= self.len {
            return None;
        }
        self.chunks
            .get(i / self.chunk_rows)
            .map(|c| (c, i % self.chunk_rows))
    }
}

/// A column of text, one value per row (see the module docs on `Binary`).
#[derive(Debug, Clone)]
pub struct Strings(Chunked<BinaryArray>);

impl Strings {
    /// Over an in-memory string array (read from Parquet), without copying its bytes.
    pub(crate) fn from_utf8_array(a: &arrow_array::StringArray) -> Self {
        Self(Chunked::single(a.len(), BinaryArray::from(a.clone())))
    }

    /// Over `values`, copied into one in-memory array (for columns built at open).
    pub(crate) fn from_values<'s>(values: impl IntoIterator<Item = &'s str>) -> Self {
        let a = BinaryArray::from_iter_values(values.into_iter().map(str::as_bytes));
        Self(Chunked::single(a.len(), a))
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.0.len
    }

    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.0.len == 0
    }

    /// The text of row `i`; `""` when `i` is out of range or the bytes are not UTF-8 (a
    /// damaged file).
    #[inline]
    pub fn get(&self, i: usize) -> &str {
        self.0
            .locate(i)
            .and_then(|(c, j)| std::str::from_utf8(c.value(j)).ok())
            .unwrap_or_default()
    }

    /// The row holding `key` in a column sorted ascending by bytes (binary search, `log2(len)`
    /// reads of the map); `None` when absent.
    pub fn find_sorted(&self, key: &str) -> Option<u32> {
        binary_search(0..self.len(), |i| {
            let v = self
                .0
                .locate(i)
                .map(|(c, j)| c.value(j))
                .unwrap_or_default();
            v.cmp(key.as_bytes())
        })
        .and_then(|i| u32::try_from(i).ok())
    }
}

/// A column of numbers, one per row, possibly null.
#[derive(Debug)]
pub struct Primitives<T: ArrowPrimitiveType>(Chunked<PrimitiveArray<T>>);

impl<T: ArrowPrimitiveType> Clone for Primitives<T> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl<T: ArrowPrimitiveType> Primitives<T> {
    /// Over an in-memory array (read from Parquet or built), without copying.
    pub(crate) fn from_array(a: PrimitiveArray<T>) -> Self {
        Self(Chunked::single(a.len(), a))
    }

    /// Over owned values, none null.
    pub(crate) fn from_vec(v: Vec<T::Native>) -> Self {
        Self::from_array(PrimitiveArray::<T>::new(ScalarBuffer::from(v), None))
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.0.len
    }

    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.0.len == 0
    }

    /// The value of row `i`; `None` when null or out of range.
    #[inline]
    pub fn get(&self, i: usize) -> Option<T::Native> {
        self.0
            .locate(i)
            .and_then(|(c, j)| c.is_valid(j).then(|| c.value(j)))
    }

    /// The value of row `i`, or the type's default (`0`) when null or out of range.
    #[inline]
    pub fn value(&self, i: usize) -> T::Native {
        self.get(i).unwrap_or_default()
    }
}

/// A column of booleans without nulls.
#[derive(Debug, Clone)]
pub struct Booleans(Chunked<BooleanArray>);

impl Booleans {
    /// Over an in-memory array, without copying.
    pub(crate) fn from_array(a: BooleanArray) -> Self {
        Self(Chunked::single(a.len(), a))
    }

    /// The value of row `i`; `false` when out of range.
    #[inline]
    pub fn get(&self, i: usize) -> bool {
        self.0.locate(i).is_some_and(|(c, j)| c.value(j))
    }
}

/// Compressed sparse rows: row `r`'s items, in order. Mapped from a `List<UInt32>` column of
/// a column file, or built in memory by [`Csr::from_pairs`].
#[derive(Debug, Clone)]
pub struct Csr {
    inner: Chunked<(ScalarBuffer<i32>, ScalarBuffer<u32>)>,
}

impl Default for Csr {
    fn default() -> Self {
        Self::from_pairs(0, &[])
    }
}

impl PartialEq for Csr {
    fn eq(&self, other: &Self) -> bool {
        self.num_rows() == other.num_rows()
            && (0..self.num_rows()).all(|r| self.row(r) == other.row(r))
    }
}

impl Eq for Csr {}

impl Csr {
    /// Builds rows `0..num_rows` from `(row, item)` pairs (any order); items of a row keep the
    /// pairs' relative order after a stable sort by row.
    ///
    /// # Panics
    /// When a row is `>= num_rows`, or there are 2³¹ pairs or more (a programmer error).
    #[track_caller]
    pub fn from_pairs(num_rows: usize, pairs: &[(u32, u32)]) -> Self {
        assert!(
            i32::try_from(pairs.len()).is_ok(),
            "Csr::from_pairs: 2^31 pairs or more"
        );
        let mut counts = vec![0i32; num_rows + 1];
        for &(r, _) in pairs {
            counts[r as usize + 1] += 1;
        }
        for i in 0..num_rows {
            counts[i + 1] += counts[i];
        }
        let mut fill = counts.clone();
        let mut items = vec![0u32; pairs.len()];
        for &(r, it) in pairs {
            items[fill[r as usize] as usize] = it;
            fill[r as usize] += 1;
        }
        Self {
            inner: Chunked::single(num_rows, (counts.into(), items.into())),
        }
    }

    /// The items of row `r`; empty when `r` is out of range.
    #[inline]
    pub fn row(&self, r: usize) -> &[u32] {
        let Some(((offsets, items), j)) = self.inner.locate(r) else {
            return &[];
        };
        let (Some(&a), Some(&b)) = (offsets.get(j), offsets.get(j + 1)) else {
            return &[];
        };
        usize::try_from(a)
            .ok()
            .zip(usize::try_from(b).ok())
            .and_then(|(a, b)| items.get(a..b))
            .unwrap_or_default()
    }

    /// Number of rows.
    pub fn num_rows(&self) -> usize {
        self.inner.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csr_rows() {
        let c = Csr::from_pairs(4, &[(2, 7), (0, 1), (2, 3), (0, 5)]);
        assert_eq!(c.num_rows(), 4);
        assert_eq!(c.row(0), &[1, 5]);
        assert_eq!(c.row(1), &[] as &[u32]);
        assert_eq!(c.row(2), &[7, 3]);
        assert_eq!(c.row(3), &[] as &[u32]);
        assert_eq!(c.row(4), &[] as &[u32], "out of range reads as empty");
    }

    #[test]
    fn sorted_strings_are_found_by_binary_search() {
        let a = arrow_array::StringArray::from(vec!["a", "b#1", "c", "zz"]);
        let s = Strings::from_utf8_array(&a);
        assert_eq!(s.find_sorted("c"), Some(2));
        assert_eq!(s.find_sorted("zz"), Some(3));
        assert_eq!(s.find_sorted("b"), None);
        assert_eq!(s.get(1), "b#1");
        assert_eq!(s.get(9), "");
    }
}
