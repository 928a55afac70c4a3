"""`tool-loop`: the LLM tool loop in this process, against the run's gateway with the agent's
role-bound token. The endpoint: `deploy_agent.litellm_base_url`, else the agent folder's
`base_url`, else `[model] base_url` (or `LITELLM_BASE_URL`); the key from `[model] api_key`
(or `LITELLM_API_KEY`). The conversation is kept in the agent's record for the next prompt.
"""

from __future__ import annotations

from typing import Any, ClassVar

import attrs

from agent_env.agents import AgentConfig, AgentKind, AgentSpec, PromptRequest
from agent_env.context import StepContext

DEFAULT_MAX_TURNS = 30


async def model_endpoint(ctx: StepContext, base_url: str | None) -> tuple[str | None, str | None]:
    """(base_url, api_key): the explicit URL or `[model]` (refs resolved), else LITELLM_*."""
    from agentenv_protocol.agent.chat import endpoint_from_env

    config = getattr(ctx, "config", None)
    table = (
        await config.resolved_table("model", getattr(ctx.stores, "secrets", None)) if config else {}
    )
    key = table.get("api_key")
    if key:
        add = getattr(ctx, "add_secret", None)
        if add is not None:
            add(str(key))
    return endpoint_from_env(base_url or table.get("base_url"), key)


@attrs.frozen(kw_only=True)
class ToolLoopConfig(AgentConfig):
    """`agent.toml` of a tool-loop agent (also the base of `a2a_agent`'s, which serves it)."""

    base_url: str | None = None
    model_params: dict[str, Any] = attrs.field(factory=dict)
    max_turns: int | None = None
    tool_timeout_seconds: float | None = None


class ToolLoopAgentKind(AgentKind):
    type: ClassVar[str] = "tool-loop"
    config_model = ToolLoopConfig

    async def deploy(self, ctx: StepContext, spec: AgentSpec) -> dict[str, Any]:
        from agent_env.errors import StepFailed
        from agentenv_protocol.agent.chat import ChatError, require_endpoint

        base_url, _ = await model_endpoint(
            ctx, spec.model_base_url or spec.settings.get("base_url")
        )
        try:
            require_endpoint(base_url)
        except ChatError as e:
            raise StepFailed(ctx.step_id, str(e), failure_class=e.failure_class) from None
        return {
            "model_base_url": spec.model_base_url or spec.settings.get("base_url"),
            "max_turns": int(spec.settings.get("max_turns") or DEFAULT_MAX_TURNS),
            "model_params": dict(spec.settings.get("model_params") or {}),
            "tool_timeout_seconds": float(spec.settings.get("tool_timeout_seconds") or 120),
            "messages": [],
        }

    async def prompt(self, ctx: StepContext, record: dict[str, Any], request: PromptRequest) -> Any:
        from agentenv_core_steps.agents.scripted import transport_class
        from agentenv_protocol.agent.chat import ChatClient, ChatError
        from agentenv_protocol.agent.loop import McpTools, ToolLoop
        from agentenv_protocol.agent.types import AgentResult, McpServer
        from agentenv_protocol.errors import ProtocolError

        base_url, api_key = await model_endpoint(ctx, record.get("model_base_url"))
        try:
            chat = ChatClient(base_url, api_key, timeout=request.timeout_seconds)
        except ChatError as e:
            return AgentResult(text="", failure=(e.failure_class, str(e)))
        params = {**(record.get("model_params") or {}), **request.model_params}
        loop = ToolLoop(
            chat,
            model=request.model or record.get("model"),
            max_turns=request.max_turns or int(record.get("max_turns") or DEFAULT_MAX_TURNS),
            params=params,
        )
        system = request.system_prompt or record.get("system_prompt")
        history = list(record.get("messages") or [])
        async with chat:
            if not request.mcp_url:
                return await loop.run(
                    request.text, tools=None, system_prompt=system, history=history
                )
            headers = {"authorization": f"Bearer {request.token}"} if request.token else {}
            try:
                async with McpTools(
                    [McpServer(name="gateway", url=request.mcp_url, headers=headers)],
                    timeout=float(record.get("tool_timeout_seconds") or 120),
                ) as tools:
                    return await loop.run(
                        request.text, tools=tools, system_prompt=system, history=history
                    )
            except ProtocolError as e:
                return AgentResult(
                    text="",
                    failure=(transport_class(e), f"the gateway's tools could not be listed: {e}"),
                )

    def record_updates(
        self, record: dict[str, Any], request: PromptRequest, result: Any
    ) -> dict[str, Any]:
        return {"messages": list(result.messages)} if result.messages else {}
