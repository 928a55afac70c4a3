"""agent-env hooks of the ray-runner plugin: registers the `ray` runner and declares its
`[run.ray]` settings. Imports stay cheap: Ray loads only when a run uses the runner."""

from __future__ import annotations

from agent_env import hookimpl

#: The kernel plugin API versions this plugin works with.
AGENTENV_PLUGIN_API = ">=1.0,<2"

CONFIG_SECTIONS = {
    "run.ray": {"address": None, "actors": None, "num_cpus": None, "namespace": None},
}


@hookimpl
def agentenv_register_runners(registry):
    registry.add_lazy("ray", "agentenv_ray_runner.runner:RayRunner")
