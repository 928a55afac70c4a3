"""`agent-env runs replay`: the recorded tool calls of an oracle trial of examples/notes-agent,
replayed against a freshly deployed env through the run pipeline, reproduce every call; an env
that answers differently is reported call by call (exit 1); bad input is refused."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from agents_support import NOTES_AGENT, agent_env, run_json  # noqa: E402

pytestmark = pytest.mark.slow  # an oracle run, then two replays (each a run)


@pytest.fixture(scope="module")
def trial(tmp_path_factory):
    home = tmp_path_factory.mktemp("replay") / "home"
    data, stderr = run_json(home, str(NOTES_AGENT), "--agent", "oracle", "--sandbox", "local")
    [record] = data["tasks"]
    assert record["status"] == "passed", stderr
    return home, record["id"]


def _replay(home: Path, *args: str):
    done = agent_env(home, "runs", "replay", *args, "--sandbox", "local", "--json")
    assert done.stdout, done.stderr
    return done.returncode, json.loads(done.stdout)


def test_the_notes_example_reproduces_every_call(trial):
    home, trial_id = trial
    code, report = _replay(home, trial_id)
    assert code == 0
    assert (report["calls"], report["reproduced"], report["divergences"]) == (2, 2, 0)
    [prompt] = report["prompts"]
    assert prompt["prompt_id"] == "ask"
    assert [(c["tool"], c["same"]) for c in prompt["calls"]] == [
        ("list_notes", True),
        ("add_note", True),
    ]
    assert report["status"] == "passed"  # the replayed trial is a run of its own
    assert report["replayed_trial"] != trial_id


def test_an_env_that_answers_differently_is_reported_call_by_call(trial, tmp_path):
    home, trial_id = trial
    changed = tmp_path / "notes-changed"
    shutil.copytree(NOTES_AGENT, changed)
    server = changed / "envs" / "notes" / "server.py"
    server.write_text(server.read_text().replace('{"draft": ', '{"todo": '))
    code, report = _replay(home, trial_id, "--bundle", str(changed))
    assert code == 1
    assert (report["calls"], report["reproduced"]) == (2, 1)
    listed, added = report["prompts"][0]["calls"]
    assert set(listed["fields"]) == {"result"}
    recorded, replayed = (
        json.dumps(listed["fields"]["result"][k]) for k in ("recorded", "replayed")
    )
    assert "draft" in recorded and "todo" not in recorded
    assert "todo" in replayed and "draft" not in replayed
    assert added["same"] is True  # {"created": "groceries", "count": 2} either way
    text = agent_env(
        home, "runs", "replay", trial_id, "--bundle", str(changed), "--sandbox", "local"
    )
    assert text.returncode == 1
    assert f"{trial_id}: 1 of 2 call(s) reproduced" in text.stdout
    assert "ask call 0 (list_notes): result: recorded" in text.stdout


def test_an_unknown_trial_is_refused_with_a_suggestion(trial):
    home, trial_id = trial
    done = agent_env(home, "runs", "replay", trial_id[:-1] + "9")
    assert done.returncode == 1
    assert f"no trial '{trial_id[:-1]}9' (did you mean '{trial_id}'?)" in done.stderr
