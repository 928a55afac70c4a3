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
    TextPart,
    Usage,
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


def test_an_agent_that_raises_fails_its_task_opaquely_and_the_server_goes_on(
    served, caplog
) -> None:
    _, client = served
    answer = client.post("/a2a", json=rpc("message/send", message(text("boom"))))
    task = answer.json()["result"]
    assert task["status"]["state"] == "failed"
    (error,) = [p["data"] for p in task["status"]["message"]["parts"]]
    assert (error["error_type"], error["error_code"]) == (
        "infra_error",
        "framework.unhandled_exception",
    )
    correlation = error["error_message"].rsplit(" ", 1)[-1]
    assert len(correlation) == 32 and correlation in caplog.text  # the log has the detail
    assert "the probe broke" not in answer.text and "the probe broke" in caplog.text
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


def _custom(uri: str, method: str, path: str):
    async def handler(self) -> dict:
        return {}

    return custom_extension(uri=uri, operation="op", method=method, path=path)(handler)


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
                "a": _custom("urn:test:one/v1", "GET", "/ext/same"),
                "b": _custom("urn:test:two/v1", "GET", "/ext/same"),
            },
            "GET /ext/same is claimed by both",
        ),
        (
            {},
            {"a2a": _custom("urn:test:a/v1", "POST", "/a2a")},
            "conflicts with the A2A JSON-RPC route",
        ),
        (
            {},
            {"card": _custom("urn:test:c/v1", "GET", "/.well-known/agent-card.json")},
            "conflicts with the agent card route",
        ),
        (
            {},
            {
                "sync": custom_extension(
                    uri="urn:test:s/v1", operation="s", method="GET", path="/ext/s"
                )(lambda self: {})
            },
            "Broken.sync handles urn:test:s/v1 's' and must be an async function",
        ),
    ],
    ids=[
        "runtime-op-missing",
        "half-an-sdk-set",
        "config-override-without-config",
        "skill-config",
        "route-clash",
        "shadows-a2a",
        "shadows-card",
        "sync-handler",
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
        TaskResult.success(parts=("text",))


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


STREAMING_SCRIPT = textwrap.dedent(
    """
    import asyncio
    from agentenv_protocol.a2a_agent import (
        AgentEnvAgent, AgentIdentity, TaskProgress, TaskRequest, TaskResult, a2a_agent,
    )

    @a2a_agent(identity=AgentIdentity(name="slow-stream", description="d", version="1"))
    class SlowStream(AgentEnvAgent):
        async def run(self, request: TaskRequest):
            yield TaskProgress.text("started")
            await asyncio.sleep(0.5)
            yield TaskProgress.text("halfway")
            yield TaskResult.text("finished anyway")

    SlowStream().serve()
    """
)


@pytest.mark.anyio
async def test_a_stream_client_that_leaves_does_not_stop_the_task(tmp_path) -> None:
    script = tmp_path / "slow_stream.py"
    script.write_text(STREAMING_SCRIPT)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "A2A_HOST": "127.0.0.1", "PORT": str(port)}
    proc = subprocess.Popen([sys.executable, str(script)], env=env, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        async with httpx.AsyncClient(timeout=10) as http:
            for _ in range(300):
                try:
                    await http.get(url + "/health")
                    break
                except httpx.TransportError:
                    await asyncio.sleep(0.05)
            request = rpc("message/stream", message(text("go")))
            async with http.stream("POST", url + "/a2a", json=request) as response:
                async for line in response.aiter_lines():
                    if line.startswith("data: "):
                        first = json.loads(line[len("data: ") :])["result"]
                        break  # leave after the first event
            assert first["kind"] == "task"
            for _ in range(100):
                got = await http.post(url + "/a2a", json=rpc("tasks/get", {"id": first["id"]}))
                task = got.json()["result"]
                if task["status"]["state"] == "completed":
                    break
                await asyncio.sleep(0.05)
            assert task["status"]["message"]["parts"] == [
                {"kind": "text", "text": "finished anyway"}
            ]
            assert proc.poll() is None  # the server is still up
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_prompts_to_one_context_run_one_at_a_time(served) -> None:
    agent, client = served
    agent.release = asyncio.Event()
    context = {"context_id": "ctx-serial", "configuration": {"blocking": False}}
    held = client.post("/a2a", json=rpc("message/send", message(text("hold"), **context)))
    queued = client.post("/a2a", json=rpc("message/send", message(text("next"), **context)))
    held_id, queued_id = held.json()["result"]["id"], queued.json()["result"]["id"]

    def state(task_id: str) -> str:
        got = client.post("/a2a", json=rpc("tasks/get", {"id": task_id})).json()
        return got["result"]["status"]["state"]

    deadline = time.monotonic() + 5
    while state(held_id) != "working":
        assert time.monotonic() < deadline
        time.sleep(0.01)
    time.sleep(0.1)
    assert state(queued_id) == "submitted"  # waits for the context's running prompt
    client.portal.call(agent.release.set)
    while state(queued_id) != "completed":
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert state(held_id) == "completed"


class Saver(AgentEnvAgent):
    async def run(self, request: TaskRequest) -> TaskResult:
        return TaskResult.text("ok")


def test_operation_bodies_are_checked_before_the_agent_sees_them() -> None:
    from agentenv_protocol.a2a_agent import SNAPSHOT_V1, ObjectSnapshotLoadRequest

    received: list[Any] = []

    class Snapshots(Saver):
        @extension(SNAPSHOT_V1.save)
        async def save(self, request: dict) -> dict:
            return {"context_id": request.get("context_id"), "objects": {}}

        @extension(SNAPSHOT_V1.load)
        async def load(self, request: ObjectSnapshotLoadRequest) -> dict:
            received.append(request)
            return {"context_id": "c"}

    app = a2a_agent(identity=IDENTITY, config=ProbeConfig, extensions=(SNAPSHOT_V1,))(Snapshots)
    with TestClient(app().create_app()) as client:
        bad = client.put("/ext/snapshot", json={"objects": {"trajectory": {"url": "x"}}})
        deep = client.post("/ext/snapshot", content=b"[" * 5000 + b"]" * 5000)
        not_object = client.post("/ext/agent-config", json=["greeting"])
        config = client.get("/ext/agent-config").json()
    assert bad.status_code == 400 and "ObjectSnapshotLoadRequest" in bad.text
    assert deep.status_code == 400 and "deeper than" in deep.text
    assert not_object.status_code == 400 and config == {"config": {}}
    assert received == []


def test_results_are_checked_where_they_are_made() -> None:
    failed = TaskResult.failure("rate_limited", "try later", parts=[TextPart(text="sorry")])
    assert failed.wire_parts() == [
        {"kind": "text", "text": "sorry"},
        {
            "kind": "data",
            "data": {
                "error_type": "agent_error",
                "error_code": "rate_limited",
                "error_message": "try later",
            },
        },
    ]
    with pytest.raises(ValueError, match="error_type must be one of"):
        TaskResult.failure("x", "y", error_type="oops")
    with pytest.raises(ValueError, match="at least one part"):
        TaskResult.success(parts=())
    with pytest.raises(ValueError, match="outcome is required"):
        TaskResult.builder().add_text("no outcome").build()
    usage = Usage(tool_call_count=1, input_tokens=5)
    assert TaskResult.text("hi", usage=usage).usage.to_dict() == {
        "tool_call_count": 1,
        "input_tokens": 5,
    }
    source = {"deep": [1]}
    part = DataPart(data=source)
    part.data["deep"].append(2)
    assert source == {"deep": [1]}  # a part holds its own copy


@a2a_agent(identity=AgentIdentity(name="refuser", description="d", version="1"))
class Refuser(AgentEnvAgent):
    async def run(self, request: TaskRequest) -> TaskResult:
        return TaskResult.failure("needs_input", "say more", parts=(TextPart(text="which file?"),))


def test_an_expected_failure_reaches_the_caller_with_its_code() -> None:
    with TestClient(Refuser().create_app()) as client:
        task = client.post("/a2a", json=rpc("message/send", message(text("do it")))).json()
    status = task["result"]["status"]
    assert status["state"] == "failed"
    assert status["message"]["parts"][0] == {"kind": "text", "text": "which file?"}
    assert status["message"]["parts"][1]["data"]["error_code"] == "needs_input"


def test_a_custom_extension_cannot_take_an_sdk_uri() -> None:
    with pytest.raises(ValueError, match="cannot redefine urn:agentenv:mine/v1"):
        custom_extension(uri="urn:agentenv:mine/v1", operation="x", method="GET", path="/ext/x")


@a2a_agent(identity=AgentIdentity(name="buggy", description="d", version="1"))
class Buggy(AgentEnvAgent):
    async def run(self, request: TaskRequest) -> TaskResult:
        return TaskResult.text("ok")

    @custom_extension(uri="urn:test:buggy/v1", operation="go", method="POST", path="/ext/buggy")
    async def go(self, request: Count) -> dict:
        raise KeyError("secret-internal-detail")


def test_a_bug_in_an_operation_is_a_500_with_a_correlation_id(caplog) -> None:
    with TestClient(Buggy().create_app()) as client:
        malformed = client.post("/ext/buggy", json={})
        broken = client.post("/ext/buggy", json={"text": "fine"})
    assert malformed.status_code == 400
    assert broken.status_code == 500 and "secret-internal-detail" not in broken.text
    correlation = broken.text.rsplit(" ", 1)[-1]
    assert len(correlation) == 32 and correlation in caplog.text


def _agent_at(url: str) -> type:
    @a2a_agent(identity=AgentIdentity(name="placed", description="d", version="1", url=url))
    class Placed(AgentEnvAgent):
        async def run(self, request: TaskRequest) -> TaskResult:
            return TaskResult.text("here")

    return Placed


@pytest.mark.parametrize(
    ("url", "card_url", "path"),
    [
        (
            "https://agents.example.test/team/a2a",
            "https://agents.example.test/team/a2a",
            "/team/a2a",
        ),
        ("/agentenv", "http://testserver/agentenv", "/agentenv"),
    ],
)
def test_an_agent_url_sets_the_card_url_and_where_json_rpc_is_served(url, card_url, path) -> None:
    with TestClient(_agent_at(url)().create_app()) as client:
        card = client.get("/.well-known/agent-card.json").json()
        answer = client.post(path, json=rpc("message/send", message(text("x")))).json()
        default = client.post("/a2a", json=rpc("message/send", message(text("x"))))
    assert card["url"] == card_url
    assert answer["result"]["status"]["message"]["parts"] == [{"kind": "text", "text": "here"}]
    assert default.status_code == 404


def test_a_bad_agent_url_is_refused_naming_it() -> None:
    with pytest.raises(ValueError, match="AgentIdentity.url 'a2a'.*must start with '/'"):
        AgentIdentity(name="x", description="d", url="a2a")


def test_the_sdk_and_our_a2a_agent_advertise_the_same_operation_shapes() -> None:
    from agentenv_protocol.agent.extensions import mcp_config_params, skill_config_params

    skill = SKILL_CONFIG_V1.to_card()["params"]
    mcp = MCP_CONFIG_V1.to_card()["params"]
    assert skill["methods"]["add"]["request"] == skill_config_params()["methods"]["add"]["request"]
    assert {op: mcp["methods"][op] for op in ("add", "list")} == {
        op: mcp_config_params()["methods"][op] for op in ("add", "list")
    }
    assert (skill["endpoint"], mcp["endpoint"]) == ("/ext/skill-config", "/ext/mcp-config")
    with pytest.raises(AttributeError, match="did you mean 'decide'"):
        TRIGGERS_V1.operation("decde")


def test_a_tasks_history_is_what_came_before_its_status_and_can_be_cut() -> None:
    with TestClient(Streamer().create_app()) as client:
        task = client.post("/a2a", json=rpc("message/send", message(text("go")))).json()["result"]

        def get(**extra: Any) -> dict[str, Any]:
            return client.post("/a2a", json=rpc("tasks/get", {"id": task["id"], **extra})).json()

        full, last, none, bad = (
            get(),
            get(historyLength=1),
            get(historyLength=0),
            get(historyLength=-1),
        )
    texts = [[p["text"] for p in m["parts"]] for m in full["result"]["history"]]
    assert texts == [["go"], ["step 0"], ["step 1"], ["step 2"]]
    assert full["result"]["status"]["message"]["parts"][0]["text"] == "done counting"
    assert [m["parts"][0]["text"] for m in last["result"]["history"]] == ["step 2"]
    assert none["result"]["history"] == []
    assert bad["error"]["code"] == -32602
