"""`runs list` and `runs show` over a recorded run of examples/notes-agent (the oracle agent,
local env, no model): a trial's stored trajectory and kept log are shown, and a trajectory the
object store no longer has is shown as missing while the command still succeeds (the one
trajectory reader, `agent_env.results.trial_details`). Driven through the real CLI."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

AGENT_ENV = str(Path(sys.executable).parent / "agent-env")
NOTES_AGENT = Path(__file__).resolve().parents[3] / "examples" / "notes-agent"


def _cli(root: Path, home: Path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_ENV_")}
    env["AGENT_ENV_HOME"] = str(home)

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [AGENT_ENV, *args], cwd=root, env=env, capture_output=True, text=True, timeout=300
        )

    return cli


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """(root, home, run id, task instance id) of one recorded oracle run of notes-agent."""
    root = tmp_path_factory.mktemp("runs-show")
    (root / ".agentenv").mkdir()
    (root / ".agentenv" / "config.toml").write_text("")
    done = _cli(root, root / "home")("run", str(NOTES_AGENT), "--agent", "oracle", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    return root, root / "home", data["run_id"], data["tasks"][0]["id"]


def test_runs_list_counts_the_run(recorded):
    root, home, run_id, _ = recorded
    done = _cli(root, home)("runs", "list", "--json")
    assert done.returncode == 0, done.stderr
    [row] = json.loads(done.stdout)
    assert (row["id"], row["instances"], row["passed"], row["failed"]) == (run_id, 1, 1, 0)
    assert row["bundle"] == "notes-agent"


def test_runs_show_gives_the_trajectory_and_the_kept_log(recorded):
    root, home, _, instance = recorded
    cli = _cli(root, home)
    shown = json.loads(cli("runs", "show", instance, "--json").stdout)
    key = shown["instance"]["outputs"]["ask"]["trajectory"]
    assert list(shown["trajectories"]) == ["ask"]
    assert shown["trajectories"]["ask"]["prompt_id"] == "ask"
    assert shown["trajectories"]["ask"]["events"]
    assert list(shown["logs"]) == ["env_notes"]
    text = cli("runs", "show", instance).stdout
    events = len(shown["trajectories"]["ask"]["events"])
    assert f"    trajectory: {events} event(s) at {key}\n" in text
    assert "log env_notes: " in text


def test_a_trajectory_the_store_lost_is_shown_missing(recorded, tmp_path):
    root, home, _, instance = recorded
    copy = tmp_path / "home"
    shutil.copytree(home, copy)
    cli = _cli(root, copy)
    key = json.loads(cli("runs", "show", instance, "--json").stdout)["instance"]["outputs"]["ask"][
        "trajectory"
    ]
    (copy / "objects" / key).unlink()
    done = cli("runs", "show", instance, "--json")
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    assert list(shown["trajectories"]) == ["ask"]
    assert list(shown["trajectories"]["ask"]) == ["missing"]
    assert key in shown["trajectories"]["ask"]["missing"]
    text = cli("runs", "show", instance)
    assert text.returncode == 0, text.stderr
    assert "trajectory:" not in text.stdout  # no events to count
    assert "answer: " in text.stdout  # the record itself is still shown


@pytest.mark.parametrize("limit", ["0", "-1"])
def test_a_limit_below_one_is_a_usage_error(recorded, limit):
    """`--limit 0` said "No runs recorded yet" and `--limit -1` dropped the oldest run."""
    root, home, _, _ = recorded
    done = _cli(root, home)("runs", "list", "--limit", limit)
    assert done.returncode == 2
    assert f"Invalid value for '--limit': {limit} is not in the range x>=1." in done.stderr
    assert done.stdout == ""
