"""A number no JSON document can hold (`1e400` is infinity once parsed; TOML also spells `inf`
and `nan`) is refused when the bundle is loaded, naming the file, the step and the field, and
nothing is written: before, a criterion weight of 1e400 passed validation and the run failed
with "document is not JSON-serializable" after an artifact row was written."""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from agents_support import NOTES_AGENT, agent_env  # noqa: E402


def _bundle(tmp_path: Path, weight_text: str) -> Path:
    import shutil

    root = tmp_path / "bundle"
    shutil.copytree(NOTES_AGENT, root)
    task = root / "tasks" / "groceries.json"
    text = task.read_text()
    needle = '"needles": ["groceries"]}'
    assert needle in text
    task.write_text(text.replace(needle, f'"needles": ["groceries"], "weight": {weight_text}}}'))
    return root


def _rows(home: Path) -> int:
    """Every row in the home's document store (0 when it was never created)."""
    db = home / "documents.sqlite3"
    if not db.exists():
        return 0
    with sqlite3.connect(db) as conn:
        tables = [r[0] for r in conn.execute("select name from sqlite_master where type='table'")]
        return sum(conn.execute(f'select count(*) from "{t}"').fetchone()[0] for t in tables)


def test_an_infinite_criterion_weight_is_refused_before_anything_is_written(tmp_path):
    bundle = _bundle(tmp_path, "1e400")
    home = tmp_path / "home"
    where = "tasks/groceries.json: step 'answer': criteria[0].weight: inf is not a finite number"
    for args in (("check", str(bundle)), ("run", str(bundle), "--agent", "oracle")):
        done = agent_env(home, *args)
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        assert where in done.stdout + done.stderr, (args, done.stdout, done.stderr)
        assert "JSON-serializable" not in done.stderr
    assert _rows(home) == 0
    assert not (home / "objects").exists() or not any((home / "objects").rglob("*.*"))


def test_a_finite_weight_still_runs(tmp_path):
    """The same bundle with a large but finite weight runs to a score (the check is not a
    blanket refusal of big numbers)."""
    bundle = _bundle(tmp_path, "1e300")
    done = agent_env(tmp_path / "home", "run", str(bundle), "--agent", "oracle", "--json")
    assert done.returncode == 0, done.stderr
    [record] = json.loads(done.stdout)["tasks"]
    assert record["status"] == "passed", record


def test_non_finite_numbers_in_an_agent_toml_are_refused_with_their_key(tmp_path):
    bundle = _bundle(tmp_path, "1")
    toml = bundle / "agents" / "tool-loop-a2a" / "agent.toml"
    toml.write_text(toml.read_text() + "startup_timeout_seconds = inf\nmodel_params = {t = nan}\n")
    done = agent_env(tmp_path / "home", "check", str(bundle))
    assert done.returncode == 2, done.stdout + done.stderr
    out = done.stdout + done.stderr
    assert "agents/tool-loop-a2a/agent.toml: startup_timeout_seconds: inf is not a finite" in out
    assert "agents/tool-loop-a2a/agent.toml: model_params.t: nan is not a finite" in out
