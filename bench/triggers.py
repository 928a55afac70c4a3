"""What triggers cost a tool call: sequential tool-call latency through one gateway with no
triggers, with 100 registered triggers that do not match the call, and with one action
trigger that fires on every call (its action runs on the engine's thread, not in the call);
plus how long after the provoking call a trigger's action has run.

    .venv/bin/python bench/triggers.py [--calls 300]
"""

from __future__ import annotations

import argparse
import statistics
import time

import httpx

from agentenv_protocol import AgentEnvEnvironment, environment_card, tool
from agentenv_protocol.gateway import Gateway, serve_gateway
from agentenv_protocol.gateway.triggers.engine import wait_for
from agentenv_protocol.serving import serve_in_thread


@environment_card(name="bench")
class Bench(AgentEnvEnvironment):
    def __init__(self) -> None:
        self.count = 0

    @tool()
    def poke(self, n: int) -> int:
        """Count a poke."""
        self.count += 1
        return n

    @tool()
    def note(self, n: int) -> int:
        """What triggers call."""
        return n


def latencies(http: httpx.Client, url: str, calls: int) -> list[float]:
    out = []
    for i in range(calls):
        body = {
            "jsonrpc": "2.0",
            "id": i,
            "method": "tools/call",
            "params": {"name": "poke", "arguments": {"n": i}},
        }
        start = time.perf_counter()
        http.post(url, json=body).raise_for_status()
        out.append(time.perf_counter() - start)
    return out


def figures(label: str, values: list[float], base: float | None) -> float:
    p50 = statistics.median(values) * 1000
    p99 = sorted(values)[int(len(values) * 0.99) - 1] * 1000
    ratio = f"  x{p50 / base:.2f} vs no triggers" if base else ""
    print(f"{label:<34} p50 {p50:6.2f} ms  p99 {p99:6.2f} ms{ratio}")
    return p50


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=300)
    calls = parser.parse_args().calls
    env = serve_in_thread(Bench().create_app(), host="127.0.0.1", port=0)
    gateway = Gateway({"bench": env.url})
    server = serve_gateway(gateway)
    headers = {"authorization": f"Bearer {gateway.admin_token}", "agentenv-role": "default"}
    try:
        with httpx.Client(headers=headers, timeout=30) as http:
            latencies(http, server.mcp_url, 50)  # warm up
            base = figures("no triggers", latencies(http, server.mcp_url, calls), None)
            idle = [
                {
                    "id": f"idle-{i}",
                    "when": {"type": "action", "tool": "note"},
                    "actions": [{"type": "tool", "tool": "note", "args": {"n": 0}}],
                }
                for i in range(100)
            ]
            http.post(server.url + "/triggers/register", json={"triggers": idle}).raise_for_status()
            figures("100 triggers, none matching", latencies(http, server.mcp_url, calls), base)
            mirror = {
                "id": "mirror",
                "when": {"type": "action", "tool": "poke", "repeat": True},
                "actions": [{"type": "tool", "tool": "note", "args": {"n": "${args.n}"}}],
            }
            http.post(
                server.url + "/triggers/register", json={"triggers": [mirror]}
            ).raise_for_status()
            figures("+1 trigger firing on every call", latencies(http, server.mcp_url, calls), base)
            wait_for(gateway.triggers, lambda s: False, 2.0)
            reaction = []
            for _ in range(30):
                before = gateway.triggers.state()["triggers"][-1]["fire_count"]
                latencies(http, server.mcp_url, 1)
                start = time.perf_counter()
                wait_for(
                    gateway.triggers,
                    lambda s, b=before: (
                        s["triggers"][-1]["fire_count"] > b
                        and s["triggers"][-1]["status"] == "fired"
                    ),
                    10,
                )
                reaction.append(time.perf_counter() - start)
            figures("provoking call -> action done", reaction, None)
    finally:
        server.stop()
        env.stop()


if __name__ == "__main__":
    main()
