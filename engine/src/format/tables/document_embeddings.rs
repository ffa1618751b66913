//! `document_embeddings.parquet` (and `document_embeddings.arrow`, mapped by the engine): one
//! embedding per document (title and passages, by the run's embedder), in `documents` order.
//! Used by the vector clause of concept queries.

use std::sync::Arc;

use arrow_array::builder::StringBuilder;
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use super::{RunLookups, batch, utf8, vector_array, write_vectors};
use crate::error::Result;
use crate::format::RunWriter;
use crate::format::staged::RowBuffer;

/// Parquet file name inside the run folder.
pub const FILE: &str = "document_embeddings.parquet";
/// Arrow IPC file name inside the run folder.
pub const IPC_FILE: &str = "document_embeddings.arrow";
/// Document key (string).
pub const DOCUMENT_KEY: &str = "document_key";
/// Document embedding (fixed-size list of float32, length = the embedder's dim).
pub const EMBEDDING: &str = "embedding";
/// The table's schema for embeddings of `dim` dimensions.
pub fn schema(dim: usize) -> SchemaRef {
    let dim = i32::try_from(dim).expect("embedding dimension fits in i32");
    Arc::new(Schema::new(vec![
        utf8(DOCUMENT_KEY),
        Field::new(
            EMBEDDING,
            DataType::FixedSizeList(super::report_embeddings::item_field(), dim),
            false,
        ),
    ]))
}

/// Writes the vectors `values` (row-major, `documents × dim`, not copied; a mapped matrix is
/// streamed, see [`RowBuffer`]) of the documents of `l` as the Parquet file and the Arrow IPC
/// file.
///
/// # Errors
/// [`crate::EngineError::Internal`] for a wrong embedding length; [`crate::EngineError::Io`] /
/// [`crate::EngineError::Parquet`] on write failures.
pub(crate) fn write(
    w: &RunWriter,
    l: &dyn RunLookups,
    values: RowBuffer,
    dim: usize,
) -> Result<()> {
    let mut keys = StringBuilder::new();
    for d in 0..l.num_documents() as u32 {
        keys.append_value(l.document(d).key);
    }
    let b = batch(
        schema(dim),
        vec![
            Arc::new(keys.finish()),
            Arc::new(vector_array(values.buffer(), dim)?),
        ],
    )?;
    write_vectors(w, FILE, &b, DOCUMENT_KEY, &values, dim)?;
    w.write_ipc_releasing(IPC_FILE, &b, &|bytes| values.release_bytes(bytes))
}
