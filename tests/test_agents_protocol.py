"""The A2A agent SDK and the chat client, over real HTTP: the card and its extensions, the
JSON-RPC errors, conversations by context, failures reported in the task, and the client's
handling of endpoints that misbehave."""

from __future__ import annotations

import anyio
import httpx
import pytest

from agentenv_protocol.agent import (
    A2AAgent,
    A2AClient,
    A2AError,
    AgentConfig,
    AgentResult,
    create_app,
)
from agentenv_protocol.agent.chat import (
    ChatClient,
    ChatError,
    MalformedModelResponse,
    ModelNotConfigured,
)
from agentenv_protocol.agent.client import task_data, task_text
from agentenv_protocol.agent.loop import ToolLoop
from agentenv_protocol.agent.testing import ScriptedModelServer
from agentenv_protocol.agent.types import AGENT_CONFIG_URI, MCP_CONFIG_URI, TRAJECTORY_URI
from agentenv_protocol.serving import serve_in_thread


class Counter(A2AAgent):
    name = "counter"

    async def run(self, request):
        if request.text == "boom":
            raise RuntimeError("kaput")
        if request.text == "slow":
            await anyio.sleep(5)
        history = [*request.history, {"role": "user", "content": request.text}]
        answer = f"{len(history)} messages; model {request.config.model}"
        history.append({"role": "assistant", "content": answer})
        return AgentResult(
            text=answer, messages=tuple(history), trajectory=({"type": "note", "n": len(history)},)
        )


@pytest.fixture
def agent_url():
    with serve_in_thread(create_app(Counter(AgentConfig(model="m0", timeout_seconds=1)))) as server:
        yield server.url


def rpc(url, method, params=None, rid=1):
    return httpx.post(
        url + "/a2a", json={"jsonrpc": "2.0", "id": rid, "method": method, "params": params or {}}
    ).json()


def test_card_advertises_the_three_extensions(agent_url):
    for path in ("/.well-known/agent-card.json", "/.well-known/agent.json"):
        card = httpx.get(agent_url + path).json()
        assert card["url"] == agent_url + "/a2a" and card["preferredTransport"] == "JSONRPC"
        uris = {e["uri"]: e["params"] for e in card["capabilities"]["extensions"]}
        assert set(uris) == {
            MCP_CONFIG_URI,
            AGENT_CONFIG_URI,
            TRAJECTORY_URI,
            "urn:agentenv:skill-config/v1",
        }
        assert uris[MCP_CONFIG_URI]["methods"]["add"]["request"] == {
            "required": ["url"],
            "optional": ["headers", "name"],
        }


def test_extensions_configure_and_refuse_bad_input(agent_url):
    async def go():
        async with A2AClient(agent_url) as agent:
            assert (
                await agent.add_mcp_server(
                    "http://gw/mcp", name="gateway", headers={"authorization": "Bearer x"}
                )
                == "gateway"
            )
            generated = await agent.add_mcp_server("http://other/mcp")
            assert generated.startswith("mcp_")
            with pytest.raises(A2AError, match="409"):
                await agent.add_mcp_server("http://gw2/mcp", name="gateway")
            with pytest.raises(A2AError, match="http"):
                await agent.add_mcp_server("ftp://nope")
            config = await agent.configure(model="m1", max_turns=3)
            assert (config["model"], config["max_turns"]) == ("m1", 3)
            # a key the card does not list as supported is not sent; posted anyway, it is refused
            assert "temperature" not in await agent.configure(temperature=0.1, max_turns=4)
            refused = httpx.post(agent_url + "/ext/agent-config", json={"temperature": 0.1})
            assert refused.status_code == 400 and "temperature" in refused.text
            with pytest.raises(A2AError, match="max_turns must be a positive integer"):
                await agent.configure(max_turns=0)

    anyio.run(go)
    listing = httpx.get(agent_url + "/ext/mcp-config").json()["mcp_servers"]
    assert listing["gateway"] == {"url": "http://gw/mcp", "has_headers": True}


def test_message_send_keeps_the_conversation_per_context(agent_url):
    async def go():
        async with A2AClient(agent_url) as agent:
            first = await agent.send("hi", context_id="c1")
            second = await agent.send("again", context_id="c1")
            other = await agent.send("hi", context_id="c2")
            assert first["status"]["state"] == "completed"
            assert (task_text(first), task_text(second), task_text(other)) == (
                "1 messages; model m0",
                "3 messages; model m0",
                "1 messages; model m0",
            )
            assert task_data(second, "usage")["total_tokens"] == 0
            assert await agent.trajectory(second["id"]) == [{"type": "note", "n": 4}]
            return second["id"]

    task_id = anyio.run(go)
    assert rpc(agent_url, "tasks/get", {"id": task_id})["result"]["id"] == task_id


def test_agent_errors_and_timeouts_fail_the_task_not_the_server(agent_url):
    async def go():
        async with A2AClient(agent_url) as agent:
            boom = await agent.send("boom")
            slow = await agent.send("slow")
            fine = await agent.send("hi")
            return boom, slow, fine

    boom, slow, fine = anyio.run(go)
    assert boom["status"]["state"] == "failed"
    assert task_data(boom, "failure") == {"class": "agent", "message": "RuntimeError: kaput"}
    assert "did not finish within 1s" in task_data(slow, "failure")["message"]
    assert fine["status"]["state"] == "completed"


def test_json_rpc_errors(agent_url):
    assert rpc(agent_url, "tasks/cancel")["error"]["code"] == -32601
    assert rpc(agent_url, "tasks/get", {"id": "nope"})["error"]["code"] == -32001
    assert rpc(agent_url, "message/send", {"message": {"parts": []}})["error"]["code"] == -32602
    assert httpx.post(agent_url + "/a2a", content=b"{not json").json()["error"]["code"] == -32700
    assert httpx.post(agent_url + "/a2a", json={"id": 1}).json()["error"]["code"] == -32600
    assert httpx.post(agent_url + "/ext/trajectory", json={"task_id": "nope"}).status_code == 404


def test_client_names_an_unreachable_agent_quickly():
    async def go():
        with anyio.fail_after(10):
            async with A2AClient("http://127.0.0.1:9", timeout=2) as agent:
                with pytest.raises(A2AError, match="did not come up within 1s"):
                    await agent.wait_ready(timeout=1)

    anyio.run(go)


def test_chat_client_errors():
    with pytest.raises(ModelNotConfigured, match="LITELLM_BASE_URL"):
        ChatClient(None)

    async def complete(script):
        with ScriptedModelServer(script) as model:
            async with ChatClient(model.base_url, backoff=0.01) as chat:
                try:
                    return await chat.complete(
                        model="m", messages=[{"role": "user", "content": "x"}]
                    )
                finally:
                    count = len(model.requests)
        return count

    with pytest.raises(MalformedModelResponse, match="no choices"):
        anyio.run(complete, [{"raw": {"choices": []}}])
    with pytest.raises(ChatError, match="refused the request: HTTP 400"):
        anyio.run(complete, [{"status": 400}, {"content": "never reached"}])
    reply = anyio.run(complete, [{"status": 502}, {"content": "ok"}])
    assert reply.message["content"] == "ok" and reply.usage.total_tokens == 18


def test_tool_calls_without_tools_are_an_agent_failure():
    async def go():
        with ScriptedModelServer([{"tool_calls": [{"name": "rm", "arguments": {}}]}]) as model:
            async with ChatClient(model.base_url) as chat:
                return await ToolLoop(chat, model="m").run("do it", tools=None)

    result = anyio.run(go)
    assert result.failure == ("agent", "the model called 'rm' but the agent has no tools")
