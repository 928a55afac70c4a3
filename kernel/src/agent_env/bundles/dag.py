"""The dependency rules of a task's steps (DESIGN.md §3.5), shared by validation and the engine.

No step declares `depends_on`: the steps form a chain. Once any step declares it, a step
without `depends_on` depends on every earlier step, and `[]` means "no dependencies".
References point only backwards, so the graph is acyclic by construction.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agent_env.errors import BundleError
from agent_env.suggest import did_you_mean


def dependency_problems(steps: Sequence[Any]) -> list[str]:
    """Every problem with step ids and `depends_on` references, one message per problem."""
    problems: list[str] = []
    seen: list[str] = []
    seen_set: set[str] = set()
    all_ids = {s.id for s in steps}
    for step in steps:
        if step.id in seen_set:
            problems.append(f"step {step.id!r}: duplicate step id")
        for ref in step.depends_on or ():
            if ref == step.id:
                problems.append(f"step {step.id!r}: depends_on: a step cannot depend on itself")
            elif ref in seen_set:
                continue
            elif ref in all_ids:
                problems.append(
                    f"step {step.id!r}: depends_on: {ref!r} comes later in the task; "
                    "a step may only depend on earlier steps"
                )
            else:
                problems.append(
                    f"step {step.id!r}: depends_on: unknown step {ref!r}{did_you_mean(ref, seen)}"
                )
        seen.append(step.id)
        seen_set.add(step.id)
    return problems


def resolve_dependencies(steps: Sequence[Any]) -> dict[str, list[str]]:
    """Map each step id (in task order) to the ids it waits for; `BundleError` listing every
    problem when ids repeat or a reference is unknown or points forward."""
    problems = dependency_problems(steps)
    if problems:
        raise BundleError("the task's step dependencies are invalid", problems)
    explicit = any(s.depends_on is not None for s in steps)
    deps: dict[str, list[str]] = {}
    earlier: list[str] = []
    for step in steps:
        if not explicit:
            deps[step.id] = earlier[-1:]
        elif step.depends_on is None:
            deps[step.id] = list(earlier)
        else:
            deps[step.id] = list(dict.fromkeys(step.depends_on))
        earlier.append(step.id)
    return deps


def dependents(deps: dict[str, list[str]], root: str) -> list[str]:
    """`root` and every step that depends on it, transitively, in task order (a retry span)."""
    span = {root}
    for step_id, wants in deps.items():
        if any(w in span for w in wants):
            span.add(step_id)
    return [s for s in deps if s in span]
