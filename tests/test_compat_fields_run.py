"""A bundle in the existing product's format runs through the real CLI: a step field that is
accepted for compatibility is warned about once (not once per task or trial) and the run
proceeds; tasks name the env by an `aliases.toml` `[envs]` alias."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from envs_helpers import agent_env, copy_example, nothing_left


def test_compat_ignored_field_warns_once_and_the_run_passes(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    bundle = copy_example("notes-local", tmp_path / "notes")
    (bundle / "aliases.toml").write_text('[envs]\nnotes = ["notes", "memo"]\n')
    steps = [
        {"id": "deploy", "type": "deploy_env", "env_id": "memo"},
        {"id": "reset", "type": "reset_env", "env_id": "memo"},
        {"id": "check", "type": "env_outcome_verifier", "env_id": "memo",
         "file_artifact_id": "check_notes", "verifier_id": "notes-work", "prompt_id": "p1"},
    ]  # fmt: skip
    (bundle / "tasks/notes.json").write_text(json.dumps(steps))
    (bundle / "tasks/again.json").write_text(json.dumps(steps))
    done = agent_env(home, "run", str(bundle), "--sandbox", "local", "--trials", "2")
    assert done.returncode == 0, done.stderr
    assert "passed" in done.stdout
    warning = "'prompt_id' is accepted for compatibility and ignored"
    assert done.stderr.count(warning) == 1, done.stderr
    assert "tasks/again.json step 'check': prompt_id" in done.stderr
    nothing_left(home)
