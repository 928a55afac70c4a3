"""The `snapshot_task` step's refusals: bad fields are bundle problems, a snapshot with nothing
deployed says so, and a child whose env refuses the restore fails that step naming the env
(the snapshot itself is left as it was)."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any

import anyio
import pytest

from agent_env.errors import BundleError
from agentenv_core_steps.steps.snapshot_task import SnapshotTask
from agentenv_testing.contracts import StepTypeContract

REPO = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("fork_bench", REPO / "bench" / "_fork.py")
assert _spec is not None and _spec.loader is not None
fork_bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fork_bench)

#: A counter whose restore always refuses (its snapshot works).
STUBBORN = fork_bench.COUNTER.replace(
    '        self.count = int(state["count"])',
    '        raise ValueError("this counter refuses to go back in time")',
)


async def _run(home: Path, **request: Any) -> list[dict[str, Any]]:
    from agent_env.engine import trials
    from agent_env.engine.records import RUNS
    from agent_env.engine.run import Session
    from agent_env.runs.pipeline import RunPipeline
    from agent_env.runs.request import RunRequest

    os.environ["AGENT_ENV_HOME"] = str(home)
    session = await Session.open()
    try:
        result = await RunPipeline(session).run(RunRequest(**request))
        run_doc = await session.stores.documents.get(RUNS, result.run_id)
        return await trials.gather_records(session.stores.documents, run_doc)
    finally:
        await session.close()


class TestSnapshotTask(StepTypeContract):
    """The shared step-type contract, its example run on a local env (it takes a snapshot)."""

    step_class = SnapshotTask
    plugin_module = "agentenv_core_steps.hooks"
    example = {"id": "snap", "type": "snapshot_task", "snapshot_id": "contract"}
    before = [{"id": "counter", "type": "deploy_env", "env_id": "counter"}]
    bundle_files = {
        "envs/counter/env.toml": 'command = ["python", "server.py"]\n',
        "envs/counter/server.py": fork_bench.COUNTER,
    }


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AGENT_ENV_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def test_bad_fields_are_bundle_problems(tmp_path: Path) -> None:
    from agent_env.bundles import load_bundle
    from agent_env.plugins import get_plugin_manager

    root = fork_bench.write_bundle(
        tmp_path / "b",
        {
            "t": [
                {"id": "a", "type": "snapshot_task", "snapshot_id": " "},
                {"id": "b", "type": "snapshot_task", "snapshot_idd": "x"},
            ]
        },
    )
    with pytest.raises(BundleError) as caught:
        load_bundle(str(root), get_plugin_manager())
    found = "\n".join(caught.value.problems)
    assert "step 'a': snapshot_id: must be a non-empty name" in found
    assert "step 'b'" in found and "did you mean 'snapshot_id'" in found


def test_a_snapshot_with_no_env_deployed_says_so(tmp_path: Path, home: Path) -> None:
    root = fork_bench.write_bundle(tmp_path / "b", {"t": [{"id": "snap", "type": "snapshot_task"}]})
    (record,) = anyio.run(lambda: _run(home, spec=str(root), task_names=("t",)))
    assert record["outcome"] == "failed at step 'snap': no env is deployed yet: nothing to snapshot"


def test_a_refused_restore_fails_the_child_naming_the_env(tmp_path: Path, home: Path) -> None:
    root = fork_bench.write_bundle(
        tmp_path / "b",
        {
            "t": [
                {"id": "counter", "type": "deploy_env", "env_id": "counter"},
                {"id": "snap", "type": "snapshot_task", "snapshot_id": "stubborn"},
            ]
        },
    )
    (root / "envs/counter/server.py").write_text(STUBBORN)
    (parent,) = anyio.run(lambda: _run(home, spec=str(root), task_names=("t",)))
    assert parent["failure"] is None, parent["outcome"]
    (child,) = anyio.run(lambda: _run(home, spec=str(root), from_snapshot="stubborn"))
    assert child["outcome"].startswith("failed at step 'snap': env 'counter': ")
    assert "this counter refuses to go back in time" in child["outcome"]
    assert child["failure_class"] == "env"
    assert child["forked_from"] == "stubborn@1"


def test_a_state_holding_a_secret_of_the_run_is_never_stored(tmp_path: Path, home: Path) -> None:
    """The env's own gateway secret in its state: the snapshot is refused, nothing is stored."""
    leaky = fork_bench.NOTES.replace(
        '"a state no other process starts with"',
        '__import__("os").environ.get("AGENTENV_ENV_SECRET", "none")',
    )
    root = fork_bench.write_bundle(
        tmp_path / "b",
        {
            "t": [
                {"id": "notes", "type": "deploy_env", "env_id": "notes"},
                {"id": "snap", "type": "snapshot_task", "snapshot_id": "leaky"},
            ]
        },
    )
    (root / "envs/notes/server.py").write_text(leaky)
    (record,) = anyio.run(lambda: _run(home, spec=str(root), task_names=("t",)))
    assert record["outcome"] == (
        "failed at step 'snap': the state of env(s) 'notes' holds a secret of this run; a "
        "snapshot never stores one"
    )

    async def stored() -> list[str]:
        from agent_env.engine.run import Session

        session = await Session.open()
        try:
            return list(await session.stores.entities.ids("task_snapshot"))
        finally:
            await session.close()

    assert anyio.run(stored) == []
