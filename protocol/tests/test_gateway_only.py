"""Env servers started with an env secret (`AGENTENV_ENV_SECRET`) answer only requests that
carry it, whichever way the env is served (`serve()`, or `mount()` on the author's own FastMCP
app); the card and `/healthz` stay open; a gateway given the secret forwards tool calls, the
data plane and extensions. Real env processes and sockets."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import httpx
import pytest

from agentenv_protocol.gateway import Gateway, serve_gateway
from agentenv_protocol.types import ENV_SECRET_ENV, ENV_SECRET_HEADER

SECRET = "s3cr3t-for-this-env"
MCP_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
BODY = """
from agentenv_protocol import AgentEnvEnvironment, environment_card, extension, get_data, tool
from agentenv_protocol.types import DataPart


@environment_card(name="guarded")
class Guarded(AgentEnvEnvironment):
    @tool()
    def add(self, a: int, b: int) -> int:
        \"\"\"Add two numbers.\"\"\"
        return a + b

    @get_data
    def export(self) -> list:
        return [DataPart(data={"n": 1})]

    @extension("urn:test:ping/v1", method="GET")
    def ping(self) -> dict:
        return {"pong": True}
"""
SERVED = BODY + "\nGuarded().serve()\n"
MOUNTED = BODY + textwrap.dedent(
    """
    import os
    from mcp.server.fastmcp import FastMCP

    app = FastMCP("guarded", host="127.0.0.1", port=int(os.environ["MCP_PORT"]))
    app.settings.transport_security.enable_dns_rebinding_protection = False
    env = Guarded()
    env.mount(app)
    env.serve()
    """
)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(params=["served", "mounted"])
def guarded(request, tmp_path):
    script = tmp_path / "env.py"
    script.write_text(SERVED if request.param == "served" else MOUNTED)
    port = _free_port()
    env = {**os.environ, "MCP_HOST": "127.0.0.1", "MCP_PORT": str(port), ENV_SECRET_ENV: SECRET}
    proc = subprocess.Popen([sys.executable, str(script)], env=env, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            if httpx.get(url + "/.well-known/agent-env.json", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
        assert time.monotonic() < deadline, "the env did not start"
        time.sleep(0.05)
    yield url, request.param
    proc.terminate()
    proc.wait(10)


def _list(url: str, headers: dict) -> httpx.Response:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    return httpx.post(url, json=body, headers={**MCP_HEADERS, **headers}, timeout=10)


def test_only_requests_with_the_secret_get_in(guarded):
    guarded, style = guarded
    card = httpx.get(guarded + "/.well-known/agent-env.json", timeout=5)
    assert card.status_code == 200
    mcp_path = next(
        (i["url"] for i in card.json()["additionalInterfaces"] if i["transport"] == "mcp"), "/mcp"
    )
    refused = _list(guarded + mcp_path, {})
    assert refused.status_code == 401
    assert refused.json()["error"]["data"] == {"code": "unauthorized"}
    assert _list(guarded + mcp_path, {ENV_SECRET_HEADER: "wrong"}).status_code == 401
    data = {"jsonrpc": "2.0", "id": 2, "method": "data/get", "params": {}}
    assert httpx.post(guarded + "/agentenv", json=data, timeout=5).status_code == 401
    ext = next(
        e for e in card.json()["capabilities"]["extensions"] if e["uri"] == "urn:test:ping/v1"
    )
    ext_url = guarded + ext["params"]["endpoint"]
    assert httpx.get(ext_url, timeout=5).status_code == 401
    right = {ENV_SECRET_HEADER: SECRET}
    let_in = _list(guarded + mcp_path, right)
    if style == "served":
        assert [t["name"] for t in let_in.json()["result"]["tools"]] == ["add"]
    else:  # FastMCP's own transport wants a session first: past the guard, not refused by it
        assert let_in.status_code != 401, let_in.text
    assert httpx.post(guarded + "/agentenv", json=data, headers=right, timeout=5).status_code == 200
    assert httpx.get(ext_url, headers=right, timeout=5).json() == {"pong": True}


def test_a_gateway_given_the_secret_forwards_everything(guarded):
    import anyio

    guarded, _ = guarded
    gateway = Gateway({})
    server = serve_gateway(gateway)
    try:
        anyio.run(gateway.add_env, "guarded", guarded, SECRET)
        admin = {"authorization": f"Bearer {server.admin_token}"}
        call = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "add", "arguments": {"a": 2, "b": 3}},
        }
        answer = httpx.post(
            server.mcp_url, json=call, headers={**MCP_HEADERS, **admin}, timeout=10
        ).json()
        assert answer["result"]["structuredContent"] == {"result": 5}
        data = {"jsonrpc": "2.0", "id": 2, "method": "data/get", "params": {}}
        proxied = httpx.post(
            server.url + "/svc/guarded/agentenv", json=data, headers=admin, timeout=10
        )
        assert proxied.status_code == 200 and "result" in proxied.json()
    finally:
        server.stop()


def test_a_gateway_without_the_secret_cannot_front_the_env(guarded):
    import anyio

    from agentenv_protocol.gateway.errors import GatewayError

    guarded, _ = guarded
    with pytest.raises(GatewayError, match="guarded"):
        anyio.run(Gateway({}).add_env, "guarded", guarded)
