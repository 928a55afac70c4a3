"""Agent kinds (registered through `agentenv_register_agents`, keyed by `type`): `scripted` and
`oracle` (replay a solution), `tool-loop` (an LLM over an OpenAI-compatible endpoint, in this
process) and `a2a_agent` (an A2A server: a container from an agent folder's Dockerfile, a host
process from `agent.toml` `command`, or a running agent at `url`).

`base` holds the interface the deploy/prompt steps call; `gateway` finds the run's gateway."""

from agentenv_core_steps.agents.base import AgentKind, AgentSpec, PromptRequest

__all__ = ["AGENT_KINDS", "AgentKind", "AgentSpec", "PromptRequest"]


def agent_kinds() -> list[type]:
    from agentenv_core_steps.agents.a2a import A2AAgentKind
    from agentenv_core_steps.agents.scripted import OracleAgent, ScriptedAgent
    from agentenv_core_steps.agents.tool_loop import ToolLoopAgentKind

    return [ScriptedAgent, OracleAgent, ToolLoopAgentKind, A2AAgentKind]


def __getattr__(name: str):
    if name == "AGENT_KINDS":
        return agent_kinds()
    raise AttributeError(name)
