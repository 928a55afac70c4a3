"""An executor agent (the A2A agent a trigger's natural-language action asks) keeps its log with
the trial, like an env server's: what it printed is in the object store and `runs show`, and a
trigger whose executor fails says why in the ledger."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from envs_helpers import agent_env, copy_example

EXECUTOR = """
import sys

from agentenv_protocol.agent.server import A2AAgent, serve
from agentenv_protocol.agent.types import AgentResult


class Desk(A2AAgent):
    name = "desk"

    async def run(self, request):
        print(f"desk got: {request.text}", flush=True)
        if "refuse" in request.text:
            return AgentResult(text="", failure=("agent", "the CRM refused the login"))
        return AgentResult(text="done")


print("desk starting", flush=True)
serve(Desk())
"""


def bundle(tmp_path: Path, instruction: str) -> Path:
    root = copy_example("mail-triggers", tmp_path / "mail")
    agent = root / "agents" / "desk"
    agent.mkdir()
    (agent / "agent.toml").write_text('type = "a2a_agent"\ncommand = ["python", "desk.py"]\n')
    (agent / "desk.py").write_text(EXECUTOR)
    steps = json.loads((root / "tasks" / "reply.json").read_text())
    desk = {
        "id": "desk",
        "type": "deploy_agent",
        "a2a_agent_id": "desk",
        "agent_name": "desk",
        "role": "desk",
    }
    for step in steps:
        if step["type"] == "register_env_triggers":
            step["executor_agent_name"] = "desk"
            step["triggers"].append(
                {
                    "id": "note",
                    "when": {"type": "time", "at": "PT1M"},
                    "actions": [{"type": "nl", "instruction": instruction}],
                }
            )
    steps.insert(next(i for i, s in enumerate(steps) if s["id"] == "triggers"), desk)
    (root / "tasks" / "reply.json").write_text(json.dumps(steps))
    return root


def shown(home: Path, stdout: str) -> tuple[str, dict]:
    iid = next(w for w in stdout.split() if w.startswith("ti-"))
    text = agent_env(home, "runs", "show", iid)
    data = json.loads(agent_env(home, "runs", "show", iid, "--json").stdout)
    return text.stdout, data


def test_an_executors_log_is_kept_and_its_failure_says_why(tmp_path):
    home = tmp_path / "home"
    done = agent_env(home, "run", str(bundle(tmp_path, "log the order; refuse it")))
    assert "reply" in done.stdout, done.stderr
    text, data = shown(home, done.stdout)
    (log,) = [v for k, v in data["logs"].items() if "desk" in k]
    assert "desk starting" in log and "desk got: log the order; refuse it" in log
    assert "agent error: the CRM refused the login" in text  # the ledger's action_failed reason
    assert "trigger note: failed" in text
