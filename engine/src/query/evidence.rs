//! `fetch_evidence`: the text and location behind evidence ids, visibility respected.

use serde::Serialize;

use super::Location;
use crate::view::View;
use crate::visibility::Visibility;

/// Whether an evidence id could be answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EvidenceStatus {
    /// The passage is visible; its text is returned.
    Found,
    /// The passage exists but is hidden, deleted or superseded; its text is withheld.
    NotVisible,
    /// No passage of the served run has this id (or no run is served).
    Unknown,
}

/// One answered evidence id.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Evidence {
    /// The id asked for.
    pub evidence_id: String,
    /// Outcome.
    pub status: EvidenceStatus,
    /// The passage's visibility when it exists.
    pub visibility: Option<Visibility>,
    /// Owning document (when found or not visible).
    pub document_key: Option<String>,
    /// Document title (when found).
    pub title: Option<String>,
    /// Location in the document (when found or not visible).
    pub location: Option<Location>,
    /// Passage text (only when found).
    pub text: Option<String>,
}

impl Evidence {
    /// The answer for an id that names nothing the caller may know of: status `unknown`,
    /// every other field empty.
    pub fn unknown(evidence_id: String) -> Self {
        Self {
            evidence_id,
            status: EvidenceStatus::Unknown,
            visibility: None,
            document_key: None,
            title: None,
            location: None,
            text: None,
        }
    }
}

/// Answers each id in order.
pub(crate) fn fetch(view: &View, ids: &[String]) -> Vec<Evidence> {
    ids.iter()
        .map(|id| {
            let unknown = Evidence::unknown(id.clone());
            let Some(snap) = view.snapshot() else {
                return unknown;
            };
            let Some(p) = snap.passage_row(id) else {
                return unknown;
            };
            let d = snap.passage(p).document();
            let state = view.visibility(p);
            let visible = !view.is_hidden(p);
            Evidence {
                evidence_id: id.clone(),
                status: if visible {
                    EvidenceStatus::Found
                } else {
                    EvidenceStatus::NotVisible
                },
                visibility: Some(state),
                document_key: Some(snap.document(d).key().to_owned()),
                title: visible.then(|| snap.document(d).title().to_owned()),
                location: Some(Location {
                    position: snap.passage(p).position(),
                }),
                text: visible.then(|| snap.passage(p).text().to_owned()),
            }
        })
        .collect()
}

/// `ev` as a caller limited to `scope` may see it: evidence of a document outside the scope is
/// answered [`EvidenceStatus::Unknown`], with nothing about it (as if the run did not hold it),
/// so a scope cannot be escaped by asking for ids directly.
pub fn within_scope(ev: Vec<Evidence>, scope: &super::Scope) -> Vec<Evidence> {
    let super::Scope::Documents(keys) = scope else {
        return ev;
    };
    let keys: std::collections::HashSet<&str> = keys.iter().map(String::as_str).collect();
    ev.into_iter()
        .map(|e| match &e.document_key {
            Some(k) if !keys.contains(k.as_str()) => Evidence::unknown(e.evidence_id),
            _ => e,
        })
        .collect()
}
