"""Issue 32, costs: every trial records its model tokens (from the agent's usage: the scripted
model server answers 11 prompt and 7 completion tokens per call), sandbox-seconds per provider
and wall time; `[prices]` turns them into US dollars; `runs show` (text and --json) and the
export carry them; a budget stops starting trials once spent and the run record says so."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from agents_support import NOTES_AGENT, TOOL_THEN_TEXT, agent_env, run_json  # noqa: E402

from agentenv_protocol.agent.testing import ScriptedModelServer  # noqa: E402

#: Two model calls per trial: 22 prompt and 14 completion tokens; at these prices $0.50.
PRICES = """
[prices.models."scripted-1"]
input = 10000.0
output = 20000.0

[prices.sandboxes]
local = 0.0
"""


@pytest.fixture(scope="module")
def budgeted(tmp_path_factory):
    """Four trials of the notes task with the tool-loop agent, one at a time, on a $1 budget:
    (home, env, run output, stderr)."""
    root = tmp_path_factory.mktemp("costs")
    config = root / "config.toml"
    config.write_text(PRICES)
    env = {"AGENT_ENV_CONFIG": str(config)}
    with ScriptedModelServer(TOOL_THEN_TEXT * 4) as model:
        env["LITELLM_BASE_URL"] = model.base_url
        data, stderr = run_json(
            root / "home", str(NOTES_AGENT), "--model", "scripted-1", "--trials", "4",
            "--concurrency", "1", "--budget-usd", "1", env=env,
        )  # fmt: skip
        calls = len(model.requests)
    return root / "home", env, data, stderr, calls


def test_each_trial_records_tokens_sandbox_seconds_wall_time_and_dollars(budgeted):
    home, env, data, stderr, _ = budgeted
    shown = agent_env(home, "runs", "show", data["run_id"], "--json", env=env)
    assert shown.returncode == 0, shown.stderr
    run = json.loads(shown.stdout)
    [first, *_] = [t for t in data["tasks"] if t["status"] == "passed"]
    one = json.loads(agent_env(home, "runs", "show", first["id"], "--json", env=env).stdout)
    cost = one["instance"]["cost"]
    assert {k: cost[k] for k in ("prompt_tokens", "completion_tokens", "total_tokens")} == {
        "prompt_tokens": 22,
        "completion_tokens": 14,
        "total_tokens": 36,
    }
    assert cost["models"] == {
        "scripted-1": {"prompt_tokens": 22, "completion_tokens": 14, "total_tokens": 36}
    }
    assert cost["usd"] == pytest.approx(0.5)
    assert list(cost["sandbox_seconds"]) == ["local"] and cost["sandbox_seconds"]["local"] > 0
    assert 0 < cost["sandbox_seconds"]["local"] <= cost["wall_seconds"] + 0.5
    assert "unpriced" not in cost
    total = run["summary"]["cost"]
    assert (total["trials"], total["total_tokens"], total["usd"]) == (2, 72, pytest.approx(1.0))

    text = agent_env(home, "runs", "show", first["id"], env=env).stdout
    assert "cost: 36 tokens (22 in, 14 out), sandboxes: local " in text and "$0.5000" in text
    exported = agent_env(home, "runs", "export", data["run_id"], env=env)
    rows = [json.loads(line) for line in exported.stdout.splitlines()]
    assert [r["cost"]["usd"] for r in rows] == [pytest.approx(0.5)] * 2


def test_the_budget_stops_starting_trials_and_the_run_record_says_so(budgeted):
    home, env, data, stderr, calls = budgeted
    assert calls == 4, "two trials of two model calls each; the other two never started"
    assert [t["status"] for t in data["tasks"]] == ["passed", "passed"]
    assert "stopped for budget: $1.0000 spent of $1.0000; 2 trial(s) not started" in stderr
    shown = json.loads(agent_env(home, "runs", "show", data["run_id"], "--json", env=env).stdout)
    assert shown["run"]["stopped"] == {
        "reason": "budget",
        "budget_usd": 1.0,
        "spent_usd": 1.0,
        "not_started": 2,
    }
    assert shown["run"]["options"]["budget_usd"] == 1.0
    assert (shown["summary"]["passed"], shown["summary"]["unfinished"]) == (2, 2)
    text = agent_env(home, "runs", "show", data["run_id"], env=env).stdout
    assert "stopped for budget: $1.0000 spent of $1.0000; 2 trial(s) not started" in text
    assert "cost of 2 trial(s): 72 tokens (44 in, 28 out)" in text


@pytest.mark.parametrize(
    ("table", "message"),
    [
        (
            '[prices.models."scripted-1"]\ninput = "cheap"\n',
            """[prices] models."scripted-1".input: expected a price (a number >= 0), got 'cheap'""",
        ),
        (
            '[prices.models."scripted-1"]\ninptu = 1.0\n',
            """[prices] models."scripted-1": unknown key 'inptu'; known: input, output""",
        ),
        ("[prices.sandboxes]\nlocal = -1\n", "[prices] sandboxes.local: expected a price"),
        (
            '[prices.models]\n"scripted-1" = 3\n',
            """[prices] models."scripted-1": expected a table""",
        ),
        ('[run]\nbudget_usd = "lots"\n', "[run] budget_usd: expected a positive number"),
    ],
)
def test_a_bad_price_table_or_budget_fails_before_anything_runs(tmp_path, table, message):
    config = tmp_path / "config.toml"
    config.write_text(table)
    home = tmp_path / "home"
    done = agent_env(home, "run", str(NOTES_AGENT), "--agent", "oracle",
                     env={"AGENT_ENV_CONFIG": str(config)})  # fmt: skip
    assert done.returncode != 0 and message in done.stderr, done.stderr
    listed = agent_env(home, "runs", "list", "--json", env={"AGENT_ENV_CONFIG": str(config)})
    assert json.loads(listed.stdout or "[]") == [], "nothing was recorded"


def test_a_budget_that_is_not_positive_is_a_usage_error(tmp_path):
    done = agent_env(tmp_path / "home", "run", str(NOTES_AGENT), "--budget-usd", "0")
    assert done.returncode == 2 and "--budget-usd" in done.stderr


def test_a_resume_with_a_larger_budget_runs_the_trials_the_budget_held_back(budgeted):
    """Last in this module: it finishes the budgeted run."""
    home, env, data, _, _ = budgeted
    with ScriptedModelServer(TOOL_THEN_TEXT * 2) as model:
        resumed, stderr = run_json(
            home, "--resume", data["run_id"], "--budget-usd", "2", "--concurrency", "1",
            env={**env, "LITELLM_BASE_URL": model.base_url},
        )  # fmt: skip
        assert len(model.requests) == 4, stderr
    assert "2 trial(s) finished and kept, 2 to run" in stderr
    shown = json.loads(agent_env(home, "runs", "show", data["run_id"], "--json", env=env).stdout)
    assert shown["summary"]["passed"] == 4 and "stopped" not in shown["run"]
    assert shown["summary"]["cost"]["usd"] == pytest.approx(2.0)
