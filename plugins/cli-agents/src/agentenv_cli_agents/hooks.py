"""cli-agents plugin hooks: registers one agent kind per CLI coding agent and per alias of the
existing product (`claude-code`, `codex`, `gemini`, `opencode`, `pi`; `openhands` says what
it is missing). Imports stay cheap."""

from agent_env import hookimpl

#: The kernel plugin API versions this plugin works with.
AGENTENV_PLUGIN_API = ">=1.0,<2"


@hookimpl
def agentenv_register_agents(registry):
    from agentenv_cli_agents.kind import cli_agent_kinds
    from agentenv_cli_agents.unavailable import unavailable_kinds

    for cls in [*cli_agent_kinds(), *unavailable_kinds()]:
        registry.add(cls)
