"""Built-in plugin module of the engine: registers `LocalRunner` like any runner plugin."""

from agent_env import hookimpl


@hookimpl
def agentenv_register_runners(registry):
    registry.add_lazy("local", "agent_env.engine.runner:LocalRunner")
