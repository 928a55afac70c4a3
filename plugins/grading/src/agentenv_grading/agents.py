"""Agent kinds of agentenv-grading: `do-nothing` (answers at once, calls no tool: the health
check's probe for a task that passes without work) and `replay` (plays a stored trial's
recorded tool calls, prompt by prompt, through the run's gateway: `runs replay`)."""

from __future__ import annotations

import time
from typing import Any, ClassVar

from agent_env.agents import AgentKind, AgentSpec, PromptRequest
from agent_env.context import StepContext
from agent_env.resources import InstanceKey

#: The recorded calls a replay plays: `{prompt_id: [{"tool", "arguments"}, ...]}`, handed to
#: the run as an instance resource (`RunRequest.resources`).
REPLAY_SCRIPT: InstanceKey[dict[str, list[dict[str, Any]]]] = InstanceKey("grading.replay")


class DoNothingAgent(AgentKind):
    """Answers every prompt with an empty text and touches nothing."""

    type: ClassVar[str] = "do-nothing"

    async def deploy(self, ctx: StepContext, spec: AgentSpec) -> dict[str, Any]:
        return {}

    async def prompt(self, ctx: StepContext, record: dict[str, Any], request: PromptRequest) -> Any:
        from agentenv_protocol.agent.types import AgentResult

        return AgentResult(text="", trajectory=({"type": "user", "content": request.text},))


class ReplayAgent(AgentKind):
    """Makes exactly the calls a stored trial's agent made for each prompt (errors included),
    in order, and answers with the recorded response."""

    type: ClassVar[str] = "replay"

    async def deploy(self, ctx: StepContext, spec: AgentSpec) -> dict[str, Any]:
        return {}

    async def prompt(self, ctx: StepContext, record: dict[str, Any], request: PromptRequest) -> Any:
        from agentenv_protocol.agent.types import AgentResult, McpServer, Usage

        script = ctx.instance_resource_if_started(REPLAY_SCRIPT) or {}
        prompt = script.get(request.prompt_id)
        if prompt is None:
            known = ", ".join(sorted(script)) or "none"
            return AgentResult(
                text="",
                failure=(
                    "agent",
                    f"the replayed trial recorded no prompt {request.prompt_id!r} (recorded: "
                    f"{known})",
                ),
            )
        calls = list(prompt.get("calls") or [])
        trajectory: list[dict[str, Any]] = [{"type": "user", "content": request.text}]
        if calls:
            if not request.mcp_url:
                return AgentResult(
                    text="", failure=("agent", "no env is deployed behind the gateway")
                )
            from agentenv_protocol.agent.loop import McpTools

            headers = {"authorization": f"Bearer {request.token}"} if request.token else {}
            async with McpTools(
                [McpServer(name="gateway", url=request.mcp_url, headers=headers)]
            ) as tools:
                for call in calls:
                    started = time.perf_counter()
                    text, is_error = await tools.call(
                        str(call.get("tool")), dict(call.get("arguments") or {})
                    )
                    trajectory.append(
                        {
                            "type": "tool",
                            "name": call.get("tool"),
                            "arguments": call.get("arguments") or {},
                            "result": text,
                            "is_error": is_error,
                            "seconds": round(time.perf_counter() - started, 4),
                        }
                    )
        response = str(prompt.get("response") or "")
        trajectory.append({"type": "model", "content": response})
        return AgentResult(
            text=response, trajectory=tuple(trajectory), usage=Usage(tool_call_count=len(calls))
        )
