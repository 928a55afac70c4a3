"""agent-env hooks of the openenv plugin: the `openenv` agent kind (the played agent of an
OpenEnv episode) and the `agent-env openenv` commands. Cheap: openenv itself (which imports
gradio, ~3 s) loads only when a server is built."""

from __future__ import annotations

from agent_env import hookimpl

#: The kernel plugin API versions this plugin works with.
AGENTENV_PLUGIN_API = ">=1.0,<2"


@hookimpl
def agentenv_register_agents(registry):
    registry.add_lazy("openenv", "agentenv_openenv.episode:OpenEnvAgent")


@hookimpl
def agentenv_register_commands(group):
    group.add_lazy_command(
        "openenv", "agentenv_openenv.cli:openenv", "Serve a bundle's tasks as OpenEnv environments."
    )
