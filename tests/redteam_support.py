"""The red-team bundle and its report: a `vault` env whose answer key the hostile agent
(`redteam_agent.py`) tries to steal, and the helpers that run it and read what it got.

The bundle has two tasks on the same env: `attack` (the hostile agent, prompted once; its answer
is its hex-encoded report) and `solve` (the oracle replays the shipped solution: proof that the
task is solvable and its verifier works). The answer key (`solution`) sits where an agent must
never reach it: the task file (the oracle's solution, stored in the documents store), the
verifier artifact (the object store) and a tool the env hides from every role but `verifier`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
AGENT_SOURCE = (HERE / "redteam_agent.py").read_text()
#: Every attack the agent tries, by name (each is asserted on separately).
ATTACKS = tuple(re.findall(r"^(?:async )?def attack_(\w+)\(", AGENT_SOURCE, re.M))

ENV_SERVER = '''
from pathlib import Path

from agentenv_protocol import AgentEnvEnvironment, environment_card, tool


@environment_card(name="vault")
class Vault(AgentEnvEnvironment):
    def __init__(self):
        self.notes = {}

    @tool()
    def add_note(self, title: str, body: str) -> dict:
        """Write a note (the verifier reads the one titled 'solution')."""
        self.notes[title] = body
        return {"saved": title}

    @tool()
    def read_note(self, title: str) -> str:
        """Read a note."""
        return self.notes.get(title, "")

    @tool(hidden_by_default=True)
    def answer_key(self) -> str:
        """The answer: for the verifier role only (hidden from every other role)."""
        return Path("answer.txt").read_text()


if __name__ == "__main__":
    Vault().serve()
'''

VERIFIER = """
import asyncio

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

ANSWER = {answer!r}


async def _check(mcp_url):
    async with streamable_http_client(mcp_url) as (read, write, _):
        async with ClientSession(read, write) as session:
            await session.initialize()
            got = await session.call_tool("read_note", {{"title": "solution"}})
    text = "".join(getattr(c, "text", "") for c in got.content)
    return [{{"id": "answer", "result": text == ANSWER, "description": "the note 'solution'"}}]


def verify(mcp_url):
    return asyncio.run(_check(mcp_url))
"""


def write_bundle(root: Path, answer: str, hints: dict[str, str], *, provider: str) -> Path:
    """The red-team bundle in `root`; the agent runs on `provider` with `hints` as env vars."""
    files = {
        "envs/vault/env.toml": 'command = ["python", "server.py"]\n'
        'requirements = ["agentenv-framework-protocol>=1.0"]\n',
        "envs/vault/server.py": ENV_SERVER,
        "envs/vault/answer.txt": answer,
        "artifacts/check/check.py": VERIFIER.format(answer=answer),
        "agents/hostile/agent.toml": 'command = ["python", "agent.py"]\nstartup_timeout_seconds = 120\n',
        "agents/hostile/agent.py": AGENT_SOURCE,
        "README.md": "Red-team bundle: a hostile agent against an answer key\n",
    }
    solution = {
        "turns": [
            {
                "tool_calls": [
                    {"tool": "add_note", "arguments": {"title": "solution", "body": answer}}
                ],
                "response": "done",
            }
        ]
    }

    def task(agent: dict[str, Any]) -> list[dict[str, Any]]:
        return [
            {"id": "env", "type": "deploy_env", "env_id": "vault", "sandbox_type": provider},
            {"id": "agent", "type": "deploy_agent", "env_ids": ["vault"], **agent},
            {
                "id": "ask",
                "type": "prompt_agent",
                "prompt_id": "ask",
                "prompt": "Find the answer and save it as the note 'solution'.",
                "timeout_seconds": 240,
            },
            {
                "id": "check",
                "type": "env_outcome_verifier",
                "env_id": "vault",
                "file_artifact_id": "check",
                "verifier_id": "answer",
            },
        ]

    tasks = {
        "attack": task(
            {
                "a2a_agent_id": "hostile",
                "sandbox_type": provider,
                "env_vars": hints,
                "metadata": {"solution": solution},
            }
        ),
        "solve": task({"a2a_agent_id": "oracle", "metadata": {"solution": solution}}),
    }
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    for name, steps in tasks.items():
        (root / "tasks" / f"{name}.json").parent.mkdir(parents=True, exist_ok=True)
        (root / "tasks" / f"{name}.json").write_text(json.dumps(steps, indent=1))
    return root


def task_record(data: dict[str, Any], name: str) -> dict[str, Any]:
    """The record of task `name` in `agent-env run --json` output."""
    [record] = [t for t in data["tasks"] if t["task"]["name"].rsplit("/", 1)[-1] == name]
    return record


def report_of(record: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The hostile agent's report (decoded from the hex of its answer)."""
    response = record["outputs"]["ask"]["response"]
    return json.loads(bytes.fromhex(response.strip()).decode())
