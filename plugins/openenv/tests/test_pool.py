"""Warm pools behind `build_app(..., pool=N)` (issue 31), driven by openenv's own client: a
second episode reuses the first one's deployed instance with its env reset and re-seeded, a
failed reset retires the instance (the next episode gets a fresh one), concurrent sessions never
share an instance, and an env that cannot deploy still answers with a non-empty reason."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

ROOT = Path(__file__).resolve().parents[3]
NOTES = ROOT / "examples" / "notes-agent"


def call(tool: str, **arguments: Any) -> dict[str, Any]:
    return {"type": "call_tool", "tool_name": tool, "arguments": arguments}


def notes_variant(tmp_path: Path, name: str, edit: Callable[[str], str]) -> Path:
    folder = tmp_path / name
    shutil.copytree(NOTES, folder, ignore=shutil.ignore_patterns("__pycache__"))
    server = folder / "envs" / "notes" / "server.py"
    server.write_text(edit(server.read_text()))
    return folder


def serve(folder: Path, **kw: Any) -> Any:
    from agent_env.openenv import build_app
    from agentenv_protocol.serving import serve_in_thread

    app = build_app(folder, **kw)
    return app, serve_in_thread(app, startup_timeout=60)


async def episode(env: Any, *, add: str | None = None) -> tuple[Any, list[str], Any]:
    """One episode: reset, list the notes, maybe add one, end the turn; (reset, notes, end)."""
    import json

    r = await env.reset()
    assert r.done is False, r.metadata
    listed = await env.step(call("list_notes"))
    notes = json.loads(listed.observation["result"]["data"])
    if add is not None:
        added = await env.step(call("add_note", title=add, body="x"))
        assert added.observation["error"] is None, added.observation
    end = await env.step(call("end_turn", response="done"))
    assert end.done is True, end
    return r, notes, end


def pools_of(app: Any) -> Any:
    return app.state.agentenv_runtime.host.pools


async def settled(app: Any, timeout: float = 120.0) -> None:
    """Until the pools have nothing lent (an ended or abandoned episode's instance is given
    back once its teardown ran), filling or recycling."""
    with anyio.fail_after(timeout):
        while any(p.lent or p.filling or p.recycling for p in pools_of(app).pools.values()):
            await anyio.sleep(0.05)


@pytest.fixture(scope="module")
def pooled(openenv_home: Path) -> Iterator[tuple[str, Any]]:
    """examples/notes-agent served with one warm instance."""
    app, server = serve(NOTES, pool=1)
    try:
        yield server.url, app
    finally:
        server.stop(timeout=120)


@pytest.mark.timeout(300)
def test_the_next_episode_reuses_the_instance_with_its_env_reset_and_reseeded(pooled) -> None:
    from openenv.core.generic_client import GenericEnvClient

    url, app = pooled

    async def main() -> list[Any]:
        async with GenericEnvClient(base_url=url, message_timeout_s=120) as env:
            first = await episode(env, add="groceries")
            await settled(app)
            started = time.perf_counter()
            second = await episode(env)
            return [first, second, time.perf_counter() - started]

    (r1, notes1, end1), (r2, notes2, end2), seconds = anyio.run(main)
    # the env's initial state (a 'draft' note) each time: the added note is gone, the draft back
    assert notes1 == ["draft"] and notes2 == ["draft"]
    one, two = end1.metadata["reused"], end2.metadata["reused"]
    assert one is not None and two is not None, (end1.metadata, end2.metadata)
    assert two["instance"] == one["instance"] and two["episode"] == one["episode"] + 1
    assert two["steps"] == ["env"]
    # still one record per episode, each its own instance
    assert r1.metadata["instance_id"] != r2.metadata["instance_id"]
    described = pools_of(app).describe()
    assert described["deployed"] == 1 and described["failed_resets"] == 0, described
    print(f"a pooled episode took {seconds * 1000:.0f} ms")


@pytest.mark.timeout(300)
def test_an_abandoned_episode_gives_back_a_clean_instance(pooled) -> None:
    """A session that closes mid-episode (a note added, no end_turn): the next episode gets
    the same instance, reset."""
    from openenv.core.generic_client import GenericEnvClient

    url, app = pooled

    async def main() -> Any:
        async with GenericEnvClient(base_url=url, message_timeout_s=120) as env:
            r = await env.reset()
            assert r.done is False, r.metadata
            added = await env.step(call("add_note", title="left behind", body="x"))
            assert added.observation["error"] is None
        await settled(app)
        async with GenericEnvClient(base_url=url, message_timeout_s=120) as env:
            return await episode(env)

    _, notes, end = anyio.run(main)
    assert notes == ["draft"], notes
    assert end.metadata["reused"]["episode"] >= 2
    assert pools_of(app).describe()["failed_resets"] == 0


@pytest.mark.timeout(300)
def test_sessions_at_once_never_share_an_instance(pooled) -> None:
    """Six sessions in their episodes at once over a pool of one: six distinct instances."""
    from openenv.core.generic_client import GenericEnvClient

    url, app = pooled
    ends: list[Any] = []

    async def one(ready: anyio.Event, count: list[int]) -> None:
        async with GenericEnvClient(base_url=url, message_timeout_s=120) as env:
            r = await env.reset()
            assert r.done is False, r.metadata
            count.append(1)
            if len(count) == 6:
                ready.set()
            await ready.wait()  # every session holds its instance at the same time
            ends.append(await env.step(call("end_turn", response="done")))

    async def main() -> None:
        ready, count = anyio.Event(), []
        async with anyio.create_task_group() as tg:
            for _ in range(6):
                tg.start_soon(one, ready, count)

    anyio.run(main)
    held = [e.metadata["reused"]["instance"] for e in ends]
    assert len(held) == 6 and len(set(held)) == 6, held
    anyio.run(settled, app)
    assert pools_of(app).describe()["idle"] == 1  # the extras went once no longer needed


@pytest.mark.timeout(300)
def test_a_failed_reset_retires_the_instance(openenv_home: Path, tmp_path: Path) -> None:
    from openenv.core.generic_client import GenericEnvClient

    folder = notes_variant(
        tmp_path,
        "reset-fails",
        lambda s: s.replace(
            "        self.notes.clear()",
            # the pool's first reset (right after the deploy) works, the next one fails
            "        self.resets = getattr(self, 'resets', 0) + 1\n"
            "        if self.resets > 1:\n"
            "            raise RuntimeError('this env cannot reset twice')\n"
            "        self.notes.clear()",
        ),
    )
    app, server = serve(folder, pool=1)
    try:

        async def main() -> list[Any]:
            async with GenericEnvClient(base_url=server.url, message_timeout_s=120) as env:
                first = await episode(env, add="groceries")
                await settled(app)
                second = await episode(env)
                return [first, second]

        (_, _, end1), (_, notes2, end2) = anyio.run(main)
    finally:
        server.stop(timeout=120)
    # never handed out dirty: the second episode runs on a fresh instance with the initial state
    assert notes2 == ["draft"]
    assert end2.metadata["reused"]["instance"] != end1.metadata["reused"]["instance"]
    described = pools_of(app).describe()
    assert described["failed_resets"] >= 1 and described["retired"] >= 1, described
    assert described["idle"] == 0  # the server's exit tore every instance down


@pytest.mark.timeout(300)
def test_an_env_whose_reset_fails_at_once_never_enters_the_pool(
    openenv_home: Path, tmp_path: Path
) -> None:
    """Checked right after the warm deploy: the episode deploys its own env and still runs."""
    from openenv.core.generic_client import GenericEnvClient

    folder = notes_variant(
        tmp_path,
        "never-resets",
        lambda s: s.replace("        self.notes.clear()", "        raise RuntimeError('no')"),
    )
    app, server = serve(folder, pool=1)
    try:

        async def main() -> Any:
            async with GenericEnvClient(base_url=server.url, message_timeout_s=120) as env:
                return await episode(env)

        _, notes, end = anyio.run(main)
    finally:
        server.stop(timeout=120)
    assert notes == ["draft"] and end.metadata["reused"] is None, end.metadata
    described = pools_of(app).describe()
    assert described["failed_deploys"] >= 1 and described["reused"] == 0, described


@pytest.mark.timeout(300)
def test_an_env_that_cannot_deploy_still_answers_with_a_reason(
    openenv_home: Path, tmp_path: Path
) -> None:
    from openenv.core.generic_client import GenericEnvClient

    folder = notes_variant(
        tmp_path, "exits", lambda s: "import sys\nsys.exit('no notes today')\n" + s
    )
    app, server = serve(folder, pool=2)
    try:

        async def main() -> Any:
            async with GenericEnvClient(base_url=server.url, message_timeout_s=120) as env:
                return await env.reset()

        r = anyio.run(main)
    finally:
        server.stop(timeout=120)
    assert r.done is True and r.metadata["status"] == "error", r.metadata
    assert isinstance(r.metadata["error"], str) and r.metadata["error"].strip()
    assert "no notes today" in r.metadata["error"] or "exited" in r.metadata["error"]
    assert pools_of(app).describe()["failed_deploys"] >= 1


@pytest.mark.timeout(300)
def test_pooled_calls_reach_the_gateway_on_the_servers_loop_logged_once_with_no_secret_pileup(
    pooled, openenv_home: Path
) -> None:
    """A warm instance's gateway is served on the server's own event loop (no thread of its
    own) and an episode's tool calls reach it in-process: each is still logged once in the
    episode's trajectory, and the tokens of finished episodes leave the gateway's redaction
    list, which stays the same size however many episodes the instance served, and its token,
    scope and session tables."""
    import json

    from openenv.core.generic_client import GenericEnvClient

    from agentenv_core_steps.gateway import GATEWAY

    url, app = pooled
    runtime = app.state.agentenv_runtime

    def idle_gateway() -> Any:
        (pool,) = pools_of(app).pools.values()
        (warm,) = pool.idle
        return warm.held.sandboxes.resources.get(GATEWAY)

    async def main() -> tuple[list[Any], list[int]]:
        ends, secrets = [], []
        async with GenericEnvClient(base_url=url, message_timeout_s=120) as env:
            for _ in range(3):
                r, _notes, end = await episode(env)
                ends.append((r, end))
                await settled(app)
                gateway = idle_gateway()
                assert gateway.loop is runtime.loop  # served on the server's loop
                assert gateway.in_process_client("not-a-token", gateway.mcp_url) is None
                secrets.append(len(gateway.gateway.trajectory.secrets))
                auth = gateway.gateway.auth  # the ended episode's tokens and session ids: gone
                assert not auth.tokens and not auth.scopes
                assert set(auth._sessions) <= {auth.admin_token}  # the pool's own calls
        return ends, secrets

    ends, secrets = anyio.run(main)
    assert len(set(secrets)) == 1, secrets
    for r, _end in ends:
        run_id, instance_id = r.metadata["run_id"], r.metadata["instance_id"]
        (path,) = (openenv_home / "objects" / "runs" / run_id / instance_id).glob(
            "trajectories/*.json"
        )
        calls = json.loads(path.read_text())["gateway_calls"]
        assert [c["tool"] for c in calls] == ["list_notes"], calls
