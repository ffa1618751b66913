"""agrag: theme and concept search over agrag snapshots, from Python.

Every search runs in the Rust engine (``agrag._agrag``) with the GIL released; this package adds
the coroutines, the status enums and the agent tools' Python face. The entry points::

    store = agrag.open_store()                    # maps <AGRAG_ROOT>/LATEST
    themes = agrag.evidence.search_themes_sync(store, store.embedder(), "question",
                                               scope=agrag.Scope.all())

Outcomes are statuses (``agrag.Status``), never exceptions: bad arguments raise ``ValueError``
naming the argument, and a damaged run raises :class:`IndexCorruptError`.
"""

from ._agrag import (
    AgentTools,
    ConceptHit,
    ConceptResult,
    Embedder,
    Evidence,
    Failure,
    IndexCorruptError,
    Location,
    Scope,
    Store,
    Theme,
    ThemePassage,
    ThemeResult,
    open_store,
)
from ._enums import ConceptStatus, IndexState, Status
from . import agent, evidence

__all__ = [
    "AgentTools",
    "ConceptHit",
    "ConceptResult",
    "ConceptStatus",
    "Embedder",
    "Evidence",
    "Failure",
    "IndexCorruptError",
    "IndexState",
    "Location",
    "Scope",
    "Status",
    "Store",
    "Theme",
    "ThemePassage",
    "ThemeResult",
    "agent",
    "evidence",
    "open_store",
]
