"""`agent-env run --sandbox docker` end to end: after a passing run, a failing run and a
Ctrl-C in the middle of a step, no container or network of ours is left."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from agentenv_docker_sandbox.testing import ours


def _task(verify_cmd: str) -> list[dict]:
    return [
        {"id": "box", "type": "deploy_sandbox", "sandbox_name": "box", "sandbox_mode": "vm"},
        {
            "id": "verify",
            "type": "verify_sandbox",
            "sandbox_name": "box",
            "verifier_id": "v",
            "criteria": [
                {
                    "id": "c",
                    "type": "bash_cmd_succeeds",
                    "criterion": "runs",
                    "bash_cmd": verify_cmd,
                }
            ],
        },
    ]


@pytest.fixture
def bundle(tmp_path):
    folder = tmp_path / "bundle"
    (folder / "tasks").mkdir(parents=True)
    (folder / "README.md").write_text("Docker teardown checks.\n")
    for name, cmd in {"passes": "test -d /app", "fails": "false", "slow": "sleep 120"}.items():
        (folder / "tasks" / f"{name}.json").write_text(json.dumps(_task(cmd)))
    return folder


def agent_env(home, *args, **kw):
    cli = os.path.join(os.path.dirname(sys.executable), "agent-env")
    env = {**os.environ, "AGENT_ENV_HOME": str(home)}
    return subprocess.Popen(
        [cli, *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw
    )


@pytest.mark.parametrize(("task", "code"), [("passes", 0), ("fails", 1)])
def test_finished_runs_leave_nothing(docker_client, bundle, tmp_path, task, code):
    proc = agent_env(tmp_path / "home", "run", str(bundle), "--task", task, "--sandbox", "docker")
    out, err = proc.communicate(timeout=180)
    assert proc.returncode == code, err
    assert ours(docker_client, home=tmp_path / "home") == []


def test_ctrl_c_during_a_step_tears_the_container_down(docker_client, bundle, tmp_path):
    proc = agent_env(tmp_path / "home", "run", str(bundle), "--task", "slow", "--sandbox", "docker")
    try:
        deadline = time.monotonic() + 60
        while not ours(docker_client, home=tmp_path / "home"):
            assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()[1]
            time.sleep(0.1)
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert ours(docker_client, home=tmp_path / "home") == []
