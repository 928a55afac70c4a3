"""`agent-env artifact ...`: stored artifacts, and `artifact skill ...` for skills."""

from __future__ import annotations

from agent_env.cli.commands.entity_group import make_group

artifact = make_group("artifact", "Stored artifacts: list, show, put and validate them.")
skill = make_group("skill", "Stored skills: list, show, put and validate them.")
artifact.add_command(skill)
