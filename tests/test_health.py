"""`agent-env tasks health BUNDLE/TASK`: the task's oracle and a do-nothing agent each run it
through the pipeline; the check flags a task that passes without work and one its oracle cannot
solve (fixture bundles on the notes env), passes a sound one, and records the finding in the
ledger."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from agents_support import agent_env, groceries_steps, notes_bundle  # noqa: E402

pytestmark = pytest.mark.slow  # two runs per check


def _solution(title: str) -> dict:
    return {
        "solution": {
            "turns": [
                {
                    "tool_calls": [
                        {"tool": "add_note", "arguments": {"title": title, "body": "milk"}}
                    ],
                    "response": f"Saved '{title}'.",
                }
            ]
        }
    }


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    base = tmp_path_factory.mktemp("health")
    sound = groceries_steps()
    trivial = groceries_steps()
    # only checks that nothing was deleted: an agent that does nothing passes
    trivial[3:] = [
        {
            "id": "calls",
            "type": "tool_call_verifier",
            "prompt_id": "ask",
            "verifier_id": "no-delete",
            "criteria": [{"id": "kept", "type": "tool_not_called", "tool": "delete_note"}],
        }
    ]
    # the shipped solution saves the wrong note: its oracle cannot solve the task
    broken = groceries_steps(metadata=_solution("shopping"))
    unknown = groceries_steps()
    del unknown[1]["metadata"]  # ships no solution
    root = notes_bundle(
        base, {"sound": sound, "trivial": trivial, "broken": broken, "unknown": unknown}
    )
    return base / "home", root


def _health(home: Path, target: str) -> tuple[int, dict]:
    done = agent_env(home, "tasks", "health", target, "--sandbox", "local", "--json")
    assert done.stdout, done.stderr
    return done.returncode, json.loads(done.stdout)


def test_a_task_that_passes_without_work_is_flagged(bundle):
    home, root = bundle
    code, finding = _health(home, f"{root}/trivial")
    assert code == 1
    assert (finding["solvable"], finding["passes_without_work"]) == (True, True)
    assert finding["verdict"] == "UNHEALTHY: it passes without work"
    assert finding["do_nothing"]["status"] == "passed"


def test_a_task_its_oracle_cannot_solve_is_flagged(bundle):
    home, root = bundle
    code, finding = _health(home, f"{root}/broken")
    assert code == 1
    assert (finding["solvable"], finding["passes_without_work"]) == (False, False)
    assert finding["verdict"] == "UNHEALTHY: its oracle cannot solve it"
    assert finding["oracle"]["status"] == "scored_below"


def test_a_sound_task_is_healthy_and_the_ledger_keeps_every_finding(bundle):
    home, root = bundle
    code, finding = _health(home, f"{root}/sound")
    assert code == 0
    assert finding["verdict"] == "healthy: solvable, and does not pass without work"
    shown = agent_env(home, "tasks", "ledger", "--json")
    health = {e["task"]: e["health"] for e in json.loads(shown.stdout)}
    found = {k: (v["solvable"], v["passes_without_work"]) for k, v in health.items() if v}
    assert {k: found.get(k) for k in ("sound", "trivial", "broken")} == {
        "sound": (True, False),
        "trivial": (True, True),
        "broken": (False, False),
    }
    assert health["broken"]["oracle_run"].startswith("run-")
    text = agent_env(home, "tasks", "ledger", "broken").stdout
    assert "health: NOT SOLVABLE by its oracle" in text
    # the probes' trials are listed per agent, never in the pass rate
    [entry] = json.loads(agent_env(home, "tasks", "ledger", "sound", "--json").stdout)
    assert entry["trials"] == 0 and entry["pass_rate"] is None
    assert sorted(a["agent"] for a in entry["agents"]) == ["do-nothing", "oracle"]


def test_a_task_without_a_solution_has_unknown_solvability(bundle):
    home, root = bundle
    code, finding = _health(home, f"{root}/unknown")
    assert code == 0
    assert (finding["solvable"], finding["passes_without_work"]) == (None, False)
    assert finding["verdict"].startswith("solvability unknown (the task ships no solution)")
    assert finding["oracle"]["status"] == "not run"


def test_bad_targets_are_refused(bundle):
    home, root = bundle
    done = agent_env(home, "tasks", "health", "groceries")
    assert done.returncode == 1
    assert "'groceries': give BUNDLE/TASK (e.g. examples/notes-agent/groceries)" in done.stderr
    done = agent_env(home, "tasks", "health", f"{root}/sond", "--sandbox", "local")
    assert done.returncode != 0
    assert "sond" in done.stderr and "sound" in done.stderr
