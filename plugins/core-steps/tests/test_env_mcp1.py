"""An env written for the existing product (requirements `mcp>=1.25,<2`, its verifier on the
official mcp 1.x client) deploys as a local process: its requirements install in a venv next
to our protocol wheel, and its verifier passes through our gateway."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys

import pytest

from agentenv_core_steps.envs.python import satisfied

pytestmark = pytest.mark.anyio

# the existing product's echo-mcp example, as its wheel ships it (plus env.toml's command)
REQUIREMENTS = """\
# A release pins agentenv-framework-protocol to the version it was released with.
agentenv-framework-protocol==0.1.379
mcp>=1.25,<2
"""
SERVER = '''
"""The echo env: an MCP server with one tool, which returns the text it's sent."""
from typing import Annotated

from pydantic import Field

from agentenv_protocol import AgentEnvEnvironment, environment_card, tool


@environment_card(name="echo")
class EchoEnv(AgentEnvEnvironment):
    @tool(name="echo")
    def echo(self, text: Annotated[str, Field(description="The text to send back.")]) -> str:
        """Return the text it's sent."""
        return text


if __name__ == "__main__":
    EchoEnv().serve()
'''
VERIFY = '''
"""Calls the echo tool through the env's MCP endpoint and checks it sends the text back."""
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

SENT = "hello from agent-env"


async def verify(mcp_url):
    async with streamable_http_client(mcp_url) as (read, write, _):
        async with ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool("echo", {"text": SENT})
    text = "".join(getattr(part, "text", "") for part in result.content)
    return [{"id": "echoes", "result": not result.isError and text == SENT, "description": f"echo returned {text!r}"}]
'''
FILES = {
    "envs/echo/requirements.txt": REQUIREMENTS,
    "envs/echo/server.py": SERVER,
    "envs/echo/env.toml": 'command = "python server.py"\n',
    "artifacts/check_echo/verify.py": VERIFY,
}
STEPS = [
    {"id": "deploy", "type": "deploy_env", "env_id": "echo"},
    {
        "id": "check",
        "type": "env_outcome_verifier",
        "env_id": "echo",
        "file_artifact_id": "check_echo",
        "verifier_id": "echo",
    },
]


@pytest.mark.parametrize(
    "mcp_line", ["mcp>=1.25,<2", "mcp==1.25.0"], ids=["as-shipped", "our-floor"]
)
async def test_an_mcp_1_env_installs_next_to_our_protocol_wheel_and_its_verifier_passes(
    runner, tmp_path, monkeypatch, mcp_line
):
    """`our-floor` also runs our env server (agentenv_protocol.mcp_server) on mcp 1.25.0."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert not satisfied(["agentenv-framework-protocol==0.1.379"])  # so a venv is made
    files = {**FILES, "envs/echo/requirements.txt": REQUIREMENTS.replace("mcp>=1.25,<2", mcp_line)}
    record = await runner.run(STEPS, files)
    assert record["failure"] is None, (record["failure"], runner.logs.lines)
    assert runner.state["verifiers"]["echo"]["results"][0]["result"] is True
    venvs = [p for p in (tmp_path / "cache" / "agentenv" / "venvs").iterdir() if p.is_dir()]
    assert len(venvs) == 1
    python = venvs[0] / "bin" / "python"
    assert str(python) != sys.executable
    code = "import importlib.metadata as m; print(m.version('mcp'), m.version('agentenv-framework-protocol'))"
    out = subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True)
    env_mcp, env_protocol = out.stdout.split()
    assert env_mcp.split(".")[0] == "1"
    assert mcp_line != "mcp==1.25.0" or env_mcp == "1.25.0"
    assert env_protocol == importlib.metadata.version("agentenv-framework-protocol")
    assert runner.leftovers() == []
