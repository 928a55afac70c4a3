"""The SDK's peer-agents tools between two real SDK agents, each served by uvicorn on its own
port: the lead's routing table set over HTTP, the tools reached with our MCP client
(`ToolSession`) at the URL the lead's own task was handed, and the peer's real A2A server
behind them (message/send, tasks/get, tasks/cancel)."""

from __future__ import annotations

import threading
import time
from typing import Any

import anyio
import httpx
import pytest
from starlette.testclient import TestClient

from agentenv_protocol.a2a_agent import (
    MCP_CONFIG_V1,
    PEER_AGENTS_V1,
    AgentEnvAgent,
    AgentIdentity,
    DataPart,
    TaskRequest,
    TaskResult,
    TextPart,
    a2a_agent,
)
from agentenv_protocol.a2a_agent.peer_agents import PEER_MCP_PATH, PEER_MCP_SERVER_NAME
from agentenv_protocol.serving import serve_in_thread
from agentenv_protocol.tool_client import ToolSession

pytestmark = pytest.mark.anyio


@a2a_agent(
    identity=AgentIdentity(name="planner", description="Hands work to its peers", version="2"),
    extensions=(MCP_CONFIG_V1, PEER_AGENTS_V1),
)
class Planner(AgentEnvAgent):
    def __init__(self) -> None:
        self.seen_servers: list[dict[str, Any]] = []

    async def run(self, request: TaskRequest) -> TaskResult:
        self.seen_servers.append(request.mcp_servers)
        return TaskResult.text("planned")


@a2a_agent(identity=AgentIdentity(name="checker", description="Checks a claim", version="1"))
class Checker(AgentEnvAgent):
    """'hold' waits for `release`; 'score' answers with a data part; else echoes the words."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.contexts: list[str] = []
        self.cancelled: list[str] = []

    async def run(self, request: TaskRequest) -> TaskResult:
        self.contexts.append(request.context_id)
        words = " ".join(p.text for p in request.parts if isinstance(p, TextPart))
        if words == "hold":
            try:
                while not self.release.is_set():
                    await anyio.sleep(0.02)
            except anyio.get_cancelled_exc_class():
                self.cancelled.append(request.task_id)
                raise
        if words == "score":
            return TaskResult.success(parts=(TextPart(text="scored"), DataPart(data={"n": 7})))
        return TaskResult.text(f"checked {words} ({len(self.contexts)})")


@pytest.fixture(scope="module")
def agents():
    planner, checker = Planner(), Checker()
    lead = serve_in_thread(planner.create_app())
    peer = serve_in_thread(checker.create_app())
    table = {"peers": [{"name": "checker", "url": peer.url, "description": "the checker"}]}
    assert httpx.post(lead.url + PEER_AGENTS_V1.endpoint, json=table).status_code == 200
    yield planner, checker, lead.url, peer.url
    checker.release.set()
    lead.stop()
    peer.stop()


def _tools_url(planner: Planner, lead_url: str) -> str:
    """The peer tools' URL as the lead's own task is handed it (so the test uses no other)."""
    message = {"messageId": "m", "role": "user", "parts": [{"kind": "text", "text": "go"}]}
    body = {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": message}}
    assert httpx.post(lead_url + "/a2a", json=body).json()["result"]["status"]["state"] == (
        "completed"
    )
    return planner.seen_servers[-1][PEER_MCP_SERVER_NAME]["url"]


async def test_the_task_is_handed_the_tools_on_the_port_the_agent_serves(agents) -> None:
    planner, _, lead_url, _ = agents
    url = _tools_url(planner, lead_url)
    port = httpx.URL(lead_url).port
    assert url == f"http://127.0.0.1:{port}{PEER_MCP_PATH}"
    listed = httpx.get(lead_url + MCP_CONFIG_V1.endpoint).json()["mcp_servers"]
    assert listed[PEER_MCP_SERVER_NAME] == {"url": url, "has_headers": False}
    taken = httpx.post(
        lead_url + MCP_CONFIG_V1.endpoint, json={"url": "http://x.test/mcp", "name": "peer_agents"}
    )
    assert taken.status_code == 409


async def test_a_message_gets_the_peers_answer_and_a_context_keeps_the_conversation(
    agents,
) -> None:
    planner, checker, lead_url, peer_url = agents
    async with ToolSession(mcp_url=_tools_url(planner, lead_url)) as tools:
        names = [tool.name for tool in await tools.list_tools()]
        listed = (await tools.call_tool("peer_list")).json()
        first = (
            await tools.call_tool("peer_send_message", {"name": "checker", "prompt": "a"})
        ).json()
        again = {"name": "checker", "prompt": "b", "context_id": first["context_id"]}
        second = (await tools.call_tool("peer_send_message", again)).json()
        scored = (
            await tools.call_tool("peer_send_message", {"name": "checker", "prompt": "score"})
        ).json()
        card = (await tools.call_tool("peer_get_card", {"name": "checker"})).json()

    assert names == [
        "peer_list",
        "peer_get_card",
        "peer_send_message",
        "peer_start_task",
        "peer_get_task",
        "peer_cancel_task",
    ]
    assert listed == [{"name": "checker", "description": "the checker", "url": peer_url}]
    assert first["state"] == "completed" and first["response"].startswith("checked a")
    assert second["context_id"] == first["context_id"] and second["response"].startswith(
        "checked b"
    )
    assert checker.contexts.count(first["context_id"]) == 2
    assert (scored["response"], scored["parts"]) == ("scored", [{"kind": "data", "data": {"n": 7}}])
    assert card["name"] == "checker" and card["description"] == "Checks a claim"


async def test_a_started_task_is_read_later_and_a_running_one_can_be_cancelled(agents) -> None:
    planner, checker, lead_url, _ = agents
    checker.release.clear()
    async with ToolSession(mcp_url=_tools_url(planner, lead_url)) as tools:
        held = (
            await tools.call_tool("peer_start_task", {"name": "checker", "prompt": "hold"})
        ).json()
        doomed = (
            await tools.call_tool("peer_start_task", {"name": "checker", "prompt": "hold"})
        ).json()
        working = (await tools.call_tool("peer_get_task", {"task_id": held["task_id"]})).json()
        cancelled = (
            await tools.call_tool("peer_cancel_task", {"task_id": doomed["task_id"]})
        ).json()
        checker.release.set()
        for _ in range(200):
            done = (await tools.call_tool("peer_get_task", {"task_id": held["task_id"]})).json()
            if done["state"] == "completed":
                break
            await anyio.sleep(0.02)
        history = {"task_id": held["task_id"], "history_length": 2}
        with_history = (await tools.call_tool("peer_get_task", history)).json()

    assert set(held) == {"task_id", "context_id", "state"} and held["state"] == "working"
    assert working == {
        "task_id": held["task_id"],
        "context_id": held["context_id"],
        "state": "working",
    }
    assert cancelled == {"task_id": doomed["task_id"], "state": "canceled"}
    assert checker.cancelled == [doomed["task_id"]]
    assert done["state"] == "completed" and done["response"].startswith("checked hold")
    assert with_history["history"][0] == {
        "role": "user",
        "parts": [{"kind": "text", "text": "hold"}],
    }


async def test_a_wait_that_ends_first_leaves_the_task_working_and_answers_on_time(agents) -> None:
    planner, checker, lead_url, _ = agents
    checker.release.clear()
    async with ToolSession(mcp_url=_tools_url(planner, lead_url)) as tools:
        started = time.monotonic()
        ask = {"name": "checker", "prompt": "hold", "timeout_seconds": 0.5}
        waited = (await tools.call_tool("peer_send_message", ask)).json()
        took = time.monotonic() - started
    checker.release.set()

    assert set(waited) == {"task_id", "context_id", "state"} and waited["state"] == "working"
    assert 0.4 < took < 5


async def test_mistakes_are_tool_errors_that_say_what_to_send(agents) -> None:
    planner, _, lead_url, _ = agents
    async with ToolSession(mcp_url=_tools_url(planner, lead_url)) as tools:
        calls = {
            "unknown peer": ("peer_send_message", {"name": "writer", "prompt": "x"}),
            "unknown task": ("peer_get_task", {"task_id": "t-1"}),
            "unknown argument": ("peer_start_task", {"name": "checker", "promt": "x"}),
            "wrong type": ("peer_send_message", {"name": "checker", "timeout_seconds": "soon"}),
            "nothing to send": ("peer_send_message", {"name": "checker"}),
            "bad part": ("peer_start_task", {"name": "checker", "parts": [{"kind": "video"}]}),
            "missing": ("peer_get_task", {}),
            "no such tool": ("peer_delete", {}),
        }
        answers = {what: await tools.call_tool(*call) for what, call in calls.items()}

    assert all(answer.is_error for answer in answers.values())
    text = {what: answer.text for what, answer in answers.items()}
    assert "unknown peer 'writer'. Available peers: checker" in text["unknown peer"]
    assert "unknown task_id 't-1'" in text["unknown task"]
    assert "['promt']" in text["unknown argument"] and "prompt" in text["unknown argument"]
    assert "'timeout_seconds' must be a number" in text["wrong type"]
    assert "give a prompt or parts" in text["nothing to send"]
    assert "kind: text|data|file" in text["bad part"]
    assert "'task_id' is required" in text["missing"]
    assert "unknown tool 'peer_delete'" in text["no such tool"]


async def test_a_peer_that_is_down_or_not_a2a_is_a_tool_error(agents) -> None:
    planner, _, lead_url, _ = agents
    with TestClient(planner.create_app(), client=("127.0.0.1", 1)) as client:
        table = {
            "peers": [
                {"name": "gone", "url": "http://127.0.0.1:9"},  # nothing listens on port 9
                {"name": "web", "url": lead_url + "/.well-known"},  # answers 404 HTML-ish
            ]
        }
        assert client.post(PEER_AGENTS_V1.endpoint, json=table).status_code == 200
        answers = [
            _call(client, "peer_send_message", name=name, prompt="x") for name in ("gone", "web")
        ]

    (gone_failed, gone), (web_failed, web) = answers
    assert gone_failed and "could not be reached for message/send: ConnectError" in gone
    assert web_failed and "the peer answered message/send with HTTP 404" in web


def _call(client: TestClient, tool: str, **arguments: Any) -> tuple[bool, str]:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    }
    result = client.post(PEER_MCP_PATH, json=body).json()["result"]
    return result["isError"], result["content"][0]["text"]


def test_a_bad_table_is_refused_whole_and_the_old_one_kept() -> None:
    good = {"peers": [{"name": "a", "url": "http://a.test"}]}
    bad_tables = {
        "duplicate": {"peers": [{"name": "b", "url": "http://b.test"}] * 2},
        "not a url": {"peers": [{"name": "b", "url": "b.test"}]},
        "unknown key": {"peers": [{"name": "b", "url": "http://b.test", "role": "x"}]},
        "no peers": {"table": []},
    }
    with TestClient(Planner().create_app()) as client:
        client.post(PEER_AGENTS_V1.endpoint, json=good)
        refused = {k: client.post(PEER_AGENTS_V1.endpoint, json=v) for k, v in bad_tables.items()}
        kept = client.get(PEER_AGENTS_V1.endpoint).json()

    assert {k: r.status_code for k, r in refused.items()} == dict.fromkeys(bad_tables, 400)
    assert refused["duplicate"].text == "peer names must be unique"
    assert "peers.0.url" in refused["not a url"].text
    assert "peers.0.role" in refused["unknown key"].text
    assert kept == good


def test_callers_off_this_machine_and_calls_before_start_up_are_refused() -> None:
    app = Planner().create_app()
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    before = TestClient(app, client=("127.0.0.1", 1)).post(PEER_MCP_PATH, json=body)
    with TestClient(app, client=("192.168.1.20", 1)) as remote:
        refused = remote.post(PEER_MCP_PATH, json=body)
    with TestClient(app, client=("::1", 1)) as local:
        served = local.post(PEER_MCP_PATH, json=body)

    assert (before.status_code, refused.status_code, served.status_code) == (503, 403, 200)


def test_a_peer_answering_without_end_is_cut_off_at_the_limit(monkeypatch) -> None:
    from agentenv_protocol.a2a_agent import peer_agents

    async def endless(scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        await send({"type": "http.response.start", "status": 200, "headers": []})
        # chunked with no end within the caller's limit (64 MiB against its 1 MiB). Bounded all
        # the same: once the caller hangs up, uvicorn's send returns at once, and an endless
        # loop would spin in the server thread for the rest of the test session.
        for _ in range(1024):
            await send({"type": "http.response.body", "body": b" " * 65536, "more_body": True})

    monkeypatch.setattr(peer_agents, "_MAX_REPLY_BYTES", 1 << 20)
    running = serve_in_thread(endless)
    try:
        with TestClient(Planner().create_app(), client=("127.0.0.1", 1)) as client:
            table = {"peers": [{"name": "flood", "url": running.url}]}
            client.post(PEER_AGENTS_V1.endpoint, json=table)
            failed, error = _call(client, "peer_start_task", name="flood", prompt="x")
    finally:
        running.stop()

    assert failed and "the peer's answer to message/send exceeds 1048576 bytes" in error
