"""`agent-env env ...`: stored environments (list, show/get, put, validate)."""

from __future__ import annotations

from agent_env.cli.commands.entity_group import make_group
from agent_env.cli.lazy import LazyGroup

# `env check PATH` (start an env and probe its card, schemas and data plane) is not built yet.
env = make_group("env", "Stored environments: list, show, put and validate them.", cls=LazyGroup)
