"""cli-agents plugin hooks: registers one agent kind per CLI coding agent and per alias of the
existing product (`claude-code`, `codex`, `gemini`, `opencode`, `pi`; `openhands` says what
it is missing). Imports stay cheap."""

from agent_env import hookimpl

#: The kernel plugin API versions this plugin works with.
AGENTENV_PLUGIN_API = ">=1.0,<2"


@hookimpl
def agentenv_register_agents(registry):
    from agentenv_cli_agents.names import (
        KIND_NAMES,
        MISSING,
        kind_class_name,
        unavailable_class_name,
    )

    for name, aliases in KIND_NAMES.items():
        for kind in (name, *aliases):
            registry.add_lazy(kind, f"agentenv_cli_agents.kind:{kind_class_name(kind)}")
    for name in MISSING:
        registry.add_lazy(name, f"agentenv_cli_agents.unavailable:{unavailable_class_name(name)}")


@hookimpl
def agentenv_register_cache_kinds(registry):
    from agentenv_cli_agents.cache_kind import CliAgentCache

    registry.add(CliAgentCache)
