"""Helpers for the computer-driver tests: hold an env deployed on docker with `agent-env env
deploy` (torn down with Ctrl-C, checked) and call its MCP tools."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from agents_support import AGENT_ENV, agent_env


def held_deploy(home: Path, bundle: Path, env_id: str) -> Iterator[dict[str, Any]]:
    """Store `bundle`'s envs, deploy `env_id` on docker and yield `env deploy --json`'s answer;
    Ctrl-C tears it down (checked) when the caller is done."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_ENV_")}
    env["AGENT_ENV_HOME"] = str(home)
    put = agent_env(home, "env", "put", str(bundle))
    assert put.returncode == 0, put.stdout + put.stderr
    proc = subprocess.Popen(
        [str(AGENT_ENV), "env", "deploy", "--id", env_id, "--sandbox", "docker", "--json"],
        env=env,
        cwd=home.parent,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        text = ""
        while proc.poll() is None:
            line = proc.stdout.readline() if proc.stdout else ""
            text += line
            if line.startswith("}"):
                break
        if not text.strip().endswith("}"):
            pytest.fail(f"env deploy did not come up:\n{text}\n{proc.stderr.read()[-4000:]}")
        yield json.loads(text)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=90) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)


async def call(url: str, tool: str, arguments: dict[str, Any] | None = None) -> Any:
    """One MCP tool call on the env's own server: its result."""
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with (
        streamable_http_client(url + "/mcp") as (read, write, _),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        return await session.call_tool(tool, arguments or {})


def use(url: str, tool: str, arguments: dict[str, Any] | None = None) -> Any:
    return anyio.run(call, url, tool, arguments)
