"""The docker provider against a Docker-API daemon on another "machine": podman's
Docker-compatible service on a loopback TCP port, with its own storage (so nothing is shared
with the local dockerd but what we load into it). Images are built there, ports are reached
there, and a controller killed mid-run leaves containers that `sandbox prune` removes."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from agent_env.net import free_port
from agent_env.testing.require import require
from agentenv_testing.stores import AGENT_ENV, run_agent_env

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
BASE = "python:3.11-slim"


@pytest.fixture(scope="module")
def podman(tmp_path_factory):
    """`podman system service` on 127.0.0.1:<port>; yields (base_url, podman argv prefix)."""
    exe = shutil.which("podman")
    if exe is None:
        require("podman is not installed (scripts/services.d/podman.sh installs it)")
    if subprocess.run(["docker", "image", "inspect", BASE], capture_output=True).returncode:
        require(f"the local Docker daemon has no {BASE} image (scripts/services.sh builds it)")
    root = tmp_path_factory.mktemp("podman")
    conf = root / "containers.conf"
    # this machine withholds cap_sys_resource: podman's default ulimits cannot be applied
    conf.write_text("[containers]\ndefault_ulimits = []\n")
    env = {**os.environ, "CONTAINERS_CONF": str(conf)}
    argv = [exe, "--root", str(root / "root"), "--runroot", str(root / "run")]
    load = subprocess.run(
        f"docker save {BASE} | {' '.join(argv)} load",
        shell=True,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert load.returncode == 0, load.stderr
    port = free_port()
    service = subprocess.Popen(
        [*argv, "system", "service", "--time=0", f"tcp:127.0.0.1:{port}"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    import httpx

    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/_ping", timeout=2).text == "OK":
                break
        except httpx.HTTPError:
            pass
        assert time.monotonic() < deadline, "podman's API service did not answer"
        time.sleep(0.2)

    def podman_cmd(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([*argv, *args], env=env, capture_output=True, text=True, timeout=120)

    try:
        yield f"tcp://127.0.0.1:{port}", podman_cmd
    finally:
        podman_cmd("rm", "-af")
        os.killpg(service.pid, signal.SIGTERM)
        service.wait(timeout=30)
        podman_cmd("system", "reset", "-f")
        # podman bind-mounts its overlay folder onto itself and leaves the mount behind:
        # unmounted, pytest can remove the folder (else it warns every later session)
        overlay = root / "root" / "overlay"
        if os.path.ismount(overlay):
            subprocess.run(["umount", str(overlay)], capture_output=True, timeout=30)


def _ours(podman_cmd) -> list[dict]:
    out = podman_cmd("ps", "-a", "--filter", "label=io.agentenv.owner", "--format", "json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout or "[]")


def _config(tmp_path: Path, base_url: str) -> Path:
    config = tmp_path / "config.toml"
    config.write_text(f'[sandbox.docker]\nbase_url = "{base_url}"\n')
    return config


def test_echo_docker_runs_on_the_remote_docker_host_and_leaves_nothing(tmp_path, podman):
    base_url, podman_cmd = podman
    config = _config(tmp_path, base_url)
    proc = run_agent_env(
        tmp_path / "home",
        config,
        "run",
        str(EXAMPLES / "echo-docker"),
        "--sandbox",
        "docker",
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "passed" in proc.stdout
    # the env's image was built by the remote daemon, and nothing of the run is left there
    images = podman_cmd("images", "--format", "{{.Repository}}")
    assert "agentenv/env-echo" in images.stdout
    assert _ours(podman_cmd) == []


def test_a_killed_controller_leaves_containers_that_sandbox_prune_removes(tmp_path, podman):
    base_url, podman_cmd = podman
    config = _config(tmp_path, base_url)
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_ENV_")}
    # no watchdog: this is the case of a controller whose supervisor died with it
    env.update(
        AGENT_ENV_HOME=str(tmp_path / "home"), AGENT_ENV_CONFIG=str(config), AGENT_ENV_WATCHDOG="0"
    )
    proc = subprocess.Popen(
        [str(AGENT_ENV), "run", str(EXAMPLES / "echo-docker"), "--sandbox", "docker", "--keep"],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 300
        while not _ours(podman_cmd):
            assert proc.poll() is None, proc.stderr.read()
            assert time.monotonic() < deadline, "no container appeared on the remote host"
            time.sleep(0.5)
        time.sleep(1)
    finally:
        proc.kill()
        proc.wait(timeout=30)
    assert _ours(podman_cmd), "the killed run's container should still be there"
    pruned = run_agent_env(tmp_path / "home", config, "sandbox", "prune", "--json")
    assert pruned.returncode == 0, pruned.stderr
    assert json.loads(pruned.stdout)["removed"], pruned.stdout
    assert _ours(podman_cmd) == []


def test_a_time_trigger_delivers_on_the_remote_docker_host(tmp_path, podman):
    # the env on the other "machine" reaches the gateway's clock through the instance's relay
    base_url, podman_cmd = podman
    proc = run_agent_env(
        tmp_path / "home",
        _config(tmp_path, base_url),
        "run",
        str(EXAMPLES / "mail-triggers"),
        "--sandbox",
        "docker",
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert "passed (answered-in-hours: 1)" in proc.stdout
    assert _ours(podman_cmd) == []
