"""The timing loop the store benchmarks share: `n` calls of an async op spread over
`workers` tasks; each benchmark prints the figures in its own units."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

import anyio


async def elapsed(n: int, op: Callable[[int], Awaitable[object]], workers: int = 1) -> float:
    """Seconds taken by `op(0)` ... `op(n - 1)`, with `workers` tasks taking turns."""

    async def worker(w: int) -> None:
        for i in range(w, n, workers):
            await op(i)

    start = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for w in range(workers):
            tg.start_soon(worker, w)
    return time.perf_counter() - start
