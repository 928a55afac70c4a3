"""An agent written with the `agentenv_protocol.a2a_agent` SDK, in a bundle's agent folder, runs
the notes-agent task under `agent-env run`: deploy_agent starts it, configures it through the
card's agent-config, hands it the gateway through mcp-config, and the agent calls the env's
tools with the real mcp client; every verifier passes and the run record has its trajectory."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from agents_support import groceries_steps, notes_bundle, run_json, show_json  # noqa: E402

AGENT = textwrap.dedent(
    """
    from mcp import ClientSession
    from mcp.client.streamable_http import streamablehttp_client

    from agentenv_protocol.a2a_agent import (
        MCP_CONFIG_V1, TRAJECTORY_V1, AgentConfig, AgentEnvAgent, AgentIdentity, TaskRequest,
        TaskResult, a2a_agent,
    )


    class Config(AgentConfig):
        model: str = "none"
        system_prompt: str = ""


    @a2a_agent(identity=AgentIdentity(name="notes-sdk", description="Saves lists as notes"),
               config=Config, extensions=(MCP_CONFIG_V1, TRAJECTORY_V1))
    class NotesAgent(AgentEnvAgent):
        async def run(self, request: TaskRequest[Config]) -> TaskResult:
            (server,) = request.mcp_servers.values()
            async with streamablehttp_client(server["url"], headers=server["headers"]) as (r, w, _):
                async with ClientSession(r, w) as session:
                    await session.initialize()
                    await session.call_tool("list_notes", {})
                    await session.call_tool(
                        "add_note", {"title": "groceries", "body": "milk, eggs, bread"}
                    )
            said = "never delete" in request.config.system_prompt.lower()
            return (TaskResult.builder().succeeded()
                    .add_text(f"Saved the note 'groceries' (told not to delete: {said}).")
                    .native_trajectory(format="notes-sdk/v1",
                                       payload=[{"type": "tool", "name": "add_note"}])
                    .build())


    NotesAgent().serve()
    """
)


def test_an_sdk_agent_in_a_bundle_passes_the_notes_task(tmp_path):
    bundle = notes_bundle(
        tmp_path,
        {"groceries": groceries_steps(a2a_agent_id="notes-sdk")},
        agents={
            "notes-sdk": {
                "agent.toml": 'type = "a2a_agent"\ncommand = ["python", "agent.py"]\n',
                "agent.py": AGENT,
            }
        },
    )
    data, stderr = run_json(tmp_path / "home", str(bundle))
    [record] = data["tasks"]
    assert record["status"] == "passed", f"{record['outcome']}\n{stderr}"
    assert {v: r["score"] for v, r in record["verifiers"].items()} == {
        "env-state": 1.0,
        "answer": 1.0,
        "tool-calls": 1.0,
    }
    shown = show_json(tmp_path / "home", record["id"])
    assert "told not to delete: True" in shown["instance"]["outputs"]["ask"]["response"]
    assert shown["trajectories"]["ask"]["events"] == [{"type": "tool", "name": "add_note"}]


FAILING_AGENT = textwrap.dedent(
    """
    from agentenv_protocol.a2a_agent import (
        MCP_CONFIG_V1, AgentEnvAgent, AgentIdentity, TaskRequest, TaskResult, Usage, a2a_agent,
    )


    @a2a_agent(identity=AgentIdentity(name="refuser", description="Always gives up"),
               extensions=(MCP_CONFIG_V1,))
    class Refuser(AgentEnvAgent):
        async def run(self, request: TaskRequest) -> TaskResult:
            usage = Usage(tool_call_count=2, input_tokens=120, output_tokens=30)
            return TaskResult.failure(
                "model_refused", "the model would not touch the notes",
                error_type=ERROR_TYPE, usage=usage,
            )


    Refuser().serve()
    """
)


def test_an_sdk_agents_own_failure_and_usage_reach_the_record(tmp_path):
    """A failed SDK task's error code and message are the trial's failure (not only "the task
    ended 'failed'"), its usage is counted, and its claim that the infrastructure failed is
    not believed: an agent's word does not take a trial out of its statistics."""
    agents = {
        name: {
            "agent.toml": 'type = "a2a_agent"\ncommand = ["python", "agent.py"]\n',
            "agent.py": FAILING_AGENT.replace("ERROR_TYPE", repr(error_type)),
        }
        for name, error_type in (("refuser", "agent_error"), ("blamer", "infra_error"))
    }
    bundle = notes_bundle(
        tmp_path,
        {name: groceries_steps(a2a_agent_id=name) for name in agents},
        agents=agents,
    )
    data, stderr = run_json(tmp_path / "home", str(bundle))
    records = {r["task"]["name"]: r for r in data["tasks"]}
    assert set(records) == set(agents), stderr
    for record in records.values():
        assert record["status"] == "failed", f"{record}\n{stderr}"
        assert record["failure_class"] == "agent", record["failure"]
        assert record["failure"]["step"] == "ask"
        assert "model_refused: the model would not touch the notes" in record["failure"]["message"]
        cost = record["cost"]
        assert (cost["prompt_tokens"], cost["completion_tokens"]) == (120, 30), cost
    assert "not trusted to blame anyone else" in records["blamer"]["failure"]["message"]
    assert "not trusted" not in records["refuser"]["failure"]["message"]
