//! Arrow schemas of every table of a run, with their column names.
//!
//! One module per table; each holds the file name, the column-name constants and `schema()`.
//! These are the names and types that data engineers see in polars, pandas or DuckDB, and that
//! README.md documents. Changing any of them is a format change and bumps
//! [`FORMAT_VERSION`](super::FORMAT_VERSION).

use std::sync::Arc;

use arrow_schema::{DataType, Field, Schema, SchemaRef};

fn utf8(name: &str) -> Field {
    Field::new(name, DataType::Utf8, false)
}

fn u32f(name: &str) -> Field {
    Field::new(name, DataType::UInt32, false)
}

fn list_utf8(name: &str) -> Field {
    Field::new(
        name,
        DataType::List(Arc::new(Field::new("item", DataType::Utf8, false))),
        false,
    )
}

/// `documents.parquet`: one row per document, sorted by `document_key`.
pub mod documents {
    use super::*;
    /// File name inside the run folder.
    pub const FILE: &str = "documents.parquet";
    /// Unique document key (string), e.g. `pmid:21645374`.
    pub const DOCUMENT_KEY: &str = "document_key";
    /// Title (string, may be empty).
    pub const TITLE: &str = "title";
    /// Publication year (int32, null when unknown).
    pub const YEAR: &str = "year";
    /// Number of passages of the document (uint32).
    pub const NUM_PASSAGES: &str = "num_passages";
    /// Whether linking found at least one concept in the document (bool).
    pub const LINKED: &str = "linked";
    /// The table's schema.
    pub fn schema() -> SchemaRef {
        Arc::new(Schema::new(vec![
            utf8(DOCUMENT_KEY),
            utf8(TITLE),
            Field::new(YEAR, DataType::Int32, true),
            u32f(NUM_PASSAGES),
            Field::new(LINKED, DataType::Boolean, false),
        ]))
    }
}

/// `passages.parquet`: one row per passage (text unit), sorted by `document_key`, `position`.
pub mod passages {
    use super::*;
    /// File name inside the run folder.
    pub const FILE: &str = "passages.parquet";
    /// Stable passage id `<document_key>#<position>` (string); the evidence id.
    pub const PASSAGE_ID: &str = "passage_id";
    /// Key of the owning document (string).
    pub const DOCUMENT_KEY: &str = "document_key";
    /// 0-based chunk index within the document (uint32).
    pub const POSITION: &str = "position";
    /// Passage text (string).
    pub const TEXT: &str = "text";
    /// The table's schema.
    pub fn schema() -> SchemaRef {
        Arc::new(Schema::new(vec![
            utf8(PASSAGE_ID),
            utf8(DOCUMENT_KEY),
            u32f(POSITION),
            utf8(TEXT),
        ]))
    }
}

/// `concepts.parquet`: the vocabulary, one row per concept, sorted by `concept_id`.
pub mod concepts {
    use super::*;
    /// File name inside the run folder.
    pub const FILE: &str = "concepts.parquet";
    /// Concept id (string), e.g. MeSH descriptor `D009203`.
    pub const CONCEPT_ID: &str = "concept_id";
    /// Preferred term (string).
    pub const PREFERRED_TERM: &str = "preferred_term";
    /// Entry terms (list of strings, possibly empty).
    pub const SYNONYMS: &str = "synonyms";
    /// The table's schema.
    pub fn schema() -> SchemaRef {
        Arc::new(Schema::new(vec![
            utf8(CONCEPT_ID),
            utf8(PREFERRED_TERM),
            list_utf8(SYNONYMS),
        ]))
    }
}

/// `concept_edges.parquet`: vocabulary edges `child -> parent`, sorted by `child`, `parent`.
pub mod concept_edges {
    use super::*;
    /// File name inside the run folder.
    pub const FILE: &str = "concept_edges.parquet";
    /// Narrower concept id (string).
    pub const CHILD: &str = "child";
    /// Broader concept id (string).
    pub const PARENT: &str = "parent";
    /// Relation name (string), `subclass_of` for broader/narrower.
    pub const RELATION: &str = "relation";
    /// The table's schema.
    pub fn schema() -> SchemaRef {
        Arc::new(Schema::new(vec![utf8(CHILD), utf8(PARENT), utf8(RELATION)]))
    }
}

/// `document_concepts.parquet`: each document's concept set per node field, sorted by
/// `node_field`, `document_key`, `concept_id`.
pub mod document_concepts {
    use super::*;
    /// File name inside the run folder.
    pub const FILE: &str = "document_concepts.parquet";
    /// Document key (string).
    pub const DOCUMENT_KEY: &str = "document_key";
    /// Node field (string): `concept` (from linking) or `mesh` (the input's own annotations).
    pub const NODE_FIELD: &str = "node_field";
    /// Concept id (string).
    pub const CONCEPT_ID: &str = "concept_id";
    /// The table's schema.
    pub fn schema() -> SchemaRef {
        Arc::new(Schema::new(vec![
            utf8(DOCUMENT_KEY),
            utf8(NODE_FIELD),
            utf8(CONCEPT_ID),
        ]))
    }
}

/// `concept_evidence.parquet`: why each concept of the `concept` node field is in its
/// document's set, as alternatives ("ways"): the concept stands while every passage of at
/// least one of its ways is visible. A way is the group of rows with the same
/// (`document_key`, `concept_id`, `way`); a row with a null `passage_id` is a way that needs no
/// passage (the title alone). Sorted by `document_key`, `concept_id`, `way`, `passage_id`.
///
/// This is how a hidden passage stops finding its document at once: a concept whose every
/// way runs through a hidden passage no longer matches, without a new run. Runs without this
/// file (format 1 before it existed) withdraw every concept of a document that has a hidden
/// passage.
pub mod concept_evidence {
    use super::*;
    /// File name inside the run folder.
    pub const FILE: &str = "concept_evidence.parquet";
    /// Document key (string).
    pub const DOCUMENT_KEY: &str = "document_key";
    /// Concept id (string).
    pub const CONCEPT_ID: &str = "concept_id";
    /// Number of the way within (document, concept), from 0 (uint32).
    pub const WAY: &str = "way";
    /// A passage the way needs (string), or null for a way through the title alone.
    pub const PASSAGE_ID: &str = "passage_id";
    /// The table's schema.
    pub fn schema() -> SchemaRef {
        Arc::new(Schema::new(vec![
            utf8(DOCUMENT_KEY),
            utf8(CONCEPT_ID),
            u32f(WAY),
            Field::new(PASSAGE_ID, DataType::Utf8, true),
        ]))
    }
}

/// `concept_postings.arrow`: the inverted form of `document_concepts`, precomputed so that an
/// engine opens a run without reading every (document, concept) row. One row per (node field,
/// concept) with the documents holding it, plus one row per node field whose `concept_id` is
/// null: every document holding at least one concept in that field. Sorted by (node_field,
/// concept_id), nulls first. Arrow IPC (engine accelerator; `document_concepts.parquet` remains
/// the table for analysis, and runs without this file are indexed from it at open).
pub mod concept_postings {
    use super::*;
    /// File name inside the run folder.
    pub const FILE: &str = "concept_postings.arrow";
    /// Node field (string).
    pub const NODE_FIELD: &str = "node_field";
    /// Concept id (string; null for the field's row of all linked documents).
    pub const CONCEPT_ID: &str = "concept_id";
    /// Number of documents in the set (uint64).
    pub const NUM_DOCUMENTS: &str = "num_documents";
    /// The set of document row numbers (0-based, `documents.parquet` order), as a roaring bitmap
    /// in the portable serialization of the RoaringFormatSpec (binary).
    pub const DOCUMENTS: &str = "documents";
    /// The table's schema.
    pub fn schema() -> SchemaRef {
        Arc::new(Schema::new(vec![
            utf8(NODE_FIELD),
            Field::new(CONCEPT_ID, DataType::Utf8, true),
            Field::new(NUM_DOCUMENTS, DataType::UInt64, false),
            Field::new(DOCUMENTS, DataType::Binary, false),
        ]))
    }
}

/// `entities.parquet`: graph nodes, sorted by `entity_id` (0-based, dense).
pub mod entities {
    use super::*;
    /// File name inside the run folder.
    pub const FILE: &str = "entities.parquet";
    /// Node id in the entity graph (uint32, dense from 0).
    pub const ENTITY_ID: &str = "entity_id";
    /// Concept the entity stands for (string).
    pub const CONCEPT_ID: &str = "concept_id";
    /// Display name: the concept's preferred term (string).
    pub const NAME: &str = "name";
    /// Number of passages mentioning the entity (uint32).
    pub const NUM_PASSAGES: &str = "num_passages";
    /// Weighted degree in the entity graph (float64).
    pub const DEGREE: &str = "degree";
    /// The table's schema.
    pub fn schema() -> SchemaRef {
        Arc::new(Schema::new(vec![
            u32f(ENTITY_ID),
            utf8(CONCEPT_ID),
            utf8(NAME),
            u32f(NUM_PASSAGES),
            Field::new(DEGREE, DataType::Float64, false),
        ]))
    }
}

/// `mentions.parquet`: `(passage, entity)` pairs, sorted by `entity_id`, `passage_id`.
pub mod mentions {
    use super::*;
    /// File name inside the run folder.
    pub const FILE: &str = "mentions.parquet";
    /// Mentioned entity (uint32).
    pub const ENTITY_ID: &str = "entity_id";
    /// Mentioning passage (string).
    pub const PASSAGE_ID: &str = "passage_id";
    /// How often the passage mentions the entity (uint32, ≥ 1).
    pub const NUM_OCCURRENCES: &str = "num_occurrences";
    /// The table's schema.
    pub fn schema() -> SchemaRef {
        Arc::new(Schema::new(vec![
            u32f(ENTITY_ID),
            utf8(PASSAGE_ID),
            u32f(NUM_OCCURRENCES),
        ]))
    }
}

/// `relationships.parquet`: undirected weighted edges with `source < target`, sorted.
pub mod relationships {
    use super::*;
    /// File name inside the run folder.
    pub const FILE: &str = "relationships.parquet";
    /// Smaller entity id (uint32).
    pub const SOURCE: &str = "source";
    /// Larger entity id (uint32).
    pub const TARGET: &str = "target";
    /// Edge weight (float64): number of passages mentioning both, for co-occurrence graphs.
    pub const WEIGHT: &str = "weight";
    /// The table's schema.
    pub fn schema() -> SchemaRef {
        Arc::new(Schema::new(vec![
            u32f(SOURCE),
            u32f(TARGET),
            Field::new(WEIGHT, DataType::Float64, false),
        ]))
    }
}

/// `communities.parquet`: one row per community of any level, sorted by `community_id`.
pub mod communities {
    use super::*;
    /// File name inside the run folder.
    pub const FILE: &str = "communities.parquet";
    /// Public community id (uint32, unique across levels, strictly ascending row to row); also
    /// the `theme_id` of answers. It survives across the runs of one snapshot root: a
    /// community inherits the id of the previous run's community it continues (see
    /// [`community_lineage`]), and a new community gets an id never used on the root before.
    /// A root's first run numbers its communities 0, 1, 2, … by level, parent and smallest
    /// member.
    pub const COMMUNITY_ID: &str = "community_id";
    /// Level (uint32): 0 is the coarsest, deeper is finer.
    pub const LEVEL: &str = "level";
    /// Parent community at `level - 1` (uint32, null at level 0).
    pub const PARENT: &str = "parent";
    /// Number of member entities (uint32).
    pub const SIZE: &str = "size";
    /// Whether the community was not split further (bool).
    pub const IS_LEAF: &str = "is_leaf";
    /// The table's schema.
    pub fn schema() -> SchemaRef {
        Arc::new(Schema::new(vec![
            u32f(COMMUNITY_ID),
            u32f(LEVEL),
            Field::new(PARENT, DataType::UInt32, true),
            u32f(SIZE),
            Field::new(IS_LEAF, DataType::Boolean, false),
        ]))
    }
}

/// `community_lineage.parquet`: how the run's communities continue those of its parent run
/// (the manifest's `parent_run_id`), sorted by `community_id`, then `event`. One row per
/// community of the run, and one per community of the parent run whose id the run no longer
/// uses (`dissolved`); a run without a parent has only `new` rows.
///
/// A community *continues* a parent's community of the same level, and inherits its id, when
/// the Jaccard similarity of their member sets (entities by concept id) is above
/// [`MIN_JACCARD`](community_lineage::MIN_JACCARD); above one half the match is one-to-one by
/// itself (two disjoint sets cannot both share more than half of their union with a third).
pub mod community_lineage {
    use super::*;
    /// File name inside the run folder.
    pub const FILE: &str = "community_lineage.parquet";
    /// Smallest Jaccard similarity (exclusive) for a community to inherit an id.
    pub const MIN_JACCARD: f64 = 0.5;
    /// Community id (uint32): the run's community, or for `dissolved` the parent's.
    pub const COMMUNITY_ID: &str = "community_id";
    /// Level of that community (uint32).
    pub const LEVEL: &str = "level";
    /// What happened (utf8): `same` (identical member set, id inherited), `grew` / `shrank`
    /// (id inherited, more / fewer members; equal sizes with other members count as `grew`),
    /// `split` (a parent's community spread over several of the run's, each holding at least
    /// half of its own members from it: the one that inherits the id and the others),
    /// `merged` (holds at least half of each of two or more parent communities), `new` (no
    /// predecessor), `dissolved` (a parent's id the run no longer uses).
    pub const EVENT: &str = "event";
    /// The parent community whose id it inherited, or for a community without one the parent
    /// community it shares most members with (uint32, null for `new` and `dissolved`).
    pub const PREDECESSOR: &str = "predecessor";
    /// Jaccard similarity with `predecessor` (float64, null when `predecessor` is).
    pub const JACCARD: &str = "jaccard";
    /// Every predecessor: parent communities of the same level that hold at least half of
    /// this one's members or of which this one holds at least half, ascending (`list<uint32>`).
    pub const PREDECESSORS: &str = "predecessors";
    /// For `dissolved`: the run's community holding most of its members (uint32, null when
    /// none of them is left or for other events).
    pub const SUCCESSOR: &str = "successor";
    /// Members now (uint32, null for `dissolved`).
    pub const SIZE: &str = "size";
    /// Members of `predecessor` (or of the dissolved community) in the parent run (uint32,
    /// null when there is none).
    pub const PREVIOUS_SIZE: &str = "previous_size";
    /// BLAKE3 (hex) of the sorted concept ids of the members, each followed by a newline:
    /// equal fingerprints, equal member sets (utf8; for `dissolved`, the parent's).
    pub const FINGERPRINT: &str = "fingerprint";
    /// The table's schema.
    pub fn schema() -> SchemaRef {
        Arc::new(Schema::new(vec![
            u32f(COMMUNITY_ID),
            u32f(LEVEL),
            utf8(EVENT),
            Field::new(PREDECESSOR, DataType::UInt32, true),
            Field::new(JACCARD, DataType::Float64, true),
            Field::new(
                PREDECESSORS,
                DataType::List(Arc::new(Field::new("item", DataType::UInt32, false))),
                false,
            ),
            Field::new(SUCCESSOR, DataType::UInt32, true),
            Field::new(SIZE, DataType::UInt32, true),
            Field::new(PREVIOUS_SIZE, DataType::UInt32, true),
            utf8(FINGERPRINT),
        ]))
    }
}

/// `membership.parquet`: `(entity, level) -> community`, sorted by `level`, `entity_id`.
///
/// An entity has one row for every level from 0 down to the level of its leaf community.
pub mod membership {
    use super::*;
    /// File name inside the run folder.
    pub const FILE: &str = "membership.parquet";
    /// The run that computed it (string).
    pub const RUN_ID: &str = "run_id";
    /// Level (uint32).
    pub const LEVEL: &str = "level";
    /// Entity (uint32).
    pub const ENTITY_ID: &str = "entity_id";
    /// Community of the entity at this level (uint32).
    pub const COMMUNITY_ID: &str = "community_id";
    /// Parent of that community (uint32, null at level 0).
    pub const PARENT_COMMUNITY_ID: &str = "parent_community_id";
    /// Whether that community is a leaf (bool).
    pub const IS_LEAF: &str = "is_leaf";
    /// The table's schema.
    pub fn schema() -> SchemaRef {
        Arc::new(Schema::new(vec![
            utf8(RUN_ID),
            u32f(LEVEL),
            u32f(ENTITY_ID),
            u32f(COMMUNITY_ID),
            Field::new(PARENT_COMMUNITY_ID, DataType::UInt32, true),
            Field::new(IS_LEAF, DataType::Boolean, false),
        ]))
    }
}

/// `reports.parquet`: one extractive report per community, sorted by `community_id`.
pub mod reports {
    use super::*;
    /// File name inside the run folder.
    pub const FILE: &str = "reports.parquet";
    /// Community (uint32).
    pub const COMMUNITY_ID: &str = "community_id";
    /// Level of the community (uint32).
    pub const LEVEL: &str = "level";
    /// Title made of the most central members (string).
    pub const TITLE: &str = "title";
    /// One-paragraph summary (string).
    pub const SUMMARY: &str = "summary";
    /// Findings: sentences drawn from supporting passages (list of strings).
    pub const FINDINGS: &str = "findings";
    /// Importance (float64): ln(1 + supporting passages) × internal edge weight share.
    pub const RANK: &str = "rank";
    /// The text that was embedded (string).
    pub const FULL_CONTENT: &str = "full_content";
    /// The table's schema.
    pub fn schema() -> SchemaRef {
        Arc::new(Schema::new(vec![
            u32f(COMMUNITY_ID),
            u32f(LEVEL),
            utf8(TITLE),
            utf8(SUMMARY),
            list_utf8(FINDINGS),
            Field::new(RANK, DataType::Float64, false),
            utf8(FULL_CONTENT),
        ]))
    }
}

/// `report_sources.parquet`: the passages whose sentences a community's report quotes (its
/// findings), one row per (community, passage), sorted by `community_id`, `passage_id`. The
/// report's embedding was computed from those sentences, so a theme search leaves out a
/// community while one of its quoted passages is hidden. Runs without this file (format 1
/// before it existed) are served as if no report quoted a hidden passage.
pub mod report_sources {
    use super::*;
    /// File name inside the run folder.
    pub const FILE: &str = "report_sources.parquet";
    /// Community (uint32).
    pub const COMMUNITY_ID: &str = "community_id";
    /// A quoted passage (string).
    pub const PASSAGE_ID: &str = "passage_id";
    /// The table's schema.
    pub fn schema() -> SchemaRef {
        Arc::new(Schema::new(vec![u32f(COMMUNITY_ID), utf8(PASSAGE_ID)]))
    }
}

/// `report_embeddings.parquet` (and the same table as uncompressed Arrow IPC,
/// `report_embeddings.arrow`, which the engine maps): one or more rows per community, sorted
/// by `community_id`. Each row is one vector of the community's meaning (what they are made of
/// is the pipeline's choice, recorded in the manifest's `parameters.community_vectors`); theme
/// search scores a community by its best vector. Runs of format 1 written before communities
/// had several vectors hold exactly one row per community.
pub mod report_embeddings {
    use super::*;
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
}

/// `document_embeddings.parquet` (and `document_embeddings.arrow`, mapped by the engine): one
/// embedding per document (title and passages, by the run's embedder), in `documents` order.
/// Used by the vector clause of concept queries.
pub mod document_embeddings {
    use super::*;
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
}

/// The IVF index of the report embeddings (see [`crate::ivf`]): written only for runs of at
/// least [`crate::ivf::MIN_ROWS`] communities with normalized embeddings; a run without it is
/// searched by an exact scan. Two Arrow IPC files (an accelerator of the engine, not a table
/// for analysis; both open with pyarrow or polars `read_ipc`).
pub mod report_ivf {
    use super::*;
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
}
