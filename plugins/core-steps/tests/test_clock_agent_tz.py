"""The time-zone promise end to end on local processes: `TZ` from deploy_agent's env_vars
reaches the A2A agent's own process, and the agent's get_time through the gateway answers the
same zone's local time on the env clock."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from clock_envs import FILES, deploy  # noqa: E402

pytestmark = pytest.mark.anyio

AGENT = """
import json, os, time
from agentenv_protocol.agent.server import A2AAgent, serve
from agentenv_protocol.agent.types import AgentResult
from agentenv_protocol.client import EnvClient


class Zoned(A2AAgent):
    async def run(self, request):
        (server,) = request.mcp_servers
        async with EnvClient(server.url.rsplit("/mcp", 1)[0], mcp_path="/mcp",
                             headers=server.headers) as gateway:
            clock = await gateway.call_tool("get_time", {"time_zone": os.environ["TZ"]})
        local = time.strftime("%Z", time.localtime(1772953140))  # 2026-03-08T06:59:00Z
        return AgentResult(text=json.dumps({"TZ": os.environ.get("TZ"), "abbrev": local,
                                            "clock": clock.json()}))


serve(Zoned())
"""


async def test_tz_reaches_the_agents_process_and_get_time_agrees(runner):
    import json

    files = {
        **FILES,
        "agents/zoned/agent.toml": 'type = "a2a_agent"\ncommand = ["python", "agent.py"]\n',
        "agents/zoned/agent.py": AGENT,
    }
    steps = [
        deploy("notes"),
        {
            "id": "clock",
            "type": "sync_env_clock",
            "env_id": "notes",
            "virtual_time": "2026-03-08T06:59:00Z",
            "virtual_seconds_per_real_second": 0,
        },
        {
            "id": "agent",
            "type": "deploy_agent",
            "a2a_agent_id": "zoned",
            "env_vars": {"TZ": "America/New_York"},
        },
        {"id": "ask", "type": "prompt_agent", "prompt": "what time is it?", "timeout_seconds": 60},
    ]
    record = await runner.run(steps, files)
    assert record["failure"] is None, record["failure"]
    answer = json.loads(runner.state["outputs"]["ask"]["response"])
    assert answer["TZ"] == "America/New_York" and answer["abbrev"] == "EST"
    assert answer["clock"] == {
        "current_time": "2026-03-08T06:59:00Z",
        "time_zone": "America/New_York",
        "local_time": "2026-03-08T01:59:00-05:00",
    }
