//! `search_themes`: communities whose report matches a question, with supporting passages.
//!
//! Contract (DESIGN.md):
//! 1. An explicit scope with no document key answers `empty_scope`; nothing is searched and
//!    `index_state` is null.
//! 2. No servable run answers `index_not_ready` (`index_state = not_ready`).
//! 3. The query is embedded by the configured embedder (or given as a vector with its model);
//!    a model or dimension other than the run's answers `failed`, with a failure naming both.
//! 4. The `min(limit × 3, 100)` communities whose report embeddings are most similar (dot product
//!    of unit vectors = cosine; ties: lower `theme_id` first) are the candidate window. A
//!    community holds one or more vectors (see
//!    [`report_embeddings`](crate::format::tables::report_embeddings)) and its similarity is
//!    that of its best vector, both for the window and for the order of the themes (the
//!    max-sim of multi-vector retrieval, as in ColBERT: Khattab & Zaharia, SIGIR 2020,
//!    <https://doi.org/10.1145/3397271.3401075>): a community is found by whichever of its
//!    vectors says what the question asks. Runs of at least [`crate::ivf::MIN_ROWS`] report
//!    vectors read the window through their IVF index by default (approximate: a community
//!    none of whose vectors sits in a probed cell is missed; scores are exact), others by an
//!    exact scan; [`crate::ivf::CandidateSearch::Exact`] forces the scan.
//! 5. Walking the window best first, a candidate with no visible in-scope passage mentioning
//!    one of its members is dropped, and so is one whose report quotes a passage that is not
//!    visible or that has a member no visible passage mentions (its report's embedding
//!    carries those words; see [`crate::visibility::withdrawn`]); the others become themes
//!    until `limit` are found.
//! 6. `truncated` is true when fewer than `limit` themes were found and the window was full
//!    (`min(limit × 3, 100)` candidates were read): more themes may exist below the window, so
//!    the answer never claims completeness it has not checked. Hidden candidates filling the
//!    window therefore give `truncated = true`, never a silent short answer.
//! 7. `status` is `no_match` when the window held no candidate with a visible in-scope passage,
//!    else `ok`.
//! 8. A request with a `timeout` has a deadline from the call's start, checked after the query
//!    is embedded, after the candidate window is read and before each candidate is checked:
//!    once it has passed, the answer is `failed` with one failure whose leg is `timeout`, and no
//!    theme (nothing half-computed is returned).
//!
//! A theme names up to five members that a visible in-scope passage mentions, ordered by the
//! number of such passages (descending), then weighted degree in the entity graph
//! (descending), then name. Its passages are the visible in-scope passages mentioning members,
//! ranked by the number of distinct members they mention (descending), then by position in
//! their document (ascending), then by passage order in the run; at most `support_limit`.
//! The report text is what the query matched; it is never returned.

use std::collections::HashMap;

use serde::Serialize;

use super::{Location, QueryInput, Scope};
use crate::embed::dot;
use crate::error::{EngineError, Result};
use crate::ivf::{CandidateSearch, Probe};
use crate::snapshot::{CommunityId, CommunityRow, DocumentRow, EntityId, PassageRow, Snapshot};
use crate::view::View;

/// Arguments of [`Engine::search_themes`](crate::Engine::search_themes).
#[derive(Debug, Clone, PartialEq)]
pub struct ThemeRequest {
    /// The question.
    pub query: QueryInput,
    /// Documents that may be read (default: all).
    pub scope: Scope,
    /// Most themes returned (≥ 1; default 5).
    pub limit: usize,
    /// Most passages per theme (≥ 1; default 3).
    pub support_limit: usize,
    /// How long the search may take (`None`: no limit; else positive). Checked during the
    /// read: when it passes, the answer is `failed` with a failure whose leg is `timeout`.
    pub timeout: Option<std::time::Duration>,
}

impl ThemeRequest {
    /// A text question with the defaults: every document, `limit = 5`, `support_limit = 3`.
    pub fn text(q: impl Into<String>) -> Self {
        Self {
            query: QueryInput::Text(q.into()),
            scope: Scope::All,
            limit: 5,
            support_limit: 3,
            timeout: None,
        }
    }

    /// Checks the arguments a search needs before anything is read.
    ///
    /// # Errors
    /// [`EngineError::InvalidArgument`] naming `limit` or `support_limit` when it is 0, or
    /// `query` when the text is empty or the vector empty or not finite, `timeout` when it is
    /// zero.
    pub fn validate(&self) -> Result<()> {
        super::validate_timeout(self.timeout)?;
        if self.limit == 0 {
            return Err(EngineError::InvalidArgument {
                field: "limit",
                value: "0".into(),
                expected: "an integer ≥ 1",
            });
        }
        if self.support_limit == 0 {
            return Err(EngineError::InvalidArgument {
                field: "support_limit",
                value: "0".into(),
                expected: "an integer ≥ 1",
            });
        }
        match &self.query {
            QueryInput::Text(t) if t.trim().is_empty() => {
                return Err(EngineError::InvalidArgument {
                    field: "query",
                    value: format!("{t:?}"),
                    expected: "a non-empty question",
                });
            }
            QueryInput::Vector { vector, .. }
                if vector.is_empty() || vector.iter().any(|x| !x.is_finite()) =>
            {
                return Err(EngineError::InvalidArgument {
                    field: "query",
                    value: format!("a vector of {} values", vector.len()),
                    expected: "a non-empty vector of finite numbers",
                });
            }
            _ => {}
        }
        Ok(())
    }
}

/// Most candidates one theme search reads.
pub const MAX_CANDIDATES: usize = 100;
/// Most member names a theme carries.
pub const MAX_THEME_ENTITIES: usize = 5;

/// Outcome of a theme search.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// At least one theme.
    Ok,
    /// The read ran; no candidate had a visible in-scope passage.
    NoMatch,
    /// The scope holds no document key; nothing was searched.
    EmptyScope,
    /// No run to search (no LATEST, a run that fails validation, no embedding index).
    IndexNotReady,
    /// A leg failed (embedding, embedder mismatch, a read); see `failures`.
    Failed,
}

/// State of the report-embedding index when the query ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IndexState {
    /// A validated run was searched.
    Ready,
    /// There was no servable run.
    NotReady,
}

/// One failed leg of a query.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Failure {
    /// Which leg: `embed`, `read`, `timeout`, `vector_store`.
    pub leg: String,
    /// What went wrong.
    pub message: String,
}

/// A supporting passage of a theme.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ThemePassage {
    /// Evidence id (the passage id) for `fetch_evidence`.
    pub evidence_id: String,
    /// Owning document.
    pub document_key: String,
    /// Where it sits in the document.
    pub location: Location,
    /// Number of distinct theme members it mentions.
    pub num_members: u32,
}

/// One theme: a community of the run that matched the question.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Theme {
    /// The community's public id (`community_id` of the snapshot's tables): a continuing run
    /// keeps it for a community whose member set stays more than half the same (see the
    /// `community_lineage` table).
    pub theme_id: u32,
    /// Its level (0 = coarsest).
    pub level: u32,
    /// Cosine similarity of the query to the community's report (orders themes; not a
    /// confidence).
    pub score: f32,
    /// Up to five member names mentioned by a visible in-scope passage.
    pub entities: Vec<String>,
    /// Supporting passages, best first, at most `support_limit`.
    pub passages: Vec<ThemePassage>,
}

/// The answer of [`Engine::search_themes`](crate::Engine::search_themes).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ThemeAnswer {
    /// Outcome.
    pub status: Status,
    /// Fewer than `limit` themes and the candidate window was full.
    pub truncated: bool,
    /// Index state, or null when no index was checked (`empty_scope`).
    pub index_state: Option<IndexState>,
    /// The run searched, when one was.
    pub run_id: Option<String>,
    /// Themes, best first.
    pub themes: Vec<Theme>,
    /// Failed legs (empty unless `status` is `failed`).
    pub failures: Vec<Failure>,
}

impl ThemeAnswer {
    /// An answer with no theme: `status`, `index_state`, nothing else.
    pub fn empty(status: Status, index_state: Option<IndexState>) -> Self {
        Self {
            status,
            truncated: false,
            index_state,
            run_id: None,
            themes: Vec::new(),
            failures: Vec::new(),
        }
    }

    /// A `failed` answer over `run_id` with one failure of `leg` (`embed`, `read`, `timeout`,
    /// `vector_store`) saying `message`.
    pub fn failed(run_id: Option<String>, leg: &str, message: String) -> Self {
        Self {
            status: Status::Failed,
            truncated: false,
            index_state: Some(IndexState::Ready),
            run_id,
            themes: Vec::new(),
            failures: vec![Failure {
                leg: leg.to_owned(),
                message,
            }],
        }
    }
}

/// The `k` best rows of `scores` (descending score, then ascending index).
pub fn top_k(scores: &[f32], k: usize) -> Vec<(u32, f32)> {
    let mut idx: Vec<(u32, f32)> = scores
        .iter()
        .enumerate()
        .map(|(i, &s)| (i as u32, s))
        .collect();
    let cmp = |a: &(u32, f32), b: &(u32, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
    if k < idx.len() {
        idx.select_nth_unstable_by(k, cmp);
        idx.truncate(k);
    }
    idx.sort_by(cmp);
    idx
}

/// The candidate window: the `window` communities most similar to `query`, best first (ties:
/// lower id). Through the run's IVF index when `mode` allows and the run has one (approximate,
/// see [`crate::ivf`]); else an exact scan of every report embedding.
pub(crate) fn read_candidates(
    snap: &Snapshot,
    query: &[f32],
    window: usize,
    mode: CandidateSearch,
) -> Vec<(u32, f32)> {
    let dim = snap.dim();
    let matrix = snap.embedding_matrix();
    let normalized = snap.manifest.embedder.normalized;
    let probe = match mode {
        CandidateSearch::Auto => Some(Probe::default()),
        CandidateSearch::Ivf(p) => Some(p),
        CandidateSearch::Exact => None,
    };
    let best = |c: u32| -> f32 {
        snap.report_rows(c)
            .map(|r| dot(query, &matrix[r * dim..(r + 1) * dim]))
            .fold(f32::NEG_INFINITY, f32::max)
    };
    if let (Some(probe), Some(ivf), true) = (probe, snap.report_ivf(), normalized) {
        return ivf.search_by(query, window, probe, best).0;
    }
    top_k(&community_scores(snap, query), window)
}

/// The similarity of `query` to every community of `snap`, in community order: the cosine of
/// its best vector (the dot product when the run's vectors are unit length). The exact scan
/// behind the candidate window (rule 4).
pub fn community_scores(snap: &Snapshot, query: &[f32]) -> Vec<f32> {
    let dim = snap.dim();
    let matrix = snap.embedding_matrix();
    let normalized = snap.manifest.embedder.normalized;
    let qn = dot(query, query).sqrt();
    let row_score = |row: &[f32]| {
        let s = dot(query, row);
        if normalized {
            s
        } else {
            let rn = dot(row, row).sqrt();
            if rn > 0.0 && qn > 0.0 {
                s / (rn * qn)
            } else {
                0.0
            }
        }
    };
    (0..snap.num_communities() as u32)
        .map(|c| {
            snap.report_rows(c)
                .map(|r| row_score(&matrix[r * dim..(r + 1) * dim]))
                .fold(f32::NEG_INFINITY, f32::max)
        })
        .collect()
}

/// The size of the candidate window for `limit` themes: `min(limit × 3, 100)` (rule 4).
pub fn window_size(limit: usize) -> usize {
    limit.saturating_mul(3).min(MAX_CANDIDATES)
}

/// Where the candidate window of a search comes from.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Window<'a> {
    /// The run's own index of report embeddings, read as the mode says.
    Index(CandidateSearch),
    /// Given by the caller's vector store: `(community id, score)` pairs, checked, ordered best
    /// first (ties: lower id) and cut to the window size here.
    Given(&'a [(u32, f32)]),
}

/// Checks and orders a window given by a caller's vector store: every id must be a community
/// of the run and every score finite; a repeated id keeps its best score.
fn given_window(
    snap: &Snapshot,
    given: &[(u32, f32)],
    window: usize,
) -> std::result::Result<Vec<(u32, f32)>, String> {
    let n = snap.num_communities();
    let mut best: HashMap<u32, f32> = HashMap::with_capacity(given.len());
    for (i, &(id, s)) in given.iter().enumerate() {
        let Some(c) = snap.community_row(CommunityId(id)) else {
            return Err(format!(
                "hit {i} names community {id}, which is not one of the run's {n} communities"
            ));
        };
        if !s.is_finite() {
            return Err(format!("hit {i} (community {id}) has score {s}"));
        }
        let e = best.entry(c.0).or_insert(s);
        *e = e.max(s);
    }
    let mut out: Vec<(u32, f32)> = best.into_iter().collect();
    out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    out.truncate(window);
    Ok(out)
}

/// Runs the theme search over `view` with an already-embedded, unit-length `query` vector.
/// Arguments are assumed valid (checked by the caller).
pub(crate) fn search(
    view: &View,
    query: &[f32],
    req: &ThemeRequest,
    source: Window<'_>,
    deadline: Option<super::Deadline>,
) -> ThemeAnswer {
    let (scope, limit, support_limit) = (&req.scope, req.limit, req.support_limit);
    let Some(snap) = view.snapshot() else {
        return ThemeAnswer::empty(Status::IndexNotReady, Some(IndexState::NotReady));
    };
    let run_id = || Some(snap.run_id().to_owned());
    let timed_out = |stage: &str| {
        deadline
            .filter(super::Deadline::expired)
            .map(|d| ThemeAnswer {
                failures: vec![d.failure(stage)],
                ..ThemeAnswer::failed(run_id(), "", String::new())
            })
    };
    let window = window_size(limit);
    let candidates = match source {
        Window::Index(mode) => read_candidates(snap, query, window, mode),
        Window::Given(given) => match given_window(snap, given, window) {
            Ok(c) => c,
            Err(e) => return ThemeAnswer::failed(run_id(), "vector_store", e),
        },
    };
    if let Some(a) = timed_out("while the candidate window was read") {
        return a;
    }
    let in_scope: Option<std::collections::HashSet<DocumentRow>> = match scope {
        Scope::All => None,
        Scope::Documents(keys) => Some(keys.iter().filter_map(|k| snap.document_row(k)).collect()),
    };
    let visible = |p: PassageRow| -> bool {
        !view.is_hidden(p)
            && in_scope
                .as_ref()
                .is_none_or(|s| s.contains(&snap.passage(p).document()))
    };
    let mut themes = Vec::with_capacity(limit.min(candidates.len()));
    // Reused for every candidate, so a query allocates them once whatever the window's size:
    // with the system allocator an allocation can wait on a lock another thread holds.
    let mut per_passage: HashMap<PassageRow, u32> = HashMap::new();
    let mut named: Vec<(EntityId, u32)> = Vec::new(); // (entity, supporting passages)
    let mut passages: Vec<(PassageRow, u32)> = Vec::new();
    for &(c, score) in &candidates {
        if themes.len() == limit {
            break;
        }
        if let Some(a) = timed_out("while the candidates were checked against visibility") {
            return a;
        }
        // Its report's embedded text carries the words of a hidden passage (see
        // `visibility::withdrawn`): it cannot be told apart from a theme they found.
        if view.withdrawn().communities.contains(c) {
            continue;
        }
        let community = snap.community(CommunityRow(c));
        per_passage.clear();
        named.clear();
        for e in community.members() {
            let mut n = 0u32;
            for p in snap.entity(e).passages() {
                if visible(p) {
                    *per_passage.entry(p).or_insert(0) += 1;
                    n += 1;
                }
            }
            if n > 0 {
                named.push((e, n));
            }
        }
        if per_passage.is_empty() {
            continue;
        }
        named.sort_by(|a, b| {
            b.1.cmp(&a.1)
                .then(
                    snap.entity(b.0)
                        .degree()
                        .total_cmp(&snap.entity(a.0).degree()),
                )
                .then(snap.entity(a.0).name().cmp(snap.entity(b.0).name()))
        });
        passages.clear();
        passages.extend(per_passage.drain());
        passages.sort_by(|a, b| {
            b.1.cmp(&a.1)
                .then(
                    snap.passage(a.0)
                        .position()
                        .cmp(&snap.passage(b.0).position()),
                )
                .then(a.0.cmp(&b.0))
        });
        passages.truncate(support_limit);
        themes.push(Theme {
            theme_id: community.id().0,
            level: community.level(),
            score,
            entities: named
                .iter()
                .take(MAX_THEME_ENTITIES)
                .map(|&(e, _)| snap.entity(e).name().to_owned())
                .collect(),
            passages: passages
                .iter()
                .map(|&(p, n)| ThemePassage {
                    evidence_id: snap.passage(p).id(),
                    document_key: snap.passage(p).document_key().to_owned(),
                    location: Location {
                        position: snap.passage(p).position(),
                    },
                    num_members: n,
                })
                .collect(),
        });
    }
    let truncated = themes.len() < limit && candidates.len() == window;
    ThemeAnswer {
        status: if themes.is_empty() {
            Status::NoMatch
        } else {
            Status::Ok
        },
        truncated,
        index_state: Some(IndexState::Ready),
        run_id: Some(snap.run_id().to_owned()),
        themes,
        failures: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_k_orders_by_score_then_index() {
        let s = [0.1, 0.9, 0.5, 0.9, -1.0];
        assert_eq!(top_k(&s, 3), vec![(1, 0.9), (3, 0.9), (2, 0.5)]);
        assert_eq!(top_k(&s, 10).len(), 5);
        assert!(top_k(&s, 0).is_empty());
    }
}
