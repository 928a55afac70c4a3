"""Snapshot and fork of a running task instance (issue 31), on local envs through the one run
pipeline: a parent takes a snapshot (two envs, one with its own handlers and one on the
data-plane default, the clock running fast, a call in the gateway's log), children restore it
with the snapshot's digest, stay independent, and bad snapshots are refused before anything
runs."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from agent_env.errors import AgentEnvError

REPO = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("fork_bench", REPO / "bench" / "_fork.py")
assert _spec is not None and _spec.loader is not None
fork_bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fork_bench)

#: After the snapshot: a note only this child writes, a bump of its counter, what it then sees.
AFTER = """
import asyncio, json, uuid
from agentenv_protocol.client import EnvClient

def verify(mcp_url):
    mine = "child-" + uuid.uuid4().hex
    async def go():
        async with EnvClient(mcp_url.rsplit("/mcp", 1)[0], mcp_path="/mcp") as gw:
            await gw.call_tool("add_note", {"title": mine, "body": "x"})
            count = (await gw.call_tool("bump", {"by": 1})).text
            notes = json.loads((await gw.call_tool("list_notes", {})).text)
            return count, notes
    count, notes = asyncio.run(go())
    seen = {"mine": mine, "count": int(count), "notes": notes}
    return [{"id": "seen", "result": True, "description": json.dumps(seen)}]
"""
BEFORE = [
    {"id": "notes", "type": "deploy_env", "env_id": "notes"},
    {"id": "counter", "type": "deploy_env", "env_id": "counter"},
    {
        "id": "clock",
        "type": "sync_env_clock",
        "env_id": "notes",
        "virtual_time": "2026-03-08T06:59:00Z",
        "virtual_seconds_per_real_second": 1000,
    },
    {"id": "agent", "type": "deploy_agent", "a2a_agent_id": "solver", "agent_name": "solver"},
    {
        "id": "ask",
        "type": "prompt_agent",
        "agent_name": "solver",
        "prompt_id": "ask",
        "prompt": "go",
    },
]
TASKS = {
    "t": [
        *BEFORE,
        {"id": "snap", "type": "snapshot_task", "snapshot_id": "fork-test"},
        {
            "id": "after",
            "type": "env_outcome_verifier",
            "env_id": "notes",
            "file_artifact_id": "after",
            "verifier_id": "after",
        },
    ],
    "other": [*BEFORE, {"id": "snap", "type": "snapshot_task", "snapshot_id": "other-snap"}],
}
SCRIPT = {
    "turns": [
        {
            "tool_calls": [{"tool": "add_note", "arguments": {"title": "parent", "body": "p"}}],
            "response": "done",
        }
    ]
}


def write(root: Path) -> Path:
    fork_bench.write_bundle(root, TASKS)
    (root / "artifacts/after").mkdir(parents=True)
    (root / "artifacts/after/after.py").write_text(AFTER)
    (root / "agents/solver").mkdir(parents=True)
    (root / "agents/solver/agent.toml").write_text('type = "scripted"\nscript = "solution.json"\n')
    (root / "agents/solver/solution.json").write_text(json.dumps(SCRIPT))
    return root


class Forked:
    """One parent snapshot and one fork of three children, shared by the module's tests."""

    def __init__(self, tmp: Path) -> None:
        self.home = tmp / "home"
        self.root = write(tmp / "bundle")
        self.parent: dict[str, Any] = {}
        self.children: list[dict[str, Any]] = []
        self.snapshot: Any = None


async def _with_pipeline(home: Path, fn: Any) -> Any:
    import os

    from agent_env.engine.run import Session
    from agent_env.runs.pipeline import RunPipeline

    os.environ["AGENT_ENV_HOME"] = str(home)
    session = await Session.open()
    try:
        return await fn(RunPipeline(session))
    finally:
        await session.close()


@pytest.fixture(scope="module")
def forked(tmp_path_factory) -> Forked:
    import os

    saved = os.environ.get("AGENT_ENV_HOME")
    state = Forked(tmp_path_factory.mktemp("fork"))

    async def go(pipeline: Any) -> None:
        from agent_env.engine.snapshot import load
        from agent_env.runs.request import RunRequest

        result = await pipeline.run(RunRequest(spec=str(state.root), task_names=("t",)))
        (state.parent,) = result.records
        state.snapshot = await load(pipeline.session.stores, "fork-test")
        _, state.children, _ = await fork_bench.fork(pipeline, state.root, "fork-test", 3)

    try:
        anyio.run(_with_pipeline, state.home, go)
    finally:
        if saved is None:
            os.environ.pop("AGENT_ENV_HOME", None)
        else:
            os.environ["AGENT_ENV_HOME"] = saved
    return state


def seen(record: dict[str, Any]) -> dict[str, Any]:
    (row,) = record["verifiers"]["after"]["results"]
    return json.loads(row["description"])


def test_the_snapshot_composes_envs_clock_and_call_log(forked):
    snap = forked.snapshot
    assert forked.parent["outputs"]["snap"] == {"snapshot": "fork-test@1", "digest": snap.digest}
    assert sorted(snap.envs) == ["counter", "notes"]
    assert snap.envs["notes"]["via"] == "data-plane"
    assert snap.envs["counter"]["via"] == "extension"
    assert "parent" in snap.envs["notes"]["state"][0]["data"]["notes"]
    assert snap.call_position == 1 and snap.calls[0]["tool"] == "add_note"
    assert snap.clock["armed"] and snap.clock["rate"] == 1000
    assert snap.clock["t0"] > "2026-03-08T06:59:00Z"  # the clock ran before the snapshot
    assert snap.at_step == "snap" and snap.taken_from == forked.parent["id"]


def test_children_restore_the_snapshot_digest(forked):
    children = forked.children
    assert len(children) == 3 and len({c["id"] for c in children}) == 3
    for child in children:
        assert child["failure"] is None, child["outcome"]
        out = child["outputs"]["snap"]
        assert out == {
            "forked_from": "fork-test@1",
            "digest": forked.snapshot.digest,
            "restored_digest": forked.snapshot.digest,
        }
        assert child["forked_from"] == "fork-test@1"


def test_children_are_independent(forked):
    parent_notes = set(forked.snapshot.envs["notes"]["state"][0]["data"]["notes"])
    count = forked.snapshot.envs["counter"]["state"]["count"]
    views = [seen(c) for c in forked.children]
    mine = {v["mine"] for v in views}
    assert len(mine) == 3
    for view in views:
        # each sees the snapshot's notes and its own, none of its siblings'
        assert set(view["notes"]) == parent_notes | {view["mine"]}
        assert view["count"] == count + 1  # its own bump only, from the snapshot's count


def _refused(forked: Forked, **request: Any) -> str:
    from agent_env.engine.records import RUNS
    from agent_env.runs.request import RunRequest

    async def go(pipeline: Any) -> str:
        documents = pipeline.session.stores.documents
        before = await documents.list(RUNS)
        with pytest.raises(AgentEnvError) as caught:
            await pipeline.prepare(RunRequest(**{"spec": str(forked.root), **request}))
        assert await documents.list(RUNS) == before  # nothing was planned
        return str(caught.value)

    return anyio.run(_with_pipeline, forked.home, go)


def test_an_unknown_snapshot_id_says_which_exist(forked):
    message = _refused(forked, from_snapshot="fork-tset", fork=2)
    assert "no snapshot 'fork-tset' (did you mean 'fork-test'?)" in message
    assert "fork-test@7" not in message
    message = _refused(forked, from_snapshot="fork-test@7")
    assert message == "snapshot 'fork-test' has no version 7 (it has v1)"
    assert _refused(forked, from_snapshot="fork-test@0") == (
        "snapshot 'fork-test@0': versions start at 1"
    )
    assert _refused(forked, from_snapshot=" ").startswith("a snapshot id is required")


def test_a_snapshot_of_another_task_is_refused(forked):
    message = _refused(forked, from_snapshot="fork-test", task_names=("other",))
    assert "snapshot fork-test@1 was taken of task 't', not 'other'" in message
    # the same task name in another bundle is another task
    other = write(forked.root.parent / "elsewhere")
    message = _refused(forked, spec=str(other), from_snapshot="fork-test")
    assert f"was taken of task '{forked.snapshot.task}', not '@local{other}/t'" in message


def test_a_damaged_snapshot_is_refused_and_left_as_it_is(forked, tmp_path):
    import shutil

    from agent_env.engine.snapshot import save

    async def damage(pipeline: Any) -> str:
        import attrs

        stores = pipeline.session.stores
        changed = dict(forked.snapshot.envs["counter"])
        changed["state"] = {"count": -1}  # the digest still names the old state
        copy = attrs.evolve(
            forked.snapshot, id="damaged", envs={**forked.snapshot.envs, "counter": changed}
        )
        await save(stores, copy)
        entity = await stores.entities.get("task_snapshot", "damaged")
        return str(entity.content["object_key"])

    key = anyio.run(_with_pipeline, forked.home, damage)
    message = _refused(forked, from_snapshot="damaged")
    assert message == (
        "snapshot damaged@1 is damaged: env 'counter': the state's digest "
        f"{forked.snapshot.envs['counter']['digest']!r} does not match its content (the "
        "snapshot was changed or damaged)"
    )
    # a body changed on disk after it was stored
    body = next(forked.home.rglob(Path(key).name))  # the object store's file of that key
    kept = tmp_path / "kept"
    shutil.copy(body, kept)
    body.write_bytes(body.read_bytes().replace(b'"count":-1', b'"count":-2'))
    message = _refused(forked, from_snapshot="damaged")
    assert "snapshot damaged@1 is damaged: its body" in message and "digest" in message
    assert b'"count":-2' in body.read_bytes()  # a refused fork rewrites nothing

    async def versions(pipeline: Any) -> list[int]:
        return list(await pipeline.session.stores.entities.versions("task_snapshot", "damaged"))

    assert anyio.run(_with_pipeline, forked.home, versions) == [1]
    body.unlink()
    message = _refused(forked, from_snapshot="damaged@1")
    assert message == f"snapshot damaged@1 is damaged: its body {key!r} is missing from the stores"
    shutil.copy(kept, body)


def test_the_cli_forks_and_checks_its_flags(forked):
    agent_env = str(Path(sys.executable).parent / "agent-env")
    env = {**__import__("os").environ, "AGENT_ENV_HOME": str(forked.home)}
    run = subprocess.run(
        [
            agent_env,
            "run",
            str(forked.root),
            "--from-snapshot",
            "fork-test",
            "--fork",
            "2",
            "--json",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    tasks = json.loads(run.stdout)["tasks"]
    assert len(tasks) == 2
    assert {t["outputs"]["snap"]["restored_digest"] for t in tasks} == {forked.snapshot.digest}
    bad = subprocess.run(
        [agent_env, "run", str(forked.root), "--fork", "2"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bad.returncode == 2 and "--fork N forks a snapshot" in bad.stderr
    unknown = subprocess.run(
        [agent_env, "run", str(forked.root), "--from-snapshot", "nope"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert unknown.returncode == 1 and "Error: no snapshot 'nope'" in unknown.stderr
