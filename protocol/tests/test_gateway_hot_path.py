"""The gateway's hot path for `POST /mcp` (gateway/hot_path.py) answers exactly as the ASGI route
does: the same requests, sent as raw bytes to a gateway with the hot path and to one without,
get byte-identical responses and call-log rows (but for the time and duration of each call)."""

from __future__ import annotations

import json
import socket
import time

import pytest

from agentenv_protocol.gateway import Gateway, TokenInPath
from agentenv_protocol.serving import serve_in_thread

ADMIN = "hot-path-admin-token"
ALICE = "hot-path-alice-token"  # bound to role alice, for whom `add` is disabled


class AsgiOnlyGateway(Gateway):
    """The gateway with every request through the ASGI app (as before the hot path)."""

    def http_protocol(self, base: type) -> type:
        return base


@pytest.fixture(scope="module")
def pair(shared_envs, tmp_path_factory):
    """(hot, asgi): two gateways in front of the same echo env, with the same tokens and
    rules; each entry is (gateway, server, call log path, the hot path's answers so far)."""
    logs = tmp_path_factory.mktemp("hot-path")
    made = []
    for kind, cls in (("hot", Gateway), ("asgi", AsgiOnlyGateway)):
        gateway = cls(
            {"echo": shared_envs["echo"].url},
            admin_token=ADMIN,
            tokens={ALICE: "alice"},
            trajectory=logs / f"{kind}.jsonl",
            secrets=["hunter2"],
            max_request_bytes=4096,
            call_timeout=10,
        )
        hot_answers: list[int] = []
        shared = gateway.answer_mcp_post

        async def counted(*args, _shared=shared, _seen=hot_answers):
            _seen.append(1)
            return await _shared(*args)

        gateway.answer_mcp_post = counted  # counts what the hot path answered
        server = serve_in_thread(TokenInPath(gateway))  # as a run serves it (core-steps)
        gateway.set_tools("alice", ["add"], enabled=False)
        made.append((gateway, server, logs / f"{kind}.jsonl", hot_answers))
    yield made
    for _, server, _, _ in made:
        server.stop()


def request(
    body: bytes | dict,
    *,
    token: str | None = ADMIN,
    path: str = "/mcp",
    version: str = "1.1",
    extra: str = "",
    length: int | None = None,
) -> bytes:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    auth = f"authorization: Bearer {token}\r\n" if token else ""
    size = len(data) if length is None else length
    head = (
        f"POST {path} HTTP/{version}\r\nhost: gw\r\n{auth}{extra}"
        f"content-type: application/json\r\ncontent-length: {size}\r\n\r\n"
    )
    return head.encode() + data


def call(name: str, arguments: dict, rid: int = 1, meta: dict | None = None) -> dict:
    params: dict = {"name": name, "arguments": arguments}
    if meta:
        params["_meta"] = meta
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}


def bodies(raw: bytes) -> list[bytes]:
    """The bodies of the whole (content-length framed) responses `raw` holds."""
    found, pos = [], 0
    while True:
        end = raw.find(b"\r\n\r\n", pos)
        if end < 0:
            return found
        head = raw[pos:end].lower()
        length = int(head.split(b"content-length: ")[1].split(b"\r\n")[0])
        if len(raw) < end + 4 + length:
            return found
        found.append(raw[end + 4 : end + 4 + length])
        pos = end + 4 + length


def responses(raw: bytes) -> int:
    return len(bodies(raw))


def exchange(url: str, data: bytes, expect: int = 1, hang_up: bool = False) -> bytes:
    """Send `data` on a new connection; the raw bytes of `expect` responses (or of all the
    server sent before closing). `hang_up`: close right after sending, read nothing."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=20) as sock:
        sock.sendall(data)
        if hang_up:
            return b""
        raw = b""
        while responses(raw) < expect:
            chunk = sock.recv(65536)
            if not chunk:
                break
            raw += chunk
        return raw


def both(pair, data: bytes, expect: int = 1) -> bytes:
    """The raw answer of each gateway to `data`; they must be identical."""
    (_, hot, _, _), (_, asgi, _, _) = pair
    hot_raw, asgi_raw = exchange(hot.url, data, expect), exchange(asgi.url, data, expect)
    assert hot_raw == asgi_raw
    return hot_raw


def rows(path) -> list[dict]:
    out = []
    for line in path.read_text().splitlines():
        row = json.loads(line)
        del row["time"], row["duration_ms"]
        out.append(row)
    return out


def body_of(raw: bytes) -> dict:
    return json.loads(raw.partition(b"\r\n\r\n")[2])


CASES = {
    "echo": (request(call("echo", {"text": "hi"})), 200),
    "echo, modern MCP": (
        request(call("echo", {"text": "new"}, 7), extra="mcp-protocol-version: 2026-07-28\r\n"),
        200,
    ),
    "secret argument": (request(call("echo", {"text": "pw hunter2", "api_key": "k"})), 200),
    # valid JSON that UTF-8 cannot encode: answered, and logged as its JSON escape
    "lone surrogate": (request(call("echo", {"text": "\ud800 lone"})), 200),
    "unknown tool": (request(call("ecoh", {"text": "x"})), 200),
    "tool error": (request(call("fail", {"message": "no"})), 200),
    "bad arguments": (request(call("echo", {"text": 5})), 200),
    "role token": (request(call("echo", {"text": "alice"}), token=ALICE), 200),
    "disabled for the role": (request(call("add", {"a": 1}), token=ALICE), 200),
    "another role claimed": (
        request(call("echo", {"text": "x"}, meta={"agentenv.io/role": "bob"}), token=ALICE),
        403,
    ),
    "admin acts as a role": (
        request(call("add", {"a": 1}, meta={"agentenv.io/role": "alice"})),
        200,
    ),
    "malformed JSON": (request(b'{"jsonrpc": "2.0", "id": 1, "method": "tools/ca'), 400),
    "not JSON-RPC": (request(b"[1, 2]"), 400),
    "no name": (request({"jsonrpc": "2.0", "id": 3, "method": "tools/call"}), 200),
    "tools/list": (request({"jsonrpc": "2.0", "id": 4, "method": "tools/list"}), 200),
    "unknown method": (request({"jsonrpc": "2.0", "id": 5, "method": "tools/lsit"}), 200),
    "notification": (request({"jsonrpc": "2.0", "method": "notifications/initialized"}), 202),
    "wrong token": (request(call("echo", {"text": "x"}), token="nope"), 401),
    "no token": (request(call("echo", {"text": "x"}), token=None), 401),
    "oversize body": (request(call("echo", {"text": "x" * 5000})), 413),
    "oversize declared": (request(b"{}", length=10**9), 413),
    "HTTP/1.0": (request(call("echo", {"text": "old"}), version="1.0"), 200),
    "capability URL": (
        request(call("echo", {"text": "cap"}), token=None, path=f"/k/{ADMIN}/mcp"),
        200,
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_same_answer_on_both_paths(pair, case):
    data, status = CASES[case]
    raw = both(pair, data)
    assert raw.startswith(f"HTTP/1.1 {status} ".encode()), raw[:200]


def test_the_hot_path_answers_tool_calls(pair):
    (_, _, _, hot_answers), (_, _, _, asgi_answers) = pair
    before = len(hot_answers)
    raw = both(pair, request(call("echo", {"text": "counted"})))
    assert body_of(raw)["result"]["content"][0]["text"] == "counted"
    assert len(hot_answers) == before + 1 and not asgi_answers
    # refused tokens, oversize bodies and capability URLs stay with the ASGI app
    both(pair, request(call("echo", {"text": "x"}), token="nope"))
    both(pair, request(call("echo", {"text": "x" * 5000})))
    both(pair, request(call("echo", {"text": "c"}), token=None, path=f"/k/{ADMIN}/mcp"))
    assert len(hot_answers) == before + 1


def test_pipelined_requests_are_answered_in_order(pair):
    first = request(call("echo", {"text": "one"}, 1))
    second = request(call("echo", {"text": "two"}, 2))
    third = request({"jsonrpc": "2.0", "id": 3, "method": "ping"})
    raw = both(pair, first + second + third, expect=3)
    answers = [json.loads(body) for body in bodies(raw)]
    assert [a["id"] for a in answers] == [1, 2, 3]
    assert [a["result"]["content"][0]["text"] for a in answers[:2]] == ["one", "two"]


def test_keep_alive_connection_serves_many_calls(pair):
    for _, server, _, _ in pair:
        host, port = server.url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=20) as sock:
            for i in range(5):
                sock.sendall(request(call("echo", {"text": f"k{i}"}, i)))
                raw = b""
                while responses(raw) < 1:
                    raw += sock.recv(65536)
                assert body_of(raw)["result"]["content"][0]["text"] == f"k{i}"


def test_a_client_that_hangs_up_mid_body_leaves_no_call(pair):
    for gateway, server, log, _ in pair:
        before = len(rows(log))
        whole = request(call("echo", {"text": "cut off"}))
        exchange(server.url, whole[:-10], hang_up=True)
        time.sleep(0.3)
        assert len(rows(log)) == before
        assert gateway.connections.in_use == {}  # its count in flight was given back
        url = server.url
        raw = exchange(url, request(call("echo", {"text": "after"})))
        assert body_of(raw)["result"]["content"][0]["text"] == "after"


def test_call_logs_match_row_for_row(pair):
    """Runs last in the module: every call above was logged once by each gateway, the same."""
    (_, _, hot_log, _), (_, _, asgi_log, _) = pair
    hot_rows, asgi_rows = rows(hot_log), rows(asgi_log)
    assert hot_rows == asgi_rows
    texts = [(r["arguments"] or {}).get("text") for r in hot_rows]
    assert texts.count("hi") == 1 and texts.count("one") == 1 and "cut off" not in texts
    assert texts.count("\ud800 lone") == 1
    assert all("hunter2" not in json.dumps(r) for r in hot_rows)
    refused = next(r for r in hot_rows if r["tool"] == "add" and r["role"] == "alice")
    assert refused["error"] == "tool 'add' is disabled for role 'alice'"


def test_a_body_that_trickles_is_cut_off_on_the_hot_path(shared_envs, tmp_path):
    """The body deadline (`serving.BODY_TIMEOUT`) holds for a tool call the hot path reads."""
    gateway = Gateway({"echo": shared_envs["echo"].url}, admin_token=ADMIN)
    server = serve_in_thread(gateway, body_timeout=1.0)
    try:
        host, port = server.url.removeprefix("http://").split(":")
        whole = request(call("echo", {"text": "slow"}))
        with socket.create_connection((host, int(port)), timeout=20) as sock:
            sock.sendall(whole[:-5])
            started = time.monotonic()
            assert sock.recv(65536) == b""  # closed by the server, nothing answered
            assert 0.5 < time.monotonic() - started < 10
        assert gateway.trajectory.records == []
        raw = exchange(server.url, whole)
        assert body_of(raw)["result"]["content"][0]["text"] == "slow"
    finally:
        server.stop()


def test_a_request_that_trickles_after_a_hot_one_is_cut_off_at_the_header_deadline(
    shared_envs,
):
    """On a keep-alive connection, a tool call answered by the hot path sets no deadline; the
    next request's headers, trickled a byte at a time, are still cut off at the header
    deadline counted from their first chunk (later chunks do not move it)."""
    gateway = Gateway({"echo": shared_envs["echo"].url}, admin_token=ADMIN)
    server = serve_in_thread(gateway, header_timeout=1.0)
    try:
        host, port = server.url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=20) as sock:
            sock.sendall(request(call("echo", {"text": "first"})))
            raw = b""
            while responses(raw) < 1:
                raw += sock.recv(65536)
            assert body_of(raw)["result"]["content"][0]["text"] == "first"
            sock.sendall(b"POST /mcp HTTP/1.1\r\nhost: gw\r\nx-pad: ")
            sock.setblocking(False)
            started = time.monotonic()
            closed_after = None
            while time.monotonic() - started < 10:
                try:
                    if sock.recv(65536) == b"":
                        closed_after = time.monotonic() - started
                        break
                except BlockingIOError:
                    pass
                except OSError:
                    closed_after = time.monotonic() - started
                    break
                try:
                    sock.send(b"a")
                except OSError:
                    closed_after = time.monotonic() - started
                    break
                time.sleep(0.1)
        assert closed_after is not None and 0.8 < closed_after < 4.0, closed_after
        assert [r["arguments"]["text"] for r in gateway.trajectory.records] == ["first"]
    finally:
        server.stop()
