"""Eight `agent-env run` processes at once on one state folder: every one passes, every record
is there (runs, task instances, each one's journal), one version of each entity, and no
"database is locked" anywhere."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from envs_helpers import AGENT_ENV, cli_env
from promise_helpers import base_bundle

PROCESSES = 8


def test_eight_runs_at_once_on_one_state_folder(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    bundle = base_bundle(tmp_path / "b")
    procs = [
        subprocess.Popen(
            [AGENT_ENV, "run", str(bundle), "--json"],
            env=cli_env(home),
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(PROCESSES)
    ]
    results = [(p, *p.communicate(timeout=300)) for p in procs]
    for proc, _out, err in results:
        assert proc.returncode == 0, err
        assert "locked" not in err and "Traceback" not in err, err
    run_ids = {json.loads(out)["run_id"] for _, out, _ in results}
    instance_ids = {json.loads(out)["tasks"][0]["id"] for _, out, _ in results}
    assert len(run_ids) == len(instance_ids) == PROCESSES

    db = sqlite3.connect(home / "documents.sqlite3")
    try:
        rows = db.execute("SELECT collection, key, doc FROM documents").fetchall()
    finally:
        db.close()
    keys: dict[str, set[str]] = {}
    for collection, key, _ in rows:
        keys.setdefault(collection, set()).add(key)
    assert keys["runs"] == run_ids
    assert keys["task_instances"] == instance_ids
    for collection, _key, doc in rows:
        if collection == "task_instances":
            assert json.loads(doc)["status"] == "passed", doc
    journal = [key.split("/")[0] for c, key, _ in rows if c == "journal"]
    assert set(journal) == instance_ids
    steps = len(json.loads(results[0][1])["tasks"][0]["steps"])
    assert len(journal) == steps * PROCESSES  # every step of every run journaled once
    entities = [k for c in keys if c.startswith("entities-") for k in keys[c]]
    assert len(entities) == len(set(entities)) and entities  # one version each, no duplicate
