"""`agent-env agent ...` (also `a2a-agent`, the reference's name): stored agents."""

from __future__ import annotations

from agent_env.cli.commands.dockerfile_put import a2a_agent_put
from agent_env.cli.commands.entity_group import make_group

agent = make_group("agent", "Stored agents: list, show, put and validate them.")
a2a_agent = make_group(
    "agent", "Stored agents (the reference's name for `agent`).", name="a2a-agent"
)
a2a_agent.add_command(a2a_agent_put)
