"""`agent-env runs regrade`: stored trials of examples/notes-agent (oracle, local sandbox) are
re-scored with new or changed verifiers from the records alone, into a new run that points at
the original; live-env verifiers keep their recorded results; per-step rewards land on the
records as `step_rewards`; bad input changes nothing."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from agents_support import NOTES_AGENT, agent_env, run_json, show_json  # noqa: E402

pytestmark = pytest.mark.slow  # one oracle run of the notes example, then CLI calls


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    """(home, original run id, its trial records) of 3 oracle trials."""
    base = tmp_path_factory.mktemp("regrade")
    home = base / "home"
    data, stderr = run_json(
        home, str(NOTES_AGENT), "--agent", "oracle", "--sandbox", "local", "--trials", "3"
    )
    run_id = data["run_id"]
    shown = show_json(home, run_id)
    records = [show_json(home, i)["instance"] for i in shown["run"]["instances"]]
    assert [r["status"] for r in records] == ["passed"] * 3, stderr
    return home, run_id, records


def _write(path: Path, steps: list) -> Path:
    path.write_text(json.dumps(steps))
    return path


def _regrade(home: Path, *args: str) -> dict:
    done = agent_env(home, "runs", "regrade", *args, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _trials(home: Path, run_id: str) -> list[dict]:
    run = show_json(home, run_id)["run"]
    return [show_json(home, i)["instance"] for i in run["instances"]], run


def test_a_stricter_verifier_flips_every_trial_and_the_new_run_points_back(stored, tmp_path):
    home, run_id, originals = stored
    strict = _write(
        tmp_path / "v.json",
        [
            {
                "id": "calls2",
                "type": "tool_call_verifier",
                "prompt_id": "ask",
                "verifier_id": "tool-calls",
                "criteria": [{"id": "read", "type": "tool_called", "tool": "read_note"}],
            }
        ],
    )
    summary = _regrade(home, run_id, "--verifier", str(strict))
    assert summary["trials"] == 3
    assert (summary["passed_before"], summary["passed_after"], summary["flipped"]) == (3, 0, 3)
    trials, run = _trials(home, summary["run_id"])
    assert run["regraded_from"] == run_id
    for new, old in zip(trials, originals, strict=True):
        assert new["regraded_from"] == {"run_id": run_id, "instance_id": old["id"]}
        assert new["status"] == "scored_below"
        assert new["failure_class"] == "verifier"
        # replaced by id; the env's verifier (needs a live env) and the answer are as recorded
        assert new["verifiers"]["tool-calls"]["score"] == 0.0
        assert new["verifiers"]["tool-calls"]["results"][0]["justification"] == (
            "0 matching call(s) of 'read_note' (need 1)"
        )
        assert new["verifiers"]["env-state"] == old["verifiers"]["env-state"]
        assert new["verifiers"]["answer"] == old["verifiers"]["answer"]
        assert new["scores"] == {"env-state": 1.0, "answer": 1.0, "tool-calls": 0.0}
    # the original run is untouched
    again, _ = _trials(home, run_id)
    assert [t["status"] for t in again] == ["passed"] * 3


def test_a_new_bundle_replaces_the_verifiers_and_keeps_live_env_results(stored, tmp_path):
    home, run_id, originals = stored
    bundle = tmp_path / "notes-v2"
    shutil.copytree(NOTES_AGENT, bundle)
    task = bundle / "tasks" / "groceries.json"
    steps = json.loads(task.read_text())
    answer = next(s for s in steps if s["id"] == "answer")
    answer["criteria"][0]["needles"] = ["groceries", "bread"]  # the oracle never says bread
    task.write_text(json.dumps(steps))
    summary = _regrade(home, run_id, "--bundle", str(bundle))
    assert (summary["passed_after"], summary["flipped"]) == (0, 3)
    trials, _ = _trials(home, summary["run_id"])
    for new, old in zip(trials, originals, strict=True):
        assert new["verifiers"]["answer"]["results"][0]["justification"] == "missing: ['bread']"
        assert new["verifiers"]["env-state"] == old["verifiers"]["env-state"]
        assert any("needs a live env; its recorded result is kept" in line for line in new["log"])


def test_a_live_env_verifier_the_record_lacks_fails_the_trial_saying_why(stored, tmp_path):
    home, run_id, _ = stored
    live = _write(
        tmp_path / "live.json",
        [
            {
                "id": "state2",
                "type": "env_outcome_verifier",
                "env_id": "notes",
                "file_artifact_id": "check_groceries",
                "verifier_id": "env-state-v2",
            }
        ],
    )
    summary = _regrade(home, run_id, "--verifier", str(live))
    trials, _ = _trials(home, summary["run_id"])
    for new in trials:
        assert new["status"] == "failed"
        assert new["failure"]["step"] == "state2"
        assert "env_outcome_verifier needs a live env" in new["failure"]["message"]
        assert "'env-state-v2'" in new["failure"]["message"]


def test_call_rewards_land_on_the_records_in_the_export_shape(stored, tmp_path):
    home, run_id, _ = stored
    rewards = _write(
        tmp_path / "rewards.json",
        [
            {
                "id": "per-call",
                "type": "call_reward_verifier",
                "prompt_id": "ask",
                "verifier_id": "per-call",
                "rules": [{"tool": "add_note", "arguments": {"title": "groceries"}, "score": 1}],
                "default": 0.25,
            }
        ],
    )
    summary = _regrade(home, run_id, "--verifier", str(rewards))
    trials, _ = _trials(home, summary["run_id"])
    for new in trials:
        assert new["step_rewards"] == [
            {"call_index": 0, "score": 0.25, "verifier": "per-call"},
            {"call_index": 1, "score": 1.0, "verifier": "per-call"},
        ]
        assert new["verifiers"]["per-call"]["score"] == pytest.approx(0.625)


def _run_count(home: Path) -> int:
    done = agent_env(home, "runs", "list", "--json")
    return len(json.loads(done.stdout))


def test_bad_input_is_refused_and_writes_nothing(stored, tmp_path):
    home, run_id, _ = stored
    before = _run_count(home)
    typo = agent_env(home, "runs", "regrade", run_id[:-1] + "x", "--bundle", str(NOTES_AGENT))
    assert typo.returncode == 1
    assert f"no run '{run_id[:-1]}x' (did you mean '{run_id}'?)" in typo.stderr
    both = agent_env(home, "runs", "regrade", run_id)
    assert both.returncode == 2
    assert "give exactly one of --verifier FILE and --bundle SPEC" in both.stderr
    not_verifier = _write(
        tmp_path / "deploy.json", [{"id": "env", "type": "deploy_env", "env_id": "notes"}]
    )
    done = agent_env(home, "runs", "regrade", run_id, "--verifier", str(not_verifier))
    assert done.returncode == 1
    assert "step 'env' is not a verifier" in done.stderr
    bad = _write(
        tmp_path / "bad.json",
        [{"id": "r", "type": "call_reward_verifier", "rules": [{"tol": "x", "score": 2}]}],
    )
    done = agent_env(home, "runs", "regrade", run_id, "--verifier", str(bad))
    assert done.returncode == 1
    assert "unknown key 'tol' (did you mean 'tool'?)" in done.stderr
    assert "score: a number from 0 to 1 is required, got 2" in done.stderr
    assert _run_count(home) == before
