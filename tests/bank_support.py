"""A small bank env bundle for tests that drive a tool-loop agent with the scripted model
server: one `transfer(to, amount: int)` tool and a task that asks for a transfer and checks
the call."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from promise_helpers import write_files  # noqa: E402

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


def bank_bundle(root: Path, *, prompt: str, seeds: str | None = None) -> Path:
    """The bank bundle at `root`, its task asking `prompt` (placeholders allowed)."""
    steps: list[dict[str, Any]] = [dict(s) for s in TASK]
    steps[2] = {**steps[2], "prompt": prompt}
    files: dict[str, Any] = {
        "envs/bank/env.toml": 'description = "a bank"\ncommand = ["python", "server.py"]\n',
        "envs/bank/server.py": BANK,
        "tasks/pay.json": steps,
    }
    if seeds is not None:
        files["seeds.toml"] = seeds
    return write_files(root, files)


#: The model's side of a correct trial: send 15000 to bob, then say so.
PAY_BOB = [
    {"tool_calls": [{"name": "transfer", "arguments": {"to": "bob", "amount": 15000}}]},
    {"content": "Sent 15000 to bob."},
]
