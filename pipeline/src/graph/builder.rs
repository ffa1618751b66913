//! The co-occurrence entity graph: entities are the concepts that some passage mentions; two
//! entities are joined by an edge whose weight is the number of passages mentioning both.
//!
//! With the optional `polars` feature the join and counts run as a polars lazy query (a
//! self-join of the mention table on `passage`, then a group-by count); without it a
//! plain-Rust pass computes the same table. Both give the same edges in the same order (tested).

use serde::Serialize;

use crate::error::Result;

/// One distinct `(passage, concept)` mention: indices into the corpus's passages and the
/// vocabulary's concepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Mention {
    /// Passage index (position in the flattened passage list).
    pub passage: u32,
    /// Concept index (position in the vocabulary).
    pub concept: u32,
}

/// The co-occurrence graph before it becomes a CSR.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CooccurrenceGraph {
    /// Concept index of each entity; entity id = position (ascending concept index).
    pub entity_concepts: Vec<u32>,
    /// Undirected edges `(entity a, entity b, weight)` with `a < b`, sorted, weight ≥ 1.
    pub edges: Vec<(u32, u32, f64)>,
}

/// Builds the co-occurrence graph from distinct mentions (duplicates are ignored).
///
/// # Errors
/// [`PipelineError::Library`](crate::PipelineError::Library) when the polars query fails
/// (a bug, never bad input).
pub fn cooccurrence(mentions: &[Mention]) -> Result<CooccurrenceGraph> {
    let mut mentions = mentions.to_vec();
    mentions.sort_unstable();
    mentions.dedup();
    let mut entity_concepts: Vec<u32> = mentions.iter().map(|m| m.concept).collect();
    entity_concepts.sort_unstable();
    entity_concepts.dedup();
    let entity_of = |concept: u32| -> u32 {
        // entity_concepts is sorted and holds every mentioned concept.
        entity_concepts.binary_search(&concept).unwrap_or(0) as u32
    };
    let pairs: Vec<(u32, u32)> = mentions
        .iter()
        .map(|m| (m.passage, entity_of(m.concept)))
        .collect();
    #[cfg(feature = "polars")]
    let edges = polars_edges(&pairs)?;
    #[cfg(not(feature = "polars"))]
    let edges = plain_edges(&pairs);
    Ok(CooccurrenceGraph {
        entity_concepts,
        edges,
    })
}

/// Plain-Rust co-occurrence counts over `(passage, entity)` pairs sorted by passage.
pub fn plain_edges(pairs: &[(u32, u32)]) -> Vec<(u32, u32, f64)> {
    let mut counts: std::collections::HashMap<(u32, u32), u32> = std::collections::HashMap::new();
    let mut i = 0;
    while i < pairs.len() {
        let mut j = i;
        while j < pairs.len() && pairs[j].0 == pairs[i].0 {
            j += 1;
        }
        let group = &pairs[i..j];
        for (k, a) in group.iter().enumerate() {
            for b in &group[k + 1..] {
                let key = (a.1.min(b.1), a.1.max(b.1));
                if key.0 != key.1 {
                    *counts.entry(key).or_insert(0) += 1;
                }
            }
        }
        i = j;
    }
    let mut edges: Vec<(u32, u32, f64)> = counts
        .into_iter()
        .map(|((a, b), w)| (a, b, f64::from(w)))
        .collect();
    edges.sort_by_key(|e| (e.0, e.1));
    edges
}

/// Polars co-occurrence counts: self-join on passage, keep `a < b`, count per pair.
#[cfg(feature = "polars")]
pub fn polars_edges(pairs: &[(u32, u32)]) -> Result<Vec<(u32, u32, f64)>> {
    use polars::prelude::*;
    let internal = |e: PolarsError| crate::PipelineError::library("polars co-occurrence query", e);
    let passage: Vec<u32> = pairs.iter().map(|p| p.0).collect();
    let entity: Vec<u32> = pairs.iter().map(|p| p.1).collect();
    let df = DataFrame::new_infer_height(vec![
        Column::new("passage".into(), passage),
        Column::new("entity".into(), entity),
    ])
    .map_err(internal)?;
    let right = df
        .clone()
        .lazy()
        .select([col("passage"), col("entity").alias("other")]);
    let out = df
        .lazy()
        .join(
            right,
            [col("passage")],
            [col("passage")],
            JoinArgs::new(JoinType::Inner),
        )
        .filter(col("entity").lt(col("other")))
        .group_by([col("entity"), col("other")])
        .agg([len().alias("weight")])
        .sort(["entity", "other"], SortMultipleOptions::default())
        .collect()
        .map_err(internal)?;
    let a = out
        .column("entity")
        .map_err(internal)?
        .u32()
        .map_err(internal)?
        .clone();
    let b = out
        .column("other")
        .map_err(internal)?
        .u32()
        .map_err(internal)?
        .clone();
    let w = out
        .column("weight")
        .map_err(internal)?
        .cast(&DataType::Float64)
        .map_err(internal)?;
    let w = w.f64().map_err(internal)?.clone();
    Ok(a.iter()
        .zip(b.iter())
        .zip(w.iter())
        .filter_map(|((a, b), w)| Some((a?, b?, w?)))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(passage: u32, concept: u32) -> Mention {
        Mention { passage, concept }
    }

    #[test]
    fn counts_passages_mentioning_both() {
        // Concepts 10, 20, 30 → entities 0, 1, 2.
        let g = cooccurrence(&[
            m(0, 10),
            m(0, 20),
            m(1, 20),
            m(1, 10),
            m(1, 30),
            m(2, 30),
            m(0, 10),
        ])
        .unwrap();
        assert_eq!(g.entity_concepts, vec![10, 20, 30]);
        assert_eq!(g.edges, vec![(0, 1, 2.0), (0, 2, 1.0), (1, 2, 1.0)]);
    }

    #[cfg(feature = "polars")]
    #[test]
    fn polars_and_plain_agree() {
        let mut pairs = Vec::new();
        for p in 0..200u32 {
            for k in 0..(p % 7) {
                pairs.push((p, (p * 31 + k * 17) % 50));
            }
        }
        pairs.sort_unstable();
        pairs.dedup();
        assert_eq!(polars_edges(&pairs).unwrap(), plain_edges(&pairs));
    }
}
