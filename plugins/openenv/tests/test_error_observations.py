"""Every failure comes back to openenv's own client as an observation with a non-empty reason,
never as an exception the client raises (issue 31): an env that fails at start, an env that
does not list its tools, a tool that raises, a step after the episode ended, and an instance
that misses the server's reply timeout."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

ROOT = Path(__file__).resolve().parents[3]
NOTES = ROOT / "examples" / "notes-agent"
# An env that serves its card but drops every MCP request: the gateway cannot list its tools.
NO_TOOLS_SERVER = """
import http.server, json, os

CARD = {"name": "notes", "version": "1", "capabilities": {}, "additionalInterfaces": []}


class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps(CARD).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        self.close_connection = True  # no answer at all

    def log_message(self, *a):
        pass


http.server.ThreadingHTTPServer(
    (os.environ["MCP_HOST"], int(os.environ["MCP_PORT"])), H
).serve_forever()
"""


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


async def torn_down(app: Any, timeout: float = 90.0) -> None:
    runtime = app.state.agentenv_runtime
    with anyio.fail_after(timeout):
        while runtime.episodes or runtime.host.session.sandboxes.live:
            await anyio.sleep(0.1)


def failed(r: Any) -> str:
    """The reason of an error observation (asserting it is one, with a non-empty reason)."""
    assert r.done is True and r.reward is None, r
    assert r.metadata["status"] == "error", r.metadata
    reason = r.metadata["error"]
    assert isinstance(reason, str) and reason.strip(), r.metadata
    return reason


@pytest.mark.timeout(300)
def test_an_env_that_fails_at_start_and_a_step_after_the_end(tmp_path, openenv_home) -> None:
    from openenv.core.generic_client import GenericEnvClient

    folder = notes_variant(
        tmp_path,
        "notes-broken",
        lambda text: "raise SystemExit('the notes store refuses to start')\n" + text,
    )
    app, server = serve(folder)
    with server:

        async def main() -> None:
            async with GenericEnvClient(base_url=server.url) as env:
                r = await env.reset()
                reason = failed(r)
                assert "env 'notes' did not come up" in reason, reason
                assert "the notes store refuses to start" in reason, reason
                assert r.metadata["task"]["name"] == "groceries"
                r = await env.step(call("list_notes"))
                assert failed(r) == "the episode has ended; call reset"
            await torn_down(app)

        anyio.run(main)


@pytest.mark.timeout(300)
def test_an_env_that_does_not_list_its_tools_says_what_happened(tmp_path, openenv_home) -> None:
    from openenv.core.generic_client import GenericEnvClient

    folder = notes_variant(tmp_path, "notes-mute", lambda _: NO_TOOLS_SERVER)
    app, server = serve(folder)
    with server:

        async def main() -> None:
            async with GenericEnvClient(base_url=server.url) as env:
                reason = failed(await env.reset())
                assert "environment 'notes' did not list its tools at http://127.0.0.1:" in reason
                # the reason after the URL says what happened, never an empty tail
                tail = reason.split("/mcp: ", 1)[1]
                assert tail.startswith("RemoteProtocolError: the server broke off"), reason
            await torn_down(app)

        anyio.run(main)


@pytest.mark.timeout(300)
def test_a_tool_that_raises_is_an_error_observation_and_the_episode_goes_on(
    tmp_path, openenv_home
) -> None:
    from openenv.core.generic_client import GenericEnvClient

    def add_tool(text: str) -> str:
        tool = (
            "    @tool()\n"
            "    def spill_ink(self) -> str:\n"
            '        """Always fails."""\n'
            "        raise RuntimeError('the ink ran out')\n\n"
            "    @reset_data\n"
        )
        return text.replace("    @reset_data\n", tool, 1)

    app, server = serve(notes_variant(tmp_path, "notes-ink", add_tool))
    with server:

        async def main() -> None:
            async with GenericEnvClient(base_url=server.url) as env:
                r = await env.reset()
                assert r.done is False, r.metadata
                r = await env.step(call("spill_ink"))
                error = r.observation["error"]
                assert error["error_type"] == "execution_error", r.observation
                assert error["message"].strip(), r.observation
                assert r.done is False
                r = await env.step(call("list_notes"))  # the env still serves
                assert r.observation["error"] is None, r.observation
                r = await env.step(call("end_turn", response="no"))
                assert r.done is True and r.metadata["status"] != "error", r.metadata
                r = await env.step(call("spill_ink"))
                assert failed(r) == "the episode has ended; call reset"
            await torn_down(app)

        anyio.run(main)


@pytest.mark.timeout(300)
def test_an_instance_that_misses_the_reply_timeout_answers_in_time(tmp_path, openenv_home) -> None:
    from openenv.core.generic_client import GenericEnvClient

    folder = notes_variant(
        tmp_path, "notes-slow", lambda text: "import time; time.sleep(60)\n" + text
    )
    app, server = serve(folder, reply_timeout=2)
    with server:

        async def main() -> None:
            # the client would raise after 20 s of silence: the server answers first
            async with GenericEnvClient(base_url=server.url, message_timeout_s=20) as env:
                started = time.perf_counter()
                r = await env.reset()
                took = time.perf_counter() - started
                reason = failed(r)
                assert reason == (
                    "the task instance did not reach its first prompt within 2s (the server's "
                    "reply timeout); it was abandoned"
                )
                assert took < 15, took
                r = await env.step(call("list_notes"))
                assert failed(r) == "the episode has ended; call reset"
            # abandoned in the background: its sandbox is torn down, the slow env with it
            await torn_down(app)

        anyio.run(main)
    with pytest.raises(ValueError, match="reply_timeout= is a positive number"):
        serve(folder, reply_timeout=0)
