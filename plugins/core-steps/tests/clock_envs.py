"""Env folders for the clock and trigger tests: `notes` (no clock extension) and `clocked`
(advertises urn:agentenv:clock/v1 and answers its own `now` tool from the env clock)."""

from __future__ import annotations

NOTES = '''
from agentenv_protocol import AgentEnvEnvironment, environment_card, tool


@environment_card(name="notes")
class Notes(AgentEnvEnvironment):
    def __init__(self):
        self.notes = {}
        self.writes = {}

    @tool()
    def add_note(self, title: str, body: str = "") -> dict:
        """Add a note; returns its title."""
        self.notes[title] = body
        self.writes[title] = self.writes.get(title, 0) + 1
        return {"created": title}

    @tool()
    def count_writes(self) -> dict:
        """How many times each title was written."""
        return dict(self.writes)

    @tool()
    def list_notes(self) -> dict:
        """Every note, by title."""
        return dict(self.notes)


if __name__ == "__main__":
    Notes().serve()
'''

CLOCKED = '''
import json
import urllib.request

from agentenv_protocol import AgentEnvEnvironment, environment_card, extension, tool


@environment_card(name="clocked")
class Clocked(AgentEnvEnvironment):
    def __init__(self):
        self.url = None

    @extension("urn:agentenv:clock/v1")
    def sync_time(self, env_get_time_url: str) -> dict:
        self.url = env_get_time_url
        return {"ok": True}

    @tool()
    def now(self) -> str:
        """The env's time: virtual once synced."""
        if self.url is None:
            return "wall"
        with urllib.request.urlopen(self.url, timeout=5) as r:
            return json.loads(r.read())["virtual_time"]


if __name__ == "__main__":
    Clocked().serve()
'''

ENV_TOML = 'command = ["python", "server.py"]\nrequirements = []\n'
FILES = {
    "envs/notes/env.toml": ENV_TOML,
    "envs/notes/server.py": NOTES,
    "envs/clocked/env.toml": ENV_TOML,
    "envs/clocked/server.py": CLOCKED,
}

#: A verifier that calls one tool through the gateway and reports its structured answer.
CALLS = """
import asyncio, json, os
from agentenv_protocol.client import EnvClient

CALLS = json.loads(os.environ.get("CALLS", "[]"))

def verify(mcp_url):
    async def go():
        async with EnvClient(mcp_url.rsplit("/mcp", 1)[0], mcp_path="/mcp") as gw:
            out = []
            for name, args in CALLS_SPEC:
                result = await gw.call_tool(name, args)
                out.append({"id": name, "result": not result.is_error,
                            "description": result.text})
            return out
    return asyncio.run(go())
"""


def caller(calls: list) -> str:
    """Verifier source calling `calls` ([(tool, args)]) in order."""
    return CALLS.replace("CALLS_SPEC", repr(calls))


def deploy(env: str) -> dict:
    return {"id": f"deploy-{env}", "type": "deploy_env", "env_id": env}


def check(verifier_id: str, artifact: str, env: str = "notes") -> dict:
    return {
        "id": verifier_id,
        "type": "env_outcome_verifier",
        "env_id": env,
        "file_artifact_id": artifact,
        "verifier_id": verifier_id,
    }


def answers(state: dict, verifier_id: str) -> list[str]:
    return [r["description"] for r in state["verifiers"][verifier_id]["results"]]
