"""Rendering of versioned-entity results and the file diff behind "files changed"."""

import pytest

from agent_env.stores.sqlite import SqliteDocumentStore
from agent_env.stores.versioned import Entities, PutResult, changed_files, describe


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.mark.parametrize(
    "result, line",
    [
        (PutResult(version=1, status="new"), "v1 (new)"),
        (PutResult(version=1, status="unchanged"), "v1, unchanged"),
        (
            PutResult(version=2, status="changed", changed_files=["b.txt"]),
            "v2 (files changed: b.txt)",
        ),
        (PutResult(version=3, status="changed"), "v3 (changed)"),
    ],
)
def test_describe(result, line):
    assert describe(result) == line == result.describe()


def test_changed_files_covers_added_removed_and_modified():
    old = {"a": "1", "b": "2", "gone": "3"}
    new = {"a": "1", "b": "22", "added": "4"}
    assert changed_files(old, new) == ["added", "b", "gone"]
    assert changed_files(None, new) == []


@pytest.mark.anyio
async def test_writer_that_loses_a_race_with_equal_content_reports_unchanged(tmp_path):
    documents = SqliteDocumentStore(home=tmp_path)
    first, second = Entities(documents), Entities(documents)
    await first.put("artifact", "e", {"n": 1}, digest="a")
    stale = await second.latest("artifact", "e")
    await first.put("artifact", "e", {"n": 2}, digest="b")
    # `second` still believes v1 is the latest; writing "b" collides at v2 with equal content.
    assert stale.version == 1
    result = await second.put("artifact", "e", {"n": 2}, digest="b")
    assert (result.version, result.status) == (2, "unchanged")
    result = await second.put("artifact", "e", {"n": 3}, digest="c", files={"x": "1"})
    assert (result.version, result.status) == (3, "changed")
    await documents.close()


@pytest.mark.anyio
async def test_a_versions_digest_is_read_once_and_the_kept_ones_are_bounded(tmp_path, monkeypatch):
    from agent_env.stores import versioned

    monkeypatch.setattr(versioned, "DIGESTS_KEPT", 3)
    documents = SqliteDocumentStore(home=tmp_path)
    entities = Entities(documents)
    reads: list[str] = []
    real_get = documents.get

    async def counting_get(collection, key):
        reads.append(key)
        return await real_get(collection, key)

    documents.get = counting_get  # type: ignore[method-assign]
    try:
        await entities.put("task", "@local/b/t", {"n": 1}, digest="d1")
        await entities.put("task", "@local/b/t", {"n": 2}, digest="d2")
        assert await entities.digest("task", "@local/b/t", 1) == "d1"
        assert await entities.digest("task", "@local/b/t", 2) == "d2"
        assert await entities.digest("task", "@local/b/t", 3) is None  # absent: never kept
        await entities.put("task", "@local/b/t", {"n": 3}, digest="d3")
        assert await entities.digest("task", "@local/b/t", 3) == "d3"  # written later: found
        before = len(reads)
        assert [await entities.digest("task", "@local/b/t", v) for v in (1, 2, 3)] == [
            "d1",
            "d2",
            "d3",
        ]
        assert len(reads) == before  # all three kept
        await entities.put("task", "@local/b/u", {"n": 1}, digest="e1")
        assert await entities.digest("task", "@local/b/u", 1) == "e1"  # pushes v1 out
        assert len(entities._digests) == 3
        before = len(reads)
        assert await entities.digest("task", "@local/b/t", 1) == "d1"
        assert len(reads) == before + 1
    finally:
        await documents.close()
