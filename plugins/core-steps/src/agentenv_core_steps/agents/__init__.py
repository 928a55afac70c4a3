"""Agent kinds (registered through `agentenv_register_agents`, keyed by `type`): `scripted` and
`oracle` (replay a solution), `tool-loop` (an LLM over an OpenAI-compatible endpoint, in this
process) and `a2a_agent` (an A2A server: a container from an agent folder's Dockerfile, a host
process from `agent.toml` `command`, or a running agent at `url`).

The interface they implement is the kernel's `agent_env.agents`; `folder` reads agent folders
from the stores; `images` and `relay` serve container agents (build context, reaching the gateway)."""

__all__ = ["agent_kinds"]


def agent_kinds() -> list[type]:
    """The built-in agent kinds (imported when the registry is built, not at plugin load)."""
    from agentenv_core_steps.agents.a2a import A2AAgentKind
    from agentenv_core_steps.agents.scripted import OracleAgent, ScriptedAgent
    from agentenv_core_steps.agents.tool_loop import ToolLoopAgentKind

    return [ScriptedAgent, OracleAgent, ToolLoopAgentKind, A2AAgentKind]
