"""The tool-loop agent served over A2A, so it can run in a container like any other harness:
`python -m agentenv_protocol.agent.tool_loop_agent` (model endpoint from the agent-config's
`model_base_url`, else `LITELLM_BASE_URL` / `LITELLM_API_KEY`)."""

from __future__ import annotations

from agentenv_protocol.agent.chat import ChatClient, ChatError, endpoint_from_env
from agentenv_protocol.agent.loop import McpTools, ToolLoop
from agentenv_protocol.agent.server import A2AAgent, serve
from agentenv_protocol.agent.types import AgentRequest, AgentResult


class ToolLoopAgent(A2AAgent):
    name = "tool-loop"
    description = "An LLM tool loop over an OpenAI-compatible chat-completions endpoint."

    async def run(self, request: AgentRequest) -> AgentResult:
        config = request.config
        base_url, api_key = endpoint_from_env(config.model_base_url)
        try:
            chat = ChatClient(base_url, api_key)
        except ChatError as e:
            return AgentResult(text="", failure=(e.failure_class, str(e)))
        async with chat:
            loop = ToolLoop(
                chat, model=config.model, max_turns=config.max_turns, params=config.model_params
            )
            if not request.mcp_servers:
                return await loop.run(
                    request.text,
                    tools=None,
                    system_prompt=config.system_prompt,
                    history=request.history,
                )
            try:
                tools = McpTools(request.mcp_servers, timeout=config.tool_timeout_seconds)
                async with tools:
                    return await loop.run(
                        request.text,
                        tools=tools,
                        system_prompt=config.system_prompt,
                        history=request.history,
                    )
            except Exception as e:  # listing the tools failed: the env side is down
                from agentenv_protocol.errors import ProtocolError

                if isinstance(e, ProtocolError):
                    return AgentResult(
                        text="", failure=("env", f"the MCP server could not be used: {e}")
                    )
                raise


def main() -> None:
    serve(ToolLoopAgent())


if __name__ == "__main__":
    main()
