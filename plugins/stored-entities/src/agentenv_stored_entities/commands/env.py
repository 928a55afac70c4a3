"""`agent-env env ...`: stored environments (list, show/get, put, validate), and `deploy` /
`get-instance` (`env_deploy`)."""

from __future__ import annotations

from agent_env.cli.toolkit import LazyGroup
from agentenv_stored_entities.commands.group import make_group

env = make_group(
    "env", "Stored environments: list, show, put, validate, deploy and check them.", cls=LazyGroup
)
env.add_lazy_command(
    "deploy",
    "agentenv_stored_entities.commands.env_deploy:deploy",
    "Deploy a stored env until Ctrl-C.",
)
env.add_lazy_command(
    "get-instance",
    "agentenv_stored_entities.commands.env_deploy:get_instance",
    "Print the envs a task instance deployed.",
)
env.add_lazy_command(
    "mcp-server",
    "agentenv_stored_entities.commands.dockerfile_put:mcp_server",
    "MCP server envs by id.",
)
# `env check PATH` starts an env folder and probes its card, schemas and data plane.
env.add_lazy_command(
    "check",
    "agentenv_stored_entities.commands.env_check:env_check",
    "Start an env folder and validate its card, tools and data plane.",
)
