"""agent-env's Ray runner: `agent-env run SPEC --runner ray [--address HOST:PORT]`
(`agentenv_ray_runner.runner.RayRunner`). Nothing is imported here: `agent-env --help`
loads the hooks module, which must stay cheap."""
