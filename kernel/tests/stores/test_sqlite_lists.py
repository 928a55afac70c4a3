"""The document store reads a short list right in the event loop and a long one, or one that
would wait for another writer, on a thread: the caller gets the same rows either way."""

from __future__ import annotations

import anyio
import pytest

from agent_env.stores import sqlite as sqlite_module
from agent_env.stores.sqlite import FAST_LIST_ROWS, SqliteDocumentStore


@pytest.fixture
def anyio_backend():
    return "asyncio"


def _threads_used(monkeypatch) -> list[str]:
    """The names of the blocking functions the store sends to a worker thread."""
    used: list[str] = []
    real = sqlite_module.to_thread

    async def spy(fn, *args, **kwargs):
        used.append(getattr(fn, "__name__", repr(fn)))
        return await real(fn, *args, **kwargs)

    monkeypatch.setattr(sqlite_module, "to_thread", spy)
    return used


@pytest.mark.anyio
@pytest.mark.parametrize("count", [0, 1, FAST_LIST_ROWS, FAST_LIST_ROWS + 1, 3 * FAST_LIST_ROWS])
async def test_every_row_in_key_order_short_lists_without_a_thread(tmp_path, monkeypatch, count):
    store = SqliteDocumentStore(home=tmp_path)
    try:
        for i in range(count):
            await store.put("things", f"a{i:04d}", {"i": i})
        await store.put("things", "b0000", {"i": -1})  # outside the prefix
        await store.put("other", "a0000", {"i": -2})  # another collection
        used = _threads_used(monkeypatch)
        rows = await store.list("things", "a")
        assert rows == [(f"a{i:04d}", {"i": i}) for i in range(count)]
        assert ("_list" in used) == (count > FAST_LIST_ROWS)
    finally:
        await store.close()


@pytest.mark.anyio
async def test_a_list_that_would_wait_goes_to_a_thread_and_still_answers(tmp_path, monkeypatch):
    store = SqliteDocumentStore(home=tmp_path)
    try:
        await store.put("things", "a", {"i": 1})
        used = _threads_used(monkeypatch)
        with store._fast_lock:  # as while another thread uses the non-waiting connection
            got = await store.list("things")
        assert got == [("a", {"i": 1})]
        assert "_list" in used
    finally:
        await store.close()


@pytest.mark.anyio
async def test_a_writer_holding_the_file_neither_blocks_a_list_nor_shows_its_uncommitted_rows(
    tmp_path,
):
    import sqlite3

    store = SqliteDocumentStore(home=tmp_path)
    try:
        await store.put("things", "a", {"i": 1})
        other = sqlite3.connect(store.path, isolation_level=None)
        try:
            other.execute("BEGIN IMMEDIATE")  # another process mid-transaction
            other.execute(
                "INSERT INTO documents (collection, key, doc) VALUES ('things', 'b', '{}')"
            )
            with anyio.fail_after(5):
                assert await store.list("things") == [("a", {"i": 1})]
            other.execute("COMMIT")
        finally:
            other.close()
        assert [k for k, _ in await store.list("things")] == ["a", "b"]
    finally:
        await store.close()
