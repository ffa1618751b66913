//! A GraphRAG index as input: its entities, relationships, text units and documents stand in
//! for ingest, link and graph.
//!
//! Reads the Parquet tables Microsoft GraphRAG writes (the v3 schema, as in
//! `data/graphrag/operation-dulce/`):
//!
//! | table | columns read | becomes |
//! | --- | --- | --- |
//! | `entities.parquet` | `id`, `title` (strings) | one entity and one concept each (`concept_id` = `id`, `preferred_term` = `title`, no broader edges) |
//! | `relationships.parquet` | `source`, `target` (entity titles), `weight` (number, optional) | weighted undirected edges |
//! | `text_units.parquet` | `id`, `text`, `document_id` or `document_ids`, `entity_ids` (list of strings) | passages and their mentions |
//! | `documents.parquet` | `id`, `title` | documents, keyed by the GraphRAG document `id` |
//!
//! The document key is GraphRAG's document `id`, not its title: ids are unique by construction
//! and titles are file names that two folders may share. A document's passages are its text
//! units in the order of `text_units.parquet`. An edge's weight is `weight` when the column
//! exists, else 1; duplicate pairs (either direction) are summed and self-loops dropped, since
//! modularity treats the graph as undirected. A relationship whose `source` or `target` is not
//! the title of an entity is left out and counted (GraphRAG itself writes such rows: its
//! entity table drops some names its relationships keep, as two rows of the shipped index
//! show), since it has no node to attach to. A NaN, infinite or negative weight, an edge or
//! mention naming an unknown entity, a text unit naming an unknown document, a duplicate id,
//! and a missing or mistyped column are errors naming the file, the row and the column.
//!
//! Visibility applies to passages as for any input: a deleted or superseded text unit leaves
//! the run with its mentions, a hidden one feeds no report. The relationships stay as given,
//! since the graph is GraphRAG's and not derived from the passages.

use std::collections::{BTreeMap, HashMap};
use std::io::Cursor;
use std::path::{Path, PathBuf};

use agrag_engine::format::normalize::normalize_text;
use polars_core::prelude::*;
use polars_io::SerReader;
use polars_io::parquet::read::ParquetReader;

use super::{Corpus, Document};
use crate::error::{PipelineError, Result};
use crate::graph::builder::Mention;
use crate::link::{Concept, Vocabulary};

/// File of GraphRAG's entities.
pub const ENTITIES_FILE: &str = "entities.parquet";
/// File of GraphRAG's relationships.
pub const RELATIONSHIPS_FILE: &str = "relationships.parquet";
/// File of GraphRAG's text units.
pub const TEXT_UNITS_FILE: &str = "text_units.parquet";
/// File of GraphRAG's documents.
pub const DOCUMENTS_FILE: &str = "documents.parquet";

/// A GraphRAG index read as the run's corpus, vocabulary, mentions and graph.
#[derive(Debug, Clone)]
pub struct GraphRagIndex {
    /// Documents (sorted by key) with their text units as passages.
    pub corpus: Corpus,
    /// One concept per entity, in the row order of `entities.parquet`.
    pub vocabulary: Vocabulary,
    /// `(passage row, concept index)` from each text unit's `entity_ids`, passage rows counted
    /// over the sorted documents' passages.
    pub mentions: Vec<Mention>,
    /// Undirected edges `(a, b, weight)` over concept indices, `a < b`, sorted.
    pub edges: Vec<(u32, u32, f64)>,
    /// Rows of `relationships.parquet` left out because an end is not an entity's title.
    pub dropped_relationships: Vec<u64>,
}

/// Reads the GraphRAG index in `dir` (see the [module docs](self)).
///
/// # Errors
/// [`PipelineError::Io`] for a missing or unreadable file; [`PipelineError::Unreadable`] for a
/// file that is not Parquet; [`PipelineError::Column`] for a missing or mistyped column;
/// [`PipelineError::Row`] for a null id, a duplicate id, an unknown entity or document, or a
/// bad weight; [`PipelineError::EmptyInput`] when there is no entity or no text unit.
pub fn read_graphrag(dir: &Path) -> Result<GraphRagIndex> {
    let mut digest = blake3::Hasher::new();
    let entities = Table::open(dir, ENTITIES_FILE, &mut digest)?;
    let relationships = Table::open(dir, RELATIONSHIPS_FILE, &mut digest)?;
    let units = Table::open(dir, TEXT_UNITS_FILE, &mut digest)?;
    let documents = Table::open(dir, DOCUMENTS_FILE, &mut digest)?;

    // Entities → concepts.
    let ids = entities.strings("id")?;
    let titles = entities.strings("title")?;
    let mut concepts = Vec::with_capacity(entities.df.height());
    let mut by_id: HashMap<String, u32> = HashMap::new();
    let mut by_title: HashMap<String, u32> = HashMap::new();
    for row in 0..entities.df.height() {
        let id = entities.required(&ids, "id", row)?;
        let title = entities.required(&titles, "title", row)?;
        let i = row as u32;
        if by_id.insert(id.clone(), i).is_some() {
            return Err(entities.row(row, format!("duplicate id {id:?}")));
        }
        by_title.entry(title.clone()).or_insert(i);
        concepts.push(Concept {
            id,
            preferred_term: title,
            synonyms: Vec::new(),
        });
    }
    if concepts.is_empty() {
        return Err(PipelineError::EmptyInput {
            path: entities.path.clone(),
            reason: "no entity".into(),
        });
    }

    // Relationships → edges between entities named by title.
    let sources = relationships.strings("source")?;
    let targets = relationships.strings("target")?;
    let weights = relationships.weights()?;
    let mut edges: BTreeMap<(u32, u32), f64> = BTreeMap::new();
    let mut dropped_relationships = Vec::new();
    for row in 0..relationships.df.height() {
        let end = |col: &StringChunked, name: &str| -> Result<Option<u32>> {
            let title = relationships.required(col, name, row)?;
            Ok(by_title.get(&title).copied())
        };
        let (Some(a), Some(b)) = (end(&sources, "source")?, end(&targets, "target")?) else {
            dropped_relationships.push(row as u64);
            continue;
        };
        let w = match &weights {
            Some(c) => c.get(row).unwrap_or(1.0),
            None => 1.0,
        };
        if !w.is_finite() || w < 0.0 {
            return Err(relationships.row(
                row,
                format!("weight: {w} is not a finite non-negative number"),
            ));
        }
        if a != b {
            *edges.entry((a.min(b), a.max(b))).or_insert(0.0) += w;
        }
    }

    // Documents, then text units as their passages.
    let doc_ids = documents.strings("id")?;
    let doc_titles = documents.strings("title")?;
    let mut docs: Vec<Document> = Vec::with_capacity(documents.df.height());
    let mut doc_index: HashMap<String, usize> = HashMap::new();
    for row in 0..documents.df.height() {
        let key = documents.required(&doc_ids, "id", row)?;
        if doc_index.insert(key.clone(), row).is_some() {
            return Err(documents.row(row, format!("duplicate id {key:?}")));
        }
        docs.push(Document {
            key,
            title: doc_titles.get(row).map(str::to_owned).unwrap_or_default(),
            year: None,
            passages: Vec::new(),
            headings: Vec::new(),
        });
    }
    let unit_ids = units.strings("id")?;
    let texts = units.strings("text")?;
    let unit_docs = units.document_ids()?;
    let unit_entities = units
        .lists("entity_ids", true)?
        .ok_or_else(|| PipelineError::Internal("a required list column came back absent".into()))?;
    // (document, position, entity concepts) of each text unit, to number passages once the
    // documents are sorted.
    let mut placed: Vec<(usize, usize, Vec<u32>)> = Vec::with_capacity(units.df.height());
    let mut seen_units: HashMap<String, usize> = HashMap::new();
    for row in 0..units.df.height() {
        let id = units.required(&unit_ids, "id", row)?;
        if seen_units.insert(id.clone(), row).is_some() {
            return Err(units.row(row, format!("duplicate id {id:?}")));
        }
        let text = units.required(&texts, "text", row)?;
        let doc_key = unit_docs.first(&units, row)?;
        let d = *doc_index.get(&doc_key).ok_or_else(|| {
            units.row(
                row,
                format!(
                    "{}: {doc_key:?} is not the id of a document of {DOCUMENTS_FILE}",
                    unit_docs.name
                ),
            )
        })?;
        let mut mentioned = Vec::new();
        for e in units.list_items(&unit_entities, "entity_ids", row)? {
            let c = by_id.get(&e).copied().ok_or_else(|| {
                units.row(
                    row,
                    format!("entity_ids: {e:?} is not the id of an entity of {ENTITIES_FILE}"),
                )
            })?;
            mentioned.push(c);
        }
        let position = docs[d].passages.len();
        docs[d].passages.push(normalize_text(&text).into_owned());
        placed.push((d, position, mentioned));
    }
    if placed.is_empty() {
        return Err(PipelineError::EmptyInput {
            path: units.path.clone(),
            reason: "no text unit".into(),
        });
    }
    // Documents without a text unit hold nothing to search; the run's passages are text units.
    let mut order: Vec<usize> = (0..docs.len())
        .filter(|&d| !docs[d].passages.is_empty())
        .collect();
    order.sort_by(|&a, &b| docs[a].key.cmp(&docs[b].key));
    let mut first_row = vec![usize::MAX; docs.len()];
    let mut next = 0usize;
    for &d in &order {
        first_row[d] = next;
        next += docs[d].passages.len();
    }
    let mut mentions = Vec::new();
    for (d, position, mentioned) in placed {
        for c in mentioned {
            mentions.push(Mention {
                passage: (first_row[d] + position) as u32,
                concept: c,
            });
        }
    }
    mentions.sort_unstable();
    mentions.dedup();
    let mut slots: Vec<Option<Document>> = docs.into_iter().map(Some).collect();
    let documents: Vec<Document> = order.iter().filter_map(|&d| slots[d].take()).collect();

    let fingerprint = digest.finalize().to_hex().to_string();
    let mut vocabulary = Vocabulary::from_parts(concepts, &[], entities.path.clone())?;
    vocabulary.fingerprint.clone_from(&fingerprint);
    Ok(GraphRagIndex {
        corpus: Corpus {
            documents,
            source: dir.to_owned(),
            fingerprint,
            num_empty_passages_dropped: 0,
        },
        vocabulary,
        mentions,
        edges: edges.into_iter().map(|((a, b), w)| (a, b, w)).collect(),
        dropped_relationships,
    })
}

/// One table of the index.
struct Table {
    path: PathBuf,
    df: DataFrame,
}

/// The column naming a text unit's document: `document_id` (a string) or `document_ids` (a
/// list of strings, of which the first is taken).
struct DocumentColumn {
    name: &'static str,
    single: Option<StringChunked>,
    list: Option<ListChunked>,
}

impl DocumentColumn {
    fn first(&self, table: &Table, row: usize) -> Result<String> {
        if let Some(c) = &self.single {
            return table.required(c, self.name, row);
        }
        let Some(l) = &self.list else {
            return Err(PipelineError::Internal(
                "a document column with neither shape".into(),
            ));
        };
        table
            .list_items(l, self.name, row)?
            .into_iter()
            .next()
            .ok_or_else(|| table.row(row, format!("{}: empty (no document)", self.name)))
    }
}

impl Table {
    fn open(dir: &Path, file: &str, digest: &mut blake3::Hasher) -> Result<Table> {
        let path = dir.join(file);
        let bytes = std::fs::read(&path).map_err(|source| PipelineError::Io {
            path: path.clone(),
            source,
        })?;
        digest.update(file.as_bytes());
        digest.update(blake3::hash(&bytes).as_bytes());
        let df = ParquetReader::new(Cursor::new(bytes))
            .finish()
            .map_err(|e| PipelineError::Unreadable {
                path: path.clone(),
                format: "Parquet",
                reason: e.to_string(),
            })?;
        Ok(Table { path, df })
    }

    fn row(&self, row: usize, reason: String) -> PipelineError {
        PipelineError::Row {
            path: self.path.clone(),
            row: row as u64,
            reason,
        }
    }

    fn column_error(&self, name: &str, reason: String) -> PipelineError {
        PipelineError::Column {
            path: self.path.clone(),
            column: name.to_owned(),
            reason,
        }
    }

    fn mistyped(&self, name: &str, found: &DataType, expected: &str) -> PipelineError {
        self.column_error(name, format!("is of type {found}; expected {expected}"))
    }

    /// A required string column.
    fn strings(&self, name: &str) -> Result<StringChunked> {
        let col = self
            .df
            .column(name)
            .map_err(|_| self.column_error(name, "missing (a required column)".into()))?;
        match col.dtype() {
            DataType::String => Ok(col
                .str()
                .map_err(|_| self.mistyped(name, col.dtype(), "string"))?
                .clone()),
            DataType::Null => Ok(StringChunked::full_null(name.into(), self.df.height())),
            other => Err(self.mistyped(name, other, "string")),
        }
    }

    fn required(&self, col: &StringChunked, name: &str, row: usize) -> Result<String> {
        col.get(row)
            .map(str::to_owned)
            .ok_or_else(|| self.row(row, format!("{name}: null")))
    }

    /// The optional `weight` column, as f64.
    fn weights(&self) -> Result<Option<Float64Chunked>> {
        let Ok(col) = self.df.column("weight") else {
            return Ok(None);
        };
        let dtype = col.dtype();
        if !(dtype.is_primitive_numeric() || dtype == &DataType::Null) {
            return Err(self.mistyped("weight", dtype, "a number"));
        }
        let cast = col
            .cast(&DataType::Float64)
            .map_err(|_| self.mistyped("weight", dtype, "a number"))?;
        Ok(Some(
            cast.f64()
                .map_err(|_| self.mistyped("weight", dtype, "a number"))?
                .clone(),
        ))
    }

    fn lists(&self, name: &str, required: bool) -> Result<Option<ListChunked>> {
        let Ok(col) = self.df.column(name) else {
            if required {
                return Err(self.column_error(name, "missing (a required column)".into()));
            }
            return Ok(None);
        };
        match col.dtype() {
            DataType::List(inner) if matches!(**inner, DataType::String | DataType::Null) => {
                Ok(Some(
                    col.list()
                        .map_err(|_| self.mistyped(name, col.dtype(), "a list of strings"))?
                        .clone(),
                ))
            }
            other => Err(self.mistyped(name, other, "a list of strings")),
        }
    }

    /// The strings of row `row` of a list column (a null list is empty).
    fn list_items(&self, col: &ListChunked, name: &str, row: usize) -> Result<Vec<String>> {
        let Some(series) = col.get_as_series(row) else {
            return Ok(Vec::new());
        };
        if series.dtype() == &DataType::Null {
            return Ok(Vec::new());
        }
        let strings = series
            .str()
            .map_err(|e| self.row(row, format!("{name}: not a list of strings: {e}")))?;
        (0..strings.len())
            .map(|i| {
                strings
                    .get(i)
                    .map(str::to_owned)
                    .ok_or_else(|| self.row(row, format!("{name}: item {i} is null")))
            })
            .collect()
    }

    /// `document_id` (v3) or else `document_ids` (a list of strings, first taken).
    fn document_ids(&self) -> Result<DocumentColumn> {
        if self.df.column("document_id").is_ok() {
            return Ok(DocumentColumn {
                name: "document_id",
                single: Some(self.strings("document_id")?),
                list: None,
            });
        }
        match self.lists("document_ids", false)? {
            Some(l) => Ok(DocumentColumn {
                name: "document_ids",
                single: None,
                list: Some(l),
            }),
            None => Err(self.column_error(
                "document_id",
                "missing (a required column; `document_ids` is accepted instead)".into(),
            )),
        }
    }
}
