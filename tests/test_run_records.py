"""`agent-env runs list|show` (agentenv-reporting) read what `agent-env run` recorded."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import pytest  # noqa: E402
from test_run_cli import box_task, load_steps_module, write_bundle  # noqa: E402


@pytest.fixture
def run_cli(cli_runner, register_plugin, agent_env_home):
    from agentenv_reporting import hooks as reporting  # `runs list|show`

    register_plugin(load_steps_module(), "engine-test-steps")
    register_plugin(reporting, "reporting")
    return cli_runner


def test_runs_list_and_show(run_cli, tmp_path):
    assert "No runs recorded yet" in run_cli.invoke(["runs", "list"]).stdout
    bundle = write_bundle(tmp_path / "b", {"good": box_task(), "bad": box_task(text="x")})
    data = json.loads(run_cli.invoke(["run", str(bundle), "--json"]).stdout)
    run_id = data["run_id"]

    [row] = json.loads(run_cli.invoke(["runs", "list", "--json"]).stdout)
    assert row["id"] == run_id and row["instances"] == 2
    assert (row["passed"], row["failed"], row["unfinished"]) == (1, 1, 0)
    assert f"{run_id}" in run_cli.invoke(["runs", "list"]).stdout

    shown = run_cli.invoke(["runs", "show", run_id]).stdout
    assert "good  passed (check: 1)" in shown and "bad  scored below 1 (check: 0)" in shown

    bad = next(t for t in data["tasks"] if t["task"]["name"] == "bad")
    text = run_cli.invoke(["runs", "show", bad["id"]]).stdout
    assert "outcome: scored below 1 (check: 0)" in text
    assert "  write: completed (" in text
    record = json.loads(run_cli.invoke(["runs", "show", bad["id"], "--json"]).stdout)["instance"]
    assert record["scores"] == {"check": 0.0}


def test_runs_show_unknown_id_suggests(run_cli, tmp_path):
    bundle = write_bundle(tmp_path / "b", {"t": box_task()})
    run_id = json.loads(run_cli.invoke(["run", str(bundle), "--json"]).stdout)["run_id"]
    result = run_cli.invoke(["runs", "show", run_id[:-1] + "q"])
    assert result.exit_code == 1
    assert f"did you mean {run_id!r}" in result.stderr
