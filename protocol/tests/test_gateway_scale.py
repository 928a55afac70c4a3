"""The gateway at scale: 4,096 calls in flight at once from 256 clients through one gateway
process, each answered with its own result and logged exactly once; and the bounded,
first-come-first-served pool of connections the gateway forwards calls on."""

from __future__ import annotations

import asyncio
import collections
import json
import os
import selectors
import socket
import subprocess
import sys
import time

import httpx
import pytest

from agentenv_protocol.fastpost import ForwardTimeout, PostPool

TOKEN = "scale-admin-token"
AGENT_TOKEN = "scale-agent-token"
CLIENTS, PER_CLIENT = 256, 16


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def gateway(shared_envs, tmp_path_factory):
    """The echo env and a gateway in front of it, each its own process, the gateway writing its
    call log to a file."""
    env = shared_envs["echo"]
    log = tmp_path_factory.mktemp("scale") / "calls.jsonl"
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "agentenv_protocol.gateway",
            "--env",
            f"echo={env.url}",
            "--port",
            str(port),
            "--trajectory",
            str(log),
            "--role-token",
            f"agent={AGENT_TOKEN}",
        ],
        env={**os.environ, "AGENTENV_GATEWAY_TOKEN": TOKEN},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            card = httpx.get(
                url + "/.well-known/agent-env.json",
                headers={"authorization": f"Bearer {TOKEN}"},
                timeout=1,
            )
            if card.status_code == 200:
                break
        except httpx.HTTPError:
            pass
        assert proc.poll() is None, proc.stderr.read().decode()[-2000:]  # type: ignore[union-attr]
        assert time.monotonic() < deadline, "the gateway did not come up"
        time.sleep(0.05)
    try:
        yield url, log
    finally:
        proc.terminate()
        proc.wait(10)


def _said(answer: dict) -> str:
    """The text a tools/call answer carries, or the whole answer when it is not a result."""
    content = (answer.get("result") or {}).get("content") or [{}]
    return content[0].get("text") or json.dumps(answer)


def _burst(url: str) -> tuple[dict[str, str], list[str]]:
    """Send all calls before reading any answer (each on its own connection, all under one
    role's token), then read them all: every call's text -> the text its answer carried, and
    the calls that got no answer. Raw sockets keep the load generator's own CPU out of the way."""
    host, port = url.removeprefix("http://").split(":")
    calls: dict[socket.socket, str] = {}
    for client in range(CLIENTS):
        for k in range(PER_CLIENT):
            text = f"scale-{client}-{k}"
            body = json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": k,
                    "method": "tools/call",
                    "params": {"name": "echo", "arguments": {"text": text}},
                }
            ).encode()
            head = (
                f"POST /mcp HTTP/1.1\r\nhost: {host}\r\nauthorization: Bearer {AGENT_TOKEN}\r\n"
                f"content-type: application/json\r\naccept: application/json\r\n"
                f"content-length: {len(body)}\r\n\r\n"
            ).encode()
            sock = socket.create_connection((host, int(port)), timeout=60)
            sock.sendall(head + body)
            sock.setblocking(False)
            calls[sock] = text
    answers: dict[str, str] = {}
    buffers = {sock: b"" for sock in calls}
    with selectors.DefaultSelector() as selector:
        for sock in calls:
            selector.register(sock, selectors.EVENT_READ)
        deadline = time.monotonic() + 120
        while buffers and time.monotonic() < deadline:
            for key, _ in selector.select(timeout=1):
                sock = key.fileobj
                chunk = sock.recv(65536)  # type: ignore[union-attr]
                buffers[sock] += chunk  # type: ignore[index]
                head, sep, body = buffers[sock].partition(b"\r\n\r\n")  # type: ignore[index]
                length = next(
                    (
                        int(line.split(b":")[1])
                        for line in head.split(b"\r\n")
                        if line.lower().startswith(b"content-length:")
                    ),
                    None,
                )
                if not chunk or (sep and length is not None and len(body) >= length):
                    selector.unregister(sock)
                    del buffers[sock]  # type: ignore[arg-type]
                    sock.close()  # type: ignore[union-attr]
                    if sep and length is not None and len(body) >= length:
                        answers[calls[sock]] = _said(json.loads(body[:length]))  # type: ignore[index]
    for sock in buffers:
        sock.close()
    return answers, sorted(set(calls.values()) - set(answers))


def test_4096_calls_in_flight_are_each_answered_and_logged_once(gateway):
    url, log = gateway
    answers, unanswered = _burst(url)
    wrong = {sent: got for sent, got in answers.items() if sent != got}
    assert wrong == {}, list(wrong.items())[:5]
    assert unanswered == []
    assert len(answers) == CLIENTS * PER_CLIENT
    wrong = {sent: got for sent, got in answers.items() if sent != got}
    assert wrong == {}, list(wrong.items())[:5]  # nobody got another caller's answer
    rows = [json.loads(line) for line in log.read_text().splitlines()]  # written before answering
    logged = collections.Counter(
        r["arguments"]["text"] for r in rows if r["arguments"]["text"].startswith("scale-")
    )
    assert set(logged) == set(answers)
    assert set(logged.values()) == {1}
    assert all(r["role"] == "agent" and r["error"] is None for r in rows)


async def _counting_server(delay: float) -> tuple[asyncio.Server, dict]:
    """An HTTP server that answers every POST after `delay` seconds with the order it arrived
    in, and counts the connections open at once."""
    seen = {"open": 0, "most": 0, "order": []}

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen["open"] += 1
        seen["most"] = max(seen["most"], seen["open"])
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(
                    int(line.split(b":")[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length")
                )
                body = json.loads(await reader.readexactly(length))
                seen["order"].append(body["n"])
                await asyncio.sleep(delay)
                out = json.dumps({"n": body["n"]}).encode()
                writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n%s" % (len(out), out))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            seen["open"] -= 1
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    return server, seen


@pytest.mark.anyio
async def test_a_pool_opens_at_most_its_connections_and_serves_in_order():
    server, seen = await _counting_server(delay=0.01)
    port = server.sockets[0].getsockname()[1]
    pool = PostPool(f"http://127.0.0.1:{port}", max_connections=4)
    try:
        answers = {}

        async def post(n: int) -> None:
            answers[n] = (await pool.post("/x", json.dumps({"n": n}).encode())).json()["n"]

        async with asyncio.TaskGroup() as tg:
            for n in range(100):
                tg.create_task(post(n))
                await asyncio.sleep(0)  # arrive in order
        assert answers == {n: n for n in range(100)}
        assert seen["most"] == 4
        assert seen["order"] == list(range(100))  # first come, first served
    finally:
        await pool.aclose()
        server.close()


@pytest.mark.anyio
async def test_waiting_for_a_connection_counts_against_the_timeout():
    server, _ = await _counting_server(delay=1.0)
    port = server.sockets[0].getsockname()[1]
    pool = PostPool(f"http://127.0.0.1:{port}", max_connections=1)
    try:
        first = asyncio.create_task(pool.post("/x", b'{"n": 1}'))
        await asyncio.sleep(0.05)
        started = time.monotonic()
        with pytest.raises(ForwardTimeout, match="did not answer within 0.3s"):
            await pool.post("/x", b'{"n": 2}', timeout=0.3)
        assert time.monotonic() - started < 0.9  # gave up while waiting, not after the first
        assert (await first).json() == {"n": 1}
    finally:
        await pool.aclose()
        server.close()


def test_a_pool_needs_at_least_one_connection():
    with pytest.raises(ValueError, match="at least 1, got 0"):
        PostPool("http://127.0.0.1:1", max_connections=0)


@pytest.mark.anyio
async def test_a_cancelled_call_gives_its_connection_back():
    """A caller that gives up (cancelled while the env is slow) frees its turn: with one
    connection allowed, the next call still goes through, on a fresh connection."""
    server, seen = await _counting_server(delay=1.0)
    port = server.sockets[0].getsockname()[1]
    pool = PostPool(f"http://127.0.0.1:{port}", max_connections=1)
    try:
        slow = asyncio.create_task(pool.post("/x", b'{"n": 1}'))
        await asyncio.sleep(0.2)
        slow.cancel()
        with pytest.raises(asyncio.CancelledError):
            await slow
        answer = await asyncio.wait_for(pool.post("/x", b'{"n": 2}'), timeout=5)
        assert answer.json() == {"n": 2}
        assert seen["order"] == [1, 2]
    finally:
        await pool.aclose()
        server.close()
