"""Failure classes produced for real: a trial that fails because the Docker daemon cannot be
reached is `infrastructure` (not `env`), is excluded from the pass rate and is re-run by
`--retry-infra`. The command runs as a user runs it: the installed `agent-env` in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def agent_env(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).with_name("agent-env")
    return subprocess.run(
        [str(exe), *args],
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, "AGENT_ENV_HOME": str(home), **env},
    )


def test_docker_daemon_down_is_infrastructure_excluded_and_retried(tmp_path):
    down = {"DOCKER_HOST": f"unix://{tmp_path}/no-docker.sock"}
    args = ("run", "hello", "--sandbox", "docker", "--trials", "2")
    result = agent_env(tmp_path / "home", *args, "--retry-infra", "1", "--json", **down)
    assert result.returncode == 1, result.stderr
    assert "cannot reach the Docker daemon" in result.stderr
    data = json.loads(result.stdout)
    [task] = data["results"]["tasks"]
    assert task["trials"] == 0 and task["passed"] == 0
    assert task["excluded"] == {"infrastructure": 2}
    # each trial ran twice: the first attempt and one --retry-infra re-run
    assert sorted(r["id"][-3:] for r in data["tasks"]) == ["-r1", "-r1"]
    assert {r["failure_class"] for r in data["tasks"]} == {"infrastructure"}

    plain = agent_env(tmp_path / "home", *args, **down)
    assert plain.returncode == 1
    assert "not passed: hello: infrastructure 2 (excluded)" in plain.stdout
    assert "env 2" not in plain.stdout
