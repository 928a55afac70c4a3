"""`scripted` and `oracle`: replay a solution's tool calls through the run's gateway (with the
agent's own role-bound token, so the calls are logged like any agent's) and answer with its
final text. The oracle proves a task is solvable.

A solution is `{"turns": [{"tool_calls": [{"tool": NAME, "arguments": {...}}], "response":
TEXT}, ...]}` (or just the list of turns); each prompt plays the next turn. It comes from the
`deploy_agent` step's `metadata.solution` (inline, or an artifact ref to a JSON file), or from
an agent folder's `agent.toml` `script = "<file in the folder>"`.
"""

from __future__ import annotations

import builtins
import json
import time
from typing import Any, ClassVar

import attrs

from agent_env.agents import AgentConfig, AgentKind, AgentSpec, PromptRequest
from agent_env.context import StepContext
from agent_env.errors import StepFailed
from agent_env.suggest import did_you_mean


def parse_solution(raw: Any, where: str) -> list[dict[str, Any]]:
    """The list of turns; ValueError naming `where` and the bad part."""
    turns = raw.get("turns") if isinstance(raw, dict) else raw
    if not isinstance(turns, list) or not turns:
        raise ValueError(
            f"{where}: a solution is a non-empty list of turns (or {{'turns': [...]}})"
        )
    for i, turn in enumerate(turns):
        if not isinstance(turn, dict):
            raise ValueError(f"{where}: turns[{i}] must be an object")
        unknown = sorted(set(turn) - {"tool_calls", "response", "prompt_id"})
        if unknown:
            raise ValueError(
                f"{where}: turns[{i}]: unknown key {unknown[0]!r} (known: tool_calls, response, prompt_id)"
            )
        for j, call in enumerate(turn.get("tool_calls") or []):
            name = call.get("tool", call.get("name")) if isinstance(call, dict) else None
            if not isinstance(name, str) or not name:
                raise ValueError(
                    f"{where}: turns[{i}].tool_calls[{j}]: 'tool' (a tool name) is required"
                )
            if not isinstance(call.get("arguments", {}), dict):
                raise ValueError(
                    f"{where}: turns[{i}].tool_calls[{j}]: 'arguments' must be an object"
                )
    return turns


def transport_class(error: Exception) -> str:
    """The failure class of an in-process agent's failed exchange with the run's gateway
    (`faults.gateway_failure_class`; an answer that is not MCP is the env's side: `env`).
    What an env's tool did is told apart by the gateway's call log (`prompt_agent`)."""
    from agentenv_core_steps.faults import gateway_failure_class

    return gateway_failure_class(error) or "env"


@attrs.frozen(kw_only=True)
class ScriptedConfig(AgentConfig):
    """`agent.toml` of a scripted agent folder: `script` names a JSON solution file inside it."""

    script: str | None = None


class ScriptedAgent(AgentKind):
    type: ClassVar[str] = "scripted"
    needs_solution: ClassVar[bool] = True
    config_model: ClassVar[builtins.type | None] = ScriptedConfig

    @classmethod
    def problems(cls, config: dict[str, Any], files: list[str]) -> list[str]:
        """`script` must name a file of the agent folder (never one outside it)."""
        script = config.get("script")
        if not isinstance(script, str):
            return []
        if script.startswith("/") or ".." in script.split("/"):
            return [f"agent.toml: script: {script!r} leads outside the agent folder"]
        if script not in files:
            return [
                f"agent.toml: script: no file {script!r} in the agent folder"
                f"{did_you_mean(script, files)}"
            ]
        return []

    async def deploy(self, ctx: StepContext, spec: AgentSpec) -> dict[str, Any]:
        script = spec.solution
        if script is None and spec.folder is not None and spec.settings.get("script"):
            path = spec.folder / str(spec.settings["script"])
            if not path.resolve().is_relative_to(spec.folder.resolve()):
                raise StepFailed(
                    ctx.step_id, f"agent {spec.name!r}: script leads outside the agent folder"
                )
            try:
                script = json.loads(path.read_text())
            except (OSError, ValueError) as e:
                raise StepFailed(
                    ctx.step_id, f"agent {spec.name!r}: cannot read script {path.name}: {e}"
                ) from None
        if script is None:
            raise StepFailed(
                ctx.step_id,
                f"the {self.type} agent needs a solution: this task ships none "
                "(set deploy_agent metadata.solution, inline or an artifact ref)",
            )
        try:
            turns = parse_solution(script, f"agent {spec.name!r} solution")
        except ValueError as e:
            raise StepFailed(ctx.step_id, str(e)) from None
        return {"turns": turns, "position": 0}

    async def prompt(self, ctx: StepContext, record: dict[str, Any], request: PromptRequest) -> Any:
        from agentenv_protocol.agent.types import AgentResult, McpServer, Usage

        turns, position = record.get("turns") or [], int(record.get("position") or 0)
        if position >= len(turns):
            return AgentResult(
                text="",
                failure=(
                    "agent",
                    f"the solution has {len(turns)} turn(s); "
                    f"prompt {request.prompt_id!r} asks for one more",
                ),
            )
        turn = turns[position]
        calls = turn.get("tool_calls") or []
        trajectory: list[dict[str, Any]] = [{"type": "user", "content": request.text}]
        if calls and not request.mcp_url:
            return AgentResult(
                text="",
                failure=(
                    "agent",
                    "the solution calls tools but no env is deployed behind the gateway",
                ),
            )
        if calls and request.mcp_url:  # tool calls without a gateway returned above
            from agentenv_protocol.agent.loop import McpTools
            from agentenv_protocol.errors import ProtocolError

            headers = {"authorization": f"Bearer {request.token}"} if request.token else {}
            try:
                async with McpTools(
                    [McpServer(name="gateway", url=request.mcp_url, headers=headers)]
                ) as tools:
                    for call in calls:
                        name = call.get("tool", call.get("name"))
                        started = time.perf_counter()
                        text, is_error = await tools.call(name, dict(call.get("arguments") or {}))
                        trajectory.append(
                            {
                                "type": "tool",
                                "name": name,
                                "arguments": call.get("arguments") or {},
                                "result": text,
                                "is_error": is_error,
                                "seconds": round(time.perf_counter() - started, 4),
                            }
                        )
                        if is_error and not call.get("allow_error"):
                            return AgentResult(
                                text="",
                                trajectory=tuple(trajectory),
                                failure=(
                                    "agent",
                                    f"solution tool call {name!r} failed: {text[:300]}",
                                ),
                            )
            except ProtocolError as e:
                return AgentResult(
                    text="",
                    trajectory=tuple(trajectory),
                    failure=(transport_class(e), f"the gateway failed during the solution: {e}"),
                )
        response = str(turn.get("response") or "")
        trajectory.append({"type": "model", "content": response})
        return AgentResult(
            text=response, trajectory=tuple(trajectory), usage=Usage(tool_call_count=len(calls))
        )

    def record_updates(
        self, record: dict[str, Any], request: PromptRequest, result: Any
    ) -> dict[str, Any]:
        return {"position": int(record.get("position") or 0) + 1}


class OracleAgent(ScriptedAgent):
    """The scripted agent under the name `agent-env run --agent oracle` uses."""

    type: ClassVar[str] = "oracle"
