"""Built-in plugin: registers the `local` sandbox provider through the ordinary hook."""

from agent_env import hookimpl


@hookimpl
def agentenv_register_sandbox_providers(registry):
    registry.add_lazy("local", "agent_env.sandboxes.local.provider:LocalProvider")
