"""`agent-env agent ...` (also `a2a-agent`, the reference's name): stored agents."""

from __future__ import annotations

from agentenv_stored_entities.commands.dockerfile_put import a2a_agent_put
from agentenv_stored_entities.commands.group import make_group

agent = make_group("agent", "Stored agents: list, show, put and validate them.")
a2a_agent = make_group(
    "agent", "Stored agents (the reference's name for `agent`).", name="a2a-agent"
)
a2a_agent.add_command(a2a_agent_put)
