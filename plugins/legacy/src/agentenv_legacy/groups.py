"""The existing product's entry-point groups, and what happens to each here.

One table, as data: group -> `Group`. A group with an `adapter` runs its plugins through that
adapter plugin; a group without one is listed with its `reason` by `agent-env plugin list` and
fails `agent-env plugin check`, instead of being ignored. (`agent_env.bundles`, the existing
product's bundle packages, is not here: our kernel reads that group itself.)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import attrs


@attrs.frozen(kw_only=True)
class Group:
    """One entry-point group of the existing product."""

    name: str
    holds: str
    #: `module:Class` of the adapter plugin, built with the group's entry points.
    adapter: str | None = None
    #: Why the group is not supported (None when it has an adapter).
    reason: str | None = None


TASK_STEPS = "agent_env.task_steps"

GROUPS: dict[str, Group] = {
    g.name: g
    for g in (
        Group(
            name=TASK_STEPS,
            holds="step types (`agent_env.task_step.TaskStep` subclasses)",
            adapter="agentenv_legacy.task_steps:LegacyTaskSteps",
        ),
        Group(
            name="agent_env.envs",
            holds="env types (its `Env` classes)",
            reason="its `Env` classes deploy through its own provider and gateway API, which "
            "has no counterpart here; register an env type with `agentenv_register_env_types`",
        ),
        Group(
            name="agent_env.sandbox_providers",
            holds="sandbox providers (its `SandboxProvider` classes)",
            reason="its `SandboxProvider` interface (its sandbox modes, tunnels and config "
            "tables) differs from ours; register a provider with "
            "`agentenv_register_sandbox_providers`",
        ),
        Group(
            name="agent_env.artifacts",
            holds="artifact types",
            reason="artifacts here are the files, filesets and images of a bundle; there are "
            "no pluggable artifact types",
        ),
        Group(
            name="agent_env.state_providers",
            holds="env state providers (where an env's data lives)",
            reason="env state providers are not part of this agent-env; an env keeps its "
            "state in its sandbox",
        ),
        Group(
            name="agent_env.env_providers",
            holds="env providers (how an env is deployed)",
            reason="env providers are not part of this agent-env; env types deploy "
            "themselves (`agentenv_register_env_types`)",
        ),
        Group(
            name="agent_env.explorer_plugins",
            holds="routes for its explorer web UI",
            reason="this agent-env has no explorer UI",
        ),
    )
}


def plugin_entry_points(by_group: Mapping[str, Iterable[str]]) -> tuple[str, ...]:
    """What a distribution registers as a plugin, from its entry-point names by group: names
    in our `agent_env` group as they are, those in the existing product's groups as
    `group:name` (so `plugin add` accepts a plugin written for it, and `plugin remove` finds it)."""
    names = list(by_group.get("agent_env", ()))
    names += [f"{group}:{name}" for group in GROUPS for name in by_group.get(group, ())]
    return tuple(sorted(names))
