"""Which steps a warm pool keeps deployed and which tasks it refuses (`agent_env.runs.pool`),
on tasks parsed from real task files, plus the memory reading its fill is bounded by."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent_env.runs.pool import TaskPools, deploy_steps, memory_available_mb


def task_of(tmp_path: Path, steps: list[dict[str, Any]]) -> Any:
    from agent_env.bundles import load_bundle
    from agent_env.plugins import get_plugin_manager

    bundle = tmp_path / "b"
    (bundle / "envs" / "notes").mkdir(parents=True)
    (bundle / "envs" / "notes" / "env.toml").write_text(
        'command = ["python", "server.py"]\nrequirements = []\n'
    )
    (bundle / "envs" / "notes" / "server.py").write_text("")
    (bundle / "tasks").mkdir()
    (bundle / "tasks" / "t.json").write_text(json.dumps(steps))
    return load_bundle(str(bundle), get_plugin_manager()).tasks["t"]


DEPLOY = {"id": "env", "type": "deploy_env", "env_id": "notes"}
RESET = {"id": "reset", "type": "reset_env", "env_id": "notes"}


def test_the_deploy_steps_up_front_are_kept_the_rest_run_each_episode(tmp_path: Path) -> None:
    task = task_of(tmp_path, [DEPLOY, RESET])
    kept, why = deploy_steps(task.steps, None)
    assert why is None and [s.id for s in kept] == ["env"]


def test_a_deploy_after_another_kind_of_step_is_not_kept(tmp_path: Path) -> None:
    task = task_of(tmp_path, [RESET | {"env_id": "notes"}, DEPLOY])
    kept, why = deploy_steps(task.steps, None)
    assert kept == [] and why == "it deploys no env before its other steps"


@pytest.mark.parametrize(
    ("extra", "reuse", "why"),
    [
        ({}, "redeploy", "its bundle says reuse = 'redeploy'"),
        (
            {"id": "down", "type": "teardown_sandboxes", "env_ids": ["notes"]},
            None,
            "a data/reset does not undo its teardown_sandboxes step(s)",
        ),
    ],
)
def test_tasks_a_pool_refuses_say_why(
    tmp_path: Path, extra: dict[str, Any], reuse: str | None, why: str
) -> None:
    task = task_of(tmp_path, [DEPLOY, RESET] + ([extra] if extra else []))
    kept, said = deploy_steps(task.steps, reuse)
    assert kept == [] and said == why


def test_a_pool_size_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1 instance, not 0"):
        TaskPools(0)


def test_the_memory_bound_reads_meminfo() -> None:
    available = memory_available_mb()
    assert available is not None and available > 0  # Linux: MemAvailable is always there
    assert TaskPools(1, min_free_mb=0).memory_ok()
    assert not TaskPools(1, min_free_mb=available * 1000).memory_ok()
