"""The gateway end to end: two example envs as real processes, driven with the official mcp client."""

from __future__ import annotations

import contextlib
import json
import time

import httpx
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from agentenv_protocol.gateway import Gateway, GatewayError, serve_gateway

pytestmark = pytest.mark.anyio


@contextlib.asynccontextmanager
async def mcp_client(url: str, token: str | None, role: str | None = None):
    """An initialized official mcp (1.x) ClientSession to `url`."""
    headers = {}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    if role:
        headers["AgentEnv-Role"] = role
    async with (
        httpx.AsyncClient(headers=headers, timeout=httpx.Timeout(30.0)) as http,
        streamable_http_client(url, http_client=http) as (read, write, _),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def texts(result) -> str:
    return "\n".join(c.text for c in result.content)


def start_gateway(envs, tmp_path):
    gateway = Gateway(
        {name: proc.url for name, proc in envs.items()},
        trajectory=tmp_path / "calls.jsonl",
        secrets=["hunter2"],
        call_timeout=10,
    )
    return gateway, serve_gateway(gateway)


@pytest.fixture
def running(shared_envs, tmp_path):
    httpx.post(
        shared_envs["notes"].url + "/agentenv",
        json={"jsonrpc": "2.0", "id": 0, "method": "data/reset"},
    )
    gateway, server = start_gateway(shared_envs, tmp_path)
    yield gateway, server
    server.stop()


@pytest.fixture
def own_envs(spawn_env):
    return {"echo": spawn_env("echo"), "notes": spawn_env("notes")}


@pytest.fixture
def running_own(own_envs, tmp_path):
    gateway, server = start_gateway(own_envs, tmp_path)
    yield gateway, server
    server.stop()


async def test_union_of_tools_and_routed_calls(running):
    gateway, server = running
    alice = gateway.issue_token("alice")
    for round_ in ("first", "again"):
        async with mcp_client(server.mcp_url, alice) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            assert sorted(names) == [
                "add",
                "add_note",
                "echo",
                "fail",
                "list_notes",
                "read_note",
                "whoami",
            ]
            assert texts(await client.call_tool("echo", {"text": "hi"})) == "hi"
            who = await client.call_tool("whoami", {})
            assert who.structuredContent["role"] == "alice" and who.structuredContent[
                "session"
            ].startswith("s-")
            created = await client.call_tool("add_note", {"title": f"t-{round_}", "body": "b"})
            assert not created.isError
            note = await client.call_tool("read_note", {"title": f"t-{round_}"})
            assert note.structuredContent["author"] == "alice"
            failed = await client.call_tool("fail", {"code": "nope", "message": "on purpose"})
            assert failed.isError and texts(failed) == "nope: on purpose"
            bad = await client.call_tool("add", {"a": "not a number"})
            assert bad.isError and "a:" in texts(bad)
            unknown = await client.call_tool("eco", {"text": "x"})
            assert unknown.isError and "did you mean 'echo'" in texts(unknown)


async def test_every_route_needs_a_valid_token(running):
    gateway, server = running
    for path in (
        "/mcp",
        "/.well-known/agent-env.json",
        "/clock/state",
        "/healthz",
        "/svc/notes/agentenv",
        "/tools/disable",
        "/trajectory",
    ):
        for headers in ({}, {"authorization": "Bearer wrong"}, {"authorization": "Basic abc"}):
            response = httpx.post(server.url + path, json={}, headers=headers)
            assert response.status_code == 401, (path, headers)
            assert response.headers["www-authenticate"].startswith("Bearer")
    with pytest.raises(Exception):  # noqa: B017 (the mcp client wraps the 401 its own way)
        async with mcp_client(server.mcp_url, "wrong-token") as client:
            await client.list_tools()
    from agentenv_protocol import EnvClient, ProtocolError

    async with EnvClient(server.url, token="wrong", mcp_path="/mcp") as client:
        with pytest.raises(ProtocolError, match="HTTP 401 .*invalid bearer token"):
            await client.list_tools()
    ok = httpx.get(
        server.url + "/healthz", headers={"authorization": f"Bearer {gateway.admin_token}"}
    )
    assert ok.json() == {"status": "ready", "envs": {"echo": "up", "notes": "up"}, "tools": 7}


async def test_tokens_are_bound_to_roles_and_roles_filter_tools(running):
    gateway, server = running
    alice, bob = gateway.issue_token("alice"), gateway.issue_token("bob")
    admin = {"authorization": f"Bearer {gateway.admin_token}"}
    # a token cannot claim another role, by header or by _meta
    claimed = httpx.post(
        server.mcp_url,
        headers={"authorization": f"Bearer {alice}", "AgentEnv-Role": "bob"},
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
    )
    assert claimed.status_code == 403 and "bound to role 'alice'" in claimed.json()["error"]
    meta = httpx.post(
        server.mcp_url,
        headers={"authorization": f"Bearer {alice}"},
        json={
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "whoami", "arguments": {}, "_meta": {"agentenv.io/role": "bob"}},
        },
    )
    assert meta.status_code == 403
    # only the admin token changes rules; unknown tools are named
    assert (
        httpx.post(
            server.url + "/tools/disable",
            json={"role": "bob", "tools": ["echo"]},
            headers={"authorization": f"Bearer {alice}"},
        ).status_code
        == 403
    )
    typo = httpx.post(
        server.url + "/tools/disable", json={"role": "bob", "tools": ["ecoh"]}, headers=admin
    )
    assert typo.status_code == 400 and "did you mean 'echo'" in typo.json()["error"]
    rules = httpx.post(
        server.url + "/tools/disable",
        json={"role": "bob", "tools": ["echo", "add_note"]},
        headers=admin,
    ).json()
    assert rules["roles"]["bob"]["disabled"] == ["add_note", "echo"]
    async with mcp_client(server.mcp_url, bob) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert "echo" not in names and "add_note" not in names and "read_note" in names
        refused = await client.call_tool("echo", {"text": "x"})
        assert refused.isError and texts(refused) == "tool 'echo' is disabled for role 'bob'"
    async with mcp_client(server.mcp_url, alice) as client:
        assert texts(await client.call_tool("echo", {"text": "still"})) == "still"
    # the admin token may act as any role (as a verifier would)
    async with mcp_client(server.mcp_url, gateway.admin_token, role="bob") as client:
        assert (await client.call_tool("echo", {"text": "x"})).isError
    httpx.post(server.url + "/tools/enable", json={"role": "bob", "tools": "*"}, headers=admin)
    async with mcp_client(server.mcp_url, bob) as client:
        assert texts(await client.call_tool("echo", {"text": "back"})) == "back"


async def test_clash_fails_closed_naming_both_envs_unless_namespaced(spawn_env):
    one, two = spawn_env("echo"), spawn_env("echo", name="echo-b")
    with pytest.raises(GatewayError) as clash:
        serve_gateway(Gateway({"first": one.url, "second": two.url}))
    assert "tool 'echo' is served by both 'first' and 'second'" in str(clash.value)
    assert "namespacing" in str(clash.value)
    gateway = Gateway({"first": one.url, "second": two.url}, namespacing=True)
    with serve_gateway(gateway) as server:
        async with mcp_client(server.mcp_url, gateway.admin_token) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert {"first__echo", "second__echo", "first__add", "second__whoami"} <= names
            assert texts(await client.call_tool("second__echo", {"text": "two"})) == "two"


async def test_composed_card_nests_children_with_rewritten_endpoints(running):
    gateway, server = running
    admin = {"authorization": f"Bearer {gateway.admin_token}"}
    card = httpx.get(server.url + "/.well-known/agent-env.json", headers=admin).json()
    assert card["additionalInterfaces"] == [{"url": "/mcp", "transport": "mcp"}]
    assert card["capabilities"]["extensions"][0]["uri"] == "urn:agentenv:clock/v1"
    children = {c["name"]: c for c in card["children_environments"]}
    assert set(children) == {"echo", "notes"}
    notes = children["notes"]
    assert notes["url"] == "/svc/notes/agentenv" and notes["additionalInterfaces"] == []
    assert (
        notes["capabilities"]["extensions"][0]["params"]["endpoint"]
        == "/svc/notes/agentenv/ext/stats"
    )
    # the rewritten endpoints work through the gateway
    added = httpx.post(
        server.url + notes["url"],
        headers=admin,
        json={
            "jsonrpc": "2.0",
            "id": 1,
            "method": "data/add",
            "params": {"parts": [{"kind": "data", "data": {"notes": [{"title": "n1"}]}}]},
        },
    )
    assert added.json()["result"] == {}
    stats = httpx.get(
        server.url + notes["capabilities"]["extensions"][0]["params"]["endpoint"], headers=admin
    )
    assert stats.json() == {"count": 1}
    agent = {"authorization": f"Bearer {gateway.issue_token('agent')}"}
    for path in (
        notes["url"],
        "/agentenv",
    ):  # an agent cannot reset or read env state behind the task's back
        refused = httpx.post(
            server.url + path, headers=agent, json={"jsonrpc": "2.0", "id": 1, "method": "data/get"}
        )
        assert refused.status_code == 403
    ambiguous = httpx.post(
        server.url + "/agentenv",
        headers=admin,
        json={"jsonrpc": "2.0", "id": 3, "method": "data/get"},
    ).json()
    assert (
        ambiguous["error"]["code"] == -32000
        and "/svc/<env>/agentenv" in ambiguous["error"]["message"]
    )


async def test_clock_and_get_time_across_new_york_dst(running):
    gateway, server = running
    admin = {"authorization": f"Bearer {gateway.admin_token}"}
    agent = gateway.issue_token("agent")
    async with mcp_client(server.mcp_url, agent) as client:
        assert "get_time" not in {
            t.name for t in (await client.list_tools()).tools
        }  # unarmed: no tool
    assert httpx.get(server.url + "/clock/time", headers=admin).status_code == 404
    # agents cannot set the clock; malformed input is a clear 400
    assert (
        httpx.put(
            server.url + "/clock/set-time",
            headers={"authorization": f"Bearer {agent}"},
            json={"virtual_time": "2026-03-08T06:59:30Z"},
        ).status_code
        == 403
    )
    for body, words in [
        ({"virtual_time": "March 8th"}, "expected YYYY-MM-DD"),
        ({"virtual_time": "2026-03-08T06:59:30"}, "expected YYYY-MM-DD"),
        ({"virtual_time": "2026-02-30T00:00:00Z"}, "day is out of range"),
        (
            {"virtual_time": "2026-03-08T06:59:30Z", "virtual_seconds_per_real_second": -1},
            "never runs backwards",
        ),
    ]:
        bad = httpx.put(server.url + "/clock/set-time", headers=admin, json=body)
        assert bad.status_code == 400 and words in bad.json()["error"], bad.text
    # one second before the spring-forward gap (02:00 EST -> 03:00 EDT), frozen
    state = httpx.put(
        server.url + "/clock/set-time",
        headers=admin,
        json={"virtual_time": "2026-03-08T06:59:59Z", "virtual_seconds_per_real_second": 0},
    ).json()
    assert state == {
        "armed": True,
        "t0": "2026-03-08T06:59:59Z",
        "virtual_seconds_per_real_second": 0.0,
        "virtual_time": "2026-03-08T06:59:59Z",
    }
    async with mcp_client(server.mcp_url, agent) as client:
        assert "get_time" in {t.name for t in (await client.list_tools()).tools}
        before = (
            await client.call_tool("get_time", {"time_zone": "America/New_York"})
        ).structuredContent
        assert before == {
            "current_time": "2026-03-08T06:59:59Z",
            "time_zone": "America/New_York",
            "local_time": "2026-03-08T01:59:59-05:00",
        }
        assert (await client.call_tool("get_time", {})).structuredContent == {
            "current_time": "2026-03-08T06:59:59Z"
        }
        typo = await client.call_tool("get_time", {"time_zone": "America/New_Yrok"})
        assert typo.isError and "unknown time zone 'America/New_Yrok'" in texts(typo)
        assert "did you mean 'America/New_York'" in texts(typo)
        # advance by running the clock: 1 real second = 1 virtual hour
        httpx.put(
            server.url + "/clock/set-time",
            headers=admin,
            json={"virtual_time": "2026-03-08T06:59:59Z", "virtual_seconds_per_real_second": 3600},
        )
        time.sleep(0.5)
        after = (
            await client.call_tool("get_time", {"time_zone": "America/New_York"})
        ).structuredContent
        assert after["local_time"].endswith("-04:00") and after["local_time"] >= "2026-03-08T03:29"
        assert after["current_time"] > before["current_time"]
    # re-arming earlier than now is allowed (as the existing product does): it re-anchors
    back = httpx.put(
        server.url + "/clock/set-time", headers=admin, json={"virtual_time": "2026-03-08T06:00:00Z"}
    )
    assert back.status_code == 200 and back.json()["t0"] == "2026-03-08T06:00:00Z", back.text
    state = httpx.get(server.url + "/clock/state", headers=admin).json()
    assert state["env_get_time_url"] == server.url + "/clock/time"
    assert httpx.get(server.url + "/clock/time").status_code == 200  # public: envs read it
    assert httpx.post(server.url + "/clock/clear", headers=admin).json() == {
        "ok": True,
        "armed": False,
    }
    assert (
        httpx.put(
            server.url + "/clock/set-time",
            headers=admin,
            json={"virtual_time": "2026-11-01T05:30:00Z", "virtual_seconds_per_real_second": 0},
        ).status_code
        == 200
    )
    reads = [
        httpx.get(server.url + "/clock/time", headers={"authorization": f"Bearer {agent}"}).json()
        for _ in range(3)
    ]
    assert reads == [{"virtual_time": "2026-11-01T05:30:00Z"}] * 3


async def test_calls_are_logged_with_secrets_redacted(running, tmp_path):
    gateway, server = running
    alice = gateway.issue_token("alice")
    async with mcp_client(server.mcp_url, alice) as client:
        await client.call_tool(
            "add_note", {"title": "creds", "body": "password is hunter2", "api_key": "k-1"}
        )
        await client.call_tool("echo", {"text": f"my token is {alice}"})
        await client.call_tool("fail", {})
    raw = (tmp_path / "calls.jsonl").read_text()
    assert "hunter2" not in raw and alice not in raw and "k-1" not in raw
    lines = [json.loads(line) for line in raw.splitlines()]
    assert [x["tool"] for x in lines] == ["add_note", "echo", "fail"]
    first = lines[0]
    assert set(first) >= {"time", "role", "tool", "arguments", "result", "error", "duration_ms"}
    assert first["role"] == "alice" and first["env"] == "notes" and first["error"] is None
    assert first["arguments"] == {"title": "creds", "body": "password is ***", "api_key": "***"}
    assert lines[1]["result"]["content"][0]["text"] == "my token is ***"
    assert lines[2]["error"] == "boom: failed on purpose" and lines[2]["result"]["isError"] is True
    served = httpx.get(
        server.url + "/trajectory", headers={"authorization": f"Bearer {gateway.admin_token}"}
    )
    assert [x["tool"] for x in served.json()["calls"]] == ["add_note", "echo", "fail"]


async def test_a_dead_env_gives_a_quick_clear_error_and_the_rest_keeps_working(
    running_own, own_envs
):
    gateway, server = running_own
    own_envs["notes"].stop()
    async with mcp_client(server.mcp_url, gateway.admin_token) as client:
        started = time.monotonic()
        result = await client.call_tool("list_notes", {})
        assert time.monotonic() - started < 5
        assert result.isError and "environment 'notes' is not reachable" in texts(result)
        assert texts(await client.call_tool("echo", {"text": "alive"})) == "alive"
    health = httpx.get(
        server.url + "/healthz", headers={"authorization": f"Bearer {gateway.admin_token}"}
    ).json()
    assert health["status"] == "degraded" and health["envs"]["notes"].startswith("down")


async def test_malformed_requests_to_the_gateway_get_json_rpc_errors(running):
    gateway, server = running
    auth = {"authorization": f"Bearer {gateway.admin_token}", "content-type": "application/json"}
    assert (
        httpx.post(server.mcp_url, content=b"{oops", headers=auth).json()["error"]["code"] == -32700
    )
    assert (
        httpx.post(server.mcp_url, json={"id": 1}, headers=auth).json()["error"]["code"] == -32600
    )
    unknown = httpx.post(
        server.mcp_url, json={"jsonrpc": "2.0", "id": 2, "method": "resources/nope"}, headers=auth
    )
    assert unknown.json()["error"]["code"] == -32601
    huge = httpx.post(
        server.mcp_url,
        headers=auth,
        json={
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": "x" * (9 * 1024 * 1024)}},
        },
    )
    assert huge.status_code == 413 and huge.json()["error"]["code"] == -32600
    async with mcp_client(server.mcp_url, gateway.admin_token) as client:
        assert texts(await client.call_tool("echo", {"text": "fine"})) == "fine"


async def test_unreachable_env_fails_gateway_start_naming_it():
    gateway = Gateway({"ghost": "http://127.0.0.1:9"}, startup_timeout=0.3)
    with pytest.raises(
        GatewayError, match="environment 'ghost' is unreachable at http://127.0.0.1:9"
    ):
        serve_gateway(gateway)


async def test_gateway_runs_as_its_own_process(shared_envs, tmp_path):
    import os
    import socket
    import subprocess
    import sys

    from agentenv_protocol import EnvClient

    bad = subprocess.run(
        [sys.executable, "-m", "agentenv_protocol.gateway", "--env", "nourl"],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and "--env expects NAME=URL" in bad.stderr
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "agentenv_protocol.gateway",
            "--env",
            f"echo={shared_envs['echo'].url}",
            "--role-token",
            "agent=agent-token",
            "--port",
            str(port),
            "--trajectory",
            str(tmp_path / "log.jsonl"),
        ],
        env={**os.environ, "AGENTENV_GATEWAY_TOKEN": "admin-token"},
        stderr=subprocess.PIPE,
    )
    try:
        async with EnvClient(f"http://127.0.0.1:{port}", token="agent-token", timeout=10) as client:
            await client.wait_ready(timeout=60)
            assert (
                await client.call_tool("echo", {"text": "from a process"})
            ).text == "from a process"
        assert json.loads((tmp_path / "log.jsonl").read_text())["role"] == "agent"
    finally:
        proc.terminate()
        proc.wait(10)


# --- mcp 1.x compatibility: verifiers and servers written for the existing product ------------

BUNDLE_VERIFIER = """
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client


async def verify(mcp_url):
    async with streamable_http_client(mcp_url) as (read, write, _):
        async with ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool("echo", {"text": "hello from agent-env"})
            missing = await session.call_tool("nope", {})
    text = "".join(getattr(part, "text", "") for part in result.content)
    return [
        {"id": "echoes", "result": not result.isError and text == "hello from agent-env"},
        {"id": "unknown", "result": missing.isError},
    ]
"""


async def test_a_bundle_style_verifier_passes_through_the_gateways_capability_url(
    shared_envs, tmp_path
):
    """The existing product's verifier form (no headers: the token rides in the URL) on the
    official mcp 1.x client, through our gateway to our env."""
    import importlib.metadata

    from agentenv_protocol.gateway import CAPABILITY_PREFIX, TokenInPath
    from agentenv_protocol.serving import serve_in_thread

    assert importlib.metadata.version("mcp").startswith("1.")
    namespace: dict = {}
    exec(compile(BUNDLE_VERIFIER, "verify.py", "exec"), namespace)
    gateway = Gateway({"echo": shared_envs["echo"].url}, trajectory=tmp_path / "calls.jsonl")
    running = serve_in_thread(TokenInPath(gateway))
    try:
        url = f"{running.url}{CAPABILITY_PREFIX}{gateway.issue_token('verifier')}/mcp"
        rows = await namespace["verify"](url)
        assert rows == [{"id": "echoes", "result": True}, {"id": "unknown", "result": True}]
        bad = f"{running.url}{CAPABILITY_PREFIX}wrong/mcp"
        with pytest.raises(Exception):  # noqa: B017 (the mcp client wraps the 401 its own way)
            await namespace["verify"](bad)
    finally:
        running.stop()
    calls = [json.loads(line) for line in (tmp_path / "calls.jsonl").read_text().splitlines()]
    assert [(c["tool"], c["role"]) for c in calls] == [("echo", "verifier"), ("nope", "verifier")]


FASTMCP_SERVER = '''
import sys

from mcp.server.fastmcp import FastMCP

app = FastMCP("weather", host="127.0.0.1", port=int(sys.argv[1]))


@app.tool()
def forecast(city: str, days: int = 1) -> str:
    """The forecast for a city."""
    return f"{city}: sunny for {days} day(s)"


@app.tool()
def boom() -> str:
    """Always fails."""
    raise RuntimeError("on purpose")


app.run(transport="streamable-http")
'''


@pytest.fixture
def fastmcp_server(tmp_path):
    """A stateful FastMCP (mcp 1.x) server as a real process: SSE answers, session ids, no card."""
    import socket
    import subprocess
    import sys

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    script = tmp_path / "weather.py"
    script.write_text(FASTMCP_SERVER)
    proc = subprocess.Popen(
        [sys.executable, str(script), str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            httpx.get(url + "/mcp", timeout=1)
            break
        except httpx.HTTPError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError(
                    f"FastMCP server did not start: {proc.stderr.read()!r}"
                ) from None
            time.sleep(0.05)
    yield url
    proc.terminate()
    proc.wait(10)


async def test_a_fastmcp_server_answers_tools_list_and_call_through_the_gateway(
    fastmcp_server, shared_envs
):
    probe = httpx.post(
        fastmcp_server + "/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}},
        headers={"accept": "application/json, text/event-stream"},
    )
    assert probe.headers["content-type"].startswith("text/event-stream")
    assert probe.headers.get("mcp-session-id")  # a stateful server: the gateway must handshake
    gateway = Gateway({"weather": fastmcp_server, "echo": shared_envs["echo"].url})
    with serve_gateway(gateway) as server:
        async with mcp_client(server.mcp_url, gateway.issue_token("alice")) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert {"forecast", "boom", "echo"} <= set(tools)
            assert tools["forecast"].inputSchema["required"] == ["city"]
            result = await client.call_tool("forecast", {"city": "Paris", "days": 2})
            assert not result.isError and texts(result) == "Paris: sunny for 2 day(s)"
            failed = await client.call_tool("boom", {})
            assert failed.isError and "on purpose" in texts(failed)
            assert texts(await client.call_tool("echo", {"text": "both"})) == "both"


def test_the_wire_env_and_gateway_are_stateless_json(running, shared_envs):
    """What hand-written clients see (docs/protocol.md): no session ids, JSON answers; the env
    (mcp 1.x transport) wants `Accept`, the gateway does not."""
    gateway, server = running
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"},
        },
    }
    accept = {"accept": "application/json, text/event-stream"}
    auth = {"authorization": f"Bearer {gateway.admin_token}"}
    env_mcp = shared_envs["echo"].url + "/mcp"
    for url, headers in ((env_mcp, accept), (server.mcp_url, {**accept, **auth})):
        answer = httpx.post(url, json=init, headers=headers)
        assert answer.status_code == 200, answer.text
        assert answer.headers["content-type"].startswith("application/json")
        assert "mcp-session-id" not in answer.headers
        assert answer.json()["result"]["protocolVersion"] == "2025-06-18"
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call"}
        call["params"] = {"name": "echo", "arguments": {"text": "raw"}}
        echoed = httpx.post(url, json=call, headers=headers).json()["result"]  # no initialize
        assert echoed["content"] == [{"type": "text", "text": "raw"}] and not echoed["isError"]
    assert httpx.post(env_mcp, json=init).status_code == 406
    assert httpx.post(server.mcp_url, json=init, headers=auth).status_code == 200
    for method in ("GET", "DELETE"):
        assert httpx.request(method, server.mcp_url, headers=auth).status_code == 405
