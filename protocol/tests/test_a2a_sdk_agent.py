"""The agent-author SDK (`agentenv_protocol.a2a_agent`): what a decorated agent serves over A2A,
how its typed config, parts, streaming, cancel, triggers and extensions behave, what it refuses,
and that our own A2A client drives one served by a real uvicorn process."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import textwrap
import time
from typing import Any

import httpx
import pytest
from pydantic import BaseModel, ConfigDict
from starlette.testclient import TestClient

from agentenv_protocol.a2a_agent import (
    AGENT_CONFIG_V1,
    MCP_CONFIG_V1,
    SKILL_CONFIG_V1,
    STAGING_V1_URI,
    TRAJECTORY_V1,
    TRIGGERS_V1,
    AgentConfig,
    AgentEnvAgent,
    AgentIdentity,
    DataPart,
    ExtensionDefinition,
    FieldSchema,
    FilePart,
    OperationDefinition,
    TaskProgress,
    TaskRequest,
    TaskResult,
    WriteOnly,
    a2a_agent,
    create_app,
    custom_extension,
    extension,
)

IDENTITY = AgentIdentity(name="probe", description="Tells what it received", version="2.1")


class ProbeConfig(AgentConfig):
    greeting: str = "hello"
    limit: int = 3
    token: WriteOnly[str | None] = None


@a2a_agent(identity=IDENTITY, config=ProbeConfig, extensions=(MCP_CONFIG_V1, TRAJECTORY_V1))
class Probe(AgentEnvAgent):
    """Answers with what it saw; "hold" waits until released, "boom" raises."""

    def __init__(self) -> None:
        self.seen: list[TaskRequest] = []
        self.release = asyncio.Event()

    async def run(self, request: TaskRequest[ProbeConfig]) -> TaskResult:
        self.seen.append(request)
        if request.text == "hold":
            await self.release.wait()
        if request.text == "boom":
            raise RuntimeError("the probe broke")
        files = [p.name for p in request.parts if isinstance(p, FilePart)]
        data = [p.data for p in request.parts if isinstance(p, DataPart)]
        return (
            TaskResult.builder()
            .succeeded()
            .add_text(f"{request.config.greeting}: {request.text}")
            .add_data({"files": files, "data": data})
            .session_ref(f"session-of-{request.context_id}")
            .native_trajectory(format="probe/v1", payload=[{"saw": request.text}])
            .build()
        )


def rpc(method: str, params: dict[str, Any], rid: str = "1") -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}


def message(*parts: dict[str, Any], context_id: str | None = None, **extra: Any) -> dict:
    msg: dict[str, Any] = {
        "kind": "message",
        "messageId": "m1",
        "role": "user",
        "parts": list(parts),
    }
    if context_id:
        msg["contextId"] = context_id
    return {"message": msg, **extra}


def text(value: str) -> dict[str, Any]:
    return {"kind": "text", "text": value}


def ext(card: dict[str, Any], uri: str) -> dict[str, Any]:
    return next(e for e in card["capabilities"]["extensions"] if e["uri"] == uri)


@pytest.fixture(scope="module")
def served():
    agent = Probe()
    with TestClient(create_app(agent)) as client:
        yield agent, client


def test_the_card_tells_identity_modes_and_the_extensions_it_serves(served) -> None:
    _, client = served
    card = client.get("/.well-known/agent-card.json").json()
    assert client.get("/.well-known/agent.json").json() == card
    assert (card["name"], card["version"], card["url"]) == ("probe", "2.1", "http://testserver/a2a")
    assert card["capabilities"]["streaming"] is False
    assert [e["uri"] for e in card["capabilities"]["extensions"]] == [
        AGENT_CONFIG_V1.uri,
        MCP_CONFIG_V1.uri,
        TRAJECTORY_V1.uri,
        STAGING_V1_URI,  # every SDK agent serves staging unless AGENTENV_STAGING_MAX_BYTES=0
    ]
    set_request = ext(card, AGENT_CONFIG_V1.uri)["params"]["methods"]["set"]["request"]
    assert set_request["supported"] == ["greeting", "limit", "token"]
    assert set_request["schema"]["properties"]["token"]["writeOnly"] is True
    assert "writeOnly" not in set_request["schema"]["properties"]["greeting"]


def test_typed_config_is_set_read_back_masked_and_bad_input_changes_nothing(served) -> None:
    agent, client = served
    endpoint = ext(client.get("/.well-known/agent.json").json(), AGENT_CONFIG_V1.uri)["params"][
        "endpoint"
    ]
    assert client.post(endpoint, json={"greeting": "hi", "token": "s3cret"}).status_code == 200
    assert client.get(endpoint).json() == {"config": {"greeting": "hi", "token": "***"}}
    unknown = client.post(endpoint, json={"greting": "typo"})
    wrong_type = client.post(endpoint, json={"limit": "many"})
    assert unknown.status_code == 400 and "greting" in unknown.text
    assert wrong_type.status_code == 400 and "limit" in wrong_type.text
    assert client.get(endpoint).json() == {"config": {"greeting": "hi", "token": "***"}}
    task = client.post("/a2a", json=rpc("message/send", message(text("x")))).json()["result"]
    assert task["status"]["message"]["parts"][0]["text"] == "hi: x"
    assert agent.seen[-1].config.token == "s3cret"  # the agent gets the secret in clear


def test_send_returns_the_task_with_typed_parts_and_tasks_get_finds_it(served) -> None:
    agent, client = served
    params = message(
        text("look"),
        {"kind": "file", "file": {"name": "a.png", "mimeType": "image/png", "bytes": "iVBO"}},
        {"kind": "file", "file": {"uri": "https://example.test/b.txt"}},
        {"kind": "data", "data": {"n": 1}},
    )
    params["message"]["metadata"] = {"label": "t"}
    task = client.post("/a2a", json=rpc("message/send", params)).json()["result"]
    assert task["status"]["state"] == "completed"
    assert task["status"]["message"]["parts"][1] == {
        "kind": "data",
        "data": {"files": ["a.png", None], "data": [{"n": 1}]},
    }
    request = agent.seen[-1]
    assert request.metadata == {"label": "t"} and request.task_id == task["id"]
    assert request.parts[1] == FilePart(name="a.png", mime_type="image/png", bytes="iVBO")
    got = client.post("/a2a", json=rpc("tasks/get", {"id": task["id"]})).json()["result"]
    assert got == task
    missing = client.post("/a2a", json=rpc("tasks/get", {"id": "nope"})).json()
    assert missing["error"]["code"] == -32001


@pytest.mark.parametrize(
    ("parts", "problem"),
    [
        ([], "parts is empty"),
        ([text("ok"), {"kind": "image"}], "parts[1].kind"),
        ([{"kind": "file", "file": {"name": "x"}}], "parts[0].file: a file part has exactly one"),
        ([{"kind": "data", "data": [1]}], "parts[0].data must be an object"),
    ],
)
def test_a_malformed_message_is_refused_naming_the_part(served, parts, problem) -> None:
    agent, client = served
    before = len(agent.seen)
    answer = client.post("/a2a", json=rpc("message/send", message(*parts))).json()
    assert answer["error"]["code"] == -32602 and problem in answer["error"]["message"]
    assert len(agent.seen) == before


def test_a_context_keeps_the_session_the_agent_named(served) -> None:
    agent, client = served
    client.post("/a2a", json=rpc("message/send", message(text("one"), context_id="ctx-a")))
    client.post("/a2a", json=rpc("message/send", message(text("two"), context_id="ctx-a")))
    assert [r.session_ref for r in agent.seen[-2:]] == [None, "session-of-ctx-a"]


def test_mcp_servers_added_reach_the_request_and_a_duplicate_name_is_a_conflict(served) -> None:
    agent, client = served
    added = client.post("/ext/mcp-config", json={"url": "http://env.test/mcp", "name": "env"})
    assert added.json() == {"status": "added", "name": "env"}
    assert (
        client.post("/ext/mcp-config", json={"url": "http://x.test", "name": "env"}).status_code
        == 409
    )
    assert client.post("/ext/mcp-config", json={"url": "ftp://x"}).status_code == 400
    listed = client.get("/ext/mcp-config").json()
    assert listed == {"mcp_servers": {"env": {"url": "http://env.test/mcp", "has_headers": False}}}
    client.post("/a2a", json=rpc("message/send", message(text("tools?"))))
    assert agent.seen[-1].mcp_servers == {"env": {"url": "http://env.test/mcp", "headers": None}}


def test_trajectory_per_task_and_per_context(served) -> None:
    _, client = served
    first = client.post("/a2a", json=rpc("message/send", message(text("a"), context_id="ctx-t")))
    client.post("/a2a", json=rpc("message/send", message(text("b"), context_id="ctx-t")))
    task_id = first.json()["result"]["id"]
    assert client.post("/ext/trajectory", json={"task_id": task_id}).json() == {
        "trajectory": [{"saw": "a"}]
    }
    assert client.post("/ext/trajectory", json={"context_id": "ctx-t"}).json() == {
        "trajectory": [{"saw": "a"}, {"saw": "b"}]
    }
    assert client.post("/ext/trajectory", json={"task_id": "unknown"}).status_code == 404


def test_an_agent_that_raises_fails_its_task_and_the_server_goes_on(served) -> None:
    _, client = served
    task = client.post("/a2a", json=rpc("message/send", message(text("boom")))).json()["result"]
    assert task["status"]["state"] == "failed"
    assert "RuntimeError: the probe broke" in task["status"]["message"]["parts"][0]["text"]
    again = client.post("/a2a", json=rpc("message/send", message(text("fine")))).json()["result"]
    assert again["status"]["state"] == "completed"


def test_a_task_started_without_blocking_can_be_cancelled_once(served) -> None:
    agent, client = served
    started = client.post(
        "/a2a", json=rpc("message/send", message(text("hold"), configuration={"blocking": False}))
    ).json()["result"]
    deadline = time.monotonic() + 5
    while (
        client.post("/a2a", json=rpc("tasks/get", {"id": started["id"]})).json()["result"][
            "status"
        ]["state"]
        != "working"
    ):
        assert time.monotonic() < deadline, "the task never started"
        time.sleep(0.01)
    cancelled = client.post("/a2a", json=rpc("tasks/cancel", {"id": started["id"]})).json()
    assert cancelled["result"]["status"]["state"] == "canceled"
    again = client.post("/a2a", json=rpc("tasks/cancel", {"id": started["id"]})).json()
    assert again["error"]["code"] == -32002
    unknown = client.post("/a2a", json=rpc("tasks/cancel", {"id": "nope"})).json()
    assert unknown["error"]["code"] == -32001


@a2a_agent(identity=AgentIdentity(name="streamer", description="Counts", version="1"))
class Streamer(AgentEnvAgent):
    async def run(self, request: TaskRequest):
        for n in range(3):
            yield TaskProgress.text(f"step {n}")
        yield TaskResult.text("done counting")


def test_a_streaming_agent_sends_the_task_then_progress_then_one_final_update() -> None:
    with TestClient(Streamer().create_app()) as client:
        assert client.get("/.well-known/agent.json").json()["capabilities"]["streaming"] is True
        with client.stream("POST", "/a2a", json=rpc("message/stream", message(text("go")))) as r:
            assert r.headers["content-type"].startswith("text/event-stream")
            events = [
                json.loads(line[len("data: ") :])["result"]
                for line in r.iter_lines()
                if line.startswith("data: ")
            ]
        blocking = client.post("/a2a", json=rpc("message/send", message(text("go")))).json()
    assert [e["kind"] for e in events] == ["task"] + ["status-update"] * 4
    assert [e["status"]["state"] for e in events[1:]] == ["working"] * 3 + ["completed"]
    assert [e["final"] for e in events[1:]] == [False, False, False, True]
    assert events[2]["status"]["message"]["parts"] == [{"kind": "text", "text": "step 1"}]
    assert events[-1]["status"]["message"]["parts"] == [{"kind": "text", "text": "done counting"}]
    assert blocking["result"]["status"]["message"]["parts"][0]["text"] == "done counting"


class Count(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str


@a2a_agent(
    identity=AgentIdentity(name="custom", description="d", version="1"), extensions=(TRIGGERS_V1,)
)
class Custom(AgentEnvAgent):
    async def run(self, request: TaskRequest) -> TaskResult:
        return TaskResult.text("ok")

    @custom_extension(
        uri="urn:test:count/v1",
        operation="count",
        method="POST",
        path="/ext/count",
        request=Count,
        response=FieldSchema(required=("n",)),
    )
    async def count(self, request: Count) -> dict[str, int]:
        return {"n": len(request.text)}


def test_custom_operations_validate_their_body_and_triggers_refuse_bad_specs_whole() -> None:
    with TestClient(Custom().create_app()) as client:
        card = client.get("/.well-known/agent.json").json()
        method = ext(card, "urn:test:count/v1")["params"]["methods"]["count"]
        assert method["request"]["required"] == ["text"] and method["response"] == {
            "required": ["n"]
        }
        assert client.post("/ext/count", json={"text": "abcd"}).json() == {"n": 4}
        bad = client.post("/ext/count", json={"txt": "abcd"})
        assert bad.status_code == 400 and "txt" in bad.text
        assert client.post("/ext/count", content=b"{not json").status_code == 400

        good = {
            "id": "hi",
            "when": {"type": "step", "turn": 2},
            "actions": [{"type": "say", "text": "hey"}],
        }
        broken = {"id": "bad", "when": {"type": "step", "turn": 1}, "actions": [{"type": "shout"}]}
        refused = client.post("/ext/triggers", json={"triggers": [good, broken]})
        assert refused.status_code == 400 and "triggers[1].actions[0].type" in refused.text
        assert client.get("/ext/triggers").json()["triggers"] == []
        assert client.post("/ext/triggers", json={"triggers": [good]}).status_code == 200
        decide = {"turn": 2, "context_id": "c"}
        assert client.post("/ext/triggers/decide", json=decide).json() == {
            "parts": [{"kind": "text", "text": "hey"}],
            "done": False,
            "fired": ["hi"],
        }
        assert client.post("/ext/triggers/decide", json=decide).json()["fired"] == []  # once
        assert client.post("/ext/triggers/decide", json={"turn": 0}).status_code == 400


NOTES = ExtensionDefinition(
    uri="urn:test:notes/v1",
    endpoint="/ext/notes",
    core_operations={
        "add": OperationDefinition(name="add", method="POST", path="/ext/notes"),
        "list": OperationDefinition(name="list", method="GET", path="/ext/notes"),
    },
)


def _decorate(**kwargs: Any):
    def define(body: dict[str, Any]) -> type:
        async def run(self, request):
            return TaskResult.text("ok")

        cls = type("Broken", (AgentEnvAgent,), {"run": run, **body})
        return a2a_agent(identity=IDENTITY, **kwargs)(cls)

    return define


def _mark(reference):
    async def handler(self, request: Any = None) -> dict:
        return {}

    return extension(reference)(handler)


@pytest.mark.parametrize(
    ("kwargs", "body", "problem"),
    [
        (
            {"extensions": (NOTES,)},
            {"add": _mark(NOTES.add)},
            "does not implement its operation 'list'",
        ),
        (
            {"extensions": (TRIGGERS_V1,)},
            {"decide": _mark(TRIGGERS_V1.decide)},
            "overrides decide of urn:agentenv:triggers/v1 but not register, state",
        ),
        ({}, {"cfg": _mark(AGENT_CONFIG_V1.set)}, "has no config="),
        ({"extensions": (SKILL_CONFIG_V1,)}, {}, "does not implement its operation 'add'"),
        (
            {},
            {
                "a": custom_extension(
                    uri="urn:test:one/v1", operation="x", method="GET", path="/ext/same"
                )(lambda self: {}),
                "b": custom_extension(
                    uri="urn:test:two/v1", operation="y", method="GET", path="/ext/same"
                )(lambda self: {}),
            },
            "GET /ext/same is claimed by both",
        ),
    ],
    ids=[
        "runtime-op-missing",
        "half-an-sdk-set",
        "config-override-without-config",
        "skill-config",
        "route-clash",
    ],
)
def test_mistakes_in_an_agent_class_fail_when_it_is_decorated(kwargs, body, problem) -> None:
    with pytest.raises(ValueError) as caught:
        _decorate(**kwargs)(body)
    assert problem in str(caught.value)


def test_wrong_decorator_arguments_are_type_errors_naming_them() -> None:
    class Plain(AgentEnvAgent):
        async def run(self, request):
            return TaskResult.text("ok")

    with pytest.raises(TypeError, match="config must be an AgentConfig subclass"):
        a2a_agent(identity=IDENTITY, config=dict)
    with pytest.raises(TypeError, match="agent-config/v1 comes from config="):
        a2a_agent(identity=IDENTITY, extensions=(AGENT_CONFIG_V1,))
    with pytest.raises(TypeError, match="not decorated with @a2a_agent"):
        create_app(Plain())
    with pytest.raises(AttributeError, match="did you mean 'list'"):
        NOTES.lst  # noqa: B018
    with pytest.raises(TypeError, match="TaskResult.parts\\[0\\]"):
        TaskResult(parts=("text",))


AGENT_SCRIPT = textwrap.dedent(
    """
    from agentenv_protocol.a2a_agent import (
        MCP_CONFIG_V1, TRAJECTORY_V1, AgentConfig, AgentEnvAgent, AgentIdentity, TaskRequest,
        TaskResult, a2a_agent,
    )

    class Config(AgentConfig):
        model: str = "none"
        system_prompt: str = ""

    @a2a_agent(identity=AgentIdentity(name="served", description="d", version="1"),
               config=Config, extensions=(MCP_CONFIG_V1, TRAJECTORY_V1))
    class Served(AgentEnvAgent):
        async def run(self, request: TaskRequest) -> TaskResult:
            servers = ",".join(sorted(request.mcp_servers))
            return (TaskResult.builder().succeeded()
                    .add_text(f"{request.config.model}|{servers}|{request.text}")
                    .native_trajectory(format="t/v1", payload=[{"type": "turn"}]).build())

    Served().serve()
    """
)


@pytest.mark.anyio
async def test_our_a2a_client_drives_an_sdk_agent_served_by_uvicorn(tmp_path) -> None:
    from agentenv_protocol.agent.client import A2AClient, task_text

    script = tmp_path / "served_agent.py"
    script.write_text(AGENT_SCRIPT)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "A2A_HOST": "127.0.0.1", "PORT": str(port)}
    proc = subprocess.Popen([sys.executable, str(script)], env=env, stderr=subprocess.PIPE)
    try:
        async with A2AClient(f"http://127.0.0.1:{port}") as agent:
            await agent.wait_ready(timeout=30)
            assert await agent.configure(model="m-1", max_turns=4) == {"model": "m-1"}
            assert await agent.add_mcp_server("http://gw.test/mcp", name="gateway") == "gateway"
            task = await agent.send("hello")
            assert task_text(task) == "m-1|gateway|hello"
            assert await agent.trajectory(task["id"]) == [{"type": "turn"}]
        async with httpx.AsyncClient() as http:
            card = (await http.get(f"http://127.0.0.1:{port}/.well-known/agent-card.json")).json()
        assert card["url"] == f"http://127.0.0.1:{port}/a2a"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
