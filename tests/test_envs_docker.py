"""Envs on Docker through the real CLI and daemon: both examples pass, the image is built once
per build context, and after a passing run, a failing run, Ctrl-C, and SIGKILL followed by
any `agent-env` command, no container, network or volume of the run is left.

Without a daemon these tests skip locally and FAIL when `CI=true` (`require_docker`).
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from envs_helpers import (
    AGENT_ENV,
    URL,
    agent_env,
    answers,
    cli_env,
    copy_example,
    nothing_left,
    start,
    wait_for,
    write,
)

BASE_IMAGE = "python:3.11-slim"


@pytest.fixture(scope="module")
def docker_client():
    from agentenv_docker_sandbox.testing import require_docker

    require_docker(BASE_IMAGE)
    import docker

    client = docker.from_env(timeout=120)
    yield client
    client.close()


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


def _ours(client, keep) -> list[str]:
    """Names of our containers, networks and volumes whose labels satisfy `keep` (plain API
    listings: no per-object inspect that could race another test's teardown)."""
    from agentenv_docker_sandbox import labels

    flt = {"label": labels.MANAGED}
    names = [
        (c.get("Names") or ["?"])[0].lstrip("/")
        for c in client.api.containers(all=True, filters=flt)
        if keep(c.get("Labels") or {})
    ]
    names += [n["Name"] for n in client.api.networks(filters=flt) if keep(n.get("Labels") or {})]
    names += [
        v["Name"]
        for v in (client.api.volumes(filters=flt).get("Volumes") or [])
        if keep(v.get("Labels") or {})
    ]
    return names


def ours(client, home: Path) -> list[str]:
    """What runs under `home` made (their lease files live there; networks and volumes carry
    the owner of those containers)."""
    from agentenv_docker_sandbox import labels

    mine = str(home)
    owners = {
        c["Labels"].get(labels.OWNER)
        for c in client.api.containers(all=True, filters={"label": labels.MANAGED})
        if (c.get("Labels") or {}).get(labels.LEASE, "").startswith(mine)
    }
    return _ours(
        client,
        lambda tags: (
            tags.get(labels.LEASE, "").startswith(mine)
            or (tags.get(labels.OWNER) in owners and labels.LEASE not in tags)
        ),
    )


def owned_by(client, pid: int) -> list[str]:
    from agentenv_docker_sandbox import labels

    return _ours(client, lambda tags: (tags.get(labels.OWNER) or "").startswith(f"{pid}:"))


@pytest.mark.parametrize("example", ["echo-docker", "notes-local"])
def test_example_passes_on_docker_and_leaves_nothing(example, docker_client, home, tmp_path):
    bundle = copy_example(example, tmp_path / example)
    done = agent_env(home, "run", str(bundle), "--sandbox", "docker", timeout=1200)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "passed" in done.stdout
    [(provider, url)] = URL.findall(done.stderr)
    assert provider == "docker"
    assert not answers(url)
    assert ours(docker_client, home) == []
    nothing_left(home)


def test_the_second_deploy_of_the_same_env_builds_nothing(docker_client, home, tmp_path):
    bundle = copy_example("echo-docker", tmp_path / "echo")
    first = agent_env(home, "run", str(bundle), "--sandbox", "docker", timeout=1200)
    assert first.returncode == 0, first.stderr
    second = agent_env(home, "run", str(bundle), "--sandbox", "docker", timeout=600)
    assert second.returncode == 0, second.stderr
    assert "reused (same build context)" in second.stderr
    assert " built in " not in second.stderr
    # a change no earlier run on this machine made: content-addressed images outlive test runs
    (bundle / "envs/echo/server.py").write_text(
        (bundle / "envs/echo/server.py").read_text() + f"\n# changed {uuid.uuid4().hex}\n"
    )
    third = agent_env(home, "run", str(bundle), "--sandbox", "docker", timeout=1200)
    assert third.returncode == 0, third.stderr
    assert " built in " in third.stderr


def test_a_failed_build_shows_its_log_and_leaves_nothing(docker_client, home, tmp_path):
    bundle = write(
        tmp_path / "b",
        {
            "envs/e/Dockerfile": f"FROM {BASE_IMAGE}\nRUN echo build-marker-42 && exit 7\n",
            "tasks/t.json": [{"id": "deploy", "type": "deploy_env", "env_id": "e"}],
        },
    )
    done = agent_env(home, "run", str(bundle), "--sandbox", "docker")
    out = done.stdout + done.stderr
    assert done.returncode == 1
    assert "build-marker-42" in out
    assert ours(docker_client, home) == []


def failing_bundle(tmp_path: Path, verify: str) -> Path:
    bundle = copy_example("echo-docker", tmp_path / "echo")
    write(bundle, {"artifacts/check_echo/check_echo.py": verify})
    return bundle


def test_a_failing_run_leaves_nothing(docker_client, home, tmp_path):
    bundle = failing_bundle(
        tmp_path, "def verify(mcp_url):\n    raise RuntimeError('verifier broke')\n"
    )
    done = agent_env(home, "run", str(bundle), "--sandbox", "docker", timeout=1200)
    assert done.returncode == 1
    assert "verifier broke" in done.stdout + done.stderr
    assert ours(docker_client, home) == []
    nothing_left(home)


SLOW_VERIFY = """
import time
def verify(mcp_url):
    time.sleep(300)
    return []
"""


def _start_and_wait_for_deploy(docker_client, home, tmp_path):
    """Start a run whose verifier sleeps; return once deploy_env finished (its log line)."""
    bundle = failing_bundle(tmp_path, SLOW_VERIFY)
    log = tmp_path / "stderr.txt"
    with open(log, "w") as err:
        proc = subprocess.Popen(
            [AGENT_ENV, "run", str(bundle), "--sandbox", "docker"],
            env=cli_env(home),
            cwd=tmp_path,
            stdout=subprocess.DEVNULL,
            stderr=err,
            text=True,
        )
    wait_for(
        lambda: "deploy: ok" in log.read_text() or proc.poll() is not None,
        timeout=1200,
        what="deploy_env to finish",
    )
    assert proc.poll() is None, log.read_text()
    assert owned_by(docker_client, proc.pid)
    return proc


def test_ctrl_c_tears_the_env_down(docker_client, home, tmp_path):
    proc = _start_and_wait_for_deploy(docker_client, home, tmp_path)
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=120)
    assert proc.returncode == 130
    assert owned_by(docker_client, proc.pid) == []
    assert ours(docker_client, home) == []
    nothing_left(home)


def test_sigkill_then_any_command_reaps_the_env(docker_client, home, tmp_path, monkeypatch):
    monkeypatch.setenv("AGENT_ENV_WATCHDOG", "0")  # the next command reaps, not the watchdog
    proc = _start_and_wait_for_deploy(docker_client, home, tmp_path)
    proc.kill()
    proc.wait(timeout=60)
    assert owned_by(docker_client, proc.pid), "the container should outlive a SIGKILLed runner"
    done = agent_env(home, "config", "show")
    assert done.returncode == 0, done.stderr
    assert owned_by(docker_client, proc.pid) == []
    assert ours(docker_client, home) == []
    nothing_left(home)


def test_env_limits_are_enforced_on_docker(docker_client, home, tmp_path):
    bundle = copy_example("echo-docker", tmp_path / "echo")
    steps = json.loads((bundle / "tasks/echo.json").read_text())
    steps[0]["memory_mb"] = 256
    write(bundle, {"tasks/echo.json": steps})
    proc = start(home, "run", str(bundle), "--sandbox", "docker")
    seen: list[int] = []

    def limited() -> bool:
        for name in owned_by(docker_client, proc.pid):
            try:
                seen.append(docker_client.api.inspect_container(name)["HostConfig"]["Memory"])
            except Exception:  # noqa: BLE001
                continue
        return bool(seen) or proc.poll() is not None

    wait_for(limited, timeout=1200, what="the env container")
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, out + err
    assert seen and seen[0] == 256 * 1024 * 1024


def test_an_env_container_that_exits_fails_fast_with_its_log(docker_client, home, tmp_path):
    bundle = write(
        tmp_path / "b",
        {
            "envs/e/env.toml": 'command = "python server.py"\nstartup_timeout_seconds = 300\n',
            "envs/e/server.py": "import sys\nprint('container-boom-marker', flush=True)\nsys.exit(4)\n",
            "tasks/t.json": [{"id": "deploy", "type": "deploy_env", "env_id": "e"}],
        },
    )
    done = agent_env(home, "run", str(bundle), "--sandbox", "docker", timeout=1200)
    out = done.stdout + done.stderr
    assert done.returncode == 1
    assert "exited with code 4" in out
    assert "container-boom-marker" in out
    assert ours(docker_client, home) == []


def test_a_time_trigger_delivers_on_docker_and_the_ledger_says_so(docker_client, home, tmp_path):
    # the env in its container stamps mail with the gateway's virtual clock: the clock URL it is
    # handed must be one the container reaches (it was the host's loopback: the trigger's
    # delivery failed and the agent waited for mail that never came)
    bundle = copy_example("mail-triggers", tmp_path / "mail-triggers")
    done = agent_env(home, "run", str(bundle), "--sandbox", "docker", timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "passed (answered-in-hours: 1)" in done.stdout
    (instance,) = set(re.findall(r"ti-[0-9a-f-]+", done.stdout))
    shown = agent_env(home, "runs", "show", instance)
    assert shown.returncode == 0, shown.stderr
    assert "trigger customer-email: fired, fired 1x" in shown.stdout
    # each event carries its virtual time: the delivery came after the 13:05Z mark
    (delivered,) = re.findall(r"(\S+)  customer-email action_ok deliver_email", shown.stdout)
    assert "2026-03-09T13:05:00Z" <= delivered < "2026-03-09T14:00:00Z"
    assert ours(docker_client, home) == []
