"""The engine's concurrency on asyncio's own terms: work in threads (`to_thread`) and work that
must finish although the task awaiting it is cancelled (`shielded`).

The run path uses asyncio directly (task groups, timeouts, queues) and these two helpers
where it used anyio's `to_thread.run_sync` and shielded cancel scopes: importing anyio was
about a tenth of `agent-env run hello` (`bench/startup.py --floor`). Plugins may use either:
anyio runs on the same event loop, and its scopes work inside the engine's tasks. What a
plugin must protect from the engine's own cancellations (Ctrl-C, a timeout, a failed sibling
step), which arrive as asyncio's `Task.cancel()` and so pass through anyio's shielded scopes,
it wraps in `shielded`.

Both keep anyio's semantics: a cancellation that arrives meanwhile is not lost but delivered
once the work is done, at the task's next `await` (with its message: anyio's scopes recognize
their own cancellations by it, so a scope around engine code still stops there).
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import os
import sys
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import Any, TypeVar, overload

__all__ = ["WORKERS", "is_worker", "pool", "shielded", "to_thread"]

T = TypeVar("T")

#: Threads `to_thread` runs work in at once (anyio's default limit).
WORKERS = 40
#: Names of the threads of this module's pools (`is_worker`).
_PREFIX = "agent-env-worker"
_pools: dict[int, ThreadPoolExecutor] = {}
_pools_lock = threading.Lock()


def pool(size: int = WORKERS) -> ThreadPoolExecutor:
    """This process's pool of `size` worker threads (one per size, made on first use; a
    forked child makes its own)."""
    found = _pools.get(size)
    if found is None:
        with _pools_lock:
            found = _pools.get(size)
            if found is None:
                found = _pools[size] = ThreadPoolExecutor(size, f"{_PREFIX}-{size}")
    return found


def _forget_pools() -> None:  # a forked child has none of the parent's threads
    _pools.clear()


os.register_at_fork(after_in_child=_forget_pools)


def is_worker(thread: threading.Thread) -> bool:
    """Whether `thread` is a worker of this module's pools: idle between calls, and like
    anyio's worker threads, nothing an exit waits for (`agent_env.cli.main.exit_now`)."""
    return thread.name.startswith(_PREFIX)


async def to_thread(
    fn: Callable[..., T],
    /,
    *args: Any,
    executor: Executor | None = None,
    abandon_on_cancel: bool = False,
) -> T:
    """`fn(*args)` in a worker thread (of `executor`, else the pool of `WORKERS`), with this
    task's context variables. A thread cannot be stopped: a cancellation that arrives
    meanwhile waits for `fn` to return, which then returns here, and is delivered at the
    next `await`, as with anyio's `to_thread.run_sync`; with `abandon_on_cancel` it is raised
    at once and `fn` runs on unawaited (the caller makes it return)."""
    loop = asyncio.get_running_loop()
    call = functools.partial(contextvars.copy_context().run, fn, *args)
    future = loop.run_in_executor(executor or pool(), call)
    if abandon_on_cancel:
        return await future
    return await shielded(future)


@overload
async def shielded(awaitable: Awaitable[T]) -> T: ...


@overload
async def shielded(awaitable: Awaitable[T], *, timeout: float | None) -> T | None: ...


async def shielded(awaitable: Awaitable[T], *, timeout: float | None = None) -> T | None:
    """Await `awaitable` (run as a task of its own) to its end although this task is
    cancelled meanwhile; such a cancellation is delivered afterwards, at the next `await`.
    With `timeout`, stop waiting after that many seconds: the work is cancelled, awaited
    while it winds down, and None is returned (anyio's `move_on_after` inside a shielded
    scope). What the work raises is raised here."""
    anyio = _anyio()
    if anyio is None:
        return await _shielded(awaitable, timeout)
    with anyio.CancelScope(shield=True):  # anyio's scopes may enclose this task: theirs too
        return await _shielded(awaitable, timeout)


def _anyio() -> Any:
    """anyio when it is imported (only then can one of its scopes enclose a task); None
    while another thread is still importing it (a plugin module loaded in a worker thread)."""
    module = sys.modules.get("anyio")
    if module is None or getattr(module.__spec__, "_initializing", False):
        return None
    return module


async def _shielded(awaitable: Awaitable[T], timeout: float | None) -> T | None:
    """`shielded` on asyncio's own terms (each cancellation caught is requested again after)."""
    inner = asyncio.ensure_future(awaitable)
    current = asyncio.current_task()
    loop = asyncio.get_running_loop()
    deadline = None if timeout is None else loop.time() + timeout
    missed: list[asyncio.CancelledError] = []
    expired = False
    try:
        while not inner.done():
            left = None if deadline is None else max(deadline - loop.time(), 0.0)
            try:
                await asyncio.wait((inner,), timeout=left)
            except asyncio.CancelledError as cancelled:
                missed.append(cancelled)
                if current is not None:
                    current.uncancel()  # requested again below: the count stays true
                continue
            if deadline is not None and not inner.done():
                inner.cancel()
                deadline, expired = None, True
    finally:
        if current is not None:
            for request in missed:
                current.cancel(request.args[0] if request.args else None)
    if expired and inner.cancelled():
        return None
    return inner.result()
