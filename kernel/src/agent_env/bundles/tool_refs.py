"""Warnings for step fields that name a tool no env of their task serves (`transferr` for
`transfer`): such a criterion can only score 0, so `agent-env check` and `run --dry-run` say so.

A step type declares its tool references as `bundle_refs = {"tool": ("criteria[].tool",)}`;
an env type says which tools a folder serves with `EnvType.served_tools`. A task is checked
only when every env it names is a folder of this bundle whose tools are known (a tool may
also be named `<env>__<tool>`, as the gateway exposes it with namespacing).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agent_env.bundles.check import ref_values, step_refs
from agent_env.suggest import did_you_mean

#: How the gateway names an env's tool when namespacing is on.
NAMESPACE_SEPARATOR = "__"

ToolsOf = Callable[[Any], "frozenset[str] | None"]


def _env_name(bundle: Any, value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    prefix = bundle.id_prefix + "/"
    name = value[len(prefix) :] if value.startswith(prefix) else value
    return name if name in bundle.envs else None


def task_tool_warnings(bundle: Any, task: Any, tools_of: ToolsOf) -> list[str]:
    """One warning per tool reference of `task` that none of its envs serves."""
    envs: set[str] = set()
    refs: list[tuple[str, str, str]] = []  # (step id, field path, tool name)
    for step in task.steps:
        declared = step_refs(step)
        for path in declared.get("env", ()):
            for _, value in ref_values(step, path):
                name = _env_name(bundle, value)
                if name is None:
                    return []  # an env this bundle does not describe: its tools are unknown
                envs.add(name)
        for path in declared.get("tool", ()):
            refs.extend(
                (step.id, where, value)
                for where, value in ref_values(step, path)
                if isinstance(value, str)
            )
    if not envs or not refs:
        return []
    served: dict[str, frozenset[str]] = {}
    for name in sorted(envs):
        tools = tools_of(bundle.envs[name])
        if tools is None:
            return []
        served[name] = tools
    known = {t for tools in served.values() for t in tools}
    known |= {f"{env}{NAMESPACE_SEPARATOR}{t}" for env, tools in served.items() for t in tools}
    listing = "; ".join(
        f"{env}: {', '.join(sorted(tools)) or 'none'}" for env, tools in served.items()
    )
    return [
        f"step {step_id!r}: {where}: no env of this task serves a tool {tool!r}"
        f"{did_you_mean(tool, sorted(known))}, so it cannot match a call (tools of {listing})"
        for step_id, where, tool in refs
        if tool not in known
    ]


def tool_warnings(bundle: Any, rel: Callable[[Any], str], tools_of: ToolsOf) -> list[str]:
    """The warnings of every task of `bundle`, each prefixed with the task file (`rel(path)`)."""
    cache: dict[str, frozenset[str] | None] = {}

    def cached(spec: Any) -> frozenset[str] | None:
        if spec.name not in cache:
            cache[spec.name] = tools_of(spec)
        return cache[spec.name]

    out: list[str] = []
    for task in bundle.tasks.values():
        out.extend(f"{rel(task.path)}: {w}" for w in task_tool_warnings(bundle, task, cached))
    return out


def served_tools_of(env_types: Any) -> ToolsOf:
    """`tools_of` for a registry of env types: the folder type's `served_tools`, None when the
    type is not installed or its answer fails."""

    def tools_of(spec: Any) -> frozenset[str] | None:
        cls = env_types.get(spec.type) if spec.type in env_types else None
        if cls is None:
            return None
        try:
            found = cls.served_tools(dict(spec.config), spec.path)
        except Exception:  # noqa: BLE001 - an env type's broken answer only costs the warning
            return None
        return None if found is None else frozenset(found)

    return tools_of
