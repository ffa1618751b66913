//! The IVF index of the report embeddings (see [`crate::ivf`]): written only for runs of at
//! least [`crate::ivf::MIN_ROWS`] communities with normalized embeddings; a run without it is
//! searched by an exact scan. Two Arrow IPC files (an accelerator of the engine, not a table
//! for analysis; both open with pyarrow or polars `read_ipc`).

use std::path::Path;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, UInt32Type};
use arrow_array::{Array, FixedSizeListArray, Float32Array, Int8Array};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use super::{arrow_err, batch, map_embeddings, u32f, u32s, vector_array};
use crate::error::{EngineError, Result};
use crate::format::RunWriter;
use crate::format::staged::RowBuffer;
use crate::ivf::IvfIndex;

/// Centroids: one row per cell, `list_id` ascending.
pub const CENTROIDS_FILE: &str = "report_ivf_centroids.arrow";
/// Cell contents: one row per row of `report_embeddings`, sorted by (`list_id`,
/// `community_id`), with the community it belongs to and the int8 codes of that vector
/// (`embedding ≈ scale × code`). A community with several vectors may appear several
/// times, in one cell or in several.
pub const LISTS_FILE: &str = "report_ivf_lists.arrow";
/// Cell (uint32, `0..lists`).
pub const LIST_ID: &str = "list_id";
/// Unit centroid (fixed-size list of float32, length = the embedder's dim).
pub const CENTROID: &str = "centroid";
/// Community (uint32).
pub const COMMUNITY_ID: &str = "community_id";
/// Quantization scale (float32).
pub const SCALE: &str = "scale";
/// Int8 codes (fixed-size list of int8, length = the embedder's dim).
pub const CODE: &str = "code";
/// The element field of the code list.
pub fn code_item_field() -> Arc<Field> {
    Arc::new(Field::new("item", DataType::Int8, false))
}
/// Schema of the centroids file for `dim` dimensions.
pub fn centroids_schema(dim: usize) -> SchemaRef {
    let dim = i32::try_from(dim).expect("embedding dimension fits in i32");
    Arc::new(Schema::new(vec![
        u32f(LIST_ID),
        Field::new(
            CENTROID,
            DataType::FixedSizeList(super::report_embeddings::item_field(), dim),
            false,
        ),
    ]))
}
/// Schema of the cell-contents file for `dim` dimensions.
pub fn lists_schema(dim: usize) -> SchemaRef {
    let dim = i32::try_from(dim).expect("embedding dimension fits in i32");
    Arc::new(Schema::new(vec![
        u32f(LIST_ID),
        u32f(COMMUNITY_ID),
        Field::new(SCALE, DataType::Float32, false),
        Field::new(CODE, DataType::FixedSizeList(code_item_field(), dim), false),
    ]))
}

/// Builds the index of the report embeddings `vectors` (row-major, normalized, `dim`
/// dimensions, read in order a window at a time when mapped; row `i` is a vector of the community whose public id is `communities[i]`) and writes its
/// two files, when the run has enough vectors for one ([`crate::ivf::IvfParams::for_rows`]);
/// otherwise writes nothing.
///
/// # Errors
/// [`EngineError::Internal`] when a batch cannot be built; [`EngineError::Io`] on write
/// failures.
pub(crate) fn write(
    w: &RunWriter,
    vectors: &RowBuffer,
    communities: &[u32],
    dim: usize,
) -> Result<()> {
    let Some(params) = crate::ivf::IvfParams::for_rows(communities.len()) else {
        return Ok(());
    };
    let values = vectors.values();
    let release = |v: &[f32]| vectors.release(v);
    let part = crate::ivf::build_releasing(values, dim, &params, &release);
    let index = IvfIndex::from_partition_releasing(values, dim, &part, &release);
    drop(part);
    let cb = batch(
        centroids_schema(dim),
        vec![
            u32s(0..index.lists() as u32),
            Arc::new(vector_array(index.centroids().to_vec(), dim)?),
        ],
    )?;
    w.write_ipc(CENTROIDS_FILE, &cb)?;
    // The codes are the index's own buffer (shared, not copied: at 10⁶ documents it is
    // about a gigabyte).
    let codes = FixedSizeListArray::try_new(
        code_item_field(),
        i32::try_from(dim).map_err(|_| EngineError::Internal("embedding dim too large".into()))?,
        Arc::new(Int8Array::new(index.codes().clone(), None)),
        None,
    )
    .map_err(arrow_err)?;
    let lb = batch(
        lists_schema(dim),
        vec![
            u32s(index.entries().map(|e| e.list)),
            u32s(index.entries().map(|e| communities[e.row as usize])),
            Arc::new(Float32Array::from_iter_values(
                index.entries().map(|e| e.scale),
            )),
            Arc::new(codes),
        ],
    )?;
    w.write_ipc(LISTS_FILE, &lb)
}

/// Reads the index files of the run in `dir` (`dim` dimensions; `group_rows[c]` vectors of
/// community row `c`); the codes stay mapped.
///
/// # Errors
/// [`EngineError::Io`] when a file cannot be mapped; [`EngineError::Corrupt`] naming the file
/// for anything else.
pub(crate) fn read(dir: &Path, dim: usize, group_rows: &[u32]) -> Result<IvfIndex> {
    let path = dir.join(CENTROIDS_FILE);
    let centroids = map_embeddings(&path, &centroids_schema(dim), None)?;
    let list: &FixedSizeListArray = centroids.column(1).as_fixed_size_list();
    let values = list
        .values()
        .as_primitive::<Float32Type>()
        .values()
        .to_vec();
    let ids = centroids.column(0).as_primitive::<UInt32Type>();
    if ids
        .values()
        .iter()
        .enumerate()
        .any(|(i, &l)| l as usize != i)
    {
        return Err(EngineError::corrupt(&path, "list_id is not 0, 1, 2, …"));
    }
    let path = dir.join(LISTS_FILE);
    let num_vectors: usize = group_rows.iter().map(|&n| n as usize).sum();
    let b = map_embeddings(&path, &lists_schema(dim), num_vectors)?;
    if (0..b.num_columns()).any(|c| b.column(c).null_count() > 0) {
        return Err(EngineError::corrupt(&path, "null values"));
    }
    let cells = b.column(0).as_primitive::<UInt32Type>().values();
    let rows = b.column(1).as_primitive::<UInt32Type>().values().to_vec();
    let scales = b.column(2).as_primitive::<Float32Type>().values().to_vec();
    let codes: &FixedSizeListArray = b.column(3).as_fixed_size_list();
    let codes = codes
        .values()
        .as_primitive::<arrow_array::types::Int8Type>()
        .values()
        .clone();
    IvfIndex::from_parts_grouped(dim, values, cells, rows, scales, codes, group_rows)
        .map_err(|e| EngineError::corrupt(&path, e))
}
