"""`serve --token` / `build_app(token=...)`: an attacker on the machine's loopback (an agent in
a local sandbox shares it) without the token gets nothing from the server: no session, no
task list, no reward; openenv's own client with the token in `headers=` works as before.
(`agent-env openenv serve` with the token from the environment: test_serving's CLI test.)"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

ROOT = Path(__file__).resolve().parents[3]
NOTES = ROOT / "examples" / "notes-agent"
AGENT_ENV = str(Path(sys.executable).parent / "agent-env")
TOKEN = "t0ken-for-tests"


@pytest.fixture(scope="module")
def guarded_server(openenv_home: Path) -> Iterator[tuple[str, Any]]:
    from agent_env.openenv import build_app
    from agentenv_protocol.serving import serve_in_thread

    app = build_app(NOTES, token=TOKEN)
    server = serve_in_thread(app, startup_timeout=60)
    try:
        yield server.url, app
    finally:
        server.stop(timeout=60)


def test_without_the_token_nothing_is_served_and_nothing_starts(guarded_server) -> None:
    from openenv.core.generic_client import GenericEnvClient

    url, app = guarded_server
    assert httpx.get(f"{url}/health").status_code == 200  # liveness stays open
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}):
        for method, path in (
            ("POST", "/reset"),
            ("POST", "/step"),
            ("GET", "/state"),
            ("GET", "/list_environments"),
            ("POST", "/notes-agent/tasks"),
            ("GET", "/openapi.json"),
        ):
            r = httpx.request(method, url + path, headers=headers, json={})
            assert r.status_code == 401, (method, path, r.text)
            assert r.headers["www-authenticate"] == "Bearer"
            assert "headers={'Authorization': 'Bearer <token>'}" in r.json()["detail"]

    async def attack() -> None:
        with pytest.raises(ConnectionError, match="403"):
            async with GenericEnvClient(base_url=url) as env:
                await env.reset(split="all", index=0)

    anyio.run(attack)
    assert not app.state.agentenv_runtime.episodes  # no episode was ever started


def test_openenvs_client_with_the_token_plays_an_episode(guarded_server) -> None:
    from openenv.core.generic_client import GenericEnvClient

    url, _ = guarded_server

    async def play() -> dict[str, Any]:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        async with GenericEnvClient(base_url=url, headers=headers) as env:
            r = await env.reset(split="all", index=0)
            assert r.done is False and r.metadata["prompt"]
            return (await env.step({"type": "list_tools"})).observation

    tools = anyio.run(play)
    assert any(t["name"] == "end_turn" for t in tools["tools"])
    listed = httpx.get(
        f"{url}/list_environments", headers={"Authorization": f"Bearer {TOKEN}"}
    ).json()
    assert "notes-agent" in json.dumps(listed)


@pytest.mark.parametrize("token", ["", "has space", "tab\there", "new\nline"])
def test_a_token_that_cannot_be_sent_is_refused_before_anything_listens(
    token: str, openenv_home
) -> None:
    from agent_env.openenv import build_app

    with pytest.raises(ValueError, match="token"):
        build_app(NOTES, token=token)
    r = subprocess.run(
        [AGENT_ENV, "openenv", "serve", str(NOTES), "--port", "0", "--token", token],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2 and "--token" in r.stderr, r.stderr
