//! Stage 1, ingest: the documents (JSON Lines, Parquet or CSV), or a GraphRAG index standing
//! in for the documents, the vocabulary, linking and the graph.

use std::path::Path;

use serde::Serialize;

use crate::error::Result;
use crate::graph::builder::Mention;
use agrag_engine::format::RunWriter;
use agrag_engine::format::staged::TextColumnBuilder;

use crate::ingest::{CorpusColumns, CorpusColumnsBuilder, read_documents_into};
use crate::link::Vocabulary;
use crate::run::{RunConfig, Sources};
use crate::stages::Phases;

/// Mentions and relationships an index gives, which replace linking and co-occurrence.
#[derive(Debug)]
pub(crate) struct GivenGraph {
    /// `(passage row, concept)`.
    pub(crate) mentions: Vec<Mention>,
    /// `(a, b, weight)` over concept indices, `a < b`, sorted.
    pub(crate) edges: Vec<(u32, u32, f64)>,
}

/// What a GraphRAG index brings besides its corpus.
#[derive(Debug)]
pub(crate) struct IndexInputs {
    /// Its entities as a vocabulary (one concept per entity).
    pub(crate) vocabulary: Vocabulary,
    /// Its text units' entities and its relationships.
    pub(crate) graph: GivenGraph,
}

/// What ingest counted.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct IngestStats {
    /// Documents read.
    pub(crate) documents: usize,
    /// Passages read (empty ones not counted).
    pub(crate) passages: usize,
    /// Passages that were empty or only white space, dropped.
    pub(crate) empty_passages_dropped: usize,
    /// Relationships of a GraphRAG index naming an entity the index lacks, left out (`None`
    /// without an index).
    pub(crate) graphrag_relationships_dropped: Option<usize>,
}

/// Scratch file of the passages' text (see [`CorpusColumns`]).
const SCRATCH_PASSAGES: &str = "scratch-passages.txt";

/// Ingest's output: the corpus with its documents sorted by key (passage rows follow that
/// order), and an index's other inputs when one stands in for the documents.
#[derive(Debug)]
pub(crate) struct Ingested {
    /// The documents, sorted by key; a document file's passages are mapped from a scratch
    /// file of the run's staging folder.
    pub(crate) corpus: CorpusColumns,
    /// A GraphRAG index's vocabulary and graph.
    pub(crate) index: Option<IndexInputs>,
    /// Counts.
    pub(crate) stats: IngestStats,
}

/// Reads the run's documents ([`RunConfig::documents`] in [`Sources::documents_format`]), or
/// the GraphRAG index of [`Sources::graphrag`], and sorts the documents by key. A document
/// file's passages are written to a scratch file of `writer`'s staging folder as they are
/// read, and mapped: the corpus's text is never on the heap.
///
/// # Errors
/// Those of [`crate::ingest::read_documents`] (the file, line or row and field at fault), of
/// the GraphRAG reader, or of the scratch file.
pub(crate) fn ingest(
    cfg: &RunConfig,
    sources: &Sources,
    writer: &RunWriter,
    phases: &mut Phases,
) -> Result<Ingested> {
    let phase = phases.start("ingest", None);
    let (corpus, index, dropped) = match &sources.graphrag {
        Some(dir) => {
            let index = read_index(dir)?;
            let dropped = index.dropped_relationships.len();
            if dropped > 0 {
                tracing::warn!(
                    rows = ?index.dropped_relationships,
                    "relationships.parquet: {dropped} relationships name an entity title that entities.parquet lacks; left out",
                );
            }
            let inputs = IndexInputs {
                vocabulary: index.vocabulary,
                graph: GivenGraph {
                    mentions: index.mentions,
                    edges: index.edges,
                },
            };
            (
                CorpusColumns::from_corpus(index.corpus)?,
                Some(inputs),
                Some(dropped),
            )
        }
        None => {
            let mut columns =
                CorpusColumnsBuilder::new(TextColumnBuilder::scratch(writer, SCRATCH_PASSAGES)?);
            let source = read_documents_into(
                &cfg.documents,
                sources.documents_format,
                &sources.columns,
                &mut columns,
            )?;
            (columns.finish(source)?, None, None)
        }
    };
    let stats = IngestStats {
        documents: corpus.num_documents(),
        passages: corpus.num_passages(),
        empty_passages_dropped: corpus.num_empty_passages_dropped,
        graphrag_relationships_dropped: dropped,
    };
    phases.finish(
        phase,
        &format!("{} documents, {} passages", stats.documents, stats.passages),
    );
    Ok(Ingested {
        corpus,
        index,
        stats,
    })
}

/// Reads a GraphRAG index ([`crate::ingest::graphrag::read_graphrag`]).
#[cfg(feature = "tables")]
fn read_index(dir: &Path) -> Result<crate::ingest::graphrag::GraphRagIndex> {
    crate::ingest::graphrag::read_graphrag(dir)
}

/// Without the `tables` feature there is no Parquet reader: a GraphRAG index is refused.
///
/// # Errors
/// Always [`crate::PipelineError::InvalidConfig`].
#[cfg(not(feature = "tables"))]
fn read_index(dir: &Path) -> Result<GraphRagIndexStub> {
    Err(crate::PipelineError::InvalidConfig {
        field: "graphrag",
        value: dir.display().to_string(),
        expected: "a build with the `tables` feature (the default) to read Parquet",
    })
}

/// Stands in for the GraphRAG index in a build without the `tables` feature (never constructed).
#[cfg(not(feature = "tables"))]
#[derive(Debug)]
struct GraphRagIndexStub {
    corpus: crate::ingest::Corpus,
    vocabulary: Vocabulary,
    mentions: Vec<Mention>,
    edges: Vec<(u32, u32, f64)>,
    dropped_relationships: Vec<u64>,
}
