"""agent-env hooks of agentenv-caches: the `cache` command (imported only when it runs)."""

from __future__ import annotations

from agent_env import hookimpl

#: The kernel plugin API versions this plugin works with.
AGENTENV_PLUGIN_API = ">=1.0,<2"


@hookimpl
def agentenv_register_commands(group):
    group.add_lazy_command(
        "cache", "agentenv_caches.cli:cache", "List and prune agent-env's caches."
    )
