"""A Ray head of 2 CPUs and a moto server (S3 + DynamoDB) per test session; on CI a missing
Ray or moto is a failure, never a skip."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agent_env.net import free_port
from agent_env.testing.require import require
from agentenv_aws_stores.testing import moto_endpoint_fixture

RAY = Path(sys.executable).with_name("ray")


moto_endpoint = moto_endpoint_fixture()


@pytest.fixture(scope="session")
def ray_head(tmp_path_factory):
    """`ray start --head --num-cpus 2` on a loopback port; yields its address."""
    if not RAY.exists():
        require(f"ray is not installed ({RAY} is missing): uv sync --all-packages")
    port = free_port()
    temp = tmp_path_factory.mktemp("ray")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_ENV_", "RAY_"))}
    env["RAY_USAGE_STATS_ENABLED"] = "0"
    # token auth (on by default since Ray 2.5x) is for clusters reachable by others; this
    # head listens on loopback for the tests only
    env["RAY_AUTH_MODE"] = "disabled"
    cmd = [
        str(RAY),
        "start",
        "--head",
        "--num-cpus=2",
        f"--port={port}",
        "--node-ip-address=127.0.0.1",
        "--include-dashboard=false",
        "--disable-usage-stats",
        f"--temp-dir={temp}",
    ]
    started = time.monotonic()
    # --block: `ray start` stays in the foreground and, when terminated, stops the processes
    # it started (and only those: another Ray on this machine is left alone)
    head = subprocess.Popen(
        [*cmd, "--block"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    address = f"127.0.0.1:{port}"
    try:
        _wait_until_listening(port, head)
        yield address
    finally:
        os.killpg(head.pid, signal.SIGTERM)
        try:
            head.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(head.pid, signal.SIGKILL)
            head.wait(timeout=30)
        shutil.rmtree(temp, ignore_errors=True)
        print(f"ray head up for {time.monotonic() - started:.1f}s")


def _wait_until_listening(port: int, head: subprocess.Popen, timeout: float = 180) -> None:
    import socket

    deadline = time.monotonic() + timeout
    while True:
        assert head.poll() is None, "ray start --head exited"
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            assert time.monotonic() < deadline, "the Ray head did not listen"
            time.sleep(0.25)
