"""Per-deployment scopes: a token issued for some envs sees and calls only their tools, through
the official `mcp` client, on the card as well; an unscoped token and the admin token see all."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import anyio
import httpx
import pytest

from agentenv_protocol.gateway import CAPABILITY_PREFIX, Gateway, TokenInPath
from agentenv_protocol.serving import serve_in_thread

_spec = importlib.util.spec_from_file_location(
    "_scopes_probe", Path(__file__).with_name("mcp_probe.py")
)
_module = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_module)
probe = _module.probe


@pytest.fixture(scope="module")
def two_envs_gateway(shared_envs):
    gateway = Gateway({"probe": shared_envs["echo"].url, "vault": shared_envs["notes"].url})
    server = serve_in_thread(TokenInPath(gateway))
    anyio.run(_seed, shared_envs["notes"].url)
    yield gateway, server.url
    server.stop()


async def _seed(notes_url: str) -> None:
    from agentenv_protocol import EnvClient

    async with EnvClient(notes_url) as client:
        await client.call_tool("add_note", {"title": "pin", "body": "the vault's contents"})


def _mcp(url: str, token: str) -> str:
    return f"{url}{CAPABILITY_PREFIX}{token}/mcp"


def test_a_scoped_token_reaches_only_the_envs_it_names(two_envs_gateway):
    gateway, url = two_envs_gateway
    token = gateway.issue_token("agent", envs=["probe"])
    seen = anyio.run(
        probe, _mcp(url, token), [["echo", {"text": "hi"}], ["read_note", {"title": "pin"}]]
    )
    names = {t["name"] for t in seen["tools"]}
    assert "echo" in names and not names & {"read_note", "add_note", "list_notes"}
    echoed, refused = seen["calls"]
    assert echoed["isError"] is False and echoed["content"][0]["text"] == "hi"
    assert refused["isError"] is True
    assert "unknown tool 'read_note'" in refused["content"][0]["text"]
    assert "vault's contents" not in str(seen)
    card = httpx.get(f"{url}{CAPABILITY_PREFIX}{token}/.well-known/agent-env.json").json()
    assert [c["name"] for c in card["children_environments"]] == ["echo"]
    assert not {t["name"] for t in card["capabilities"]["tools"]} & {"read_note"}
    # the trajectory records the refused call against no env
    refused_entry = [e for e in gateway.trajectory.records if e["tool"] == "read_note"][-1]
    assert refused_entry["env"] is None and refused_entry["error"]


def test_unscoped_and_admin_tokens_reach_every_env(two_envs_gateway):
    gateway, url = two_envs_gateway
    for token in (gateway.issue_token("agent"), gateway.admin_token):
        seen = anyio.run(probe, _mcp(url, token), [["read_note", {"title": "pin"}]])
        assert {"echo", "read_note"} <= {t["name"] for t in seen["tools"]}
        assert "vault's contents" in str(seen["calls"][0])


def test_a_scoped_token_cannot_use_the_data_plane_or_env_routes(two_envs_gateway):
    gateway, url = two_envs_gateway
    token = gateway.issue_token("agent", envs=["probe"])
    for path in ("/svc/vault/agentenv", "/agentenv"):
        response = httpx.post(
            f"{url}{CAPABILITY_PREFIX}{token}{path}",
            json={"jsonrpc": "2.0", "id": 1, "method": "data/get"},
        )
        assert response.status_code == 403
