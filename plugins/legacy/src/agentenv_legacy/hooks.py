"""agent-env hooks of the legacy plugin: bring in the plugins written for the existing
product's entry-point groups (its modules are imported only when such a plugin is installed)."""

from __future__ import annotations

from agent_env import hookimpl

#: The kernel plugin API versions this plugin works with.
AGENTENV_PLUGIN_API = ">=1.0,<2"

#: Groups of ours among the installed entry points; any other `agent_env.*` group is one of
#: the existing product's (`agentenv_legacy.groups.GROUPS`).
_OURS = frozenset({"agent_env", "agent_env.bundles"})


@hookimpl
def agentenv_discover_plugins(entry_points):
    if all(ep.group in _OURS for ep in entry_points):
        return None
    from agentenv_legacy.discover import legacy_plugins

    return legacy_plugins(entry_points)
