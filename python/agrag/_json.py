"""The JSON text of an agent tool call's ``arguments`` as a model would write it."""

import json
import operator
from collections.abc import Mapping
from typing import Any


def _plain(value: Any) -> Any:
    # NumPy scalars and other numbers with `__index__`/`__float__`, and mappings that are
    # not dicts, stand for what JSON can write; anything else is refused by `json`.
    if isinstance(value, Mapping):
        return dict(value)
    try:
        return operator.index(value)
    except TypeError:
        pass
    if hasattr(value, "__float__") and not isinstance(value, (str, bytes)):
        return float(value)
    raise TypeError(f"{type(value).__name__} is not JSON")


def dumps(arguments: Any) -> str:
    """``arguments`` (a mapping) as JSON text; ``TypeError``/``ValueError`` when it cannot be."""
    if isinstance(arguments, Mapping) and not isinstance(arguments, dict):
        arguments = dict(arguments)
    return json.dumps(arguments, default=_plain, allow_nan=False)
