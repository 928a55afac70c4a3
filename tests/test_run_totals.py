"""A run of several tasks ends with the failed ones and their reason, then one totals line
(passed, not passed by failure class) and the run id."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from test_run_cli import box_task, load_steps_module, write_bundle  # noqa: E402


@pytest.fixture
def run_cli(cli_runner, register_plugin, agent_env_home):
    register_plugin(load_steps_module(), "engine-test-steps")
    return cli_runner


def test_multi_task_run_ends_with_failures_and_totals(run_cli, tmp_path):
    bundle = write_bundle(
        tmp_path / "b",
        {"one": box_task(), "two": box_task(), "bad": box_task(text="hi", expect="bye")},
    )
    result = run_cli.invoke(["run", str(bundle)])
    assert result.exit_code == 1, result.stderr
    lines = result.stdout.splitlines()
    run_id = next(w for w in lines[-1].split() if w.startswith("run-"))
    assert lines[-1] == f"2 of 3 passed, 1 not passed (verifier 1); run {run_id}"
    assert lines[-3] == "not passed:"
    assert lines[-2].startswith("  bad  [verifier]  scored below 1 (check: 0)  ti-")


def test_single_task_run_prints_only_its_line(run_cli, tmp_path):
    bundle = write_bundle(tmp_path / "b", {"one": box_task()})
    result = run_cli.invoke(["run", str(bundle)])
    assert result.exit_code == 0, result.stderr
    assert len(result.stdout.splitlines()) == 1
