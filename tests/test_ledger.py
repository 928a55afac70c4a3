"""The task ledger: pass rate with a Wilson interval and flakiness per task version, counted
from trial records (real SQLite); kept up to date by the `run_finished` hook as trials finish
(a real run); shown and rebuilt by `agent-env tasks ledger`; and the pass-rate band sampler
(`band:LOW-HIGH`) draws only tasks the ledger puts in the band."""

from __future__ import annotations

import collections
import json
import sys
from pathlib import Path

import pytest

from agent_env.results import wilson_interval
from agentenv_grading import ledger

sys.path.insert(0, str(Path(__file__).parent))
from agents_support import NOTES_AGENT, agent_env, run_json  # noqa: E402


def trial(i, task="t", version=1, agent="a", model="m", status="passed", **extra):
    return {
        "id": f"ti-{task}-{i}",
        "run_id": "run-1",
        "task": {"name": task, "id": f"@local/b/{task}", "version": version},
        "agent": agent,
        "model": model,
        "status": status,
        "scores": {"v": 1.0 if status == "passed" else 0.0},
        **extra,
    }


def test_pass_rate_interval_and_flakiness_per_task_version(tmp_path):
    path = tmp_path / "ledger.sqlite"
    records = [
        trial(1),
        trial(2, status="scored_below"),  # agent a: passed and failed -> flaky
        trial(3, agent="b"),
        trial(4, agent="b"),
        trial(5, agent="b", status="failed", failure_class="infrastructure"),  # not counted
        trial(6, agent="b", status="cancelled"),  # not finished
        trial(7, agent="oracle"),  # listed, not rated
        trial(8, version=2, status="failed", failure_class="agent"),
        trial(9, regraded_from={"run_id": "run-0", "instance_id": "ti-t-1"}),  # a regrade
    ]
    assert ledger.add_trials(records, path) == 7
    v2, v1 = ledger.entries("t", path)
    assert (v1["task_version"], v1["trials"], v1["passed"]) == (1, 4, 3)
    assert v1["pass_rate"] == 0.75
    assert v1["interval"] == list(wilson_interval(3, 4))
    assert v1["flaky"] is True
    agents = {a["agent"]: a for a in v1["agents"]}
    assert (agents["a"]["flaky"], agents["b"]["flaky"]) == (True, False)
    assert (agents["b"]["trials"], agents["b"]["passed"]) == (2, 2)  # infra left out
    assert (agents["oracle"]["trials"], agents["oracle"]["passed"]) == (1, 1)
    assert (v2["task_version"], v2["trials"], v2["passed"], v2["flaky"]) == (2, 1, 0, False)
    assert v2["interval"] == list(wilson_interval(0, 1))
    # a trial recorded again (a resume, a retried write) replaces its row
    ledger.add_trials([trial(2)], path)
    (v1,) = [e for e in ledger.entries("t", path) if e["task_version"] == 1]
    assert (v1["passed"], v1["flaky"]) == (4, False)
    assert ledger.pass_rates(["@local/b/t", "@local/b/none"], path) == {
        "@local/b/t": 4 / 5,
        "@local/b/none": None,
    }


@pytest.mark.slow
def test_runs_fill_the_ledger_as_they_finish_and_the_cli_shows_and_rebuilds_it(tmp_path):
    home = tmp_path / "home"
    data, stderr = run_json(
        home, str(NOTES_AGENT), "--agent", "scripted", "--sandbox", "local", "--trials", "2"
    )
    assert [t["status"] for t in data["tasks"]] == ["passed", "passed"], stderr
    done = agent_env(home, "tasks", "ledger", "groceries", "--json")
    assert done.returncode == 0, done.stderr
    [entry] = json.loads(done.stdout)
    assert (entry["task"], entry["task_version"], entry["trials"], entry["passed"]) == (
        "groceries",
        1,
        2,
        2,
    )
    assert entry["interval"] == pytest.approx(list(wilson_interval(2, 2)))
    assert [(a["agent"], a["runs"]) for a in entry["agents"]] == [("scripted", 1)]
    shown = agent_env(home, "tasks", "ledger")
    assert shown.stdout.startswith("groceries v1  trials     2  passed     2  pass rate   1.000")
    typo = agent_env(home, "tasks", "ledger", "grocerise")
    assert typo.returncode == 1
    assert "the ledger has no task 'grocerise' (did you mean 'groceries'?)" in typo.stderr
    ledger.ledger_path(home).unlink()  # e.g. the runs happened on other hosts
    assert json.loads(agent_env(home, "tasks", "ledger", "--json").stdout) == []
    rebuilt = agent_env(home, "tasks", "ledger", "--rebuild", "--json")
    assert "ledger: 2 trial record(s) read from the document store" in rebuilt.stderr
    assert json.loads(rebuilt.stdout) == [entry]


def test_the_band_sampler_draws_only_what_the_ledger_puts_in_the_band(
    plugin_manager, register_plugin, agent_env_home
):
    import agentenv_grading.hooks

    register_plugin(agentenv_grading.hooks, "grading")
    rates = {"easy": (10, 10), "hard": (0, 10), "mid": (5, 10), "edge": (2, 10)}
    records = [
        trial(i, task=name, status="passed" if i < passes else "scored_below")
        for name, (passes, n) in rates.items()
        for i in range(n)
    ]
    ledger.add_trials(records)
    ids = [f"@local/b/{name}" for name in ("easy", "hard", "mid", "edge", "new")]
    versions = dict.fromkeys(ids, 1)
    drawn = collections.Counter(
        ids[plugin_manager.sample_task("band:0.2-0.8", ids, versions)] for _ in range(300)
    )
    assert set(drawn) == {"@local/b/mid", "@local/b/edge", "@local/b/new"}  # unseen: in band
    assert min(drawn.values()) > 50  # uniform over the three
    # nothing in the band: the nearest tasks
    drawn = {ids[plugin_manager.sample_task("band:0.9-1.0", ids[:3], versions)] for _ in range(50)}
    assert drawn == {"@local/b/easy"}
    assert plugin_manager.sample_task("round-robin", ids, versions) is None  # not ours
    with pytest.raises(ValueError, match=r"write band:LOW-HIGH with 0 <= LOW <= HIGH <= 1"):
        plugin_manager.sample_task("band:0.8-0.2", ids, versions)
