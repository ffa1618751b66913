"""Runs a blocking engine call on the event loop's executor: the engine releases the GIL, so
calls gathered on one loop run in parallel on the executor's threads."""

import asyncio
import functools
from typing import Any, Callable, TypeVar

T = TypeVar("T")


async def run_blocking(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(None, functools.partial(fn, *args, **kwargs))
