"""A long-lived process stays flat: many trials through the real engine in this process (envs as
local processes, the oracle calling a tool through each trial's gateway), and many OpenEnv
episodes through one in-process server, leave the process-wide tables, the redactor, live task
instances, threads, asyncio tasks, file descriptors and child processes as they were before."""

from __future__ import annotations

import asyncio
import gc
import json
import os
import threading
import time
import weakref
from pathlib import Path

import pytest

ECHO_SERVER = '''
from agentenv_protocol import AgentEnvEnvironment, environment_card, tool


@environment_card(name="echo")
class Echo(AgentEnvEnvironment):
    @tool()
    def echo_message(self, message: str) -> str:
        """Echo the message back."""
        print("echo", message, flush=True)
        return message


if __name__ == "__main__":
    Echo().serve()
'''
TASK = [
    {"id": "env", "type": "deploy_env", "env_id": "echo"},
    {
        "id": "agent",
        "type": "deploy_agent",
        "env_ids": ["echo"],
        "metadata": {
            "solution": [
                {
                    "tool_calls": [{"tool": "echo_message", "arguments": {"message": "hi"}}],
                    "response": "done",
                }
            ]
        },
    },
    {"id": "ask", "type": "prompt_agent", "prompt_id": "ask", "prompt": "Echo hi, say done."},
    {
        "id": "answer",
        "type": "agent_prompt_response_verifier",
        "verifier_id": "answer",
        "prompt_id": "ask",
        "criteria": [{"id": "done", "type": "response_contains", "needles": ["done"]}],
    },
]


@pytest.fixture
def cli(cli_runner, register_plugin):
    import agentenv_core_steps.hooks

    register_plugin(agentenv_core_steps.hooks, "core-steps")
    return cli_runner


def echo_bundle(root: Path) -> Path:
    (root / "envs" / "echo").mkdir(parents=True)
    (root / "tasks").mkdir()
    (root / "envs" / "echo" / "server.py").write_text(ECHO_SERVER)
    (root / "envs" / "echo" / "env.toml").write_text(
        'description = "echo"\ncommand = ["python", "server.py"]\n'
    )
    (root / "tasks" / "echo.json").write_text(json.dumps(TASK))
    return root


def children() -> set[int]:
    pid = os.getpid()
    out: set[int] = set()
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out.update(int(k) for k in f.read().split())
        except OSError:
            continue
    return out


def running_loops() -> list[asyncio.AbstractEventLoop]:
    """The event loops running in this process's threads (a served app's, say)."""
    return [
        o for o in gc.get_objects() if isinstance(o, asyncio.AbstractEventLoop) and o.is_running()
    ]


def threads() -> list[str]:
    """Live threads but the idle workers of anyio's pool (as many as calls ever overlapped,
    at most its limiter's 40; they wait for the next call)."""
    return sorted(t.name for t in threading.enumerate() if t.name != "AnyIO worker thread")


def sizes() -> dict[str, int]:
    """Everything of this process that must not grow with the number of trials."""
    from agent_env.engine.instance import TaskInstance
    from agent_env.redact import process_redactor
    from agent_env.sandboxes.local import logs
    from agentenv_core_steps import gateway
    from agentenv_core_steps.envs import secret
    from agentenv_openenv.episode import Episode
    from agentenv_protocol.gateway import trajectory

    gc.collect()
    return {
        "process redactor secrets": len(process_redactor().secrets),
        "gateways": len(gateway._GATEWAYS),
        "env secret keys": len(secret._KEYS),
        "gateway key cache": trajectory._secret_key_name.cache_info().currsize,
        "held log pipes": len(logs._HELD),
        "draining log pipes": len(logs._DRAINING),
        "task instances alive": sum(isinstance(o, TaskInstance) for o in gc.get_objects()),
        "openenv episodes alive": sum(isinstance(o, Episode) for o in gc.get_objects()),
        "finalizers": len(weakref.finalize._registry),  # type: ignore[attr-defined]
        "threads": len(threads()),
        "asyncio tasks": sum(len(asyncio.all_tasks(loop)) for loop in running_loops()),
        "open fds": len(os.listdir("/proc/self/fd")),
        "child processes": len(children()),
    }


def holders() -> list[str]:
    """What holds each live task instance (two levels of referrers, by type and a name), to
    say what leaked when a table did not come back."""
    import types

    from agent_env.engine.instance import TaskInstance

    def name(o: object) -> str:
        if isinstance(o, dict):
            return f"dict{sorted(map(str, o))[:8]}"
        if isinstance(o, types.FrameType):
            return f"frame {o.f_code.co_name} ({o.f_code.co_filename}:{o.f_lineno})"
        return type(o).__qualname__

    out = []
    for inst in [o for o in gc.get_objects() if isinstance(o, TaskInstance)]:
        for ref in gc.get_referrers(inst):
            if ref is out:
                continue
            up = [name(r) for r in gc.get_referrers(ref)][:6]
            out.append(f"{name(inst)} <- {name(ref)} <- {up}")
    return out


def settled(before: dict[str, int] | None = None, timeout: float = 30.0) -> dict[str, int]:
    """`sizes()` equal to `before`, or without `before` once log copies are done and nothing
    changed for a second (episodes and trials that just ended are still being torn down);
    else what they are when the timeout passed."""
    deadline = time.monotonic() + timeout
    now, same_since = sizes(), time.monotonic()
    while time.monotonic() < deadline:
        if before is not None and now == before:
            break
        if before is None and not now["draining log pipes"] and time.monotonic() - same_since >= 1:
            break
        time.sleep(0.2)
        then, now = now, sizes()
        if now != then:
            same_since = time.monotonic()
    return now


def test_many_trials_in_one_process_leave_every_table_as_it_was(cli, tmp_path):
    bundle = echo_bundle(tmp_path / "echo")
    args = ["run", str(bundle), "--sandbox", "local", "--agent", "oracle"]
    warm = cli.invoke([*args, "--trials", "2"])  # imports, the env's venv, the key file
    assert warm.exit_code == 0, warm.output
    before = settled()
    assert before["gateways"] == 0 and before["held log pipes"] == 0
    for _ in range(3):
        done = cli.invoke([*args, "--trials", "12", "--concurrency", "6"])
        assert done.exit_code == 0, done.output
        assert "12      12" in done.output  # every trial passed: each called the env
    after = settled(before)
    assert after == before


def test_many_openenv_episodes_in_one_server_leave_every_table_as_it_was(
    tmp_path, agent_env_home, monkeypatch
):
    import anyio
    from openenv.core.generic_client import GenericEnvClient

    from agent_env.openenv import build_app
    from agentenv_protocol.serving import serve_in_thread

    server = serve_in_thread(build_app(echo_bundle(tmp_path / "echo")), startup_timeout=60)
    call = {"type": "call_tool", "tool_name": "echo_message", "arguments": {"message": "hi"}}
    end = {"type": "call_tool", "tool_name": "end_turn", "arguments": {"response": "done"}}

    async def play(episodes: int, sessions: int) -> list[float | None]:
        rewards: list[float | None] = []

        async def session(s: int) -> None:
            async with GenericEnvClient(base_url=server.url, message_timeout_s=240) as env:
                for _ in range(s, episodes, sessions):
                    r = await env.reset()
                    assert not r.done, r.observation
                    r = await env.step(call)
                    assert r.observation["error"] is None, r.observation
                    r = await env.step(end)
                    rewards.append(r.reward)

        async with anyio.create_task_group() as tg:
            for s in range(sessions):
                tg.start_soon(session, s)
        return rewards

    try:
        # warmed at the measured concurrency and past the document store's first checkpoint
        # (every 256 commits): SQLite keeps the file descriptor of the checkpoint's closed
        # connection open while the store's own connections hold locks on the file, and reuses
        # it for the next connection, so one descriptor stays from the first checkpoint on
        assert anyio.run(play, 30, 6) == [1.0] * 30
        before = settled()
        assert anyio.run(play, 30, 6) == [1.0] * 30
        deadline = time.monotonic() + 30
        while True:
            after = sizes()
            if after == before or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert after == before, (threads(), holders())
    finally:
        server.stop(timeout=60)
