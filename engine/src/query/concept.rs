//! `find_by_meaning`: every document about a concept, expanded along the vocabulary hierarchy,
//! with the answer stating its own limits.
//!
//! 1. Exactly one of a concept id and a term; a term resolves by preferred term or synonym,
//!    case-folded and NFKC-normalized, possibly to several concepts. A term or id the
//!    vocabulary does not hold answers `unknown_term` / `unknown_concept`: nothing was searched.
//! 2. Expansion: [`Direction::Forward`] walks *upwards* to the broader concepts along
//!    `relation` (the default: documents about broader subjects are included, documents about
//!    narrower ones are not); [`Direction::Reverse`] walks downwards. `depth` bounds the walk
//!    (unbounded by default); cycles cannot loop (each concept is visited once).
//! 3. The filter: documents whose `node_field` holds any concept of the expanded set, in scope,
//!    and whose document flag is visible. No cap on the concept set or the document set.
//! 4. Clauses compose with the filter: [`Combine::Bool`] intersects it with every clause's hits
//!    (keyword: BM25 hits; vector: the `k` nearest documents by cosine); [`Combine::Hybrid`]
//!    keeps filter documents hit by any clause and fuses their scores (reciprocal rank fusion,
//!    or a min-max normalized weighted sum).
//! 5. Without clauses every filtered document matches; `query`, when given, ranks them by BM25
//!    (documents the query does not hit follow, in document-key order) and never narrows.
//!    Without `query` the order is closeness: documents about the asked concept itself first,
//!    then those about concepts one hop away along the expansion, and so on, ascending
//!    `document_key` within a hop; the answer says so, and each hit gives its `hops`.
//! 6. The answer gives the total count and a sample of at most `sample` documents, the
//!    direction as text, the resolved and expanded concepts, and the coverage line
//!    "N of M documents in `<index>` are linked to any concept (P%)…" over the visible in-scope
//!    documents, or a line saying coverage is unknown when the run has no such field.

use std::collections::{HashMap, HashSet};

use roaring::{MultiOps, RoaringBitmap};
use serde::Serialize;

use super::{QueryInput, Scope};
use crate::embed::dot;
use crate::error::{EngineError, Result};
use crate::snapshot::{DocumentRow, Snapshot};
use crate::view::View;

/// The node field filled by linking.
pub const DEFAULT_NODE_FIELD: &str = "concept";
/// The broader/narrower relation.
pub const DEFAULT_RELATION: &str = "subclass_of";
/// Text stating the forward direction, repeated in every forward answer.
pub const FORWARD_TEXT: &str = "upwards to the more general: documents about broader subjects are included, documents about narrower ones are not";
/// Text stating the reverse direction.
pub const REVERSE_TEXT: &str = "downwards to the more specific: documents about narrower subjects are included, documents about broader ones are not";

/// What to look for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConceptSelector {
    /// A concept id, e.g. `D009203`.
    Concept(String),
    /// A term: a preferred term or synonym of one or more concepts.
    Term(String),
}

/// Which way the expansion walks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Up to broader concepts (the default).
    #[default]
    Forward,
    /// Down to narrower concepts.
    Reverse,
}

/// How clauses combine with the concept filter.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub enum Combine {
    /// Intersection with every clause.
    #[default]
    Bool,
    /// Union of the clauses within the filter, scores fused.
    Hybrid(Fusion),
}

/// Score fusion of a hybrid query.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fusion {
    /// Reciprocal rank fusion: `Σ 1 / (k + rank)` (Cormack, Clarke & Büttcher 2009), `k = 60`
    /// customarily.
    Rrf {
        /// The rank constant (> 0).
        k: f32,
    },
    /// Min-max normalize each clause's scores to [0, 1], then
    /// `keyword_weight × keyword + (1 − keyword_weight) × vector`.
    WeightedSum {
        /// Weight of the keyword clause, in [0, 1].
        keyword_weight: f32,
    },
}

/// The vector clause: the `k` documents nearest to a query.
#[derive(Debug, Clone, PartialEq)]
pub struct VectorClause {
    /// The query (text embedded by the engine, or a vector with its model).
    pub input: QueryInput,
    /// How many nearest documents the clause hits (≥ 1).
    pub k: usize,
}

/// Arguments of [`Engine::find_by_meaning`](crate::Engine::find_by_meaning).
#[derive(Debug, Clone, PartialEq)]
pub struct ConceptRequest {
    /// The concept or term.
    pub selector: ConceptSelector,
    /// Node field to match (`concept` from linking, `mesh` from the input).
    pub node_field: String,
    /// Relation to expand along.
    pub relation: String,
    /// Direction of expansion.
    pub direction: Direction,
    /// Most hops of expansion (`None`: unbounded).
    pub depth: Option<usize>,
    /// Text that ranks the matching documents (BM25); never narrows.
    pub query: Option<String>,
    /// Keyword clause.
    pub keyword: Option<String>,
    /// Vector clause.
    pub vector: Option<VectorClause>,
    /// How clauses combine.
    pub combine: Combine,
    /// Most documents listed (≥ 1); the count covers all.
    pub sample: usize,
    /// Documents that may be read.
    pub scope: Scope,
    /// How long the search may take (`None`: no limit; else positive). Checked after the
    /// concept set is resolved, after the vector clause is embedded and after the search:
    /// past it, the answer is `failed` with a failure whose leg is `timeout`.
    pub timeout: Option<std::time::Duration>,
}

impl ConceptRequest {
    /// The defaults of DESIGN.md: node field `concept`, relation `subclass_of`, upwards,
    /// unbounded, no query, sample 10, every document.
    pub fn new(selector: ConceptSelector) -> Self {
        Self {
            selector,
            node_field: DEFAULT_NODE_FIELD.to_owned(),
            relation: DEFAULT_RELATION.to_owned(),
            direction: Direction::Forward,
            depth: None,
            query: None,
            keyword: None,
            vector: None,
            combine: Combine::Bool,
            sample: 10,
            scope: Scope::All,
            timeout: None,
        }
    }

    /// Checks the arguments that do not depend on the run, before anything is read.
    ///
    /// # Errors
    /// [`EngineError::InvalidArgument`] naming `sample` (0), `concept`/`term` (empty),
    /// `depth` (0), `vector.k` (0), `fusion.k` (≤ 0 or not finite), `keyword_weight`
    /// (outside [0, 1]) or `timeout` (zero).
    pub fn validate(&self) -> Result<()> {
        super::validate_timeout(self.timeout)?;
        if self.sample == 0 {
            return Err(invalid("sample", "0".into(), "an integer ≥ 1"));
        }
        if self.depth == Some(0) {
            return Err(invalid("depth", "0".into(), "an integer ≥ 1, or no depth"));
        }
        match &self.selector {
            ConceptSelector::Concept(c) if c.trim().is_empty() => {
                return Err(invalid(
                    "concept",
                    format!("{c:?}"),
                    "a non-empty concept id",
                ));
            }
            ConceptSelector::Term(t) if t.trim().is_empty() => {
                return Err(invalid("term", format!("{t:?}"), "a non-empty term"));
            }
            _ => {}
        }
        if let Some(v) = &self.vector
            && v.k == 0
        {
            return Err(invalid("vector.k", "0".into(), "an integer ≥ 1"));
        }
        match self.combine {
            Combine::Hybrid(Fusion::Rrf { k }) if !(k > 0.0 && k.is_finite()) => {
                return Err(invalid("fusion.k", k.to_string(), "a finite number > 0"));
            }
            Combine::Hybrid(Fusion::WeightedSum { keyword_weight: w })
                if !(0.0..=1.0).contains(&w) =>
            {
                return Err(invalid(
                    "keyword_weight",
                    w.to_string(),
                    "a number in [0, 1]",
                ));
            }
            _ => {}
        }
        Ok(())
    }

    /// Checks that the run's vocabulary has the relation asked for.
    ///
    /// # Errors
    /// [`EngineError::InvalidArgument`] naming `relation` when `snap` does not know it.
    pub fn validate_relation(&self, snap: &Snapshot) -> Result<()> {
        if snap.concept_index.relations.contains_key(&self.relation) {
            return Ok(());
        }
        Err(invalid(
            "relation",
            self.relation.clone(),
            "a relation of the run's vocabulary (subclass_of)",
        ))
    }
}

/// An [`EngineError::InvalidArgument`] of a concept request.
fn invalid(field: &'static str, value: String, expected: &'static str) -> EngineError {
    EngineError::InvalidArgument {
        field,
        value,
        expected,
    }
}

/// Outcome of a concept search.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ConceptStatus {
    /// At least one document matched.
    Ok,
    /// The search ran; no document matched.
    NoMatch,
    /// The term is not in the vocabulary: nothing was searched.
    UnknownTerm,
    /// The concept id is not in the vocabulary: nothing was searched.
    UnknownConcept,
    /// The run has no such node field: nothing was searched.
    UnknownNodeField,
    /// The scope holds no document key: nothing was searched.
    EmptyScope,
    /// No run is served.
    IndexNotReady,
    /// A clause failed (e.g. the vector's model differs from the run's); see `failures`.
    Failed,
}

/// A concept named in an answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConceptRef {
    /// Concept id.
    pub concept_id: String,
    /// Preferred term.
    pub preferred_term: String,
}

/// Coverage of the searched index by the node field.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Coverage {
    /// Visible in-scope documents with at least one concept in the field.
    pub linked: u64,
    /// Visible in-scope documents.
    pub total: u64,
    /// `100 × linked / total`.
    pub percent: f64,
}

/// One listed document.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConceptHit {
    /// Document key.
    pub document_key: String,
    /// Title.
    pub title: String,
    /// Ranking score (BM25, cosine or fused), when ranked.
    pub score: Option<f32>,
    /// Concepts of the expanded set that the document's field holds.
    pub matched: Vec<String>,
    /// Hops from the asked concept to the nearest concept of `matched` along the expansion
    /// (0: the document is about the asked concept itself; 1: about a concept one step
    /// broader, or narrower when expanding downwards; …).
    pub hops: u32,
}

/// The answer of a concept search.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConceptAnswer {
    /// Outcome.
    pub status: ConceptStatus,
    /// Whether any document was looked at.
    pub searched: bool,
    /// The run searched.
    pub run_id: Option<String>,
    /// `forward` or `reverse`.
    pub direction: Direction,
    /// The direction as a sentence.
    pub direction_text: String,
    /// Concepts the selector resolved to.
    pub resolved: Vec<ConceptRef>,
    /// Size of the expanded concept set (resolved concepts included).
    pub num_expanded: usize,
    /// The expanded concept ids, sorted (all of them).
    pub expanded: Vec<String>,
    /// Number of matching documents (all, not just the sample).
    pub total: u64,
    /// At most `sample` documents, ranked.
    pub sample: Vec<ConceptHit>,
    /// What ordered the sample: `query`, `keyword`, `vector`, `rrf`, `weighted_sum`, or
    /// `closeness` (documents about the asked concept first, then by hops along the expansion,
    /// then by document key).
    pub ranked_by: String,
    /// Coverage, or null when it cannot be obtained.
    pub coverage: Option<Coverage>,
    /// The coverage statement.
    pub coverage_text: String,
    /// Everything above as sentences, for readers of text.
    pub text: String,
    /// Failed legs.
    pub failures: Vec<super::theme::Failure>,
}

impl ConceptAnswer {
    fn nothing(status: ConceptStatus, direction: Direction, why: &str) -> Self {
        Self {
            status,
            searched: false,
            run_id: None,
            direction,
            direction_text: direction_text(direction).to_owned(),
            resolved: Vec::new(),
            num_expanded: 0,
            expanded: Vec::new(),
            total: 0,
            sample: Vec::new(),
            ranked_by: String::new(),
            coverage: None,
            coverage_text: String::new(),
            text: format!("Nothing was searched: {why}."),
            failures: Vec::new(),
        }
    }

    /// A `failed` answer over `run_id`: nothing searched, one failure of `leg` (`embed`,
    /// `timeout`, …) saying `message`.
    pub fn failed(
        run_id: Option<String>,
        direction: Direction,
        leg: &str,
        message: String,
    ) -> Self {
        let mut a = Self::nothing(ConceptStatus::Failed, direction, &message);
        a.run_id = run_id;
        a.failures.push(super::theme::Failure {
            leg: leg.to_owned(),
            message,
        });
        a
    }
}

fn direction_text(d: Direction) -> &'static str {
    match d {
        Direction::Forward => FORWARD_TEXT,
        Direction::Reverse => REVERSE_TEXT,
    }
}

/// The concept and every concept reachable from it along `relation` in `direction`, within
/// `depth` hops; sorted.
pub fn expand(
    snap: &Snapshot,
    start: &[u32],
    relation: &str,
    direction: Direction,
    depth: Option<usize>,
) -> Option<Vec<u32>> {
    let mut v: Vec<u32> = expand_by_hops(snap, start, relation, direction, depth)?
        .into_iter()
        .flatten()
        .collect();
    v.sort_unstable();
    Some(v)
}

/// As [`expand`], grouped by the number of hops from `start` (breadth first): group 0 holds
/// `start` itself, group `h` the concepts first reached after `h` hops; each group sorted.
pub fn expand_by_hops(
    snap: &Snapshot,
    start: &[u32],
    relation: &str,
    direction: Direction,
    depth: Option<usize>,
) -> Option<Vec<Vec<u32>>> {
    let h = snap.concept_index.relations.get(relation)?;
    let next = match direction {
        Direction::Forward => &h.parents,
        Direction::Reverse => &h.children,
    };
    let mut seen: HashSet<u32> = start.iter().copied().collect();
    let mut frontier: Vec<u32> = seen.iter().copied().collect();
    frontier.sort_unstable();
    let mut groups = Vec::new();
    while !frontier.is_empty() {
        groups.push(frontier.clone());
        if depth.is_some_and(|d| groups.len() > d) {
            break;
        }
        let mut new = Vec::new();
        for &c in &frontier {
            for &n in next.row(c as usize) {
                if seen.insert(n) {
                    new.push(n);
                }
            }
        }
        new.sort_unstable();
        frontier = new;
    }
    Some(groups)
}

/// Outcome of the pure part of the search (after the selector resolved).
pub(crate) struct Resolved {
    pub concepts: Vec<u32>,
}

/// Resolves the selector. `Err(answer)` when nothing can be searched.
pub(crate) fn resolve(
    snap: &Snapshot,
    req: &ConceptRequest,
) -> Result<Resolved, Box<ConceptAnswer>> {
    let concepts: Vec<u32> = match &req.selector {
        ConceptSelector::Concept(id) => match snap.vocabulary.concepts.row(id.trim()) {
            Some(c) => vec![c],
            None => {
                return Err(Box::new(ConceptAnswer::nothing(
                    ConceptStatus::UnknownConcept,
                    req.direction,
                    &format!("the vocabulary has no concept {id:?}"),
                )));
            }
        },
        ConceptSelector::Term(t) => {
            let cs = snap.concept_index.resolve_term(t);
            if cs.is_empty() {
                return Err(Box::new(ConceptAnswer::nothing(
                    ConceptStatus::UnknownTerm,
                    req.direction,
                    &format!("the vocabulary has no term {t:?} (as a preferred term or synonym)"),
                )));
            }
            cs.to_vec()
        }
    };
    Ok(Resolved { concepts })
}

/// Scores of a clause: document row → score.
pub(crate) type Scores = HashMap<u32, f32>;

/// Cosine of `query` with the embedding of every document the vector clause may read; the `k`
/// best as scores. A document whose own flag is not visible, or that has a passage that is not
/// (its vector carries that passage's words), is not read.
pub(crate) fn vector_scores(view: &View, snap: &Snapshot, query: &[f32], k: usize) -> Scores {
    let dim = snap.dim();
    let mut scores: Vec<f32> = snap
        .document_embedding_matrix()
        .chunks_exact(dim)
        .map(|row| dot(query, row))
        .collect();
    for d in view
        .hidden_documents()
        .iter()
        .chain(view.withdrawn().partial_documents.iter())
    {
        if let Some(s) = scores.get_mut(d as usize) {
            *s = f32::NEG_INFINITY;
        }
    }
    super::theme::top_k(&scores, k)
        .into_iter()
        .filter(|(_, s)| s.is_finite())
        .collect()
}

fn min_max(scores: &Scores) -> Scores {
    let (lo, hi) = scores
        .values()
        .fold((f32::INFINITY, f32::NEG_INFINITY), |(l, h), &v| {
            (l.min(v), h.max(v))
        });
    scores
        .iter()
        .map(|(&d, &v)| (d, if hi > lo { (v - lo) / (hi - lo) } else { 1.0 }))
        .collect()
}

fn ranks(scores: &Scores) -> HashMap<u32, usize> {
    let mut v: Vec<(u32, f32)> = scores.iter().map(|(&d, &s)| (d, s)).collect();
    v.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    v.into_iter()
        .enumerate()
        .map(|(i, (d, _))| (d, i + 1))
        .collect()
}

/// Runs the search once the selector resolved and the clauses were scored.
#[allow(clippy::too_many_arguments, clippy::too_many_lines)]
pub(crate) fn search(
    view: &View,
    snap: &Snapshot,
    req: &ConceptRequest,
    resolved: &Resolved,
    vector: Option<&Scores>,
) -> ConceptAnswer {
    let idx = &snap.concept_index;
    let Some(field) = idx
        .postings
        .field(&req.node_field, &snap.vocabulary.concepts)
    else {
        let mut a = ConceptAnswer::nothing(
            ConceptStatus::UnknownNodeField,
            req.direction,
            &format!(
                "the run has no node field {:?} (it has {:?})",
                req.node_field,
                idx.postings.field_names().collect::<Vec<_>>()
            ),
        );
        a.run_id = Some(snap.run_id().to_owned());
        return a;
    };
    let by_hops = expand_by_hops(
        snap,
        &resolved.concepts,
        &req.relation,
        req.direction,
        req.depth,
    )
    .unwrap_or_else(|| vec![resolved.concepts.clone()]);
    let mut expanded: Vec<u32> = by_hops.iter().flatten().copied().collect();
    expanded.sort_unstable();
    expanded.dedup();
    // The document sets of the concepts the query touches, decoded once (on first use in the
    // run's life: see `concept_postings`).
    let mut postings: HashMap<u32, &RoaringBitmap> = HashMap::with_capacity(expanded.len());
    for &c in &expanded {
        match field.get(c) {
            Ok(Some(b)) => {
                postings.insert(c, b);
            }
            Ok(None) => {}
            Err(e) => return postings_failed(snap, req, &e),
        }
    }
    let linked_documents = match field.linked() {
        Ok(b) => b,
        Err(e) => return postings_failed(snap, req, &e),
    };
    // Visible in-scope documents.
    let mut allowed = RoaringBitmap::new();
    allowed.insert_range(0..snap.num_documents() as u32);
    if let Scope::Documents(keys) = &req.scope {
        allowed = keys
            .iter()
            .filter_map(|k| snap.document_row(k).map(|d| d.0))
            .collect();
    }
    allowed -= view.hidden_documents();
    // Large unions go through one multi-way union, which ORs into bitmap containers in place:
    // folding `|=` over dozens of array containers rebuilt a growing array at every step (the
    // p99 of `query-bench`: 1.2 ms → 0.3 ms at 1M documents). Small ones fold, which avoids
    // promoting a few short arrays to 8 KiB bitmaps.
    let parts: Vec<&RoaringBitmap> = expanded
        .iter()
        .filter_map(|c| postings.get(c).copied())
        .collect();
    let mut filter: RoaringBitmap = if parts.iter().map(|b| b.len()).sum::<u64>() <= 4096 {
        parts.iter().fold(RoaringBitmap::new(), |mut acc, b| {
            acc |= *b;
            acc
        })
    } else {
        parts.into_iter().union()
    };
    filter &= &allowed;

    // A document with a hidden passage keeps a concept of the linked field only through a way
    // of the run's evidence whose passages are all visible (runs without evidence: none).
    let hidden = view.hidden_passages();
    let withdrawn = view.withdrawn();
    let by_evidence = req.node_field == DEFAULT_NODE_FIELD;
    let readable = |d: u32| -> Vec<u32> {
        withdrawn
            .evidence
            .as_ref()
            .map(|ev| ev.supported_concepts(d, |p| hidden.contains(p)).collect())
            .unwrap_or_default()
    };
    if by_evidence {
        for d in &filter & &withdrawn.partial_documents {
            let keep = withdrawn
                .evidence
                .as_ref()
                .is_some_and(|ev| ev.supports(d, &expanded, |p| hidden.contains(p)));
            if !keep {
                filter.remove(d);
            }
        }
    }
    let overlay = match withdrawn.text_overlay(snap, hidden) {
        Ok(o) => o,
        Err(e) => return text_failed(snap, req, e.to_string()),
    };

    // Text scores, restricted to the filter: a keyword clause can only keep filter documents,
    // and the query only ranks them.
    let text = |q: &Option<String>| -> Result<Option<Scores>, String> {
        match q {
            Some(q) if !q.trim().is_empty() => snap
                .text_index
                .search_within_readable(q, &filter, overlay)
                .map(|v| Some(v.into_iter().collect()))
                .map_err(|e| e.to_string()),
            _ => Ok(None),
        }
    };
    let (query_scores, keyword) = match (text(&req.query), text(&req.keyword)) {
        (Ok(q), Ok(k)) => (q, k),
        (Err(message), _) | (_, Err(message)) => return text_failed(snap, req, message),
    };
    let query_scores = query_scores.as_ref();
    let keyword = keyword.as_ref();

    // Clauses.
    let mut ranked_by = "closeness";
    let mut scored: Option<Vec<(u32, f32)>> = None;
    let clauses: Vec<&Scores> = keyword.into_iter().chain(vector).collect();
    if !clauses.is_empty() {
        match req.combine {
            Combine::Bool => {
                for c in &clauses {
                    filter &= c.keys().copied().collect::<RoaringBitmap>();
                }
                let primary = keyword.or(vector).unwrap_or(clauses[0]);
                ranked_by = if keyword.is_some() {
                    "keyword"
                } else {
                    "vector"
                };
                scored = Some(
                    filter
                        .iter()
                        .map(|d| (d, primary.get(&d).copied().unwrap_or(0.0)))
                        .collect(),
                );
            }
            Combine::Hybrid(fusion) => {
                let mut any = RoaringBitmap::new();
                for c in &clauses {
                    any |= c.keys().copied().collect::<RoaringBitmap>();
                }
                filter &= any;
                let fused: Vec<(u32, f32)> = match fusion {
                    Fusion::Rrf { k } => {
                        ranked_by = "rrf";
                        let rs: Vec<HashMap<u32, usize>> =
                            clauses.iter().map(|c| ranks(c)).collect();
                        filter
                            .iter()
                            .map(|d| {
                                let s: f32 = rs
                                    .iter()
                                    .filter_map(|r| r.get(&d))
                                    .map(|&r| 1.0 / (k + r as f32))
                                    .sum();
                                (d, s)
                            })
                            .collect()
                    }
                    Fusion::WeightedSum { keyword_weight } => {
                        ranked_by = "weighted_sum";
                        let kw = keyword.map(min_max).unwrap_or_default();
                        let vc = vector.map(min_max).unwrap_or_default();
                        filter
                            .iter()
                            .map(|d| {
                                let s = keyword_weight * kw.get(&d).copied().unwrap_or(0.0)
                                    + (1.0 - keyword_weight) * vc.get(&d).copied().unwrap_or(0.0);
                                (d, s)
                            })
                            .collect()
                    }
                };
                scored = Some(fused);
            }
        }
    } else if let Some(q) = query_scores {
        ranked_by = "query";
        scored = Some(
            filter
                .iter()
                .map(|d| (d, q.get(&d).copied().unwrap_or(0.0)))
                .collect(),
        );
    }
    let total = filter.len();
    // The concepts of the expanded set that document `d` holds (withdrawn ones left out),
    // with the hops from the asked concept to the nearest of them.
    let held = |d: u32| -> (Vec<u32>, usize) {
        let still: Option<Vec<u32>> =
            (by_evidence && withdrawn.partial_documents.contains(d)).then(|| readable(d));
        let mut nearest = usize::MAX;
        let mut held = Vec::new();
        for (h, group) in by_hops.iter().enumerate() {
            for &c in group {
                if postings.get(&c).is_some_and(|b| b.contains(d))
                    && still.as_ref().is_none_or(|s| s.binary_search(&c).is_ok())
                {
                    nearest = nearest.min(h);
                    held.push(c);
                }
            }
        }
        (held, nearest)
    };
    let sample: Vec<(u32, Option<f32>)> = match scored {
        Some(mut v) => {
            v.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            v.into_iter()
                .take(req.sample)
                .map(|(d, s)| (d, Some(s)))
                .collect()
        }
        None => {
            // Closeness: documents about the asked concept itself first, then those reached
            // through one hop, and so on; by document key within a hop. One union of postings
            // per hop, so the cost follows the sample, not the match count.
            // `sample` is the caller's bound, not a size: never reserve more than can match.
            let mut listed: Vec<(u32, Option<f32>)> =
                Vec::with_capacity(req.sample.min(filter.len() as usize));
            let mut seen = RoaringBitmap::new();
            // Partly hidden documents whose concept at the hop they were met was withdrawn,
            // by the hop of the nearest concept they still hold.
            let mut deferred: Vec<(usize, u32)> = Vec::new();
            for (h, group) in by_hops.iter().enumerate() {
                if listed.len() == req.sample {
                    break;
                }
                let mut at: RoaringBitmap = group
                    .iter()
                    .filter_map(|c| postings.get(c).copied())
                    .collect::<Vec<_>>()
                    .into_iter()
                    .union();
                at &= &filter;
                at -= &seen;
                let mut here: RoaringBitmap = deferred
                    .iter()
                    .filter(|(dh, _)| *dh == h)
                    .map(|&(_, d)| d)
                    .collect();
                // Documents come in key order: once `needed` of them are in, no later one can
                // be listed before them at this hop.
                let needed = req.sample - listed.len();
                let mut taken = 0usize;
                for d in &at {
                    if taken == needed {
                        break;
                    }
                    let partial = by_evidence && withdrawn.partial_documents.contains(d);
                    if !partial
                        || withdrawn
                            .evidence
                            .as_ref()
                            .is_some_and(|ev| ev.supports(d, group, |p| hidden.contains(p)))
                    {
                        here.insert(d);
                        taken += 1;
                    } else {
                        deferred.push((held(d).1, d));
                    }
                    seen.insert(d);
                }
                listed.extend(
                    here.iter()
                        .take(req.sample - listed.len())
                        .map(|d| (d, None)),
                );
            }
            listed
        }
    };
    let sample: Vec<ConceptHit> = sample
        .into_iter()
        .map(|(d, score)| {
            let (concepts, nearest) = held(d);
            let mut matched: Vec<String> = concepts
                .iter()
                .map(|&c| snap.vocabulary.concepts.ids.get(c as usize).to_owned())
                .collect();
            matched.sort();
            ConceptHit {
                document_key: snap.document(DocumentRow(d)).key().to_owned(),
                title: snap.document(DocumentRow(d)).title().to_owned(),
                score,
                matched,
                hops: u32::try_from(nearest).unwrap_or(u32::MAX),
            }
        })
        .collect();
    let num_about_itself = sample.iter().filter(|h| h.hops == 0).count();

    let linked = linked_documents.map_or(0, |b| {
        let mut n = b.intersection_len(&allowed);
        if by_evidence {
            let partial = &(b & &allowed) & &withdrawn.partial_documents;
            n -= partial.iter().filter(|&d| readable(d).is_empty()).count() as u64;
        }
        n
    });
    let total_docs = allowed.len();
    let index_name = format!("run {}", snap.run_id());
    let (coverage, coverage_text) = if total_docs == 0 {
        (
            None,
            format!(
                "How much of {index_name} could have been searched is unknown: the scope holds no visible document."
            ),
        )
    } else {
        let percent = 100.0 * linked as f64 / total_docs as f64;
        (
            Some(Coverage {
                linked,
                total: total_docs,
                percent,
            }),
            format!(
                "{linked} of {total_docs} documents in {index_name} are linked to any concept ({percent:.1}%). Documents that are not linked CANNOT be found this way at all, so this answer is complete over the linked share only."
            ),
        )
    };
    let cref = |c: u32| ConceptRef {
        concept_id: snap.vocabulary.concepts.ids.get(c as usize).to_owned(),
        preferred_term: snap
            .vocabulary
            .concepts
            .preferred_terms
            .get(c as usize)
            .to_owned(),
    };
    let resolved_refs: Vec<ConceptRef> = resolved.concepts.iter().map(|&c| cref(c)).collect();
    let names: Vec<String> = resolved_refs
        .iter()
        .map(|r| format!("{} ({})", r.preferred_term, r.concept_id))
        .collect();
    let text = format!(
        "Concept: {}. Expansion along {} runs {}; {} concepts in the set. {} documents match in node field {:?}{}. {}",
        names.join(", "),
        req.relation,
        direction_text(req.direction),
        expanded.len(),
        total,
        req.node_field,
        if sample.is_empty() {
            String::new()
        } else if ranked_by == "closeness" {
            format!(
                "; {} listed, documents about the concept itself first ({num_about_itself} of them), then those about {} concepts, nearest first, each by document_key",
                sample.len(),
                match req.direction {
                    Direction::Forward => "broader",
                    Direction::Reverse => "narrower",
                }
            )
        } else {
            format!("; {} listed, ranked by {ranked_by}", sample.len())
        },
        coverage_text
    );
    ConceptAnswer {
        status: if total == 0 {
            ConceptStatus::NoMatch
        } else {
            ConceptStatus::Ok
        },
        searched: true,
        run_id: Some(snap.run_id().to_owned()),
        direction: req.direction,
        direction_text: direction_text(req.direction).to_owned(),
        resolved: resolved_refs,
        num_expanded: expanded.len(),
        expanded: expanded
            .iter()
            .map(|&c| snap.vocabulary.concepts.ids.get(c as usize).to_owned())
            .collect(),
        total,
        sample,
        ranked_by: ranked_by.to_owned(),
        coverage,
        coverage_text,
        text,
        failures: Vec::new(),
    }
}

/// The answer of a search whose full-text leg failed: `failed`, naming the leg.
/// The answer when the document sets of the asked concepts cannot be read from the run.
fn postings_failed(snap: &Snapshot, req: &ConceptRequest, e: &EngineError) -> ConceptAnswer {
    let message = e.to_string();
    let mut a = ConceptAnswer::nothing(ConceptStatus::Failed, req.direction, &message);
    a.run_id = Some(snap.run_id().to_owned());
    a.failures.push(super::theme::Failure {
        leg: "concepts".into(),
        message,
    });
    a
}

fn text_failed(snap: &Snapshot, req: &ConceptRequest, message: String) -> ConceptAnswer {
    let mut a = ConceptAnswer::nothing(ConceptStatus::Failed, req.direction, &message);
    a.run_id = Some(snap.run_id().to_owned());
    a.failures.push(super::theme::Failure {
        leg: "text".into(),
        message,
    });
    a
}

pub(crate) fn nothing(status: ConceptStatus, direction: Direction, why: &str) -> ConceptAnswer {
    ConceptAnswer::nothing(status, direction, why)
}
