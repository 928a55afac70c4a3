"""No port or secret race between envs deployed at once (issue 31: under 64 concurrent resets a
gateway reached an env process that was not its own, HTTP 401): 32 concurrent resets succeed,
twice; and a local env whose port another env server took first is started again elsewhere."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

ROOT = Path(__file__).resolve().parents[3]
NOTES_SERVER = ROOT / "examples" / "notes-agent" / "envs" / "notes" / "server.py"


async def reset_all(url: str, n: int) -> list[dict[str, Any]]:
    """`n` sessions reset at once (each then closes, abandoning its episode); their metadata."""
    from openenv.core.generic_client import GenericEnvClient

    out: list[dict[str, Any]] = []

    async def one() -> None:
        async with GenericEnvClient(base_url=url, message_timeout_s=280) as env:
            r = await env.reset()
            out.append({"done": r.done, **r.metadata})
            if not r.done:
                r = await env.step(
                    {"type": "call_tool", "tool_name": "list_notes", "arguments": {}}
                )
                assert r.observation["error"] is None, r.observation

    async with anyio.create_task_group() as tg:
        for _ in range(n):
            tg.start_soon(one)
    return out


async def torn_down(app: Any, timeout: float = 180.0) -> None:
    runtime = app.state.agentenv_runtime
    with anyio.fail_after(timeout):
        while runtime.episodes or runtime.host.session.sandboxes.live:
            await anyio.sleep(0.1)


def first_port_given_is(taken: int, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The next env started is told the port `taken` (as two `bind(0)`s in a race would), the
    ones after it free ports; returns the ports handed out, in order."""
    import agent_env.net
    import agent_env.sandboxes.local.sandbox as local_sandbox

    real = agent_env.net.free_port
    given: list[int] = []

    def racing(host: str = "127.0.0.1") -> int:
        port = taken if not given else real(host)
        given.append(port)
        return port

    monkeypatch.setattr(agent_env.net, "free_port", racing)  # the fork server's start
    monkeypatch.setattr(local_sandbox, "free_port", racing)  # a plain process start
    return given


@pytest.mark.timeout(900)
def test_32_concurrent_resets_all_succeed_twice(notes_server) -> None:
    url, app = notes_server
    for round_ in (1, 2):
        started = time.perf_counter()
        results = anyio.run(reset_all, url, 32)
        failed = [r for r in results if r["done"]]
        print(f"round {round_}: 32 resets in {time.perf_counter() - started:.1f}s")
        assert len(results) == 32 and failed == [], failed
        assert len({r["instance_id"] for r in results}) == 32
        anyio.run(torn_down, app)


@pytest.fixture
def squatter() -> Any:
    """A notes env server with a secret of its own on a free port: the process that won the
    race for the port an env of ours was given."""
    from agent_env.net import free_port

    port = free_port()
    env = {
        **os.environ,
        "MCP_HOST": "127.0.0.1",
        "MCP_PORT": str(port),
        "AGENTENV_ENV_SECRET": "the-squatters-own-secret",
    }
    proc = subprocess.Popen(
        [sys.executable, str(NOTES_SERVER)],
        env=env,
        cwd=NOTES_SERVER.parent,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        import httpx

        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/.well-known/agent-env.json").is_success:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline and proc.poll() is None, "the squatter did not start"
            time.sleep(0.05)
        yield port
    finally:
        proc.kill()
        proc.wait()


def test_the_secret_check_tells_another_env_server_from_ours(squatter) -> None:
    from agentenv_core_steps.envs.mcp_server import PortTaken, wait_for_card

    url = f"http://127.0.0.1:{squatter}"
    with pytest.raises(PortTaken, match="is not this env's .*another process took the port"):
        anyio.run(lambda: wait_for_card("notes", url, None, 10, secret="ours"))
    card = anyio.run(
        lambda: wait_for_card("notes", url, None, 10, secret="the-squatters-own-secret")
    )
    assert card["name"] == "notes"


@pytest.mark.timeout(300)
def test_a_taken_port_is_retried_on_another(notes_server, squatter, monkeypatch) -> None:
    """The next env deployed is told the squatter's port (as two `bind(0)`s in a race would):
    its process cannot bind it, the squatter answers the card, refuses our secret, and the env
    is started again on a new port; the reset succeeds."""
    url, app = notes_server
    given = first_port_given_is(squatter, monkeypatch)
    [result] = anyio.run(reset_all, url, 1)
    assert result["done"] is False, result
    assert given[0] == squatter and len(given) >= 2, given
    anyio.run(torn_down, app)


@pytest.fixture
def silent_squatter() -> Any:
    """Any process that took the port first without being an env server: it listens and never
    answers (our env's server then cannot bind the port and exits)."""
    import socket

    from agent_env.net import free_port

    sock = socket.socket()
    sock.bind(("127.0.0.1", free_port()))
    sock.listen(64)
    try:
        yield sock.getsockname()[1]
    finally:
        sock.close()


@pytest.mark.timeout(300)
def test_an_env_that_cannot_bind_its_port_is_started_on_another(
    notes_server, silent_squatter, monkeypatch
) -> None:
    """The soak's one failed trial in 2,000: the env's server exited with "address already in
    use" (a process outside our own took the port between free_port and the bind); that is a
    port race, retried on a new port, not the env's own failure."""
    url, app = notes_server
    given = first_port_given_is(silent_squatter, monkeypatch)
    [result] = anyio.run(reset_all, url, 1)
    assert result["done"] is False, result
    assert given[0] == silent_squatter and len(given) >= 2, given
    anyio.run(torn_down, app)


def test_only_a_failed_bind_of_the_given_port_is_a_race() -> None:
    from agentenv_core_steps.envs.mcp_server import _could_not_bind

    uvicorn = (
        "agentenv: serving 'echo' on http://127.0.0.1:38523\n"
        "ERROR:    [Errno 98] error while attempting to bind on address ('127.0.0.1', 38523): "
        "address already in use"
    )
    assert _could_not_bind(uvicorn, "http://127.0.0.1:38523")
    # the env's own second server on a fixed port: its own failure
    assert not _could_not_bind(
        "OSError: [Errno 98] Address already in use ('0.0.0.0', 9000)", "http://127.0.0.1:38523"
    )
    assert not _could_not_bind("Traceback ...\nValueError: bad config", "http://127.0.0.1:38523")
    assert not _could_not_bind(None, "http://127.0.0.1:38523")
