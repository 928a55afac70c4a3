"""Helpers the store contracts run in threads and in spawned processes.

They live at module level so `multiprocessing` with the spawn method can import them; each
builds its own backend from the picklable `store_factory` the backend's tests provide.
"""

from __future__ import annotations

import multiprocessing
import threading
import time
import traceback
from collections.abc import Callable
from queue import Empty
from typing import Any

import anyio

WAIT = 120.0


async def _put_versions(store: Any, entity_id: str, worker: int, count: int) -> list[int]:
    from agent_env.testing import entities as open_entities

    entities = open_entities(store)
    out = []
    for i in range(count):
        result = await entities.put(
            "contract", entity_id, {"worker": worker, "i": i}, digest=f"w{worker}-{i}"
        )
        out.append(result.version)
    return out


async def _create(store: Any, collection: str, key: str, worker: int) -> bool:
    created: bool = await store.create(collection, key, {"worker": worker})
    return created


async def _replace_object(store: Any, key: str, worker: int, size: int) -> list[bool]:
    """Write `key` full of byte `worker` a few times, reading in between; True per whole read."""
    whole = []
    for _ in range(4):
        await store.put(key, bytes([worker]) * size)
        data = await store.get(key)
        whole.append(len(data) == size and data == data[:1] * size)
    return whole


async def _set_secrets(store: Any, name: str, worker: int, count: int) -> int:
    for i in range(count):
        await store.set(f"{name}-{worker}-{i}", f"value {worker} {i}")
    return count


JOBS: dict[str, Callable[..., Any]] = {
    "put_versions": _put_versions,
    "create": _create,
    "replace_object": _replace_object,
    "set_secrets": _set_secrets,
}


def _run_with_fresh_store(factory: Callable[[], Any], job: str, args: tuple[Any, ...]) -> Any:
    async def main() -> Any:
        store = factory()
        try:
            return await JOBS[job](store, *args)
        finally:
            await store.close()

    return anyio.run(main)


def _process_main(factory: Any, job: str, args: tuple[Any, ...], barrier: Any, queue: Any) -> None:
    try:
        barrier.wait(WAIT)
        queue.put((args, "ok", _run_with_fresh_store(factory, job, args)))
    except BaseException:  # noqa: BLE001 - reported to the parent
        queue.put((args, "error", traceback.format_exc()))


def in_processes(factory: Any, job: str, args_list: list[tuple[Any, ...]]) -> list[Any]:
    """Run `job` once per args tuple, each in its own spawned process, released together."""
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(len(args_list))
    queue = ctx.Queue()
    procs = [
        ctx.Process(target=_process_main, args=(factory, job, args, barrier, queue))
        for args in args_list
    ]
    for p in procs:
        p.start()
    results: list[Any] = []
    deadline = time.monotonic() + WAIT
    try:
        while len(results) < len(procs):
            try:
                results.append(queue.get(timeout=0.2))
                continue
            except Empty:
                pass
            dead = [p.exitcode for p in procs if p.exitcode not in (None, 0)]
            if dead and queue.empty():
                raise AssertionError(f"worker processes died without a result: exit codes {dead}")
            if time.monotonic() > deadline:
                raise AssertionError(f"worker processes did not finish within {WAIT} s")
    finally:
        for p in procs:
            p.join(10)
            if p.is_alive():
                p.kill()
                p.join(5)
    errors = [r[2] for r in results if r[1] == "error"]
    if errors:
        raise AssertionError("a worker process failed:\n" + errors[0])
    order = {args: i for i, args in enumerate(args_list)}
    return [r[2] for r in sorted(results, key=lambda r: order[r[0]])]


def in_threads(factory: Any, job: str, args_list: list[tuple[Any, ...]]) -> list[Any]:
    """Run `job` once per args tuple, each in its own thread with its own event loop."""
    barrier = threading.Barrier(len(args_list))
    results: list[Any] = [None] * len(args_list)
    errors: list[str] = []

    def target(i: int, args: tuple[Any, ...]) -> None:
        try:
            barrier.wait(WAIT)
            results[i] = _run_with_fresh_store(factory, job, args)
        except BaseException:  # noqa: BLE001 - reported below
            errors.append(traceback.format_exc())

    threads = [threading.Thread(target=target, args=(i, a)) for i, a in enumerate(args_list)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(WAIT)
    if any(t.is_alive() for t in threads):
        raise AssertionError(f"a worker thread did not finish within {WAIT} s")
    if errors:
        raise AssertionError("a worker thread failed:\n" + errors[0])
    return results
