"""`agent-env env ...`: stored environments (list, show/get, put, validate) and `env check`."""

from __future__ import annotations

from agent_env.cli.commands.entity_group import make_group
from agent_env.cli.lazy import LazyGroup

env = make_group("env", "Stored environments: list, show, put and validate them.", cls=LazyGroup)
env.add_lazy_command(
    "check", "agent_env.cli.commands.env_check:check", "Check an env folder: start it and probe it."
)
