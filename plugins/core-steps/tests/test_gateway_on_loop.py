"""A run gateway served on the caller's event loop (`RunGateway.on_this_loop`, what a warm
pool's instances use) and its in-process client: the same answers, auth and call log as its
HTTP face, which keeps serving everyone else; bad tokens are refused and change nothing."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from agentenv_protocol import AgentEnvEnvironment, environment_card, tool


@environment_card(name="echo")
class Echo(AgentEnvEnvironment):
    @tool()
    def echo_message(self, message: str) -> str:
        """Echo the message back."""
        return message


@pytest.fixture(scope="module")
def env_url() -> Any:
    from agentenv_protocol.serving import serve_in_thread

    with serve_in_thread(Echo().create_app()) as server:
        yield server.url


async def _gateway(env_url: str) -> Any:
    from agentenv_core_steps.gateway import RunGateway

    gateway = await RunGateway.on_this_loop("warm-test-0")
    await gateway.add_env("echo", env_url)
    return gateway


def test_in_process_calls_answer_as_http_does_and_are_logged_once(env_url: str) -> None:
    from agentenv_protocol.client import EnvClient

    async def main() -> tuple[Any, Any, list[dict], bool]:
        gateway = await _gateway(env_url)
        try:
            token = gateway.issue_token("agent")
            client = gateway.in_process_client(token, gateway.mcp_url)
            assert client is not None
            (listed,) = await client.list_tools()
            inner = await client.call_tool("echo_message", {"message": "hi"})
            async with EnvClient(gateway.url, token=token, mcp_path="/mcp") as http:
                outer = await http.call_tool("echo_message", {"message": "hi"})
            unknown = await client.call_tool("echo_mesage", {"message": "hi"})
            return listed, (inner, outer, unknown), gateway.calls(), gateway.loop is not None
        finally:
            await gateway.aclose()

    listed, (inner, outer, unknown), calls, on_loop = anyio.run(main)
    assert on_loop and listed.name == "echo_message"
    assert inner == outer and inner.text == "hi" and not inner.is_error
    assert unknown.is_error and "did you mean 'echo_message'" in unknown.text
    assert [(c["role"], c["tool"]) for c in calls] == [
        ("agent", "echo_message"),
        ("agent", "echo_message"),
        ("agent", "echo_mesage"),
    ]


def test_a_revoked_or_wrong_token_is_refused_in_process_and_logs_nothing(env_url: str) -> None:
    from agentenv_protocol.errors import ProtocolError

    async def main() -> tuple[list[str], list[dict], Any]:
        gateway = await _gateway(env_url)
        try:
            token = gateway.issue_token("agent")
            client = gateway.in_process_client(token, gateway.mcp_url)
            assert client is not None
            assert await gateway.mark_initial() == ["echo"]  # as a pool does: no data/reset
            await gateway.recycle()  # the episode ended: its token is revoked
            refused = []
            for attempt in (client, gateway.in_process_client("forged", gateway.mcp_url)):
                assert attempt is not None
                with pytest.raises(ProtocolError) as caught:
                    await attempt.call_tool("echo_message", {"message": "hi"})
                refused.append(str(caught.value))
            # another gateway's URL, or no token: not this gateway's in-process caller
            other = gateway.in_process_client(token, "http://127.0.0.1:1/mcp")
            assert other is None and gateway.in_process_client("", gateway.mcp_url) is None
            return refused, gateway.calls(), gateway.gateway.trajectory.secrets
        finally:
            await gateway.aclose()

    refused, calls, secrets = anyio.run(main)
    assert all("401" in r and "invalid bearer token" in r for r in refused), refused
    assert calls == []
    assert len(secrets) == 1  # the admin token only: the revoked one was forgotten


def test_a_loop_gateway_stops_from_another_thread_and_frees_its_port(env_url: str) -> None:
    """`stop()` (what a sync caller in a worker thread uses) hands the shutdown to the loop;
    called on the gateway's own loop it says to use `aclose` instead of blocking forever."""
    import httpx

    async def main() -> str:
        gateway = await _gateway(env_url)
        with pytest.raises(RuntimeError, match="aclose"):
            gateway.stop()  # on its own loop: refused, never a deadlock
        await anyio.to_thread.run_sync(gateway.stop)
        return gateway.url

    url = anyio.run(main)
    with pytest.raises(httpx.ConnectError):
        httpx.get(url + "/clock/time", timeout=2)
