"""What the agent layer adds on top of the tools it calls (figures, not pass/fail).

Run: .venv/bin/python bench/agents.py [--runs 30]
Against the notes env behind a gateway and a scripted chat-completions server (so the model
costs ~nothing), median and p90 in ms of:
- floor: the same two tool calls made directly through the gateway with one MCP client;
- tool-loop: one prompt = 2 model calls + 2 parallel tool calls, in process (what
  `prompt_agent` runs for the `tool-loop` agent, without the engine);
- a2a: the same prompt through the tool-loop agent served over A2A (HTTP + JSON-RPC);
and the per-turn overhead of the loop over the floor.
"""

from __future__ import annotations

import argparse
import statistics
import time

import anyio

from agentenv_protocol.agent import A2AClient, AgentConfig, McpServer, create_app
from agentenv_protocol.agent.chat import ChatClient
from agentenv_protocol.agent.loop import McpTools, ToolLoop
from agentenv_protocol.agent.testing import ScriptedModelServer
from agentenv_protocol.agent.tool_loop_agent import ToolLoopAgent
from agentenv_protocol.examples.notes import NotesEnv
from agentenv_protocol.gateway import Gateway, serve_gateway
from agentenv_protocol.serving import serve_in_thread

TURN = [
    {
        "tool_calls": [
            {"name": "list_notes", "arguments": {}},
            {"name": "read_note", "arguments": {"title": "missing"}},
        ]
    },
    {"content": "done"},
]


def stats(samples: list[float]) -> str:
    ms = sorted(s * 1000 for s in samples)
    return f"median {statistics.median(ms):7.2f} ms   p90 {ms[int(len(ms) * 0.9) - 1]:7.2f} ms"


async def main(runs: int) -> None:
    env = serve_in_thread(NotesEnv().create_app())
    gateway = serve_gateway(Gateway({"notes": env.url}))
    token = gateway.gateway.issue_token("agent")
    server = McpServer(
        name="gateway", url=gateway.mcp_url, headers={"authorization": f"Bearer {token}"}
    )
    model = ScriptedModelServer(TURN * (runs * 2 + 10))
    model.start()
    agent = serve_in_thread(
        create_app(ToolLoopAgent(AgentConfig(model="m", model_base_url=model.base_url)))
    )
    floor, loop_times, a2a_times = [], [], []
    try:
        async with McpTools([server]) as tools:
            for _ in range(5):  # warm up the gateway's and env's connection pools
                await tools.call("list_notes", {})
            for _ in range(runs):
                t0 = time.perf_counter()
                async with anyio.create_task_group() as tg:
                    tg.start_soon(tools.call, "list_notes", {})
                    tg.start_soon(tools.call, "read_note", {"title": "missing"})
                floor.append(time.perf_counter() - t0)
        for _ in range(runs):
            t0 = time.perf_counter()
            async with ChatClient(model.base_url) as chat, McpTools([server]) as tools:
                result = await ToolLoop(chat, model="m").run("go", tools=tools)
            assert result.failure is None and result.text == "done", result.failure
            loop_times.append(time.perf_counter() - t0)
        async with A2AClient(agent.url) as client:
            await client.add_mcp_server(server.url, name="gateway", headers=server.headers)
            for _ in range(runs):
                t0 = time.perf_counter()
                task = await client.send("go")
                assert task["status"]["state"] == "completed", task
                a2a_times.append(time.perf_counter() - t0)
    finally:
        agent.stop()
        model.stop()
        gateway.stop()
        env.stop()
    print(f"floor (2 parallel tool calls via gateway)  {stats(floor)}")
    print(f"tool-loop prompt (2 model calls + tools)   {stats(loop_times)}")
    print(f"a2a prompt (same, served over A2A)         {stats(a2a_times)}")
    print(
        f"loop overhead per prompt over the floor    "
        f"{(statistics.median(loop_times) - statistics.median(floor)) * 1000:7.2f} ms (2 scripted model calls, "
        "tool listing, client setup)"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=30)
    anyio.run(main, parser.parse_args().runs)
