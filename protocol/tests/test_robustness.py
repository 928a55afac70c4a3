"""The env server SDK and the gateway answer hostile input with the documented JSON-RPC error
and keep serving: deep or oversize bodies, forbidden ids, unknown methods, bad arguments, tools
that raise BaseException, block their thread or hang. Real processes and sockets throughout."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from agentenv_protocol.gateway import Gateway, serve_gateway

HOSTILE = Path(__file__).with_name("hostile_env.py")
MCP_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
DEEP = b"[" * 2000 + b"]" * 2000  # 4 kB, 2,000 levels


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _strict_json(data: bytes):
    """Parse as strict JSON (NaN/Infinity are not JSON)."""

    def refuse(token):
        raise ValueError(f"not JSON: {token}")

    return json.loads(data, parse_constant=refuse)


@pytest.fixture(scope="module")
def hostile():
    port = free_port()
    env = {
        **os.environ,
        "MCP_HOST": "127.0.0.1",
        "MCP_PORT": str(port),
        "AGENTENV_TOOL_THREADS": "4",
    }
    proc = subprocess.Popen([sys.executable, str(HOSTILE)], env=env, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
        assert time.monotonic() < deadline, "hostile env did not start"
        time.sleep(0.05)
    yield url, proc
    proc.terminate()
    proc.wait(10)


@pytest.fixture(scope="module")
def gateway(hostile):
    server = serve_gateway(
        Gateway({"hostile": hostile[0]}, call_timeout=1.5, max_request_bytes=64 * 1024)
    )
    yield server
    server.stop()


def _call(url: str, name: str, arguments: dict | None = None, headers: dict | None = None, rid=1):
    body = {
        "jsonrpc": "2.0",
        "id": rid,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments or {}},
    }
    response = httpx.post(url, json=body, headers={**MCP_HEADERS, **(headers or {})}, timeout=30)
    return response.status_code, _strict_json(response.content)


def _alive(hostile) -> None:
    url, proc = hostile
    assert proc.poll() is None, "the env server died"
    assert _call(url + "/mcp", "add", {"a": 2, "b": 3})[1]["result"]["structuredContent"] == {
        "result": 5
    }


def _targets(hostile, gateway):
    admin = {"authorization": f"Bearer {gateway.admin_token}"}
    return [
        (hostile[0] + "/mcp", {}),
        (hostile[0] + "/agentenv", {}),
        (gateway.mcp_url, admin),
        (gateway.url + "/agentenv", admin),
    ]


def test_deeply_nested_json_is_a_parse_error_everywhere(hostile, gateway):
    for url, headers in _targets(hostile, gateway):
        response = httpx.post(url, content=DEEP, headers={**MCP_HEADERS, **headers}, timeout=30)
        assert response.status_code in (200, 400), (url, response.status_code, response.text[:300])
        answer = _strict_json(response.content)
        assert answer["error"]["code"] == -32700 and "deeper than" in answer["error"]["message"], (
            url
        )
        assert "Traceback" not in response.text
    # brackets inside strings are data, not nesting
    text = "[{" * 3000
    for url, headers in _targets(hostile, gateway)[::2]:
        _, answer = _call(url, "echo", {"text": text}, headers)
        assert answer["result"]["structuredContent"] == {"result": text}, url
    _alive(hostile)


def test_oversize_bodies_get_413_with_a_json_rpc_error(hostile, gateway):
    big = (
        b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"pad":"'
        + b"x" * (100 * 1024)
        + b'"}}'
    )
    admin = {"authorization": f"Bearer {gateway.admin_token}"}
    response = httpx.post(gateway.mcp_url, content=big, headers={**MCP_HEADERS, **admin})
    assert response.status_code == 413 and response.json()["error"]["code"] == -32600
    # the env's own limit is 32 MiB: a declared length past it is refused before reading
    port = int(hostile[0].rsplit(":", 1)[1])
    for path in ("/agentenv", "/mcp"):
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            sock.sendall(
                f"POST {path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
                f"accept: application/json\r\ncontent-length: {64 * 1024 * 1024}\r\n\r\n".encode()
                + b"{" * 1024
            )
            head = sock.recv(65536)
        assert head.startswith(b"HTTP/1.1 413"), (path, head[:200])
        assert b"-32600" in head or b"exceeds" in head
    _alive(hostile)


@pytest.mark.parametrize("rid", ["NaN", "Infinity", '{"a":1}', "[1]", "true"])
def test_ids_json_rpc_forbids_are_refused_and_never_echoed(hostile, gateway, rid):
    body = f'{{"jsonrpc":"2.0","id":{rid},"method":"tools/list"}}'.encode()
    for url, headers in _targets(hostile, gateway):
        response = httpx.post(url, content=body, headers={**MCP_HEADERS, **headers}, timeout=30)
        answer = _strict_json(response.content)  # never NaN echoed back
        assert "error" in answer and answer.get("id") is None, (url, response.text)
        assert answer["error"]["code"] in (-32600, -32602, -32700), (url, answer)


def test_unknown_methods_and_bad_arguments(hostile, gateway):
    admin = {"authorization": f"Bearer {gateway.admin_token}"}
    for url, headers in _targets(hostile, gateway):
        body = {"jsonrpc": "2.0", "id": 7, "method": "no/such"}
        answer = httpx.post(url, json=body, headers={**MCP_HEADERS, **headers}).json()
        assert answer["error"]["code"] == -32601 and answer["id"] == 7, url
    for url, headers in ((hostile[0] + "/mcp", {}), (gateway.mcp_url, admin)):
        _, answer = _call(url, "add", {"a": "two"}, headers)
        assert answer["result"]["isError"] is True, answer
    _alive(hostile)


@pytest.mark.parametrize("tool", ["exit_server", "interrupt"])
def test_a_tool_raising_base_exception_fails_the_call_not_the_server(hostile, gateway, tool):
    admin = {"authorization": f"Bearer {gateway.admin_token}"}
    for url, headers in ((hostile[0] + "/mcp", {}), (gateway.mcp_url, admin)):
        status, answer = _call(url, tool, headers=headers)
        assert status == 200 and answer["result"]["isError"] is True, answer
        assert ("SystemExit" if tool == "exit_server" else "KeyboardInterrupt") in answer["result"][
            "content"
        ][0]["text"]
        _alive(hostile)


def test_a_blocking_sync_tool_leaves_health_and_other_calls_answering(hostile):
    url = hostile[0]
    results: list = []
    threads = [
        threading.Thread(
            target=lambda: results.append(_call(url + "/mcp", "block", {"seconds": 20}))
        )
        for _ in range(2)
    ]
    for t in threads:
        t.start()
    try:
        time.sleep(0.3)
        started = time.monotonic()
        assert httpx.get(url + "/healthz", timeout=5).status_code == 200
        _alive(hostile)
        who = _call(url + "/mcp", "who", headers={"agentenv-role": "judge"})[1]["result"][
            "structuredContent"
        ]
        assert time.monotonic() - started < 2.0
        assert (
            who["role"] == who["current_role"] == "judge"
        )  # the context reaches the worker thread
        assert who["thread"] != "MainThread"
    finally:
        _call(url + "/mcp", "release")
        for t in threads:
            t.join(30)
    assert [r[1]["result"]["structuredContent"]["result"] for r in results] == ["unblocked"] * 2


def test_a_hanging_tool_times_out_at_the_gateway_which_keeps_serving(hostile, gateway):
    admin = {"authorization": f"Bearer {gateway.admin_token}"}
    started = time.monotonic()
    _, answer = _call(gateway.mcp_url, "hang", {"seconds": 10}, admin)
    assert (
        answer["result"]["isError"] is True
        and "did not answer" in answer["result"]["content"][0]["text"]
    )
    assert time.monotonic() - started < 5
    _, answer = _call(gateway.mcp_url, "add", {"a": 1, "b": 2}, admin)
    assert answer["result"]["structuredContent"] == {"result": 3}
