"""A killed controller leaves nothing running: after SIGKILL of `agent-env run` mid-step, the
run's local sandbox processes and Docker containers end within 5 s, with no other command run
in between (the per-run watchdog, `agent_env.sandboxes.watchdog`; a local command run under
bwrap dies with the controller itself, `--die-with-parent`, and needs no watchdog).

The Docker case skips locally without a daemon and fails on CI (`require_docker`)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from envs_helpers import AGENT_ENV, cli_env, wait_for, write

GRACE = 5.0
DOCKER_IMAGE = "python:3.11-slim"


def slow_task(**sandbox: str) -> list:
    return [
        {
            "id": "box",
            "type": "deploy_sandbox",
            "sandbox_name": "box",
            "sandbox_mode": "vm",
            **sandbox,
        },
        {
            "id": "wait",
            "type": "verify_sandbox",
            "sandbox_name": "box",
            "verifier_id": "wait",
            "criteria": [
                {"id": "w", "type": "bash_cmd_succeeds", "bash_cmd": "sleep 300 & sleep 300"}
            ],
        },
    ]


def start_run(home: Path, bundle: Path) -> tuple[subprocess.Popen, Path]:
    log = home.parent / "run.log"
    env = {k: v for k, v in cli_env(home).items() if k != "AGENT_ENV_WATCHDOG"}
    with log.open("w") as out:
        proc = subprocess.Popen(
            [AGENT_ENV, "run", str(bundle)],
            env=env,
            cwd=home.parent,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    return proc, log


def marked(home: Path) -> list[int]:
    """Pids of processes started by a local sandbox whose folder is under `home`."""
    from agent_env.sandboxes import procs

    folders = (
        {p.name for p in (home / "sandboxes").glob("*")} if (home / "sandboxes").exists() else set()
    )
    return [
        pid
        for value, pids in procs.env_values("AGENTENV_SANDBOX").items()
        if value in folders
        for pid in pids
    ]


def nothing_leased(home: Path) -> bool:
    """No lease left: the reaper finished (it drops a lease after the teardown)."""
    return not list((home / "leases").iterdir())


def kill_and_time(proc: subprocess.Popen, gone) -> float:
    """SIGKILL the controller; seconds until `gone()` holds (AssertionError after `GRACE`)."""
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    killed = time.monotonic()
    while not gone():
        assert time.monotonic() - killed < GRACE, "the run's sandboxes outlived it by 5 s"
        time.sleep(0.05)
    return time.monotonic() - killed


def test_sigkill_of_a_local_run_ends_its_processes_within_seconds(tmp_path):
    """The command runs under bwrap bound to the controller: it ends with it, no watchdog
    runs, and the folder it leaves (nothing runs in it) is the next command's reaper's."""
    from agent_env.sandboxes.watchdog import supervisor_pids

    home = tmp_path / "home"
    home.mkdir()
    bundle = write(tmp_path / "b", {"tasks/slow.json": slow_task()})
    proc, log = start_run(home, bundle)
    try:
        wait_for(lambda: len(marked(home)) >= 3 or proc.poll() is not None, 60, "the step")
        assert proc.poll() is None, log.read_text()
        assert supervisor_pids(proc.pid) == [], "a bound command needs no watchdog"
        running = marked(home)
        seconds = kill_and_time(proc, lambda: not marked(home))
    finally:
        if proc.poll() is None:
            proc.kill()
    print(f"{len(running)} sandbox processes gone {seconds:.2f}s after the SIGKILL")
    reaped = subprocess.run(  # local sandboxes only: the inner loop has no Docker daemon
        [AGENT_ENV, "--disable-plugin", "docker-sandbox", "sandbox", "prune"],
        env=cli_env(home),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert reaped.returncode == 0, reaped.stderr
    assert nothing_leased(home)
    assert not [p for p in (home / "sandboxes").iterdir() if not p.name.startswith(".")]


@pytest.mark.docker
def test_sigkill_of_a_docker_run_removes_its_container_within_seconds(tmp_path):
    from agentenv_docker_sandbox.testing import ours, require_docker

    require_docker(DOCKER_IMAGE)
    import docker

    client = docker.from_env(timeout=120)
    home = tmp_path / "home"
    home.mkdir()
    task = slow_task(sandbox_type="docker", image=DOCKER_IMAGE)
    bundle = write(tmp_path / "b", {"tasks/slow.json": task})
    proc, log = start_run(home, bundle)
    try:
        wait_for(
            lambda: "[slow] box: ok" in log.read_text() or proc.poll() is not None, 120, "deploy"
        )
        assert proc.poll() is None, log.read_text()
        assert ours(client, home=home), "the run's container should be up"
        seconds = kill_and_time(
            proc, lambda: ours(client, home=home) == [] and nothing_leased(home)
        )
    finally:
        if proc.poll() is None:
            proc.kill()
        client.close()
    print(f"container gone {seconds:.2f}s after the SIGKILL")


def test_a_clean_run_leaves_no_watchdog_behind(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    bundle = write(tmp_path / "b", {"tasks/quick.json": slow_task()[:1]})
    proc = subprocess.Popen(
        [AGENT_ENV, "run", str(bundle), "--json"],
        env=cli_env(home),
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert json.loads(out)["tasks"][0]["status"] == "unscored"  # no verifier: deploys only
    from agent_env.sandboxes.watchdog import supervisor_pids

    wait_for(lambda: not supervisor_pids(proc.pid), 10, "the watchdog to exit")


def test_the_watchdog_can_be_switched_off(tmp_path):
    """`AGENT_ENV_WATCHDOG=0`: the sandboxes of a killed run wait for the next command (or a
    `--resume` that adopts them), as the reaper and resume tests rely on."""
    home = tmp_path / "home"
    home.mkdir()
    bundle = write(tmp_path / "b", {"tasks/slow.json": slow_task()})
    env = {**cli_env(home), "AGENT_ENV_WATCHDOG": "0"}
    proc = subprocess.Popen(
        [AGENT_ENV, "run", str(bundle)],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for(lambda: len(marked(home)) >= 3 or proc.poll() is not None, 60, "the step")
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        time.sleep(2)
        assert marked(home), "without the watchdog the sandbox outlives its run"
        reaped = subprocess.run(
            [AGENT_ENV, "sandbox", "prune"],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert reaped.returncode == 0, reaped.stderr
        wait_for(lambda: not marked(home), 10, "prune to end the processes")
    finally:
        if proc.poll() is None:
            proc.kill()
