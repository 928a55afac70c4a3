"""agent-env hooks of the scaffold plugin: `agent-env init` and `agent-env plugin new`
(imported only when they run)."""

from __future__ import annotations

from agent_env import hookimpl

#: The kernel plugin API versions this plugin works with.
AGENTENV_PLUGIN_API = ">=1.0,<2"


@hookimpl
def agentenv_register_commands(group):
    group.add_lazy_command(
        "init", "agentenv_scaffold.commands:init", "Write a new bundle, env or task that works."
    )


@hookimpl
def agentenv_register_subcommands(parent, group):
    if parent == "plugin":
        group.add_lazy_command(
            "new",
            "agentenv_scaffold.commands:new_plugin",
            "Create a plugin package (hooks, an example step type, tests).",
        )
