"""Agent tools over a store: tool specs any agent framework can hand a model, and ``call``."""

from typing import Any, Mapping, Optional

from ._agrag import AgentTools, Scope, Store, agent_tools


def tools(
    store: Store,
    scope: Optional[Scope] = None,
    settings: Optional[Mapping[str, Any]] = None,
) -> AgentTools:
    """The agent tools of ``store`` within ``scope`` (default: every document).

    ``tools(...).specs`` is a list of ``{"name", "description", "input_schema"}`` (JSON Schema);
    ``tools(...).call(name, arguments)`` takes a dict or the JSON text a model wrote, never
    raises, answers ``Invalid arguments.`` naming each bad field, and returns a dict with
    ``tool``, ``text``, ``structured``, ``is_error``, ``rejected`` and ``partial_retrieval``.
    ``tools(...).partial_retrieval`` tells whether any call so far retrieved partially (a theme
    search not ``ok``/``no_match``/``empty_scope``, or truncated, or an engine error).
    ``settings`` (``MCP_MAX_HITS``, ``MCP_SCOPE``, ``MCP_TIMEOUT``, ``EMBEDDING_*``) overrides the
    store's; no call can widen the scope.
    """
    return agent_tools(store, scope, settings)


__all__ = ["AgentTools", "tools"]
