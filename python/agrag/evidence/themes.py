"""``search_themes``: communities whose report matches a question, with supporting passages.

The contract's function: ``await search_themes(store, embedder, query, scope=scope, limit=3,
support_limit=2)`` returns a :class:`agrag.ThemeResult`.
"""

from .._agrag import search_themes_sync
from .._aio import run_blocking


async def search_themes(
    store,
    embedder,
    query,
    scope=None,
    limit=5,
    support_limit=3,
    vector_store=None,
    settings=None,
    timeout=None,
):
    """Themes matching ``query`` (a str, or a NumPy ``float32`` vector of the run's space).

    ``embedder``: an :class:`agrag.Embedder`, or None for the store's own (``store.embedder()``).
    ``scope``: an :class:`agrag.Scope` (None: every document). ``limit`` (default 5) and
    ``support_limit`` (default 3) must be positive, else ``ValueError``.
    ``vector_store``: None uses the run's own index of community embeddings; otherwise any
    object whose ``search(vector, k)`` returns ``(community_id, score)`` pairs for the query
    vector (a NumPy ``float32`` array) — the candidate window; visibility, scope and support
    are then applied by the engine as for the run's own index. A store that raises or answers
    ids the run does not have makes the answer ``failed`` (leg ``vector_store``).
    ``settings``: a dict of ``MCP_MAX_HITS`` (caps ``limit``), ``MCP_SCOPE`` (``all`` or a file
    of document keys; narrows ``scope``), ``MCP_TIMEOUT`` (seconds, when ``timeout`` is None)
    and ``EMBEDDING_*`` (the embedder when ``embedder`` is None); an unknown key is a
    ``ValueError``.
    ``timeout``: seconds or a ``datetime.timedelta``; a deadline checked inside the engine
    during the read. Past it the answer is ``failed`` with a failure whose leg is ``timeout``
    and no themes.
    """
    return await run_blocking(
        search_themes_sync,
        store,
        embedder,
        query,
        scope,
        limit,
        support_limit,
        vector_store,
        settings,
        timeout,
    )


__all__ = ["search_themes", "search_themes_sync"]
