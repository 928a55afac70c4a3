"""Checks across a parsed bundle: step fields that name artifacts, envs or agents, and each
step type's own `check(bundle)`.

A step type says which of its fields are references with the class attribute
`Step.bundle_refs`, e.g. `bundle_refs = {"artifact": ("script_artifact_id",), "env":
("env_ids[]",)}`; a type that declares none names no bundle entity. Kind "tool" (a tool
name) only draws a warning, from `bundles.tool_refs`. A value is a bundle name or
a full id; a name (or this bundle's id) that matches nothing is a problem. An agent reference
may also name a registered agent kind (`claude-code`, `tool-loop`, ...: the run's agent
registry, passed in as `agent_kinds`), which needs no agent folder.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from agent_env.bundles.files import Problems
from agent_env.models import Step
from agent_env.suggest import did_you_mean


def _get(obj: Any, key: str) -> Any:
    if isinstance(obj, dict):
        return obj.get(key)
    return getattr(obj, key, None)


def ref_values(step: Any, path: str) -> Iterator[tuple[str, Any]]:
    """(field path as shown, value) for a reference path such as `artifacts[].id`."""
    head, _, rest = path.partition(".")
    if head.endswith("[]"):
        items = _get(step, head[:-2])
        if not isinstance(items, (list, tuple)):
            return
        for index, item in enumerate(items):
            where = f"{head[:-2]}[{index}]"
            if rest:
                for sub, value in ref_values(item, rest):
                    yield f"{where}.{sub}", value
            else:
                yield where, item
    elif rest:
        for sub, value in ref_values(_get(step, head), rest):
            yield f"{head}.{sub}", value
    else:
        value = _get(step, head)
        if value is not None:
            yield head, value


def step_refs(step: Any) -> dict[str, tuple[str, ...]]:
    """Kind -> the field paths of `step` that name bundle entities, as its type declares."""
    declared = type(step).bundle_refs if isinstance(step, Step) else None
    return dict(declared or {})


def _known(bundle: Any, kind: str) -> dict[str, Any]:
    if kind == "artifact":
        return {**bundle.skills, **bundle.artifacts}
    return {"env": bundle.envs, "agent": bundle.agents}[kind]


def check_bundle(
    bundle: Any,
    problems: Problems,
    structured: list[tuple[Any, list[Any]]] | None = None,
    *,
    agent_kinds: Iterable[str] = (),
) -> None:
    """Record every dangling reference and every message of the steps' own `check`;
    `structured` adds the steps that parsed in tasks that have other problems; `agent_kinds`
    are the registered agent kind names an agent reference may name instead of a folder."""
    kinds = frozenset(agent_kinds)
    if structured is None:
        structured = [(task.path, task.steps) for task in bundle.tasks.values()]
    for path, steps in structured:
        rel = problems.rel(path)
        for step in steps:
            label = f"step {step.id!r}"
            for kind, paths in step_refs(step).items():
                if kind == "tool":  # a warning, not a problem: see `bundles.tool_refs`
                    continue
                known = _known(bundle, kind)
                for path in paths:
                    for where, value in ref_values(step, path):
                        if kind == "agent" and value in kinds:
                            continue
                        message = _dangling(bundle, kind, known, value, kinds)
                        if message:
                            problems.add(rel, f"{label}: {where}: {message}")
            try:
                messages = step.check(bundle)
            except Exception as e:  # noqa: BLE001 - a broken check is reported, not fatal
                messages = [f"check() failed: {type(e).__name__}: {e}"]
            for message in messages or ():
                problems.add(rel, f"{label}: {message}")


def _dangling(
    bundle: Any, kind: str, known: dict[str, Any], value: Any, kinds: frozenset[str] = frozenset()
) -> str | None:
    if not isinstance(value, str):
        return None
    if value.startswith("@"):
        prefix = bundle.id_prefix + "/"
        if not value.startswith(prefix):
            return None
        name = value[len(prefix) :]
        if name in known or any(getattr(e, "id", None) == value for e in known.values()):
            return None
    else:
        name = value
        if name in known:
            return None
    names = sorted(known)
    listing = ", ".join(names) if names else "none"
    plural = {"artifact": "artifacts", "env": "envs", "agent": "agents"}[kind]
    if kind == "agent" and kinds:
        hint = did_you_mean(name, [*names, *sorted(kinds)])
        return (
            f"no agent {name!r} in the bundle and no agent kind of that name{hint}; "
            f"agents: {listing}; agent kinds: {', '.join(sorted(kinds))}"
        )
    return f"no {kind} {name!r} in the bundle{did_you_mean(name, names)}; {plural}: {listing}"
