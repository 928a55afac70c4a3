"""cli-agents plugin hooks: registers one agent kind per CLI coding agent and per alias of the
existing product (`claude-code`, `codex`, `gemini`, `opencode`, ...). Imports stay cheap."""

from agent_env import hookimpl

#: The kernel plugin API versions this plugin works with.
AGENTENV_PLUGIN_API = ">=1.0,<2"


@hookimpl
def agentenv_register_agents(registry):
    from agentenv_cli_agents.harnesses import HARNESSES, kind_class_name

    for harness in HARNESSES:
        for name in (harness.type, *harness.aliases):
            registry.add_lazy(name, f"agentenv_cli_agents.kind:{kind_class_name(name)}")


@hookimpl
def agentenv_register_cache_kinds(registry):
    from agentenv_cli_agents.cache_kind import CliAgentCache

    registry.add(CliAgentCache)
