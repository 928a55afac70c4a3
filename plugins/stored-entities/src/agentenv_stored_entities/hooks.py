"""agent-env hooks of the stored-entities plugin: its command groups (imported only when they
run)."""

from __future__ import annotations

from agent_env import hookimpl

#: The kernel plugin API versions this plugin works with.
AGENTENV_PLUGIN_API = ">=1.0,<2"

#: Command name -> (import path, short help).
COMMANDS: dict[str, tuple[str, str]] = {
    "task": (
        "agentenv_stored_entities.commands.task:task",
        "Stored tasks: list, show, put, run by id.",
    ),
    "eval": (
        "agentenv_stored_entities.commands.eval:eval_group",
        "Stored evals: list, show, put, run by id.",
    ),
    "env": (
        "agentenv_stored_entities.commands.env:env",
        "Stored environments: list, show, put, check.",
    ),
    "agent": ("agentenv_stored_entities.commands.agent:agent", "Stored agents: list, show, put."),
    "a2a-agent": (
        "agentenv_stored_entities.commands.agent:a2a_agent",
        "Stored agents (reference name).",
    ),
    "artifact": (
        "agentenv_stored_entities.commands.artifact:artifact",
        "Stored artifacts and skills.",
    ),
    "bundle": (
        "agentenv_stored_entities.commands.bundle:bundle",
        "Export stored entities as a bundle.",
    ),
    "entity": (
        "agentenv_stored_entities.commands.entity:entity",
        "Stored entities of every kind (plugins').",
    ),
}


@hookimpl
def agentenv_register_commands(group):
    for name, (path, short_help) in COMMANDS.items():
        group.add_lazy_command(name, path, short_help)
