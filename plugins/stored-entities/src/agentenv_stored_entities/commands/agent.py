"""`agent-env agent ...` (also `a2a-agent`, the reference's name): stored agents, and
`deploy` / `get-instance` (`agent_deploy`)."""

from __future__ import annotations

from agentenv_stored_entities.commands.agent_deploy import deploy, get_instance
from agentenv_stored_entities.commands.dockerfile_put import a2a_agent_put
from agentenv_stored_entities.commands.group import make_group

agent = make_group("agent", "Stored agents: list, show, put, validate and deploy them.")
a2a_agent = make_group(
    "agent", "Stored agents (the reference's name for `agent`).", name="a2a-agent"
)
a2a_agent.add_command(a2a_agent_put)
for group in (agent, a2a_agent):
    group.add_command(deploy)
    group.add_command(get_instance)
