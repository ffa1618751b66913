//! `report_embeddings.parquet` (and the same table as uncompressed Arrow IPC,
//! `report_embeddings.arrow`, which the engine maps): one or more rows per community, sorted
//! by `community_id`. Each row is one vector of the community's meaning (what they are made of
//! is the pipeline's choice, recorded in the manifest's `parameters.community_vectors`); theme
//! search scores a community by its best vector. Runs of format 1 written before communities
//! had several vectors hold exactly one row per community.

use std::path::Path;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::UInt32Type;
use arrow_array::{Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use super::{batch, u32f, u32s, vector_array, write_vectors};
use crate::error::{EngineError, Result};
use crate::format::RunWriter;
use crate::format::staged::RowBuffer;

/// Parquet file name inside the run folder.
pub const FILE: &str = "report_embeddings.parquet";
/// Arrow IPC file name inside the run folder (same rows, mapped zero-copy by the engine).
pub const IPC_FILE: &str = "report_embeddings.arrow";
/// Community (uint32).
pub const COMMUNITY_ID: &str = "community_id";
/// Report embedding (fixed-size list of float32, length = the embedder's dim).
pub const EMBEDDING: &str = "embedding";
/// The element field of the embedding list.
pub fn item_field() -> Arc<Field> {
    Arc::new(Field::new("item", DataType::Float32, false))
}
/// The table's schema for embeddings of `dim` dimensions.
pub fn schema(dim: usize) -> SchemaRef {
    let dim = i32::try_from(dim).expect("embedding dimension fits in i32");
    Arc::new(Schema::new(vec![
        u32f(COMMUNITY_ID),
        Field::new(EMBEDDING, DataType::FixedSizeList(item_field(), dim), false),
    ]))
}

/// The report (community) vectors of a run, row-major.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReportVectors {
    /// `rows × dim` values, on the heap or a mapped scratch file.
    pub values: RowBuffer,
    /// The community of each row, non-decreasing, every community at least once. Empty: one
    /// row per community, in community order.
    pub communities: Vec<u32>,
}

/// Writes the vectors `re` of the run's `num_communities` communities (community row `c`
/// under the public id `cid(c)`) as the Parquet file and the Arrow IPC file, streaming a
/// mapped matrix (see [`RowBuffer`]). The vectors are not copied. Returns them and the public
/// id of each row, from which the IVF index is built ([`super::report_ivf::write`]).
///
/// # Errors
/// [`EngineError::Internal`] for a wrong embedding length; [`EngineError::Io`] /
/// [`EngineError::Parquet`] on write failures.
pub(crate) fn write(
    w: &RunWriter,
    re: ReportVectors,
    num_communities: usize,
    cid: &dyn Fn(u32) -> u32,
    dim: usize,
) -> Result<(RowBuffer, Vec<u32>)> {
    let vector_communities: Vec<u32> = if re.communities.is_empty() {
        (0..num_communities as u32).map(cid).collect()
    } else {
        re.communities.into_iter().map(cid).collect()
    };
    let list = vector_array(re.values.buffer(), dim)?;
    let b = batch(
        schema(dim),
        vec![u32s(vector_communities.iter().copied()), Arc::new(list)],
    )?;
    write_vectors(w, FILE, &b, COMMUNITY_ID, &re.values, dim)?;
    w.write_ipc_releasing(IPC_FILE, &b, &|bytes| re.values.release_bytes(bytes))?;
    Ok((re.values, vector_communities))
}

/// The row range of each community's vectors in the report-embedding table: its
/// `community_id` column must hold the communities' ids in their order (`community_ids`, from
/// `communities.parquet`), each one or more times (see the [module docs](self)). Returns
/// `num_communities + 1` offsets.
///
/// # Errors
/// [`EngineError::Corrupt`] naming `path` (and the row) when the column holds nulls, a
/// community out of order, or not every community.
pub(crate) fn offsets(path: &Path, batch: &RecordBatch, community_ids: &[u32]) -> Result<Vec<u32>> {
    let num_communities = community_ids.len();
    let ids = batch.column(0);
    if ids.null_count() > 0 {
        return Err(EngineError::corrupt(path, "community_id holds nulls"));
    }
    let ids = ids.as_primitive::<UInt32Type>().values();
    let mut offsets = Vec::with_capacity(num_communities + 1);
    for (row, &c) in ids.iter().enumerate() {
        if community_ids.get(offsets.len()) == Some(&c) {
            offsets.push(row as u32);
        } else if offsets.is_empty() || community_ids[offsets.len() - 1] != c {
            return Err(EngineError::corrupt(
                path,
                format!(
                    "row {row}: community {c} out of order (every community of communities.parquet has one or more rows, in its order)"
                ),
            ));
        }
    }
    if offsets.len() != num_communities {
        return Err(EngineError::corrupt(
            path,
            format!(
                "embeddings for {} of {num_communities} communities",
                offsets.len()
            ),
        ));
    }
    offsets.push(ids.len() as u32);
    Ok(offsets)
}
