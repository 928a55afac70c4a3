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
