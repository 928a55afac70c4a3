"""Running one of a turn's actions: a command in the proxy's folder or a call to an env tool,
its span in the turn's trajectory, and the state `act` and `result` answer with."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import attrs

from agentenv_protocol.a2a_agent import proxy_record as rec
from agentenv_protocol.a2a_agent import proxy_tools as tools
from agentenv_protocol.a2a_agent.proxy_shell import CANNOT_START, Command
from agentenv_protocol.a2a_agent.proxy_turns import Action, Refused
from agentenv_protocol.a2a_agent.proxy_types import (
    BashAction,
    BashResult,
    ProxyActionState,
    ToolAction,
    ToolCallResult,
    result_failed,
)
from agentenv_protocol.agent.types import Usage


@attrs.frozen(kw_only=True)
class Limits:
    """What an action runs with: default deadlines, the output grace period, the folder, and
    where background readers are started (a task group outliving the action)."""

    tool_timeout: float
    bash_timeout: float
    grace: float
    folder: Path
    spawn: Callable[..., Any]


async def perform(action: Action, limits: Limits) -> None:
    """Run `action` to its end (or until it is stopped), then record its result and span."""
    try:
        with anyio.CancelScope() as action.scope:
            if action.stopped:
                return
            result = await _carry_out(action, limits)
        if action.stopped:
            return
        action.result = result
        turn, request = action.turn, action.request
        turn.usage += Usage(tool_call_count=1)
        name = "bash" if isinstance(request, BashAction) else request.name
        arguments = (
            {"command": request.command} if isinstance(request, BashAction) else request.arguments
        )
        turn.spans.append(
            rec.span(
                name,
                "execute_tool",
                trace_id=turn.trace_id,
                parent=turn.span_id,
                started=action.started,
                ok=not result_failed(result),
                attributes={
                    "gen_ai.tool.name": name,
                    "gen_ai.prompt": rec.as_json({"input": arguments}),
                    "gen_ai.completion": rec.as_json(
                        result.model_dump(mode="json", exclude_none=True)
                    ),
                },
            )
        )
    finally:
        action.done.set()


async def _carry_out(action: Action, limits: Limits) -> BashResult | ToolCallResult:
    """The action's result; a failure of the proxy's own fails the action, never the app."""
    request: BashAction | ToolAction = action.request
    try:
        if isinstance(request, BashAction):
            path, name = tools.shell()
            action.command = Command([path, "-c", request.command, name], limits.folder)
            return await action.command.run(
                timeout=request.timeout_seconds or limits.bash_timeout,
                grace=limits.grace,
                spawn=limits.spawn,
            )
        limit = request.timeout_seconds or limits.tool_timeout
        return await tools.call_tool(action.turn, request, limit=limit)
    except Exception as e:
        reason = f"the proxy failed to run it: {type(e).__name__}: {e}"
        if isinstance(request, BashAction):
            return BashResult(
                exit_code=CANNOT_START, stdout="", stderr=reason + "\n", timed_out=False
            )
        return tools.tool_error(reason)


async def state(action: Action, long_poll: float) -> dict[str, Any]:
    """The action's state once it is done, or `{"done": false}` after `long_poll` seconds;
    `Refused` 404 when its turn closed and stopped it."""
    with anyio.move_on_after(long_poll):
        await action.done.wait()
    if action.stopped:
        raise Refused(404, f"action {action.action_id!r} was stopped: its turn is over")
    if action.result is None:
        return ProxyActionState(done=False).to_wire()
    return ProxyActionState(done=True, result=action.result).to_wire()
