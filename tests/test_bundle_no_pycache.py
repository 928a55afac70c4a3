"""Running a bundle leaves its folders as they were: the verifier an `env_outcome_verifier`
imports in the runner's process writes no `__pycache__` beside it.
This machine sets PYTHONDONTWRITEBYTECODE=1, which would hide the problem, so the run's
environment drops it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from envs_helpers import AGENT_ENV, cli_env, copy_example  # noqa: E402


def test_a_run_writes_no_pycache_into_the_bundle(tmp_path):
    bundle = copy_example("mail-triggers", tmp_path / "bundle")
    assert list(bundle.glob("artifacts/*/*.py")), "the example has a Python verifier"
    env = {k: v for k, v in cli_env(tmp_path / "home").items() if k != "PYTHONDONTWRITEBYTECODE"}

    done = subprocess.run(
        [AGENT_ENV, "run", str(bundle)], env=env, capture_output=True, text=True, timeout=300
    )

    assert done.returncode == 0, done.stderr[-2000:]
    assert "passed" in done.stdout
    assert sorted(p.relative_to(bundle).as_posix() for p in bundle.rglob("__pycache__")) == []
