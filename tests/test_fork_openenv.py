"""A trainer forks the current state over OpenEnv with openenv's own client: the control action
`agentenv_snapshot` mid-turn, then `reset(snapshot=ID)` in other sessions; the children get the
snapshot's state (digest checked), stay independent, and a bad id is an error observation."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

REPO = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("fork_bench", REPO / "bench" / "_fork.py")
assert _spec is not None and _spec.loader is not None
fork_bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fork_bench)

#: Starts CLI processes and whole episodes: out of the inner loop (`scripts/test --inner`).
pytestmark = pytest.mark.slow

TASK = [
    {"id": "notes", "type": "deploy_env", "env_id": "notes"},
    {"id": "counter", "type": "deploy_env", "env_id": "counter"},
    {"id": "agent", "type": "deploy_agent", "env_ids": ["notes", "counter"]},
    {"id": "ask", "type": "prompt_agent", "prompt_id": "ask", "prompt": "Take notes."},
]


def call(tool: str, **arguments: Any) -> dict[str, Any]:
    return {"type": "call_tool", "tool_name": tool, "arguments": arguments}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from agent_env.openenv import build_app
    from agentenv_protocol.serving import serve_in_thread

    tmp = tmp_path_factory.mktemp("fork-openenv")
    root = fork_bench.write_bundle(tmp / "bundle", {"t": TASK})
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AGENT_ENV_HOME", str(tmp / "home"))
        mp.delenv("AGENT_ENV_CONFIG", raising=False)
        running = serve_in_thread(build_app(root), startup_timeout=60)
        try:
            yield running.url
        finally:
            running.stop(timeout=60)


async def notes(env: Any) -> list[str]:
    r = await env.step(call("list_notes"))
    return json.loads(r.observation["result"]["data"])


async def count(env: Any) -> int:
    r = await env.step(call("bump", by=0))
    return int(r.observation["result"]["data"])


@pytest.mark.timeout(300)
def test_fork_the_current_state_into_independent_sessions(server) -> None:
    from openenv.core.generic_client import GenericEnvClient

    async def main() -> None:
        async with GenericEnvClient(base_url=server, message_timeout_s=240) as parent:
            r = await parent.reset(task="t")
            assert r.done is False and r.metadata["prompt"] == "Take notes."
            r = await parent.step({"type": "list_tools"})
            assert "agentenv_snapshot" not in {t["name"] for t in r.observation["tools"]}
            await parent.step(call("add_note", title="parent", body="p"))
            at = await count(parent)
            r = await parent.step(call("agentenv_snapshot", snapshot_id="oe-snap"))
            assert r.observation["error"] is None, r.observation
            taken = r.observation["result"]
            assert taken["snapshot"] == "oe-snap@1" and taken["envs"] == ["counter", "notes"]
            assert taken["call_position"] == 2  # add_note and bump went through the gateway
            await parent.step(call("add_note", title="after-snapshot", body="x"))
            parent_notes = await notes(parent)

            async def child(title: str) -> tuple[dict[str, Any], list[str], int]:
                async with GenericEnvClient(base_url=server, message_timeout_s=240) as env:
                    r = await env.reset(snapshot="oe-snap")
                    assert r.done is False, r.metadata
                    before = await notes(env)
                    await env.step(call("add_note", title=title, body="mine"))
                    await anyio.sleep(0.5)  # let the sibling write its own note first
                    return r.metadata, before, len(await notes(env)) - len(before)

            found: dict[str, Any] = {}

            async def one(title: str) -> None:
                found[title] = await child(title)

            async with anyio.create_task_group() as tg:
                tg.start_soon(one, "b-only")
                tg.start_soon(one, "c-only")
            for title, (meta, before, added) in found.items():
                assert meta["forked_from"] == "oe-snap@1"
                assert meta["digest"] == taken["digest"]
                assert meta["prompt"] == "Take notes."
                assert "parent" in before and "after-snapshot" not in before, title
                assert added == 1  # its own note, not its sibling's
            assert set(found["b-only"][1]) == set(found["c-only"][1])
            assert await notes(parent) == parent_notes  # the children left the parent alone
            assert await count(parent) == at

    anyio.run(main)


@pytest.mark.timeout(120)
def test_a_bad_snapshot_is_an_error_observation(server) -> None:
    from openenv.core.generic_client import GenericEnvClient

    async def main() -> None:
        async with GenericEnvClient(base_url=server, message_timeout_s=120) as env:
            r = await env.reset(snapshot="no-such-snap")
            assert r.done is True
            assert r.metadata["status"] == "error"
            assert "no snapshot 'no-such-snap'" in r.metadata["error"]
            r = await env.step(call("agentenv_snapshot"))
            assert r.done is True and "call reset first" in r.metadata["error"]

    anyio.run(main)
