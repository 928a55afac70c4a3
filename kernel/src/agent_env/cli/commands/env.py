"""`agent-env env ...`: stored environments (list, show/get, put, validate), and `deploy` /
`get-instance` (`env_deploy`)."""

from __future__ import annotations

from agent_env.cli.commands.entity_group import make_group
from agent_env.cli.lazy import LazyGroup

env = make_group(
    "env", "Stored environments: list, show, put, validate, deploy and check them.", cls=LazyGroup
)
env.add_lazy_command(
    "deploy", "agent_env.cli.commands.env_deploy:deploy", "Deploy a stored env until Ctrl-C."
)
env.add_lazy_command(
    "get-instance",
    "agent_env.cli.commands.env_deploy:get_instance",
    "Print the envs a task instance deployed.",
)
env.add_lazy_command(
    "mcp-server", "agent_env.cli.commands.dockerfile_put:mcp_server", "MCP server envs by id."
)
# `env check PATH` starts an env folder and probes its card, schemas and data plane.
env.add_lazy_command(
    "check",
    "agent_env.cli.commands.env_check:env_check",
    "Start an env folder and validate its card, tools and data plane.",
)
