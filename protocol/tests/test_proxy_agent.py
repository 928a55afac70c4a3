"""`ProxyAgent` served by real uvicorn and driven over HTTP the way a driver outside the sandbox
drives it, against the echo example env served beside it."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from agentenv_protocol.a2a_agent import proxy
from agentenv_protocol.a2a_agent.proxy import ProxyAgent
from agentenv_protocol.examples.echo import EchoEnv
from agentenv_protocol.serving import serve_in_thread

TOKEN = "driver-" + "k" * 30


@pytest.fixture(scope="module")
def echo_mcp() -> Iterator[str]:
    """The echo example env, served on loopback for the module's proxies."""
    with serve_in_thread(EchoEnv().create_app()) as server:
        yield server.url + "/mcp"


@contextlib.contextmanager
def served(agent: ProxyAgent) -> Iterator[httpx.Client]:
    """`agent`'s app on a loopback port (lifespan and all), with a client for it."""
    with (
        serve_in_thread(agent.create_app()) as server,
        httpx.Client(base_url=server.url, timeout=30) as client,
    ):
        yield client


@pytest.fixture
def driven(tmp_path, monkeypatch) -> Iterator[httpx.Client]:
    """A claimed proxy whose commands run in `tmp_path/work` and whose skills land in
    `tmp_path/skills`."""
    monkeypatch.setattr(proxy, "SKILLS_DIR", tmp_path / "skills")
    (tmp_path / "work").mkdir()
    with served(ProxyAgent(long_poll_seconds=0.3, folder=tmp_path / "work")) as client:
        assert client.post("/ext/proxy/claim", json={"token": TOKEN}).status_code == 200
        yield client


def call(client: httpx.Client, operation: str, **body: Any) -> httpx.Response:
    return client.post(f"/ext/proxy/{operation}", json={"token": TOKEN, **body})


def rpc(client: httpx.Client, method: str, params: dict[str, Any]) -> dict[str, Any]:
    return client.post(
        "/a2a", json={"jsonrpc": "2.0", "id": 7, "method": method, "params": params}
    ).json()


def open_turn(client: httpx.Client, text: str = "count the crates") -> str:
    message = {
        "kind": "message",
        "messageId": os.urandom(4).hex(),
        "role": "user",
        "parts": [{"kind": "text", "text": text}],
    }
    answer = rpc(client, "message/send", {"message": message, "configuration": {"blocking": False}})
    assert answer["result"]["status"]["state"] == "working"
    return answer["result"]["id"]


def finished(client: httpx.Client, action_id: str, answer: httpx.Response) -> dict[str, Any]:
    assert answer.status_code == 200, answer.text
    state = answer.json()
    while not state["done"]:
        state = call(client, "result", action_id=action_id).json()
    return state["result"]


def run(
    client: httpx.Client, task_id: str, action_id: str, action: dict[str, Any]
) -> dict[str, Any]:
    return finished(
        client, action_id, call(client, "act", task_id=task_id, action_id=action_id, action=action)
    )


def gone(pid: int) -> bool:
    state = subprocess.run(
        ["ps", "-o", "stat=", "-p", str(pid)], capture_output=True, text=True
    ).stdout
    return not state.strip() or state.strip().startswith("Z")


def test_a_blocking_send_is_answered_by_a_driver_that_calls_an_env_tool(driven, echo_mcp):
    assert driven.post("/ext/mcp-config", json={"url": echo_mcp, "name": "echo"}).status_code == 200
    answered: dict[str, Any] = {}
    message = {
        "kind": "message",
        "messageId": "m1",
        "role": "user",
        "contextId": "c9",
        "parts": [{"kind": "text", "text": "add 2 and 3"}],
    }
    sender = threading.Thread(
        target=lambda: answered.update(rpc(driven, "message/send", {"message": message}))
    )
    sender.start()

    turns = call(driven, "next", after=0).json()["turns"]
    [turn] = turns
    offered = {
        tool["name"]: tool.get("server")
        for tool in call(driven, "tools", task_id=turn["task_id"]).json()["tools"]
    }
    call_made = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "t1",
                "type": "function",
                "function": {"name": "add", "arguments": '{"a": 2, "b": 3}'},
            }
        ],
    }
    recorded = call(
        driven,
        "record",
        task_id=turn["task_id"],
        message=call_made,
        model="m",
        usage={"input_tokens": 5, "output_tokens": 2},
    )
    added = run(
        driven,
        turn["task_id"],
        "add-1",
        {"kind": "tool", "server": "echo", "name": "add", "arguments": {"a": 2, "b": 3}},
    )
    assert (
        call(
            driven, "reply", task_id=turn["task_id"], parts=[{"kind": "text", "text": "5"}]
        ).status_code
        == 200
    )
    sender.join(10)

    assert (turn["context_id"], turn["parts"]) == ("c9", [{"kind": "text", "text": "add 2 and 3"}])
    assert offered == {
        "echo": "echo",
        "add": "echo",
        "whoami": "echo",
        "fail": "echo",
        "bash": None,
    }
    assert recorded.json()["expected_calls"] == 1
    assert added["is_error"] is False and "5" in added["content"][0]["text"]
    task = answered["result"]
    assert task["status"]["state"] == "completed"
    assert task["status"]["message"]["parts"][0] == {"kind": "text", "text": "5"}
    usage = task["status"]["message"]["parts"][1]["data"]["usage"]
    assert (
        usage["prompt_tokens"],
        usage["completion_tokens"],
        usage["model_calls"],
        usage["tool_call_count"],
    ) == (5, 2, 1, 1)
    spans = driven.post("/ext/trajectory", json={"task_id": task["id"]}).json()["trajectory"]
    assert [span["name"] for span in spans] == ["chat", "add", "turn"]
    turn_span = spans[-1]
    assert {span["trace_id"] for span in spans} == {turn_span["trace_id"]}
    assert [span["parent_span_id"] for span in spans] == [turn_span["span_id"]] * 2 + [None]


def test_a_driver_without_the_token_is_refused_everything_but_a_matching_claim(driven):
    task_id = open_turn(driven)

    assert driven.post("/ext/proxy/next", json={"after": 0}).status_code == 401
    assert (
        driven.post(
            "/ext/proxy/reply",
            json={
                "token": TOKEN[:-1] + "x",
                "task_id": task_id,
                "parts": [{"kind": "text", "text": "hijacked"}],
            },
        ).status_code
        == 401
    )
    assert (
        driven.post("/ext/proxy/claim", json={"token": 12345678901234567890123}).status_code == 400
    )
    assert driven.post("/ext/proxy/claim", content=b"[1, 2]").status_code == 400
    unknown = call(driven, "replay", task_id=task_id)
    assert unknown.status_code == 404 and "reply" in unknown.json()["error"]
    assert rpc(driven, "tasks/get", {"id": task_id})["result"]["status"]["state"] == "working"
    environment = run(
        driven, task_id, "env", {"kind": "bash", "command": "env; cat /proc/$PPID/environ"}
    )
    assert environment["exit_code"] == 0 and TOKEN not in environment["stdout"]


def test_bad_actions_are_refused_naming_what_is_wrong_and_run_nothing(driven, echo_mcp, tmp_path):
    driven.post("/ext/mcp-config", json={"url": echo_mcp, "name": "echo"})
    task_id = open_turn(driven)

    kind = call(
        driven, "act", task_id=task_id, action_id="a", action={"kind": "python", "code": "1"}
    )
    extra = call(
        driven,
        "act",
        task_id=task_id,
        action_id="b",
        action={"kind": "bash", "command": "touch x", "user": "root"},
    )
    server = call(
        driven,
        "act",
        task_id=task_id,
        action_id="c",
        action={"kind": "tool", "server": "pantry", "name": "echo", "arguments": {}},
    )
    timeout = call(
        driven,
        "act",
        task_id=task_id,
        action_id="d",
        action={"kind": "bash", "command": "touch x", "timeout_seconds": -1},
    )
    nameless = call(
        driven, "act", task_id=task_id, action_id="", action={"kind": "bash", "command": "touch x"}
    )

    assert [r.status_code for r in (kind, extra, server, timeout, nameless)] == [400] * 5
    assert "action.bash.user" in extra.json()["error"]
    assert "'pantry'" in server.json()["error"] and "echo" in server.json()["error"]
    assert "timeout_seconds" in timeout.json()["error"]
    assert not (tmp_path / "work" / "x").exists()
    assert call(driven, "result", action_id="b").status_code == 404


def test_an_action_id_belongs_to_one_turn(driven):
    first, second = open_turn(driven, "one"), open_turn(driven, "two")
    assert (
        run(driven, first, "same", {"kind": "bash", "command": "echo first"})["stdout"] == "first\n"
    )

    reused = call(
        driven,
        "act",
        task_id=second,
        action_id="same",
        action={"kind": "bash", "command": "echo second"},
    )

    assert reused.status_code == 409 and "another turn" in reused.json()["error"]


def test_a_timeout_kills_every_process_the_command_started(driven, tmp_path):
    task_id = open_turn(driven)
    script = "sleep 60 & echo $! > a; (sleep 60 & echo $! > b; wait) & wait"

    result = run(driven, task_id, "t", {"kind": "bash", "command": script, "timeout_seconds": 0.5})

    assert result["timed_out"] is True and "exit_code" not in result
    pids = [int((tmp_path / "work" / name).read_text()) for name in ("a", "b")]
    deadline = time.monotonic() + 10
    while not all(gone(pid) for pid in pids):
        assert time.monotonic() < deadline, pids
        time.sleep(0.05)


def test_a_command_that_floods_its_output_gets_the_first_megabyte_and_a_count_of_the_rest(driven):
    task_id = open_turn(driven)

    result = run(
        driven,
        task_id,
        "flood",
        {"kind": "bash", "command": "head -c 1500000 /dev/zero | tr '\\0' a"},
    )

    assert result["exit_code"] == 0
    kept, note = result["stdout"].rsplit("\n", 1)
    assert (len(kept), note) == (1_000_000, "[500000 more bytes of output were dropped]")


def test_a_recorded_call_holds_booleans_and_numbers_apart(driven, echo_mcp):
    driven.post("/ext/mcp-config", json={"url": echo_mcp, "name": "echo"})
    task_id = open_turn(driven)
    made = {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "u1", "name": "add", "input": {"a": True}}],
    }
    assert call(driven, "record", task_id=task_id, message=made).status_code == 200

    as_number = call(
        driven,
        "act",
        task_id=task_id,
        action_id="n",
        action={"kind": "tool", "server": "echo", "name": "add", "arguments": {"a": 1}},
    )
    as_recorded = run(
        driven,
        task_id,
        "b",
        {"kind": "tool", "server": "echo", "name": "add", "arguments": {"a": True}},
    )

    assert as_number.status_code == 409
    assert "is_error" in as_recorded


def test_cancel_answers_as_a2a_does_for_unknown_and_finished_tasks(driven):
    task_id = open_turn(driven)
    assert call(driven, "reply", task_id=task_id, error="nothing to do").status_code == 200

    again = rpc(driven, "tasks/cancel", {"id": task_id})
    unknown = rpc(driven, "tasks/cancel", {"id": "nope"})

    assert again["error"]["code"] == -32002 and "failed" in again["error"]["message"]
    assert unknown["error"]["code"] == -32001
    failure = rpc(driven, "tasks/get", {"id": task_id})["result"]["status"]["message"]["parts"][-1][
        "data"
    ]["failure"]
    assert (failure["code"], failure["message"]) == ("proxy.driver_error", "nothing to do")


def test_a_skill_bundle_with_a_path_outside_its_folder_is_refused_and_writes_nothing(
    driven, tmp_path
):
    read = {
        "media_type": "text/markdown",
        "max_bytes": 64,
        "read": {
            "kind": "http-get",
            "url": "https://objects.example.test/s",
            "expires_at": "2099-01-01T00:00:00Z",
        },
    }
    bundle = {
        "name": "escape",
        "description": "d",
        "skill_bundle": {
            "max_total_bytes": 128,
            "files": [
                {"path": "SKILL.md", "object": read},
                {"path": "../../outside.md", "object": read},
            ],
        },
    }

    refused = driven.post("/ext/skill-config", json=bundle)
    inline = driven.post(
        "/ext/skill-config", json={"name": "ok", "description": "fine", "skill_md": "# ok"}
    )

    assert inline.status_code == 200
    assert refused.status_code == 400 and "'../../outside.md'" in refused.json()["error"]
    assert sorted(p.name for p in (tmp_path / "skills").iterdir()) == ["ok"]
    assert driven.get("/ext/skill-config").json()["skills"] == {"ok": {"description": "fine"}}


def test_a_blocking_send_nobody_answers_fails_when_the_agent_timeout_passes(driven):
    driven.post("/ext/agent-config", json={"timeout_seconds": 0.5})
    message = {
        "kind": "message",
        "messageId": "m",
        "role": "user",
        "parts": [{"kind": "text", "text": "hello?"}],
    }

    started = time.monotonic()
    task = rpc(driven, "message/send", {"message": message})["result"]

    assert time.monotonic() - started < 5
    assert task["status"]["state"] == "failed"
    assert "didn't reply within 0.5s" in task["status"]["message"]["parts"][0]["text"]
    assert call(driven, "next", after=0).json()["turns"] == []


def test_stopping_the_proxy_fails_its_open_turns_and_kills_what_they_run(tmp_path):
    agent = ProxyAgent(long_poll_seconds=0.3, folder=tmp_path)
    with served(agent) as client:
        client.post("/ext/proxy/claim", json={"token": TOKEN})
        task_id = open_turn(client)
        call(
            client,
            "act",
            task_id=task_id,
            action_id="long",
            action={"kind": "bash", "command": "echo $$ > pid; sleep 60"},
        )
        while not (tmp_path / "pid").exists():
            time.sleep(0.02)

    task = agent.tasks[task_id]
    assert task["status"]["state"] == "failed"
    assert task["status"]["message"]["parts"][-1]["data"]["failure"]["code"] == "proxy.stopped"
    deadline = time.monotonic() + 10
    while not gone(int((tmp_path / "pid").read_text())):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert json.loads(agent.trajectories[task_id][-1]["attributes"]["gen_ai.completion"]) == {
        "error": "the proxy stopped"
    }


def test_serve_runs_the_proxy_as_its_own_process(tmp_path):
    """How a sandbox runs it: `serve(ProxyAgent())`, which serves the proxy's own app."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    code = (
        "from agentenv_protocol.agent import serve\n"
        "from agentenv_protocol.a2a_agent.proxy import ProxyAgent\n"
        f"serve(ProxyAgent(), host='127.0.0.1', port={port})\n"
    )
    process = subprocess.Popen([sys.executable, "-c", code], cwd=tmp_path, stderr=subprocess.PIPE)
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                card = httpx.get(base + "/.well-known/agent-card.json", timeout=2).json()
                break
            except httpx.HTTPError:
                assert process.poll() is None, process.stderr.read().decode()[-2000:]
                assert time.monotonic() < deadline
                time.sleep(0.1)
        claimed = httpx.post(base + "/ext/proxy/claim", json={"token": TOKEN}, timeout=5)
    finally:
        process.terminate()
        process.wait(10)

    uris = {extension["uri"] for extension in card["capabilities"]["extensions"]}
    assert "urn:agentenv:proxy/v1" in uris and card["url"] == f"{base}/a2a"
    assert claimed.status_code == 200


def test_malformed_driver_and_sender_bodies_are_refused_and_leave_the_turn_open(driven):
    task_id = open_turn(driven)
    text = [{"kind": "text", "text": "done"}]

    answers = [
        call(driven, "next", after="3"),
        call(driven, "next", after=-1),
        call(driven, "reply", task_id=task_id),
        call(driven, "reply", task_id=task_id, parts=text, error="and failed"),
        call(
            driven,
            "reply",
            task_id=task_id,
            parts=[{"kind": "file", "file": {"uri": "file:///etc/passwd"}}],
        ),
        call(driven, "reply", task_id=task_id, error=""),
        call(driven, "record", task_id=task_id, message="thinking", usage={"prompt_tokens": -4}),
        call(driven, "record", task_id=task_id, message="thinking", model=7),
        driven.post("/ext/proxy/reply", content=b"{not json"),
    ]
    parse_error = driven.post("/a2a", content=b"{").json()
    no_parts = rpc(driven, "message/send", {"message": {"role": "user"}})
    odd_context = rpc(driven, "message/send", {"message": {"parts": text, "contextId": ["c"]}})
    odd_id = rpc(driven, "tasks/get", {"id": {"task": task_id}})

    assert [answer.status_code for answer in answers] == [400] * 9
    assert parse_error["error"]["code"] == -32700
    assert no_parts["error"]["code"] == odd_context["error"]["code"] == -32602
    assert odd_id["error"]["code"] == -32001
    assert [turn["task_id"] for turn in call(driven, "next", after=0).json()["turns"]] == [task_id]
    assert driven.post("/ext/trajectory", json={"task_id": task_id}).json()["trajectory"] == []
    assert call(driven, "reply", task_id=task_id, parts=text).status_code == 200
    assert call(driven, "tools", task_id=task_id).status_code == 404
