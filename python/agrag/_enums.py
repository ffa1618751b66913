"""The statuses of the engine's answers, as Python enums (their values are the contract's)."""

from enum import Enum


class _Value(str, Enum):
    """A str enum that prints as its value (as ``enum.StrEnum`` does from Python 3.11), so that
    ``print(themes.index_state)`` shows ``ready``."""

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)


class Status(_Value):
    """Outcome of ``search_themes``."""

    OK = "ok"
    """At least one theme."""
    NO_MATCH = "no_match"
    """The read ran; no candidate had a visible in-scope passage."""
    EMPTY_SCOPE = "empty_scope"
    """The scope holds no document key; nothing was searched."""
    INDEX_NOT_READY = "index_not_ready"
    """No run to search."""
    FAILED = "failed"
    """A leg failed (embedding, a read, the vector store, the timeout): see ``failures``."""


class ConceptStatus(_Value):
    """Outcome of ``find_by_meaning``."""

    OK = "ok"
    NO_MATCH = "no_match"
    UNKNOWN_TERM = "unknown_term"
    UNKNOWN_CONCEPT = "unknown_concept"
    UNKNOWN_NODE_FIELD = "unknown_node_field"
    EMPTY_SCOPE = "empty_scope"
    INDEX_NOT_READY = "index_not_ready"
    FAILED = "failed"


class IndexState(_Value):
    """State of the index of community embeddings when a search ran."""

    READY = "ready"
    NOT_READY = "not_ready"
