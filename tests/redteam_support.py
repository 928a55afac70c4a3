"""The red-team bundle and its report: a `vault` env whose answer key the hostile agent
(`redteam_agent.py`) tries to steal, and the helpers that run it and read what it got.

The bundle has two tasks on the same env: `attack` (the hostile agent, prompted once; its answer
is its hex-encoded report) and `solve` (the oracle replays the shipped solution: proof that the
task is solvable and its verifier works). The answer key (`solution`) sits where an agent must
never reach it: the task file (the oracle's solution, stored in the documents store), the
verifier artifact (the object store) and a tool the env hides from every role but `verifier`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import secrets
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agents_support import AGENT_ENV, agent_env

HERE = Path(__file__).resolve().parent
AGENT_SOURCE = (HERE / "redteam_agent.py").read_text()
#: Every attack the agent tries, by name (each is asserted on separately).
ATTACKS = tuple(re.findall(r"^(?:async )?def attack_(\w+)\(", AGENT_SOURCE, re.M))

#: Fresh per test session: the host's secret (set in the runner's environment), the task's
#: answer, and the name of the host /tmp file the agent tries to create.
HOST_SECRET = "host-secret-" + secrets.token_hex(12)
ANSWER = "answer-" + secrets.token_hex(12)
PROBE = "agentenv-redteam-" + secrets.token_hex(6)

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

#: The same hidden tool on an env its author mounted on a FastMCP app (`tool_access = True`):
#: mcp's own FastMCP and the standalone `fastmcp` package (local runs only: the images install
#: only our protocol package).
MOUNTED_ENV = '''
import os
from pathlib import Path

from agentenv_protocol import AgentEnvEnvironment, environment_card, tool
{import_line}


@environment_card(name="{name}")
class Mounted(AgentEnvEnvironment):
    tool_access = True

    @tool()
    def {name}_ping(self) -> str:
        """Answer pong."""
        return "pong"

    @tool(hidden_by_default=True)
    def answer_key_{name}(self) -> str:
        """The answer: hidden from every role."""
        return Path("answer.txt").read_text()


if __name__ == "__main__":
    app = {make}
    {setup}
    env = Mounted()
    env.mount(app)
    env.serve()
'''
MOUNTS = {
    "mcpmount": (
        "from mcp.server.fastmcp import FastMCP",
        'FastMCP("mcpmount", host="127.0.0.1", port=int(os.environ["MCP_PORT"]))',
        "app.settings.transport_security.enable_dns_rebinding_protection = False",
    ),
    "fastmcpmount": (
        # fastmcp takes its address from its own settings, read when it is imported
        'os.environ.update(FASTMCP_HOST="127.0.0.1", FASTMCP_PORT=os.environ["MCP_PORT"])\n'
        "from fastmcp import FastMCP",
        'FastMCP("fastmcpmount")',
        "pass",
    ),
}

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


#: On a container provider the env and the agent are images (the wheel of our protocol package
#: is put in `agentenv-wheels/` by agent-env when it builds them).
ENV_DOCKERFILE = """FROM python:3.11-slim
WORKDIR /app
COPY agentenv-wheels/ /tmp/agentenv-wheels/
RUN pip install --no-cache-dir --disable-pip-version-check /tmp/agentenv-wheels/*.whl
COPY server.py answer.txt ./
ENV MCP_HOST=0.0.0.0 MCP_PORT=18765 PYTHONUNBUFFERED=1
EXPOSE 18765
CMD ["python", "server.py"]
"""
AGENT_DOCKERFILE = """FROM python:3.11-slim
COPY agentenv-wheels/ /tmp/agentenv-wheels/
RUN pip install --no-cache-dir --disable-pip-version-check /tmp/agentenv-wheels/*.whl
COPY agent.py /agent/agent.py
ENV PYTHONUNBUFFERED=1 PORT=8000
EXPOSE 8000
WORKDIR /agent
CMD ["python", "/agent/agent.py"]
"""


def write_bundle(root: Path, answer: str, hints: dict[str, str], *, provider: str) -> Path:
    """The red-team bundle in `root`; the env and the agent run on `provider` (`local`, or a
    container provider: then from images), the agent with `hints` as env vars."""
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
    envs = ["vault"]
    if provider == "local":
        for name, (import_line, make, setup) in MOUNTS.items():
            source = MOUNTED_ENV.format(name=name, import_line=import_line, make=make, setup=setup)
            files[f"envs/{name}/server.py"] = source
            files[f"envs/{name}/answer.txt"] = answer
            files[f"envs/{name}/env.toml"] = (
                'command = ["python", "server.py"]\nrequirements = []\n'
            )
            envs.append(name)
    if provider != "local":
        files["envs/vault/Dockerfile"] = ENV_DOCKERFILE
        files["agents/hostile/Dockerfile"] = AGENT_DOCKERFILE
        files["agents/hostile/agent.toml"] = "startup_timeout_seconds = 300\n"
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

    def task(agent: dict[str, Any], *extra: dict[str, Any]) -> list[dict[str, Any]]:
        return [
            *(
                {"id": f"env-{e}", "type": "deploy_env", "env_id": e, "sandbox_type": provider}
                for e in envs
            ),
            {"id": "agent", "type": "deploy_agent", "env_ids": envs, **agent},
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
            *extra,
        ]

    tasks = {
        "attack": task(
            {
                "a2a_agent_id": "hostile",
                "sandbox_type": provider,
                "sandbox_name": "agentbox",
                "env_vars": hints,
                "metadata": {"solution": solution},
            },
            # tests that write nothing, in the agent's own sandbox: the agent's reward.txt
            # must not become their reward
            {
                "id": "unit",
                "type": "run_container_unit_tests_verifier",
                "sandbox_name": "agentbox",
                "container_name": "main",
                "command": "test -f /app/written-by-the-tests-only",
                "reward_path": "/app/reward.txt",
                "verifier_id": "unit",
            },
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
    assert response.strip(), f"the agent gave no report: {json.dumps(record['steps'])[:3000]}"
    return json.loads(bytes.fromhex(response.strip()).decode())


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@contextlib.contextmanager
def explorer_over(home: Path) -> Iterator[str]:
    """`agent-env up` over `home`, as its user starts it (on loopback, default settings), for
    the block: the agent may find it by scanning the loopback ports. Yields its URL."""
    (home.parent / ".agentenv").mkdir(parents=True, exist_ok=True)
    (home.parent / ".agentenv" / "config.toml").touch()
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_ENV_")}
    proc = subprocess.Popen(
        [str(AGENT_ENV), "up", "--port", "0", "--json"],
        cwd=home.parent,
        env={**env, "AGENT_ENV_HOME": str(home)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        assert line, proc.stderr.read() if proc.stderr else "agent-env up printed nothing"
        yield json.loads(line)["url"]
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)


class Attacked:
    """One run of the bundle: its JSON summary, stderr, and the files it must leave alone."""

    def __init__(
        self,
        root: Path,
        name: str,
        *args: str,
        env: dict[str, str] | None = None,
        provider: str = "local",
        timeout: float = 300,
        with_explorer: bool = False,
    ):
        self.home = root / f"home-{name}"
        self.bundle = write_bundle(
            root / f"bundle-{name}",
            ANSWER,
            {"RT_HOME": str(self.home), "RT_BUNDLE": str(root / f"bundle-{name}"),
             "RT_HOST_TMP_PROBE": f"{PROBE}-{name}"},
            provider=provider,
        )  # fmt: skip
        self.verifier_digest = digest(self.bundle / "artifacts" / "check" / "check.py")
        with explorer_over(self.home) if with_explorer else contextlib.nullcontext():
            done = self._run(args, env, timeout)
        self.probe = Path("/tmp") / f"{PROBE}-{name}"
        self.code, self.stderr = done.returncode, done.stderr
        try:
            self.data = json.loads(done.stdout)
        except ValueError:
            raise AssertionError(f"exit {done.returncode}\n{done.stdout}\n{done.stderr}") from None

    def _run(
        self, args: tuple[str, ...], env: dict[str, str] | None, timeout: float
    ) -> subprocess.CompletedProcess:
        return agent_env(
            self.home,
            "run",
            str(self.bundle),
            *args,
            "--json",
            env={"AGENT_ENV_SECRET_REDTEAM": HOST_SECRET, **(env or {})},
            timeout=timeout,
        )

    def task(self, name: str) -> dict:
        return task_record(self.data, name)
