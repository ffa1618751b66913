//! What hidden passages withdraw from retrieval, derived once per visibility version.
//!
//! A run's derived data — a document's concept set, its full-text entry and its vector, a
//! community's report embedding — was computed from every passage. Hiding a passage must make
//! its words and concepts unsearchable at once, without a new run, so each retrieval path
//! consults what is derived here:
//!
//! 1. *Concept membership* (`concept` node field): a document that has a hidden passage keeps
//!    a concept only through a way of the run's concept evidence whose passages are all
//!    visible (see [`crate::snapshot::evidence::ConceptEvidence`]). The
//!    `mesh` field holds the input's own document-level headings: it follows the document's
//!    flag only.
//! 2. *Linked coverage* counts such a document as linked while one concept still stands.
//! 3. *BM25* scores such a document from its title and visible passages
//!    (the text index's overlay) against the run's corpus
//!    statistics.
//! 4. *The vector clause* leaves such a document out: its stored vector was computed from all
//!    of its passages and cannot be recomputed without the embedder. It comes back when the
//!    passage is visible again, or with the next run's vector.
//! 5. *Theme search* leaves out a community whose report quotes a hidden passage or that has
//!    a member no visible passage mentions: the report's embedded text carries those words.
//!    The next run leaves hidden passages out of the graph and the reports, so these
//!    communities come back then.

use std::sync::OnceLock;

use roaring::RoaringBitmap;

use crate::error::EngineError;
use crate::snapshot::evidence::{ConceptEvidence, rows_all_hidden};
use crate::snapshot::{DocumentRow, PassageRow, Snapshot};
use crate::text::TextOverlay;

/// Documents and communities that hidden passages withdraw, for one snapshot and one
/// visibility version.
#[derive(Debug, Default)]
pub struct Withdrawn {
    /// Documents (rows) that are visible themselves and have at least one passage that is not.
    pub partial_documents: RoaringBitmap,
    /// Communities left out of theme search.
    pub communities: RoaringBitmap,
    /// The concept evidence of `partial_documents`; `None` when the run has none (every
    /// concept of such a document is then withdrawn).
    pub evidence: Option<ConceptEvidence>,
    text: OnceLock<Result<TextOverlay, EngineError>>,
}

impl Withdrawn {
    /// Derives what `hidden` (passage rows that are not visible) and `hidden_documents`
    /// (document rows whose own flag is not visible) withdraw from `snap`.
    ///
    /// # Errors
    /// The snapshot's error reading the concept evidence of the partly hidden documents.
    ///
    /// # Complexity
    /// **O(h · m)** for `h` hidden passages mentioning `m` entities each, plus the passages of
    /// those entities and the evidence rows of their documents. The first call with anything
    /// hidden also builds the snapshot's passage → entity inverse (**O(mentions)**, once per
    /// run); nothing else follows the corpus.
    pub fn build(
        snap: &Snapshot,
        hidden: &RoaringBitmap,
        hidden_documents: &RoaringBitmap,
    ) -> Result<Self, EngineError> {
        if hidden.is_empty() {
            return Ok(Self::default());
        }
        let mut partial_documents: RoaringBitmap = hidden
            .iter()
            .filter(|&p| (p as usize) < snap.num_passages())
            .map(|p| snap.passage(PassageRow(p)).document().0)
            .collect();
        partial_documents -= hidden_documents;
        let mut communities = RoaringBitmap::new();
        let mut entities = RoaringBitmap::new();
        for p in hidden {
            let p = p as usize;
            if p >= snap.num_passages() {
                continue;
            }
            communities.extend(snap.passage_quoted_by().row(p).iter().copied());
            entities.extend(snap.passage_entities().row(p).iter().copied());
        }
        for e in rows_all_hidden(snap.entity_passages(), entities, |q| hidden.contains(q)) {
            communities.extend(snap.entity_communities().row(e as usize).iter().copied());
        }
        let evidence = snap.concept_evidence_of(&partial_documents)?;
        Ok(Self {
            partial_documents,
            communities,
            evidence,
            text: OnceLock::new(),
        })
    }

    /// The full-text overlay of the partial documents (built on first use), or `None` when
    /// there is none.
    ///
    /// # Errors
    /// The error of building the overlay, kept for every later call on this version.
    pub fn text_overlay(
        &self,
        snap: &Snapshot,
        hidden: &RoaringBitmap,
    ) -> Result<Option<&TextOverlay>, &EngineError> {
        if self.partial_documents.is_empty() {
            return Ok(None);
        }
        let built = self.text.get_or_init(|| {
            snap.text_index
                .overlay(self.partial_documents.iter().map(|d| {
                    let document = snap.document(DocumentRow(d));
                    let passages = document
                        .passages()
                        .filter(|p| !hidden.contains(p.0))
                        .map(|p| snap.passage(p).text())
                        .collect();
                    (d, document.title(), passages)
                }))
        });
        built.as_ref().map(Some)
    }
}
