"""Calls a caller's vector store within a search's deadline.

Python code cannot be stopped from outside, so a search with a deadline runs on a worker
thread and the caller waits at most the time left: past it, the answer is ``failed`` (leg
``timeout``) and the store's search is left to finish on its own thread, its answer discarded.
Without a deadline the search runs on the calling thread.
"""

import threading
from typing import Any, List, Optional


def search(store: Any, vector: Any, k: int, seconds: Optional[float]) -> Optional[List[Any]]:
    """``list(store.search(vector, k))``, or None when ``seconds`` pass first.

    Whatever the search raises is raised here, on the calling thread (a ``KeyboardInterrupt``
    too).
    """
    if seconds is None:
        return list(store.search(vector, k))
    outcome: dict = {}
    done = threading.Event()

    def run() -> None:
        try:
            outcome["hits"] = list(store.search(vector, k))
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
