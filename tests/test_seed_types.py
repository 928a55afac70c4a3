"""Seed values keep their TOML types: a seeded integer reaches a tool-call check as an integer,
so a trial whose agent sends exactly the seeded amount scores 1."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from agents_support import run_json  # noqa: E402
from promise_helpers import write_files  # noqa: E402

from agentenv_protocol.agent.testing import ScriptedModelServer  # noqa: E402

BANK = '''
from agentenv_protocol import AgentEnvEnvironment, environment_card, tool


@environment_card(name="bank")
class Bank(AgentEnvEnvironment):
    @tool()
    def transfer(self, to: str, amount: int) -> dict:
        """Send `amount` (whole units) to `to`."""
        return {"sent": amount, "to": to}


Bank().serve()
'''

TASK = [
    {"id": "env", "type": "deploy_env", "env_id": "bank"},
    {"id": "agent", "type": "deploy_agent", "env_ids": ["bank"]},
    {"id": "ask", "type": "prompt_agent", "prompt_id": "ask", "prompt": "Send {amount} to {to}."},
    {
        "id": "calls",
        "type": "tool_call_verifier",
        "prompt_id": "ask",
        "verifier_id": "calls",
        "criteria": [
            {
                "id": "sent",
                "type": "tool_called",
                "tool": "transfer",
                "arguments": {"amount": "{amount}", "to": "{to}"},
            }
        ],
    },
]


def test_a_seeded_integer_matches_the_tool_call_and_the_trial_scores_1(tmp_path):
    bundle = write_files(
        tmp_path / "bundle",
        {
            "envs/bank/env.toml": 'description = "a bank"\ncommand = ["python", "server.py"]\n',
            "envs/bank/server.py": BANK,
            "tasks/pay.json": TASK,
            "seeds.toml": '[[trial]]\namount = 15000\nto = "bob"\n',
        },
    )
    script = [
        {"tool_calls": [{"name": "transfer", "arguments": {"to": "bob", "amount": 15000}}]},
        {"content": "Sent 15000 to bob."},
    ]
    with ScriptedModelServer(script) as model:
        data, stderr = run_json(
            tmp_path / "home", str(bundle), env={"LITELLM_BASE_URL": model.base_url}
        )
    [record] = data["tasks"]
    assert model.requests[0]["messages"][-1]["content"] == "Send 15000 to bob.", stderr
    [row] = record["verifiers"]["calls"]["results"]
    assert row["arguments"] == {"amount": 15000, "to": "bob"}, row
    assert row["result"] is True, row["justification"]
    assert record["verifiers"]["calls"]["score"] == 1.0
    assert record["status"] == "passed", record["outcome"] + "\n" + stderr
