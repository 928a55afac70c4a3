"""agent-env hooks of the plugin-lifecycle plugin: `agent-env plugin add|remove` (imported only
when they run)."""

from __future__ import annotations

from agent_env import hookimpl

#: The kernel plugin API versions this plugin works with.
AGENTENV_PLUGIN_API = ">=1.0,<2"


@hookimpl
def agentenv_register_subcommands(parent, group):
    if parent != "plugin":
        return
    group.add_lazy_command(
        "add",
        "agentenv_plugin_lifecycle.commands:add_plugins",
        "Install plugins; verify every plugin loads, else roll back.",
    )
    group.add_lazy_command(
        "remove",
        "agentenv_plugin_lifecycle.commands:remove_plugins",
        "Uninstall plugins and the dependencies only they needed.",
    )
