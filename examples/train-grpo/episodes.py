"""Rollouts on agent-env's OpenEnv server, with openenv's own client and no ML libraries: what
the trainer's reward function calls (and what the example's test drives without torch).

A server started with a token (`AGENT_ENV_OPENENV_TOKEN=... agent-env openenv serve ...`, as
docs/openenv.md advises when agents run in local sandboxes on the same machine) gets it from
the same variable here."""

from __future__ import annotations

import os

import httpx
from openenv.core.generic_client import GenericEnvClient


def _headers() -> dict[str, str] | None:
    token = os.environ.get("AGENT_ENV_OPENENV_TOKEN")
    return {"Authorization": f"Bearer {token}"} if token else None


def served_tasks(url: str) -> tuple[str, list[dict]]:
    """The served environment's name and its tasks (OpenEnv's task API)."""
    headers = _headers()
    env_name = httpx.get(f"{url}/list_environments", headers=headers).json()[0]
    tasks = httpx.post(f"{url}/{env_name}/tasks", json={"split": "all"}, headers=headers).json()
    return env_name, tasks["tasks"] if isinstance(tasks, dict) else tasks


def play(url: str, task: str, line: str) -> tuple[float, dict]:
    """One episode of `task`: write `line` on the scratchpad, end the turn saying it; the
    episode's reward (the task's verifier scores) and its final metadata. A task that failed to
    deploy gives 0.0 and its metadata says why."""
    client = GenericEnvClient(base_url=url, message_timeout_s=120, headers=_headers())
    with client.sync() as env:
        first = env.reset(task=task)
        if first.done:
            return 0.0, dict(first.metadata or {})
        env.step({"type": "call_tool", "tool_name": "write", "arguments": {"text": line}})
        last = env.step(
            {"type": "call_tool", "tool_name": "end_turn", "arguments": {"response": line}}
        )
        return float(last.reward or 0.0), dict(last.metadata or {})
