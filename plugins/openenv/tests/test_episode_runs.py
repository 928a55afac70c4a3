"""An OpenEnv episode is a run (issue 36): played with openenv's own client, then found with
`agent-env runs list --json` and `runs show`, like any `agent-env run`; nothing the episodes
leave behind grows in the server process."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

ADD = {"title": "groceries", "body": "milk, eggs, bread"}


def agent_env(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).with_name("agent-env")
    return subprocess.run(
        [str(exe), *args],
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, "AGENT_ENV_HOME": str(home)},
    )


def call(tool: str, **arguments: Any) -> dict[str, Any]:
    return {"type": "call_tool", "tool_name": tool, "arguments": arguments}


async def play(url: str, response: str, add: bool) -> dict[str, Any]:
    """One episode of the groceries task; the final observation's metadata."""
    from openenv.core.generic_client import GenericEnvClient

    async with GenericEnvClient(base_url=url) as env:
        r = await env.reset(split="all", index=0)
        assert r.done is False, r.metadata
        started = dict(r.metadata)
        if add:
            await env.step(call("add_note", **ADD))
        r = await env.step(call("end_turn", response=response))
        assert r.done is True, r.metadata
        assert r.metadata["run_id"] == started["run_id"]
        assert r.metadata["instance_id"] == started["instance_id"]
        return {**r.metadata, "reward": r.reward}


@pytest.mark.timeout(300)
def test_an_episode_is_a_run_that_runs_list_and_show_find(notes_server, openenv_home) -> None:
    url, app = notes_server
    passed = anyio.run(play, url, "I saved it as the note 'groceries'.", True)
    failed = anyio.run(play, url, "no", False)
    assert passed["reward"] == 1.0 and failed["reward"] < 1.0

    listed = agent_env(openenv_home, "runs", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    rows = {row["id"]: row for row in json.loads(listed.stdout)}
    ok, bad = rows[passed["run_id"]], rows[failed["run_id"]]
    assert (ok["bundle"], ok["front_end"], ok["runner"]) == ("notes-agent", "openenv", "local")
    assert (ok["instances"], ok["passed"], ok["failed"]) == (1, 1, 0)
    assert (bad["instances"], bad["passed"]) == (1, 0)

    shown = agent_env(openenv_home, "runs", "show", passed["run_id"], "--json")
    assert shown.returncode == 0, shown.stderr
    data = json.loads(shown.stdout)
    assert data["run"]["front_end"] == "openenv"
    [instance] = data["instances"]
    assert instance["id"] == passed["instance_id"] and instance["status"] == "passed"
    assert instance["agent"] == "openenv" and instance["run_id"] == passed["run_id"]
    text = agent_env(openenv_home, "runs", "show", passed["run_id"])
    assert f"run {passed['run_id']}" in text.stdout and "(openenv)" in text.stdout
    assert passed["instance_id"] in text.stdout


@pytest.mark.timeout(300)
def test_finished_episodes_leave_no_state_in_the_server(notes_server) -> None:
    """Each episode's state (the episode object the agent kind finds) lives with its task
    instance: once episodes end, no Episode is reachable from the plugin's modules."""
    import agentenv_openenv.environment
    import agentenv_openenv.episode
    from agent_env.engine.instance import TaskInstance
    from agent_env.engine.trials import TrialRun
    from agentenv_openenv.episode import Episode

    url, app = notes_server
    runs = {anyio.run(play, url, "no", False)["run_id"] for _ in range(3)}
    runtime = app.state.agentenv_runtime
    assert runtime.episodes == set()
    gc.collect()
    alive = [o for o in gc.get_objects() if isinstance(o, Episode) and o.finished.is_set()]
    # the last session's environment may still hold its finished episode until the next reset
    assert len(alive) <= 1, alive
    # nor does anything hold the runs' trials or task instances once they were recorded (the
    # last episode's teardown may still be finishing in the server's threads: a few seconds)
    deadline = time.monotonic() + 10
    while True:
        gc.collect()
        held = [
            o
            for o in gc.get_objects()
            if isinstance(o, (TaskInstance, TrialRun)) and getattr(o, "run_id", None) in runs
        ]
        if not held or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert held == [], held
    for module in (agentenv_openenv.episode, agentenv_openenv.environment):
        for name, value in vars(module).items():
            if isinstance(value, (dict, set, list)):
                assert not any(isinstance(v, Episode) for v in value), name
