"""Trial logs: an env server's output is kept with its trial in the object store (bounded)
and shown by `runs show`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from envs_helpers import agent_env, copy_example, env_bundle

from agent_env.engine.trial_logs import MAX_BYTES, bounded, log_key


def _instance_id(stdout: str) -> str:
    return next(w for w in stdout.split() if w.startswith("ti-"))


def test_env_output_is_kept_and_shown_by_runs_show(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    bundle = copy_example("notes-local", tmp_path / "notes")
    done = agent_env(home, "run", str(bundle), "--sandbox", "local")
    assert done.returncode == 0, done.stderr
    iid = _instance_id(done.stdout)
    shown = agent_env(home, "runs", "show", iid)
    assert shown.returncode == 0, shown.stderr
    assert "log env_notes:" in shown.stdout
    assert "serving 'notes'" in shown.stdout
    data = json.loads(agent_env(home, "runs", "show", iid, "--json").stdout)
    assert "serving 'notes'" in data["logs"]["env_notes"]
    assert (home / "objects" / log_key(iid, "env:notes")).is_file()


def test_a_server_that_exits_keeps_its_last_words(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    bundle = env_bundle(
        tmp_path / "b",
        'command = "python server.py"\n',
        server="import sys\nprint('boom-marker: bad config', flush=True)\nsys.exit(3)\n",
    )
    done = agent_env(home, "run", str(bundle), "--sandbox", "local")
    assert done.returncode == 1
    iid = _instance_id(done.stdout)
    data = json.loads(agent_env(home, "runs", "show", iid, "--json").stdout)
    assert any("boom-marker: bad config" in text for text in data["logs"].values())


def test_bounded_keeps_the_tail_and_says_what_was_dropped() -> None:
    text = "".join(f"line {i}\n" for i in range(100_000))
    kept = bounded(text)
    assert len(kept.encode()) < MAX_BYTES + 100
    assert kept.endswith("line 99999\n")
    assert kept.startswith("[... ") and "earlier bytes dropped" in kept.splitlines()[0]
    assert bounded("short\n") == "short\n"
