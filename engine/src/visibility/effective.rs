//! The effective visibility of a passage or document, and the flag that decides it.
//!
//! A passage's effective state is the more restrictive of its own flag and its document's
//! (`visible` < `hidden` < `superseded` < `deleted`); a document has only its own flag. A
//! passage whose own flag says `visible` is still deleted when its document is, so an answer
//! that gives only the passage's own flag misleads: [`EffectiveVisibility`] gives the
//! effective state, which flag decides it, and both flags.

use serde::Serialize;

use super::{Flag, Target, Visibility, VisibilityStore};
use crate::error::Result;

/// Which flag decides an effective state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DecidedBy {
    /// No flag restricts it: it is visible, by default or because its flags say `visible`.
    NoFlag,
    /// The target's own flag (on a tie with its document's flag, the passage's own).
    Own,
    /// The flag of the passage's document.
    Document,
}

/// The effective state of a passage or document, with the flags it comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EffectiveVisibility {
    /// Passage or document.
    pub target: Target,
    /// The passage id or document key asked about.
    pub key: String,
    /// The state queries apply.
    pub state: Visibility,
    /// Which flag decides [`state`](Self::state).
    pub decided_by: DecidedBy,
    /// The target's own flag, when one was ever set.
    pub own_flag: Option<Flag>,
    /// For a passage: its document in the served run (`None` when the served run does not
    /// hold the passage, or for a document).
    pub document_key: Option<String>,
    /// For a passage: its document's flag, when one was ever set.
    pub document_flag: Option<Flag>,
}

impl EffectiveVisibility {
    /// The effective state of `key`. `document_key` is the passage's document in the served
    /// run (ignored for a document); `store` is `None` when the root has no visibility store
    /// yet (nothing is flagged).
    ///
    /// # Errors
    /// [`EngineError::Visibility`](crate::EngineError::Visibility) when the store cannot be
    /// read.
    pub fn resolve(
        store: Option<&VisibilityStore>,
        target: Target,
        key: &str,
        document_key: Option<&str>,
    ) -> Result<Self> {
        let document_key = match target {
            Target::Passage => document_key,
            Target::Document => None,
        };
        let (own_flag, document_flag) = match store {
            Some(s) => (
                s.get(target, key)?,
                document_key
                    .map(|d| s.get(Target::Document, d))
                    .transpose()?
                    .flatten(),
            ),
            None => (None, None),
        };
        let own = own_flag.as_ref().map_or(Visibility::Visible, |f| f.state);
        let document = document_flag
            .as_ref()
            .map_or(Visibility::Visible, |f| f.state);
        let state = own.max(document);
        let decided_by = if state == Visibility::Visible {
            DecidedBy::NoFlag
        } else if own >= document {
            DecidedBy::Own
        } else {
            DecidedBy::Document
        };
        Ok(Self {
            target,
            key: key.to_owned(),
            state,
            decided_by,
            own_flag,
            document_key: document_key.map(str::to_owned),
            document_flag,
        })
    }

    /// One line for people: the effective state, then which flag decides it and what the
    /// other flag says, e.g. `d1#0: deleted (decided by its document d1's flag; the
    /// passage's own flag: visible)`.
    pub fn describe(&self) -> String {
        let flag = |f: &Option<Flag>| f.as_ref().map_or("none", |f| f.state.as_str());
        let what = self.target.as_str();
        let why = match (self.target, self.decided_by, &self.document_key) {
            (Target::Document, DecidedBy::NoFlag, _) => "no flag restricts it".to_owned(),
            (Target::Document, _, _) => "decided by the document's own flag".to_owned(),
            (Target::Passage, decided_by, Some(d)) => {
                let (own, doc) = (flag(&self.own_flag), flag(&self.document_flag));
                match decided_by {
                    DecidedBy::NoFlag => format!(
                        "no flag restricts it; the passage's own flag: {own}, its document {d}'s flag: {doc}"
                    ),
                    DecidedBy::Own => {
                        format!("decided by the passage's own flag; its document {d}'s flag: {doc}")
                    }
                    DecidedBy::Document => {
                        format!("decided by its document {d}'s flag; the passage's own flag: {own}")
                    }
                }
            }
            (Target::Passage, decided_by, None) => format!(
                "{}; the served run has no {what} {:?}, so its document's flag is not known",
                match decided_by {
                    DecidedBy::NoFlag => "no flag of its own restricts it",
                    _ => "decided by the passage's own flag",
                },
                self.key
            ),
        };
        format!("{}: {} ({why})", self.key, self.state.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_more_restrictive_flag_decides() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = VisibilityStore::open(&dir.path().join("visibility.sqlite")).unwrap();
        let resolve = |store: &VisibilityStore, target, key: &str, doc: Option<&str>| {
            EffectiveVisibility::resolve(Some(store), target, key, doc).unwrap()
        };

        let e = resolve(&store, Target::Passage, "d1#0", Some("d1"));
        assert_eq!(
            (e.state, e.decided_by),
            (Visibility::Visible, DecidedBy::NoFlag)
        );

        store
            .set(Target::Document, "d1", Visibility::Deleted, None)
            .unwrap();
        let e = resolve(&store, Target::Passage, "d1#0", Some("d1"));
        assert_eq!(
            (e.state, e.decided_by),
            (Visibility::Deleted, DecidedBy::Document)
        );
        assert!(e.own_flag.is_none());
        assert_eq!(
            e.describe(),
            "d1#0: deleted (decided by its document d1's flag; the passage's own flag: none)"
        );

        store
            .set(Target::Passage, "d1#0", Visibility::Hidden, None)
            .unwrap();
        let e = resolve(&store, Target::Passage, "d1#0", Some("d1"));
        assert_eq!(
            (e.state, e.decided_by),
            (Visibility::Deleted, DecidedBy::Document)
        );

        store
            .set(Target::Document, "d1", Visibility::Visible, None)
            .unwrap();
        let e = resolve(&store, Target::Passage, "d1#0", Some("d1"));
        assert_eq!(
            (e.state, e.decided_by),
            (Visibility::Hidden, DecidedBy::Own)
        );

        let e = resolve(&store, Target::Document, "d1", Some("ignored"));
        assert_eq!(
            (e.state, e.decided_by),
            (Visibility::Visible, DecidedBy::NoFlag)
        );
        assert!(e.document_key.is_none() && e.document_flag.is_none());

        let e = resolve(&store, Target::Passage, "gone#3", None);
        assert_eq!(
            (e.state, e.decided_by),
            (Visibility::Visible, DecidedBy::NoFlag)
        );
        assert!(e.describe().contains("its document's flag is not known"));

        let e = EffectiveVisibility::resolve(None, Target::Passage, "d1#0", Some("d1")).unwrap();
        assert_eq!(
            (e.state, e.decided_by),
            (Visibility::Visible, DecidedBy::NoFlag)
        );
    }
}
