"""`agent-env env ...`: stored environments (list, show/get, put, validate)."""

from __future__ import annotations

from agent_env.cli.commands.entity_group import make_group
from agent_env.cli.lazy import LazyGroup

env = make_group("env", "Stored environments: list, show, put and validate them.", cls=LazyGroup)

# issue 19: `env check PATH` starts an env folder and probes its card, schemas and data plane.
env.add_lazy_command(  # type: ignore[attr-defined]
    "check",
    "agent_env.cli.commands.env_check:env_check",
    "Start an env folder and validate its card, tools and data plane.",
)
