"""Agent-protocol extensions, both ways against the existing SDK (agentenv-framework 0.9.1364
in a scratch venv made by a session fixture): an agent built with the existing SDK is
configured, handed MCP servers and prompted by our client (what deploy_agent / prompt_agent
use), and the existing SDK's own card reader accepts the requests our agent card declares."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import textwrap

import anyio
import httpx
import pytest

from agent_env.testing.require import require
from agentenv_protocol.agent.client import A2AClient, task_text
from agentenv_protocol.agent.extensions import (
    negotiated_config,
    request_accepts,
    trajectory_variant,
)
from agentenv_protocol.agent.server import A2AAgent, create_app
from agentenv_protocol.agent.types import AgentResult
from agentenv_protocol.serving import serve_in_thread

sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
from test_agent_transfers_io import https_store  # noqa: E402, F401 - a fixture

pytestmark = pytest.mark.network  # installs from the package index

REFERENCE = "agentenv-framework==0.9.1364"

REFERENCE_AGENT = textwrap.dedent(
    """
    import sys, uvicorn
    from agentenv_protocol.a2a_agent import (
        AgentEnvAgent, AgentIdentity, MCP_CONFIG_V1, TRAJECTORY_V1)
    from agentenv_protocol.a2a_agent.framework import a2a_agent
    from agentenv_protocol.a2a_agent.tasks.v1 import AgentConfig, TaskRequest, TaskResult

    class Cfg(AgentConfig):
        model: str | None = None
        system_prompt: str | None = None

    @a2a_agent(identity=AgentIdentity(name="ref", description="d", version="1"), config=Cfg,
               extensions=(MCP_CONFIG_V1, TRAJECTORY_V1))
    class Ref(AgentEnvAgent):
        async def run(self, request: TaskRequest[Cfg]) -> TaskResult:
            return TaskResult.text("ref saw: " + str(request.config.system_prompt))

    uvicorn.run(Ref().create_app(), host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
    """
)

CARD_CHECK = textwrap.dedent(
    """
    import json, sys, httpx
    from agentenv_protocol.a2a_agent.extensions import card_request_accepts
    card = httpx.get(sys.argv[1] + "/.well-known/agent-card.json").json()
    ops = {e["uri"]: e["params"]["methods"] for e in card["capabilities"]["extensions"]}
    checks = {
        "config": ("urn:agentenv:agent-config/v1", "set", ["system_prompt", "model"]),
        "config_bogus": ("urn:agentenv:agent-config/v1", "set", ["bogus"]),
        "mcp": ("urn:agentenv:mcp-config/v1", "add", ["url", "name", "headers"]),
        "skill": ("urn:agentenv:skill-config/v1", "add", ["name", "description", "skill_md"]),
        "trajectory": ("urn:agentenv:trajectory/v1", "get", ["task_id"]),
        "trajectory_page": ("urn:agentenv:trajectory/v1", "get", ["task_id", "after", "limit"]),
    }
    print(json.dumps({k: card_request_accepts(ops[u][m].get("request") or {}, f)
                      for k, (u, m, f) in checks.items()}))
    """
)


@pytest.fixture(scope="session")
def reference_python(tmp_path_factory) -> str:
    venv = tmp_path_factory.mktemp("ref-sdk") / "venv"
    made = subprocess.run([sys.executable, "-m", "venv", str(venv)], capture_output=True)
    require(None if made.returncode == 0 else f"venv failed: {made.stderr[-300:]!r}")
    python = str(venv / "bin" / "python")
    done = subprocess.run(
        [python, "-m", "pip", "install", "-q", REFERENCE],
        capture_output=True,
        text=True,
        timeout=900,
    )
    require(None if done.returncode == 0 else f"pip install {REFERENCE}: {done.stderr[-500:]}")
    return python


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_reference_agent_card_with_our_client(reference_python, tmp_path):
    script = tmp_path / "ref_agent.py"
    script.write_text(REFERENCE_AGENT)
    port = _free_port()
    proc = subprocess.Popen([reference_python, str(script), str(port)], stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:

        async def go():
            async with A2AClient(url) as agent:
                card = await agent.wait_ready(timeout=60)
                # we send only the keys the reference card lists as supported (max_turns
                # is ours alone; sending it would be a 400 from the reference)
                assert negotiated_config(card, {"system_prompt": "be brief", "max_turns": 3}) == {
                    "system_prompt": "be brief"
                }
                await agent.configure(system_prompt="be brief", max_turns=3, model="m1")
                await agent.add_mcp_server(
                    "http://gw/mcp", name="gateway", headers={"authorization": "Bearer t"}
                )
                task = await agent.send("hi")
                assert task_text(task) == "ref saw: be brief"
                return card

        card = anyio.run(go)
        listed = httpx.get(url + "/ext/mcp-config").json()["mcp_servers"]
        assert listed["gateway"]["url"] == "http://gw/mcp"
        traj = next(
            e
            for e in card["capabilities"]["extensions"]
            if e["uri"] == "urn:agentenv:trajectory/v1"
        )
        assert request_accepts(traj["params"]["methods"]["get"]["request"], {"task_id": "x"})
    finally:
        proc.terminate()
        proc.wait(timeout=10)


class Echo(A2AAgent):
    async def run(self, request):
        return AgentResult(text="ok", trajectory=({"type": "a"}, {"type": "b"}))


def test_our_agent_card_with_the_reference_card_reader(reference_python, tmp_path):
    running = serve_in_thread(create_app(Echo()), host="127.0.0.1", port=0)
    try:
        script = tmp_path / "check.py"
        script.write_text(CARD_CHECK)
        done = subprocess.run(
            [reference_python, str(script), running.url],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout) == {
            "config": True,
            "config_bogus": False,
            "mcp": True,
            "skill": True,
            "trajectory": True,
            "trajectory_page": True,
        }
    finally:
        running.stop()


def test_trajectory_variants_paging_and_skills():
    running = serve_in_thread(create_app(Echo()), host="127.0.0.1", port=0)
    try:

        async def go():
            async with A2AClient(running.url) as agent:
                return (await agent.send("hi"))["id"]

        task_id = anyio.run(go)
        post = lambda body: httpx.post(running.url + "/ext/trajectory", json=body)  # noqa: E731
        assert post({"task_id": task_id}).json() == {"trajectory": [{"type": "a"}, {"type": "b"}]}
        page = post({"task_id": task_id, "after": 0, "limit": 1}).json()
        assert (page["events"], page["next"], page["has_more"]) == ([{"type": "a"}], 1, True)
        last = post({"task_id": task_id, "after": 1, "limit": 1}).json()
        assert (last["events"], last["has_more"]) == ([{"type": "b"}], False)
        bad = post({"task_id": task_id, "bogus": 1})
        assert bad.status_code == 400 and "task_events" in bad.json()["error"]
        with pytest.raises(ValueError, match="exactly one of variants"):
            trajectory_variant({"after": 0})
        skills = running.url + "/ext/skill-config"
        ok = httpx.post(skills, json={"name": "s1", "description": "d", "skill_md": "# S"})
        assert ok.json() == {"name": "s1"}
        assert httpx.get(skills).json() == {"skills": {"s1": {"description": "d"}}}
        assert (
            httpx.post(skills, json={"name": "-x", "description": "d", "skill_md": "#"}).status_code
            == 400
        )
        assert httpx.post(running.url + "/ext/agent-config", json={"bogus": 1}).status_code == 400
    finally:
        running.stop()


REFERENCE_TRANSFERS = textwrap.dedent(
    """
    import json, sys
    from pydantic import ValidationError
    from agentenv_protocol.a2a_agent import extensions as ext
    out = []
    for name, body in json.load(sys.stdin):
        try:
            model = getattr(ext, name).model_validate(body)
        except ValidationError:
            out.append(None)
        else:
            out.append(model.model_dump(mode="json", exclude_none=True))
    print(json.dumps(out))
    """
)

_SOON = "2026-12-04T19:00:00Z"


def _grant(kind: str, **extra) -> dict:
    return {"kind": kind, "url": "https://store.example/o?sig=1", "expires_at": _SOON, **extra}


def _obj(media: str = "application/octet-stream", **extra) -> dict:
    return {"media_type": media, "max_bytes": 1024, "read": _grant("http-get"), **extra}


def _wobj(media: str = "application/octet-stream") -> dict:
    return {"media_type": media, "max_bytes": 1024, "write": _grant("http-put")}


_NAMESPACE = {
    "root_path": "runs/r1/changelog",
    "expires_at": _SOON,
    "max_objects": 10,
    "max_object_bytes": 1024,
    "max_total_bytes": 4096,
    "write": {
        "kind": "http-post-policy",
        "url": "https://store.example/",
        "fields": {"policy": "p"},
        "path_field": "key",
        "file_field": "file",
    },
}

#: (request class, body, valid?) — the same verdict is expected from both SDKs
TRANSFER_CASES = [
    ("ObjectSnapshotSaveRequest", {"context_id": "c", "objects": {"trajectory": _wobj()}}, True),
    (
        "ObjectSnapshotSaveRequest",
        {"context_id": "c", "objects": {"trajectory": _wobj(), "workspace": _wobj()}},
        True,
    ),
    (
        "ObjectSnapshotSaveRequest",
        {"context_id": "c", "objects": {"trajectory": _wobj("application/json")}},
        False,
    ),
    (
        "ObjectSnapshotLoadRequest",
        {"objects": {"trajectory": _obj(sha256="a" * 64, size_bytes=3)}, "target_context_id": "t"},
        True,
    ),
    ("ObjectSnapshotLoadRequest", {"objects": {"trajectory": _obj(size_bytes=4096)}}, False),
    ("ObjectSnapshotLoadRequest", {"objects": {"trajectory": _obj(sha256="ABC")}}, False),
    ("ObjectSnapshotLoadRequest", {"objects": {"trajectory": _obj()}, "bogus": 1}, False),
    ("NamespaceChangelogEnableRequest", {"write_namespace": _NAMESPACE, "roots": ["/app"]}, True),
    (
        "NamespaceChangelogEnableRequest",
        {"write_namespace": {**_NAMESPACE, "root_path": "../escape"}},
        False,
    ),
    (
        "NamespaceChangelogEnableRequest",
        {"write_namespace": {**_NAMESPACE, "max_objects": 0}},
        False,
    ),
    (
        "NamespaceChangelogEnableRequest",
        {"write_namespace": {**_NAMESPACE, "write": {**_NAMESPACE["write"], "expires_at": _SOON}}},
        False,
    ),
    (
        "ObjectChangelogApplyRequest",
        {
            "increments": [{"sequence": 0, "object": _obj()}, {"sequence": 1, "object": _obj()}],
            "resume_conversation": True,
        },
        True,
    ),
    (
        "ObjectChangelogApplyRequest",
        {"increments": [{"sequence": 1, "object": _obj()}, {"sequence": 1, "object": _obj()}]},
        False,
    ),
    (
        "ObjectChangelogApplyRequest",
        {"increments": [{"sequence": 0, "object": {**_obj(), "read": _grant("http-put")}}]},
        False,
    ),
    (
        "TaskObjectTrajectoryRequest",
        {"task_id": "t", "objects": {"trajectory": _wobj("application/json")}},
        True,
    ),
    (
        "TaskObjectTrajectoryRequest",
        {
            "task_id": "t",
            "objects": {
                "trajectory": {
                    **_wobj("application/json"),
                    "write": {**_grant("http-put"), "url": "http://store.example/o"},
                }
            },
        },
        False,
    ),
    (
        "ObjectSnapshotLoadRequest",
        {
            "objects": {
                "trajectory": {
                    **_obj(),
                    "read": {**_grant("http-get"), "expires_at": "2026-12-04T19:00:00+01:00"},
                }
            }
        },
        False,
    ),
]


def test_transfer_requests_agree_with_the_reference_both_ways(reference_python):
    """Every object-transfer request (snapshot save/load, changelog enable/apply, trajectory
    objects) gets the same verdict from the existing SDK and from ours; what one side writes
    for a valid request, the other reads back to the same value."""
    from agentenv_protocol.agent import transfers

    def reference(cases: list) -> list:
        done = subprocess.run(
            [reference_python, "-c", REFERENCE_TRANSFERS],
            input=json.dumps(cases),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        return json.loads(done.stdout)

    theirs = reference([[name, body] for name, body, _ in TRANSFER_CASES])
    ours_sent = []
    for (name, body, valid), their_dump in zip(TRANSFER_CASES, theirs, strict=True):
        cls = getattr(transfers, name)
        assert (their_dump is not None) == valid, (name, body)
        if not valid:
            with pytest.raises(transfers.TransferRequestError) as refused:
                transfers.parse(cls, body)
            assert name in str(refused.value)
            continue
        ours = transfers.parse(cls, body)
        assert transfers.parse(cls, their_dump) == ours  # theirs -> ours
        ours_sent.append((name, transfers.dump(ours), their_dump))
    # ours -> theirs: the reference reads what we write back to the same value
    read_back = reference([[name, dumped] for name, dumped, _ in ours_sent])
    assert read_back == [their for _, _, their in ours_sent]


REFERENCE_IO = textwrap.dedent(
    """
    import asyncio, json, sys
    from pathlib import Path
    from agentenv_protocol.transfers import ReadObject, WriteObject, download, upload
    write, read, out = json.loads(sys.argv[1]), json.loads(sys.argv[2]), Path(sys.argv[3])
    uploaded = asyncio.run(upload(WriteObject.model_validate(write), b"from the reference"))
    asyncio.run(download(ReadObject.model_validate(read), out))
    print(json.dumps(uploaded.model_dump(mode="json")))
    """
)


def test_transfers_move_the_same_bytes_as_the_reference(reference_python, https_store, tmp_path):  # noqa: F811
    """Through the same presigned HTTPS grants, the existing SDK's `download` reads what our
    `write_object` wrote, and our `read_object` reads what its `upload` wrote."""
    import hashlib
    import os

    from agentenv_protocol.agent import transfers

    store, url, tls, cert = https_store
    from datetime import UTC, datetime, timedelta

    soon = (datetime.now(UTC) + timedelta(hours=1)).isoformat().replace("+00:00", "Z")
    grant = {"expires_at": soon, "headers": {"x-sig": "ok"}}
    ours = transfers.parse(
        transfers.WriteObject,
        {
            "media_type": "application/octet-stream",
            "max_bytes": 64,
            "write": {**grant, "kind": "http-put", "url": url + "/ours"},
        },
    )
    data = b"from agent-env"
    read_ours = {
        "media_type": "application/octet-stream",
        "max_bytes": 64,
        "size_bytes": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
        "read": {**grant, "kind": "http-get", "url": url + "/ours"},
    }
    theirs_write = {
        **transfers.dump(ours),
        "write": {**grant, "kind": "http-put", "url": url + "/theirs"},
    }

    async def write_ours():
        async with httpx.AsyncClient(verify=tls) as client:
            await transfers.write_object(ours, data, client)

    anyio.run(write_ours)
    out = tmp_path / "downloaded"
    done = subprocess.run(
        [
            reference_python,
            "-c",
            REFERENCE_IO,
            json.dumps(theirs_write),
            json.dumps(read_ours),
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "SSL_CERT_FILE": str(cert)},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert out.read_bytes() == data  # theirs read ours
    theirs = b"from the reference"
    assert json.loads(done.stdout) == {
        "size_bytes": len(theirs),
        "sha256": hashlib.sha256(theirs).hexdigest(),
    }
    read_theirs = transfers.parse(
        transfers.ReadObject,
        {
            **read_ours,
            "size_bytes": len(theirs),
            "sha256": hashlib.sha256(theirs).hexdigest(),
            "read": {**grant, "kind": "http-get", "url": url + "/theirs"},
        },
    )

    async def read_back():
        async with httpx.AsyncClient(verify=tls) as client:
            return await transfers.read_object(read_theirs, client)

    assert anyio.run(read_back) == theirs  # ours read theirs
    assert store.objects["/theirs"][0] == theirs
