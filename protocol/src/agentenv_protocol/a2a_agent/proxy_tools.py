"""What a proxy's turn can call: its env servers' tools, over one `ToolSession` per server for
the turn, and the proxy's own `bash`."""

from __future__ import annotations

import shutil
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import httpx

from agentenv_protocol.a2a_agent.proxy_turns import Refused, Turn
from agentenv_protocol.a2a_agent.proxy_types import ToolAction, ToolCallResult
from agentenv_protocol.agent.types import McpServer
from agentenv_protocol.tool_client import ToolSession, ToolSessionError

#: A ToolSession's own per-request limit; the proxy's deadlines are the ones that bite.
SESSION_REQUEST_TIMEOUT = 86_400.0
BASH_SCHEMA = {
    "type": "object",
    "properties": {"command": {"type": "string", "description": "The command."}},
    "required": ["command"],
}
_FAILURES = (ToolSessionError, httpx.HTTPError, OSError)


def shell() -> tuple[str, str]:
    """(path, name) of the shell commands run with: bash, else POSIX sh."""
    path = shutil.which("bash")
    if path:
        return path, "bash"
    return shutil.which("sh") or "/bin/sh", "sh"


def bash_tool() -> dict[str, Any]:
    """The proxy's own `bash` tool, saying so when the shell is POSIX sh."""
    if shell()[1] == "bash":
        description = (
            "Run a bash command where the agent works, as its user, in its folder; returns its "
            "stdout, then its stderr."
        )
    else:
        description = (
            "Run a command with POSIX sh: this place has no bash. It runs where the agent works, "
            "as its user, in its folder; returns its stdout, then its stderr."
        )
    return {"name": "bash", "description": description, "input_schema": BASH_SCHEMA}


Listed = Callable[[Turn, McpServer], Awaitable[list[Any]]]


async def list_tools(turn: Turn, listed: Listed, *, limit: float, with_bash: bool) -> list[dict]:
    """Each env server's tools, listed one server after another within one deadline for them
    all, then `bash`; `Refused` 502 for a server that didn't list in time or failed, 409 for a
    name two of them offer."""
    deadline = anyio.current_time() + limit
    owners: dict[str, str] = {}
    tools: list[dict[str, Any]] = []
    for server in turn.servers.values():
        with anyio.move_on_after(deadline - anyio.current_time()) as scope:
            try:
                found = await listed(turn, server)
            except _FAILURES as e:
                raise Refused(
                    502, f"env server {server.name!r} couldn't list its tools: {e}"
                ) from None
        if scope.cancelled_caught:
            raise Refused(502, f"env server {server.name!r} didn't list its tools within {limit}s")
        for tool in found:
            if tool.name in owners:
                raise Refused(
                    409,
                    f"tool {tool.name!r} is offered by both {owners[tool.name]!r} and {server.name!r}",
                )
            owners[tool.name] = server.name
            tools.append(
                {
                    "name": tool.name,
                    "description": tool.description or "",
                    "input_schema": tool.inputSchema or {"type": "object", "properties": {}},
                    "server": server.name,
                }
            )
    if with_bash:
        if "bash" in owners:
            raise Refused(
                409, f"tool 'bash' is offered by both {owners['bash']!r} and the proxy's own shell"
            )
        tools.append(bash_tool())
    return tools


async def session(turn: Turn, name: str) -> ToolSession:
    """The turn's one session with env server `name`, opened on first use."""
    async with turn.session_locks.setdefault(name, anyio.Lock()):
        opened = turn.sessions.get(name)
        if opened is None:
            server = turn.servers[name]
            opened = ToolSession(
                mcp_url=server.url, headers=dict(server.headers), timeout=SESSION_REQUEST_TIMEOUT
            )
            await opened.open()
            if turn.closed:
                await opened.close()
                raise Refused(404, f"turn {turn.task_id!r} is over")
            turn.sessions[name] = opened
        return opened


async def call_tool(turn: Turn, request: ToolAction, *, limit: float) -> ToolCallResult:
    """Call the tool over the turn's session; the deadline covers connecting, and every
    failure is an error result naming what happened."""
    try:
        with anyio.fail_after(limit):
            answer = await (await session(turn, request.server)).call_tool(
                request.name, request.arguments
            )
    except TimeoutError:
        return tool_error(f"the call to {request.name!r} timed out after {limit}s")
    except _FAILURES as e:
        return tool_error(f"the call to {request.name!r} failed: {e}")
    return ToolCallResult(content=answer.content, is_error=answer.is_error)


def tool_error(text: str) -> ToolCallResult:
    return ToolCallResult(content=[{"type": "text", "text": text}], is_error=True)
