"""Fixtures: example envs as real processes, and in-thread servers for the SDK tests."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import httpx
import pytest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class EnvProcess:
    """An example env started with `python -m agentenv_protocol.examples.<module>`."""

    def __init__(self, module: str, name: str | None = None, extra_env: dict | None = None) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {
            **os.environ,
            "MCP_HOST": "127.0.0.1",
            "MCP_PORT": str(self.port),
            **(extra_env or {}),
        }
        if name:
            env["ENVIRONMENT_NAME"] = name
        self.proc = subprocess.Popen(
            [sys.executable, "-m", f"agentenv_protocol.examples.{module}"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(self.url + "/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if self.proc.poll() is not None:
                raise RuntimeError(f"{module} exited: {self.proc.stderr.read().decode()[-2000:]}")
            if time.monotonic() > deadline:
                self.stop()
                raise TimeoutError(f"{module} did not become ready")
            time.sleep(0.05)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


@pytest.fixture(scope="module")
def shared_envs():
    """An echo and a notes env shared by a module's tests (tests must not stop them)."""
    envs = {"echo": EnvProcess("echo"), "notes": EnvProcess("notes")}
    yield envs
    for proc in envs.values():
        proc.stop()


@pytest.fixture
def spawn_env():
    started: list[EnvProcess] = []

    def spawn(module: str, name: str | None = None, **extra_env: str) -> EnvProcess:
        proc = EnvProcess(module, name, extra_env)
        started.append(proc)
        return proc

    yield spawn
    for proc in started:
        proc.stop()


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture(scope="module")
def s3():
    """moto's S3 API on a loopback port: a boto3 client (`.client`) and an empty bucket
    (`.bucket`), the object store that grants (presigned URLs and POST policies) point at."""
    from types import SimpleNamespace

    import boto3
    from moto.server import ThreadedMotoServer

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    client = boto3.client(
        "s3",
        endpoint_url=f"http://127.0.0.1:{port}",
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    client.create_bucket(Bucket="grants")
    try:
        yield SimpleNamespace(client=client, bucket="grants")
    finally:
        server.stop()
