"""Contract suites every store backend passes, in-tree or third-party.

A backend's test module subclasses a suite and provides one fixture, `store_factory`: a
picklable zero-argument callable (e.g. `functools.partial(MyStore, settings, home=tmp_path)`)
that returns a fresh, unopened backend bound to this test's storage. The concurrency cases
call it in other threads and in spawned processes::

    class TestRedisDocuments(DocumentStoreContract):
        @pytest.fixture
        def store_factory(self, redis_url):
            return functools.partial(RedisDocuments, {"url": redis_url})

`ImageStoreContract` also needs `local_image`: a reference the backend can push.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest

from agent_env.errors import StoreError
from agentenv_testing.contracts._workers import in_processes, in_threads

BAD_COLLECTIONS = ["", "a/b", "has space", "1starts-with-digit", "..", "x" * 65, 42, None]
BAD_DOCUMENT_KEYS = ["", "nul\x00byte", "k" * 1025, 7, None]
ODD_DOCUMENT_KEYS = ["@local//abs/folder/task", "a:b@00000001", "spaces and ünïcode", "100%_x"]
BAD_OBJECT_KEYS = [
    "",
    "../escape",
    "a/../../escape",
    "/etc/passwd",
    "a\\b",
    "a//b",
    "a/./b",
    "trailing/",
    ".staging/x",
    "nul\x00",
    3,
]
BAD_SECRET_NAMES = ["", "has space", "a/b", "1digit", "dot.name", "x" * 200, None]
PROCESSES = 4
PUTS_PER_WORKER = 8


def _unique(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:12]}"


class _StoreContract:
    @pytest.fixture
    def anyio_backend(self) -> str:
        return "asyncio"

    @pytest.fixture
    async def store(self, store_factory: Any) -> Any:
        store = store_factory()
        try:
            yield store
        finally:
            await store.close()


class DocumentStoreContract(_StoreContract):
    """JSON documents: round trips, `create` atomicity (tasks, threads, processes), prefixes."""

    @pytest.fixture
    def collection(self) -> str:
        return _unique("c")

    @pytest.mark.anyio
    async def test_put_then_get_round_trips_json(self, store: Any, collection: str) -> None:
        doc = {"s": "ünïcode ✓", "i": 3, "f": 1.5, "b": True, "n": None, "l": [1, {"x": []}]}
        await store.put(collection, "k", doc)
        assert await store.get(collection, "k") == doc

    @pytest.mark.anyio
    async def test_get_missing_returns_none(self, store: Any, collection: str) -> None:
        assert await store.get(collection, "absent") is None

    @pytest.mark.anyio
    async def test_put_replaces(self, store: Any, collection: str) -> None:
        await store.put(collection, "k", {"v": 1, "old": True})
        await store.put(collection, "k", {"v": 2})
        assert await store.get(collection, "k") == {"v": 2}

    @pytest.mark.anyio
    async def test_returned_documents_are_copies(self, store: Any, collection: str) -> None:
        doc = {"l": [1]}
        await store.put(collection, "k", doc)
        doc["l"].append(2)
        got = await store.get(collection, "k")
        got["l"].append(3)
        assert await store.get(collection, "k") == {"l": [1]}

    @pytest.mark.anyio
    async def test_create_only_when_absent(self, store: Any, collection: str) -> None:
        assert await store.create(collection, "k", {"v": 1}) is True
        assert await store.create(collection, "k", {"v": 2}) is False
        assert await store.get(collection, "k") == {"v": 1}

    @pytest.mark.anyio
    async def test_delete(self, store: Any, collection: str) -> None:
        await store.put(collection, "k", {"v": 1})
        await store.delete(collection, "k")
        assert await store.get(collection, "k") is None
        await store.delete(collection, "k")
        assert await store.create(collection, "k", {"v": 2}) is True

    @pytest.mark.anyio
    async def test_list_by_prefix_sorted(self, store: Any, collection: str) -> None:
        for key in ["b/2", "a/1", "b/1", "b_", "c"]:
            await store.put(collection, key, {"key": key})
        assert [k for k, _ in await store.list(collection, "b/")] == ["b/1", "b/2"]
        assert await store.list(collection, "a/") == [("a/1", {"key": "a/1"})]
        assert [k for k, _ in await store.list(collection)] == ["a/1", "b/1", "b/2", "b_", "c"]
        assert await store.list(collection, "zzz") == []

    @pytest.mark.anyio
    async def test_query_filters_orders_and_pages(self, store: Any, collection: str) -> None:
        for i in range(7):
            doc = {"run": "r1" if i % 2 else "r2", "meta": {"n": 10 - i}, "ok": i < 3}
            await store.put(collection, f"k{i}", doc)
        page = await store.query(collection, where={"run": "r1"}, order_by="meta.n", limit=2)
        assert [k for k, _ in page.items] == ["k5", "k3"]
        assert (page.total, page.has_more) == (3, True)
        rest = await store.query(collection, where={"run": "r1"}, order_by="meta.n", offset=2)
        assert [k for k, _ in rest.items] == ["k1"] and not rest.has_more
        newest = await store.query(collection, order_by="meta.n", descending=True, limit=1)
        assert newest.items == [("k0", {"run": "r2", "meta": {"n": 10}, "ok": True})]
        both = await store.query(collection, where={"run": "r2", "ok": True})
        assert [k for k, _ in both.items] == ["k0", "k2"] and both.total == 2
        assert (await store.query(collection, where={"run": "none"})).total == 0

    @pytest.mark.anyio
    async def test_count_by_groups_dotted_fields(self, store: Any, collection: str) -> None:
        for i, (task, status) in enumerate([("a", "passed"), ("a", "failed"), ("b", "passed")]):
            await store.put(collection, f"k{i}", {"run": "r", "task": {"name": task}, "s": status})
            await store.put(collection, f"other{i}", {"run": "x", "task": {"name": task}})
        counts = await store.count_by(collection, ["task.name", "s"], where={"run": "r"})
        assert counts == [(("a", "failed"), 1), (("a", "passed"), 1), (("b", "passed"), 1)]
        assert await store.count_by(collection, ["run"]) == [(("r",), 3), (("x",), 3)]

    @pytest.mark.anyio
    async def test_prefix_is_literal_not_a_pattern(self, store: Any, collection: str) -> None:
        for key in ["100%_x", "100ab", "1_0"]:
            await store.put(collection, key, {})
        assert [k for k, _ in await store.list(collection, "100%")] == ["100%_x"]
        assert [k for k, _ in await store.list(collection, "1_")] == ["1_0"]

    @pytest.mark.anyio
    async def test_collections_are_separate(self, store: Any, collection: str) -> None:
        other = _unique("o")
        await store.put(collection, "k", {"in": "first"})
        assert await store.get(other, "k") is None
        assert await store.list(other) == []
        assert await store.create(other, "k", {"in": "second"}) is True

    @pytest.mark.anyio
    @pytest.mark.parametrize("key", ODD_DOCUMENT_KEYS)
    async def test_keys_with_slashes_at_signs_and_unicode(
        self, store: Any, collection: str, key: str
    ) -> None:
        await store.put(collection, key, {"key": key})
        assert await store.get(collection, key) == {"key": key}
        assert await store.list(collection, key[:3]) == [(key, {"key": key})]

    @pytest.mark.anyio
    async def test_large_document(self, store: Any, collection: str) -> None:
        doc = {"blob": "x" * 200_000, "items": list(range(1000))}
        await store.put(collection, "big", doc)
        assert await store.get(collection, "big") == doc

    @pytest.mark.anyio
    @pytest.mark.parametrize("bad", BAD_COLLECTIONS, ids=repr)
    async def test_bad_collection_names_rejected(self, store: Any, bad: Any) -> None:
        call: Callable[[], Awaitable[object]]
        for call in (
            lambda: store.get(bad, "k"),
            lambda: store.put(bad, "k", {}),
            lambda: store.create(bad, "k", {}),
            lambda: store.delete(bad, "k"),
            lambda: store.list(bad),
        ):
            with pytest.raises(StoreError, match="collection"):
                await call()

    @pytest.mark.anyio
    @pytest.mark.parametrize("bad", BAD_DOCUMENT_KEYS, ids=lambda b: repr(b)[:20])
    async def test_bad_keys_rejected(self, store: Any, collection: str, bad: Any) -> None:
        call: Callable[[], Awaitable[object]]
        for call in (
            lambda: store.get(collection, bad),
            lambda: store.put(collection, bad, {}),
            lambda: store.create(collection, bad, {}),
            lambda: store.delete(collection, bad),
        ):
            with pytest.raises(StoreError, match="key"):
                await call()
        assert await store.list(collection) == []

    @pytest.mark.anyio
    @pytest.mark.parametrize("bad", [{"s": {1, 2}}, {"f": float("nan")}, ["not", "a", "map"]])
    async def test_non_json_documents_rejected(self, store: Any, collection: str, bad: Any) -> None:
        with pytest.raises(StoreError):
            await store.put(collection, "k", bad)
        with pytest.raises(StoreError):
            await store.create(collection, "k", bad)
        assert await store.get(collection, "k") is None

    @pytest.mark.anyio
    async def test_concurrent_create_in_tasks_one_wins(self, store: Any, collection: str) -> None:
        wins: list[int] = []

        async def attempt(i: int) -> None:
            if await store.create(collection, "race", {"worker": i}):
                wins.append(i)

        async with anyio.create_task_group() as tg:
            for i in range(16):
                tg.start_soon(attempt, i)
        assert len(wins) == 1
        assert await store.get(collection, "race") == {"worker": wins[0]}

    @pytest.mark.anyio
    async def test_concurrent_create_in_threads_one_wins(
        self, store: Any, store_factory: Any, collection: str
    ) -> None:
        args = [(collection, "race", i) for i in range(6)]
        won = await anyio.to_thread.run_sync(in_threads, store_factory, "create", args)
        assert won.count(True) == 1
        assert await store.get(collection, "race") == {"worker": won.index(True)}

    @pytest.mark.anyio
    async def test_concurrent_create_in_processes_one_wins(
        self, store: Any, store_factory: Any, collection: str
    ) -> None:
        args = [(collection, "race", i) for i in range(PROCESSES)]
        won = await anyio.to_thread.run_sync(in_processes, store_factory, "create", args)
        assert won.count(True) == 1
        assert await store.get(collection, "race") == {"worker": won.index(True)}


class VersionedEntitiesContract(_StoreContract):
    """`Entities` over the backend: statuses, changed files, no lost or duplicate versions."""

    @pytest.fixture
    def entities(self, store: Any) -> Any:
        from agent_env.testing import entities as open_entities

        return open_entities(store)

    @pytest.mark.anyio
    async def test_new_unchanged_changed(self, entities: Any) -> None:
        eid = _unique("@local/bundle/")
        files1 = {"a.txt": "d-a", "b.txt": "d-b1"}
        files2 = {"a.txt": "d-a", "b.txt": "d-b2", "c.txt": "d-c"}
        first = await entities.put("artifact", eid, {"n": 1}, digest="one", files=files1)
        again = await entities.put("artifact", eid, {"n": 1}, digest="one", files=files1)
        second = await entities.put("artifact", eid, {"n": 2}, digest="two", files=files2)
        assert (first.version, first.status, first.describe()) == (1, "new", "v1 (new)")
        assert (again.version, again.status, again.describe()) == (1, "unchanged", "v1, unchanged")
        assert second.status == "changed"
        assert second.describe() == "v2 (files changed: b.txt, c.txt)"
        assert await entities.versions("artifact", eid) == [1, 2]
        latest = await entities.get("artifact", eid)
        assert (latest.version, latest.digest, latest.content) == (2, "two", {"n": 2})
        old = await entities.get("artifact", eid, 1)
        assert (old.digest, old.files) == ("one", files1)
        assert await entities.get("artifact", eid, 3) is None

    @pytest.mark.anyio
    async def test_reverting_content_makes_a_new_version(self, entities: Any) -> None:
        eid = _unique("e")
        for digest in ["a", "b", "a"]:
            await entities.put("task", eid, {"d": digest}, digest=digest)
        assert [e.digest for e in await entities.history("task", eid)] == ["a", "b", "a"]

    @pytest.mark.anyio
    async def test_entities_are_separate(self, entities: Any) -> None:
        eid = _unique("e")
        await entities.put("task", eid, {}, digest="x")
        await entities.put("task", eid + "@2", {}, digest="y")
        await entities.put("artifact", eid, {}, digest="z")
        assert await entities.versions("task", eid) == [1]
        assert (await entities.latest("task", eid)).digest == "x"
        assert await entities.get("task", _unique("never")) is None
        assert await entities.versions("task", _unique("never")) == []
        assert eid in await entities.ids("task")

    @pytest.mark.anyio
    async def test_bad_input_rejected(self, entities: Any) -> None:
        eid = _unique("e")
        with pytest.raises(StoreError, match="kind"):
            await entities.put("Bad Kind", eid, {}, digest="x")
        with pytest.raises(StoreError, match="digest"):
            await entities.put("task", eid, {}, digest="")
        with pytest.raises(StoreError, match="entity id"):
            await entities.put("task", "", {}, digest="x")
        with pytest.raises(StoreError, match="version"):
            await entities.get("task", eid, 0)
        assert await entities.versions("task", eid) == []

    def _check_versions(self, results: list[list[int]], stored: list[Any]) -> None:
        total = sum(len(r) for r in results)
        got = sorted(v for r in results for v in r)
        assert got == list(range(1, total + 1)), f"lost or duplicated versions: {got}"
        assert [e.version for e in stored] == list(range(1, total + 1))
        digests = [e.digest for e in stored]
        assert len(set(digests)) == total, "a version was written twice"

    @pytest.mark.anyio
    async def test_concurrent_writers_in_tasks(self, store: Any, entities: Any) -> None:
        from agentenv_testing.contracts._workers import _put_versions

        eid = _unique("e")
        results: list[list[int]] = []

        async def worker(i: int) -> None:
            results.append(await _put_versions(store, eid, i, PUTS_PER_WORKER))

        async with anyio.create_task_group() as tg:
            for i in range(6):
                tg.start_soon(worker, i)
        self._check_versions(results, await entities.history("contract", eid))

    @pytest.mark.anyio
    async def test_concurrent_writers_in_threads(self, store_factory: Any, entities: Any) -> None:
        eid = _unique("e")
        args = [(eid, i, PUTS_PER_WORKER) for i in range(6)]
        results = await anyio.to_thread.run_sync(in_threads, store_factory, "put_versions", args)
        self._check_versions(results, await entities.history("contract", eid))

    @pytest.mark.anyio
    async def test_concurrent_writers_in_processes(self, store_factory: Any, entities: Any) -> None:
        eid = _unique("e")
        args = [(eid, i, PUTS_PER_WORKER) for i in range(PROCESSES)]
        results = await anyio.to_thread.run_sync(in_processes, store_factory, "put_versions", args)
        self._check_versions(results, await entities.history("contract", eid))


class ObjectStoreContract(_StoreContract):
    """Blobs: round trips, KeyError for missing objects, key validation, atomic replaces."""

    @pytest.fixture
    def prefix(self) -> str:
        return _unique("t") + "/"

    @pytest.mark.anyio
    async def test_put_get_exists_delete(self, store: Any, prefix: str) -> None:
        key = prefix + "a/b.bin"
        data = bytes(range(256)) * 10
        assert await store.exists(key) is False
        await store.put(key, data)
        assert await store.get(key) == data
        assert await store.exists(key) is True
        await store.put(key, b"second")
        assert await store.get(key) == b"second"
        await store.delete(key)
        assert await store.exists(key) is False
        await store.delete(key)

    @pytest.mark.anyio
    async def test_missing_object_is_key_error(self, store: Any, prefix: str) -> None:
        with pytest.raises(KeyError):
            await store.get(prefix + "absent")
        await store.put(prefix + "dir/file", b"x")
        with pytest.raises(KeyError):
            await store.get(prefix + "dir")

    @pytest.mark.anyio
    async def test_empty_object(self, store: Any, prefix: str) -> None:
        await store.put(prefix + "empty", b"")
        assert await store.get(prefix + "empty") == b""
        assert await store.exists(prefix + "empty")

    @pytest.mark.anyio
    async def test_list_by_prefix(self, store: Any, prefix: str) -> None:
        keys = ["x/1", "x/2/deep", "xy", "y", ".hidden", "x/.env"]
        for key in keys:
            await store.put(prefix + key, key.encode())
        assert await store.list(prefix) == sorted(prefix + k for k in keys)
        assert await store.list(prefix + "x/") == [
            prefix + "x/.env",
            prefix + "x/1",
            prefix + "x/2/deep",
        ]
        assert await store.list(prefix + "x") == sorted(
            prefix + k for k in ["x/1", "x/2/deep", "xy", "x/.env"]
        )
        assert await store.list(prefix + "nothing/") == []
        await store.delete(prefix + "x/2/deep")
        assert prefix + "x/2/deep" not in await store.list(prefix)

    @pytest.mark.anyio
    async def test_files(self, store: Any, prefix: str, tmp_path: Any) -> None:
        src = tmp_path / "src.bin"
        src.write_bytes(b"file content" * 1000)
        await store.put_file(prefix + "f", src)
        dest = tmp_path / "out" / "dest.bin"
        await store.get_file(prefix + "f", dest)
        assert dest.read_bytes() == src.read_bytes()
        with pytest.raises(KeyError):
            await store.get_file(prefix + "absent", tmp_path / "never")
        assert not (tmp_path / "never").exists()

    @pytest.mark.anyio
    @pytest.mark.parametrize("bad", BAD_OBJECT_KEYS, ids=repr)
    async def test_bad_keys_rejected(self, store: Any, bad: Any) -> None:
        call: Callable[[], Awaitable[object]]
        for call in (
            lambda: store.put(bad, b"x"),
            lambda: store.get(bad),
            lambda: store.exists(bad),
            lambda: store.delete(bad),
        ):
            with pytest.raises(StoreError, match="key"):
                await call()

    @pytest.mark.anyio
    @pytest.mark.parametrize("bad", ["../", "/abs", "a\\", "a/../"], ids=repr)
    async def test_bad_prefixes_rejected(self, store: Any, bad: str) -> None:
        with pytest.raises(StoreError, match="prefix"):
            await store.list(bad)

    @pytest.mark.anyio
    async def test_non_bytes_rejected(self, store: Any, prefix: str) -> None:
        with pytest.raises(StoreError, match="bytes"):
            await store.put(prefix + "k", "a str")
        assert await store.exists(prefix + "k") is False

    @pytest.mark.anyio
    async def test_concurrent_replaces_are_never_torn(self, store: Any, prefix: str) -> None:
        key = prefix + "contended"
        payloads = [bytes([i]) * 300_000 for i in range(8)]
        seen: list[bytes] = []
        await store.put(key, payloads[0])

        async def reader() -> None:
            for _ in range(20):
                seen.append(await store.get(key))

        async with anyio.create_task_group() as tg:
            for p in payloads:
                tg.start_soon(store.put, key, p)
            tg.start_soon(reader)
        assert await store.get(key) in payloads
        assert all(s in payloads for s in seen)

    @pytest.mark.anyio
    async def test_replaces_from_processes_are_never_torn(
        self, store: Any, store_factory: Any, prefix: str
    ) -> None:
        key = prefix + "contended"
        size = 1 << 20
        args = [(key, i, size) for i in range(PROCESSES)]
        reads = await anyio.to_thread.run_sync(in_processes, store_factory, "replace_object", args)
        assert all(all(r) for r in reads), f"a reader saw a partial object: {reads}"
        final = await store.get(key)
        assert len(final) == size and final == final[:1] * size
        assert await store.list(prefix) == [key]


class SecretStoreContract(_StoreContract):
    """Named strings: set/get/delete/list, name validation, no partial writes."""

    @pytest.fixture
    def name(self) -> str:
        return _unique("s")

    @pytest.mark.anyio
    async def test_set_get_delete(self, store: Any, name: str) -> None:
        assert await store.get(name) is None
        await store.set(name, "hunter2\nline two ✓")
        assert await store.get(name) == "hunter2\nline two ✓"
        await store.set(name, "rotated")
        assert await store.get(name) == "rotated"
        assert name in await store.list()
        await store.delete(name)
        assert await store.get(name) is None
        assert name not in await store.list()
        await store.delete(name)

    @pytest.mark.anyio
    async def test_names_with_dashes_and_underscores(self, store: Any, name: str) -> None:
        await store.set(name + "-a_b", "v")
        assert await store.get(name + "-a_b") == "v"

    @pytest.mark.anyio
    @pytest.mark.parametrize("bad", BAD_SECRET_NAMES, ids=lambda b: repr(b)[:20])
    async def test_bad_names_rejected(self, store: Any, bad: Any) -> None:
        call: Callable[[], Awaitable[object]]
        for call in (
            lambda: store.get(bad),
            lambda: store.set(bad, "v"),
            lambda: store.delete(bad),
        ):
            with pytest.raises(StoreError, match="secret name"):
                await call()

    @pytest.mark.anyio
    async def test_non_string_value_rejected(self, store: Any, name: str) -> None:
        with pytest.raises(StoreError):
            await store.set(name, 1234)
        assert await store.get(name) is None

    @pytest.mark.anyio
    async def test_concurrent_sets_keep_every_secret(self, store: Any, name: str) -> None:
        async with anyio.create_task_group() as tg:
            for i in range(10):
                tg.start_soon(store.set, f"{name}-{i}", f"value {i}")
        for i in range(10):
            assert await store.get(f"{name}-{i}") == f"value {i}"

    @pytest.mark.anyio
    async def test_sets_from_processes_keep_every_secret(
        self, store: Any, store_factory: Any, name: str
    ) -> None:
        args = [(name, i, 5) for i in range(PROCESSES)]
        await anyio.to_thread.run_sync(in_processes, store_factory, "set_secrets", args)
        listed = set(await store.list())
        for worker in range(PROCESSES):
            for i in range(5):
                assert f"{name}-{worker}-{i}" in listed
                assert await store.get(f"{name}-{worker}-{i}") == f"value {worker} {i}"


class ImageStoreContract(_StoreContract):
    """Images: push a local image under a name, find it, pull it back; missing refs are KeyError.

    Also provide `local_image` (a reference in the local daemon that can be pushed).
    """

    @pytest.fixture
    def image_name(self) -> str:
        return f"agentenv-contract/{_unique('img')}:v1"

    @pytest.mark.anyio
    async def test_push_exists_list_pull(
        self, store: Any, local_image: str, image_name: str
    ) -> None:
        ref = await store.push(local_image, image_name)
        assert isinstance(ref, str) and ref
        assert await store.exists(ref) is True
        assert ref in await store.list()
        local = await store.pull(ref)
        assert isinstance(local, str) and local

    @pytest.mark.anyio
    async def test_missing_image(self, store: Any, image_name: str) -> None:
        missing = image_name.replace(":v1", ":never-pushed")
        assert await store.exists(missing) is False
        with pytest.raises(KeyError):
            await store.pull(missing)

    @pytest.mark.anyio
    async def test_push_of_unknown_local_image_fails(self, store: Any, image_name: str) -> None:
        with pytest.raises(StoreError):
            await store.push("agentenv-contract/does-not-exist:nope", image_name)
