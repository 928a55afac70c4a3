"""agent-env's Ray runner: `agent-env run SPEC --runner ray [--address HOST:PORT]`."""

from agentenv_ray_runner.runner import RayRunner

__all__ = ["RayRunner"]
