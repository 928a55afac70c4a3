"""The document store checkpoints its write-ahead log behind the writes: no commit copies the
log into the database (SQLite's own checkpoint, 10-25 ms with its fsyncs, ran inside the
commit that crossed 1000 pages, on the event loop); a thread of its own does, every
`EVERY` commits, and closing the store waits for it."""

from __future__ import annotations

import os
import threading

import anyio
import pytest

from agent_env.stores import sqlite_checkpoint
from agent_env.stores.sqlite import SqliteDocumentStore


@pytest.fixture
def anyio_backend():
    return "asyncio"


DOC = {"text": "x" * 2000}  # about half a page: 1500 of them cross SQLite's 1000-page mark


def _db_bytes(path) -> int:
    return os.path.getsize(path)


@pytest.mark.anyio
async def test_no_commit_checkpoints_the_log(tmp_path, monkeypatch):
    monkeypatch.setattr(sqlite_checkpoint, "EVERY", 10**9)  # no checkpoint behind either
    store = SqliteDocumentStore(home=tmp_path)
    await store.put("c", "first", DOC)
    before = _db_bytes(store.path)
    for i in range(1500):
        await store.put("c", f"k{i:05d}", DOC)
    # everything still sits in the log: the database file did not take a page of it
    assert _db_bytes(store.path) == before
    assert os.path.getsize(f"{store.path}-wal") > 1000 * 4096
    assert len(await store.list("c")) == 1501
    await store.close()


@pytest.mark.anyio
async def test_the_log_is_checkpointed_behind_the_commits_and_close_waits(tmp_path):
    store = SqliteDocumentStore(home=tmp_path)
    await store.put("c", "first", DOC)
    before = _db_bytes(store.path)
    seen: set[str] = set()
    for i in range(3 * sqlite_checkpoint.EVERY):
        await store.put("c", f"k{i:05d}", DOC)
        seen.update(t.name for t in threading.enumerate())
    assert any(name.startswith("sqlite-checkpoint") for name in seen)
    # the checkpoints copy the documents into the database file while the store is open
    with anyio.fail_after(60):
        while _db_bytes(store.path) < before + 2 * sqlite_checkpoint.EVERY * 2000:
            await anyio.sleep(0.05)
        await store.close()  # waits for a running checkpoint, ends its thread
    assert not any(t.name.startswith("sqlite-checkpoint") for t in threading.enumerate())
    reopened = SqliteDocumentStore(home=tmp_path)
    assert len(await reopened.list("c")) == 1 + 3 * sqlite_checkpoint.EVERY
    await reopened.close()
