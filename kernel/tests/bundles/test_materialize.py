"""Materialization against the real local stores: a version per changed digest, blobs by content."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent_env.bundles import load_bundle, materialize
from agent_env.stores.open import open_stores


@pytest.fixture
async def stores(plugins: Any, tmp_path: Path) -> Any:
    opened = open_stores({}, plugins, home=tmp_path / "home")
    yield opened
    await opened.close()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


pytestmark = pytest.mark.anyio


async def test_versions_follow_content(
    hello_bundle: Path, plugins: Any, stores: Any, writer: Any
) -> None:
    (hello_bundle / "artifacts/greeting/greeting.txt").unlink()
    writer(hello_bundle / "artifacts/greeting/a.txt", "a")
    writer(hello_bundle / "artifacts/greeting/b.txt", "b")

    first = await materialize(load_bundle(str(hello_bundle), plugins), stores)
    assert first.lines == [
        "artifact greeting: v1 (new)",
        "task hello: v1 (new)",
        "eval smoke: v1 (new)",
    ]

    again = await materialize(load_bundle(str(hello_bundle), plugins), stores)
    assert again.lines == [
        "artifact greeting: v1, unchanged",
        "task hello: v1, unchanged",
        "eval smoke: v1, unchanged",
    ]

    writer(hello_bundle / "artifacts/greeting/b.txt", "B")
    changed = await materialize(load_bundle(str(hello_bundle), plugins), stores)
    assert changed.lines[0] == "artifact greeting: v2 (files changed: b.txt)"
    assert changed.lines[1:] == ["task hello: v1, unchanged", "eval smoke: v1, unchanged"]
    handle = changed.artifacts["greeting"]
    assert (handle.name, handle.kind, handle.version) == ("greeting", "fileset", 2)
    assert handle.id == "@local/" + str(hello_bundle.resolve() / "greeting").lstrip("/")
    assert handle.path == hello_bundle.resolve() / "artifacts/greeting"
    assert changed.task_versions == {"hello": 1}

    stored = await stores.entities.get("artifact", handle.id, 2)
    assert stored.digest == handle.digest
    assert set(stored.content["files"]) == {"a.txt", "b.txt"}
    blob = "blobs/sha256/" + stored.files["b.txt"]
    assert await stores.objects.get(blob) == b"B"


async def test_task_edit_makes_a_new_task_version(
    hello_bundle: Path, plugins: Any, stores: Any
) -> None:
    await materialize(load_bundle(str(hello_bundle), plugins), stores)
    path = hello_bundle / "tasks/hello.json"
    path.write_text(path.read_text().replace('"/app"', '"/app/in"'))
    result = await materialize(load_bundle(str(hello_bundle), plugins), stores)
    assert "task hello: v2 (changed)" in result.lines
    assert result.task_versions == {"hello": 2}


async def test_file_artifact_handle_points_at_the_file(
    hello_bundle: Path, plugins: Any, stores: Any
) -> None:
    result = await materialize(load_bundle(str(hello_bundle), plugins), stores)
    handle = result.artifacts["greeting"]
    assert handle.kind == "file"
    assert handle.path.read_text() == "hello\n"


async def test_dry_run_writes_nothing(
    hello_bundle: Path, plugins: Any, stores: Any, writer: Any
) -> None:
    bundle = load_bundle(str(hello_bundle), plugins)
    preview = await materialize(bundle, stores, dry_run=True)
    assert preview.lines == [
        "artifact greeting: v1 (new)",
        "task hello: v1 (new)",
        "eval smoke: v1 (new)",
    ]
    assert preview.dry_run
    assert await stores.objects.list() == []
    assert await stores.entities.ids("artifact") == []

    await materialize(bundle, stores)
    writer(hello_bundle / "artifacts/greeting/greeting.txt", "bye\n")
    preview = await materialize(load_bundle(str(hello_bundle), plugins), stores, dry_run=True)
    assert preview.lines[0] == "artifact greeting: v2 (files changed: greeting.txt)"
    assert preview.artifacts["greeting"].version == 2
    assert await stores.entities.versions("artifact", preview.artifacts["greeting"].id) == [1]


async def test_identical_files_are_stored_once(
    hello_bundle: Path, plugins: Any, stores: Any, writer: Any
) -> None:
    writer(hello_bundle / "artifacts/copy/greeting.txt", "hello\n")
    await materialize(load_bundle(str(hello_bundle), plugins), stores)
    assert len(await stores.objects.list("blobs/sha256/")) == 1


async def test_other_entity_kinds_are_versioned(
    hello_bundle: Path, plugins: Any, stores: Any, writer: Any
) -> None:
    writer(hello_bundle / "envs/shop/Dockerfile", "FROM python:3.11-slim\n")
    writer(hello_bundle / "skills/greet/SKILL.md", "Say hi.\n")
    writer(hello_bundle / "agents/oracle/agent.toml", 'type = "scripted"\n')
    result = await materialize(load_bundle(str(hello_bundle), plugins), stores)
    assert result.lines == [
        "artifact greeting: v1 (new)",
        "skill greet: v1 (new)",
        "env shop: v1 (new)",
        "agent oracle: v1 (new)",
        "task hello: v1 (new)",
        "eval smoke: v1 (new)",
    ]
    writer(hello_bundle / "envs/shop/server.py", "print('hi')\n")
    result = await materialize(load_bundle(str(hello_bundle), plugins), stores)
    assert "env shop: v2 (files changed: server.py)" in result.lines
