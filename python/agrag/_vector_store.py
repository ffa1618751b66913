"""Calls a caller's vector store within a search's deadline.

Python code cannot be stopped from outside, so a search with a deadline runs on a worker
thread and the caller waits at most the time left: past it, the answer is ``failed`` (leg
``timeout``) and the store's search is left to finish on its own thread, its answer discarded.
Without a deadline the search runs on the calling thread. Reading the hits (iterating the answer,
converting each id and score) is part of the search, so it runs under the same deadline.
"""

import operator
import threading
from typing import Any, List, Optional, Tuple


class BadHits(Exception):
    """The store answered something that is not a list of (community id, score) pairs."""


def _hits(answer: Any) -> List[Tuple[int, float]]:
    """``answer`` as ``(int, float)`` pairs; ``BadHits`` naming the first hit at fault.

    A ``KeyboardInterrupt`` raised while a hit is read passes through unchanged.
    """
    try:
        items = iter(answer)
    except TypeError:
        raise BadHits(f"search() returned {type(answer).__name__}, not an iterable") from None
    hits = []
    for i, item in enumerate(items):
        try:
            community, score = item
        except (TypeError, ValueError):
            raise BadHits(
                f"hit {i} is {type(item).__name__}, not a (community id, score) pair"
            ) from None
        # A bool is an int to Python, and a str would parse as a float: neither is a hit.
        if isinstance(community, bool) or isinstance(score, (bool, str, bytes)):
            raise BadHits(f"hit {i} is not a (community id, score) pair of an int and a number")
        try:
            hits.append((operator.index(community), float(score)))
        except Exception:  # noqa: BLE001 - any failure to convert is a bad hit
            raise BadHits(
                f"hit {i} is not a (community id, score) pair of an int and a number"
            ) from None
    return hits


def _search(store: Any, vector: Any, k: int) -> List[Tuple[int, float]]:
    return _hits(store.search(vector, k))


def search(store: Any, vector: Any, k: int, seconds: Optional[float]) -> Optional[List[Any]]:
    """The store's hits for ``vector`` as ``(int, float)`` pairs, or None when ``seconds``
    pass first.

    Whatever the search or the reading of its hits raises is raised here, on the calling thread
    (a ``KeyboardInterrupt`` too); a malformed answer raises ``BadHits``.
    """
    if seconds is None:
        return _search(store, vector, k)
    outcome: dict = {}
    done = threading.Event()

    def run() -> None:
        try:
            outcome["hits"] = _search(store, vector, k)
        except BaseException as e:  # re-raised on the calling thread below
            outcome["error"] = e
        finally:
            done.set()

    threading.Thread(target=run, name="agrag-vector-store", daemon=True).start()
    if not done.wait(max(seconds, 0.0)):
        return None
    if "error" in outcome:
        raise outcome["error"]
    return outcome["hits"]
