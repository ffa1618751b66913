"""The contract's queries: ``search_themes``, ``find_by_meaning``, ``fetch_evidence``.

Each is a coroutine, with a blocking ``*_sync`` twin taking the same arguments. Every call runs
in the Rust engine with the GIL released.
"""

from typing import Any, Iterable, List, Mapping, Optional

from .._agrag import Evidence, Scope, Store, fetch_evidence_sync as _fetch_evidence_sync
from .._agrag import find_by_meaning_sync
from .._aio import run_blocking
from .themes import search_themes, search_themes_sync


def fetch_evidence_sync(
    store: Store,
    ids: Iterable[str],
    scope: Optional[Scope] = None,
    settings: Optional[Mapping[str, Any]] = None,
) -> List[Evidence]:
    """The passages behind evidence ids, in the order asked: ``found`` with text, location and
    document; ``not_visible`` (hidden, deleted or superseded: no text); ``unknown``, also for a
    passage of a document outside ``scope`` or the store's ``MCP_SCOPE`` (a scope cannot be
    escaped by asking for ids). ``ids`` is any iterable of str but a str; anything else raises
    ``ValueError`` naming it."""
    return _fetch_evidence_sync(store, ids, scope, settings)


async def fetch_evidence(
    store: Store,
    ids: Iterable[str],
    scope: Optional[Scope] = None,
    settings: Optional[Mapping[str, Any]] = None,
) -> List[Evidence]:
    """Coroutine of :func:`fetch_evidence_sync`."""
    return await run_blocking(fetch_evidence_sync, store, ids, scope, settings)


async def find_by_meaning(store, embedder=None, term=None, **kwargs):
    """Coroutine of :func:`find_by_meaning_sync` (same arguments)."""
    return await run_blocking(find_by_meaning_sync, store, embedder, term, **kwargs)


__all__ = [
    "fetch_evidence",
    "fetch_evidence_sync",
    "find_by_meaning",
    "find_by_meaning_sync",
    "search_themes",
    "search_themes_sync",
]
