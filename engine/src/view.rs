//! [`View`]: one snapshot plus the visibility that applies to it, held for a query's lifetime.

use std::sync::Arc;

use roaring::RoaringBitmap;

use crate::snapshot::{PassageRow, Snapshot};
use crate::visibility::Visibility;
use crate::visibility::overlay::Resolved;
use crate::visibility::withdrawn::Withdrawn;

/// What a query reads: an immutable snapshot (or none when the index is not ready) and the
/// bitmap of its passages that are not visible, as of the query's start. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct View {
    pub(crate) snapshot: Option<Arc<Snapshot>>,
    /// The store's flags resolved against `snapshot`, shared with the engine's cache.
    pub(crate) visibility: Arc<Resolved>,
}

impl View {
    /// The snapshot, when one is served.
    pub fn snapshot(&self) -> Option<&Arc<Snapshot>> {
        self.snapshot.as_ref()
    }

    /// Whether passage row `p` is hidden, deleted or superseded.
    pub fn is_hidden(&self, p: PassageRow) -> bool {
        self.visibility.hidden.contains(p.0)
    }

    /// Documents (rows) whose own flag is hidden, deleted or superseded.
    pub(crate) fn hidden_documents(&self) -> &RoaringBitmap {
        &self.visibility.hidden_documents
    }

    /// Effective visibility of passage row `p`.
    pub fn visibility(&self, p: PassageRow) -> Visibility {
        self.visibility
            .states
            .get(&p.0)
            .copied()
            .unwrap_or(Visibility::Visible)
    }

    /// What the passages that are not visible withdraw from retrieval (see
    /// [`withdrawn`](crate::visibility::withdrawn)).
    pub fn withdrawn(&self) -> &Withdrawn {
        &self.visibility.withdrawn
    }

    /// Passage rows that are not visible.
    pub(crate) fn hidden_passages(&self) -> &RoaringBitmap {
        &self.visibility.hidden
    }

    /// Number of passages that are not visible.
    pub fn num_hidden(&self) -> u64 {
        self.visibility.hidden.len()
    }
}
