"""Micro-benchmark of the local stores: ops/s and microseconds per op (figures, not pass/fail).

Run: .venv/bin/python bench/stores.py [--n 2000]
The engine journals through the sqlite document store, so `sqlite put` is the figure to watch.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
from _timing import elapsed

from agent_env.stores.filesystem import FilesystemObjectStore
from agent_env.stores.sqlite import SqliteDocumentStore
from agent_env.stores.versioned import Entities


async def timed(label: str, n: int, op: Callable[[int], Awaitable[object]]) -> None:
    await concurrent(label, n, 1, op)


async def concurrent(
    label: str, n: int, workers: int, op: Callable[[int], Awaitable[object]]
) -> None:
    took = await elapsed(n, op, workers)
    print(f"{label:<34} {n / took:>10,.0f} ops/s  {took / n * 1e6:>8.1f} us/op")


async def main(n: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        docs = SqliteDocumentStore(home=home)
        small = {"step": "deploy", "status": "ok", "context": {"sandbox": "sbx-1", "n": 3}}
        await timed("sqlite put (small doc)", n, lambda i: docs.put("journal", f"k{i:08d}", small))
        await timed("sqlite get", n, lambda i: docs.get("journal", f"k{i:08d}"))
        await timed("sqlite create (new key)", n, lambda i: docs.create("c", f"k{i:08d}", small))
        await timed(
            "sqlite create (existing key)", n, lambda i: docs.create("c", f"k{i:08d}", small)
        )
        await concurrent(
            "sqlite put, 8 concurrent tasks", n, 8, lambda i: docs.put("p", f"k{i}", small)
        )
        await timed(
            f"sqlite list (prefix, 10 of {n})", 200, lambda i: docs.list("journal", "k0000010")
        )
        entities = Entities(docs)
        await timed(
            "entities put (changed, 1 id)", 300, lambda i: entities.put("b", "e", {}, digest=str(i))
        )
        await timed(
            "entities put (unchanged)", 300, lambda i: entities.put("b", "u", {}, digest="same")
        )
        await docs.close()
        fast = SqliteDocumentStore({"path": str(home / "full.sqlite3"), "synchronous": "FULL"})
        await timed(
            "sqlite put (synchronous=FULL)", min(n, 500), lambda i: fast.put("j", f"k{i}", small)
        )
        await fast.close()

        objects = FilesystemObjectStore(home=home)  # fsync = "behind", the default
        always = FilesystemObjectStore({"root": str(home / "always"), "fsync": "always"})
        nosync = FilesystemObjectStore({"root": str(home / "nosync"), "fsync": "off"})
        blob = b"x" * 4096
        await timed(
            "filesystem put 4 KiB (fsync=behind)",
            min(n, 500),
            lambda i: objects.put(f"o/{i}", blob),
        )
        await timed(
            "filesystem put 4 KiB (fsync=always)", min(n, 500), lambda i: always.put(f"o/{i}", blob)
        )
        await timed("filesystem put 4 KiB (fsync=off)", n, lambda i: nosync.put(f"o/{i}", blob))
        await timed("filesystem get 4 KiB", n, lambda i: objects.get(f"o/{i % min(n, 500)}"))
        big = b"y" * (8 << 20)
        await timed(
            "filesystem put 8 MiB (fsync=behind)", 10, lambda i: objects.put(f"big/{i}", big)
        )
        await timed(
            "filesystem put 8 MiB (fsync=always)", 10, lambda i: always.put(f"big/{i}", big)
        )
        await timed("filesystem get 8 MiB", 10, lambda i: objects.get(f"big/{i}"))
        for store in (objects, always, nosync):
            started = time.perf_counter()
            await store.close()
            took = 1000 * (time.perf_counter() - started)
            print(f"filesystem close (fsync={store.fsync}; waits for its fsyncs): {took:.1f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000, help="operations per measurement")
    anyio.run(main, parser.parse_args().n)
