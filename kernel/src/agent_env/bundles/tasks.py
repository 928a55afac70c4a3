"""Reading one task file: a JSON array of step objects, each structured into its step class,
with the dependency and retry rules checked on the JSON as written."""

from __future__ import annotations

import types
from pathlib import Path
from typing import Any

from agent_env.bundles.dag import dependency_problems
from agent_env.bundles.files import Problems, duplicate_keys, load_json, non_finite_numbers
from agent_env.convert import Ignored, StructureProblems, structure_step
from agent_env.suggest import did_you_mean


def read_task(
    path: Path, step_types: Any, problems: Problems, *, ignored: list[Ignored] | None = None
) -> tuple[Any, list[Any] | None, bool]:
    """(the JSON as written, the steps that structured, whether the task has no problem);
    every problem is recorded in `problems` as `tasks/<t>.json: step '<id>': ...`, and the
    compat-ignored fields the steps set are appended to `ignored`."""
    raw = load_json(path, problems)
    if raw is None:
        return None, None, False
    if not isinstance(raw, list):
        problems.add(path, f"a task must be a JSON array of step objects, got {_json_type(raw)}")
        return raw, None, False
    if not raw:
        problems.add(path, "the task has no steps; a task needs at least one step")
        return raw, None, False
    rel = problems.rel(path)
    steps = []
    ok = True
    for index, data in enumerate(raw):
        label = _label(data, index)
        for dup in duplicate_keys(data):
            problems.add(rel, f"{label}: {dup}")
            ok = False
        infinite = non_finite_numbers(data)
        for message in infinite:
            problems.add(rel, f"{label}: {message}")
        if infinite:  # the step would structure into a model no store can write
            ok = False
            continue
        try:
            steps.append(structure_step(data, step_types, index=index, ignored=ignored))
        except StructureProblems as e:
            ok = False
            for problem in e.problems:
                problems.add(rel, problem)
    checks = [
        *_id_problems(raw),
        *dependency_problems(_dependency_view(raw)),
        *_retry_problems(raw),
        *verifier_id_problems(steps),
    ]
    for problem in checks:
        ok = False
        problems.add(rel, problem)
    return raw, steps, ok


def _json_type(value: Any) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, str):
        return "a string"
    if value is None:
        return "null"
    return (
        "a number"
        if isinstance(value, (int, float)) and not isinstance(value, bool)
        else type(value).__name__
    )


def _label(data: Any, index: int) -> str:
    step_id = data.get("id") if isinstance(data, dict) else None
    return f"step {step_id!r}" if isinstance(step_id, str) and step_id else f"step #{index + 1}"


def _dependency_view(raw: list[Any]) -> list[Any]:
    """Light stand-ins (id, depends_on) for the dependency rules, read from the JSON as written,
    so they are checked even when a step's other fields are wrong."""
    view = []
    for data in raw:
        if not isinstance(data, dict) or not isinstance(data.get("id"), str):
            continue
        deps = data.get("depends_on")
        if isinstance(deps, list):
            deps = [d.get("task_step_id") if isinstance(d, dict) else d for d in deps]
            deps = [d for d in deps if isinstance(d, str)]
        elif deps is not None:
            deps = None
        view.append(types.SimpleNamespace(id=data["id"], depends_on=deps))
    return view


def _id_problems(raw: list[Any]) -> list[str]:
    """A step id must be a non-empty string without surrounding blanks (the engine names
    journal entries, state and results by it)."""
    out = []
    for index, data in enumerate(raw):
        step_id = data.get("id") if isinstance(data, dict) else None
        if isinstance(step_id, str) and (not step_id.strip() or step_id != step_id.strip()):
            out.append(f"step #{index + 1}: id: must be a non-empty name, got {step_id!r}")
    return out


def verifier_id_problems(steps: list[Any]) -> list[str]:
    """Two verifier steps of a task may not share a `verifier_id`: the later one's score would
    replace the earlier one's, so a failing verifier could be masked by a passing one."""
    out = []
    first: dict[str, str] = {}
    for step in steps:
        if not getattr(step, "is_verifier", False):
            continue
        verifier_id = getattr(step, "verifier_id", None)
        if not isinstance(verifier_id, str):
            continue
        if verifier_id in first:
            out.append(
                f"step {step.id!r}: verifier_id: {verifier_id!r} is already the verifier_id of "
                f"step {first[verifier_id]!r}; give each verifier its own"
            )
        else:
            first[verifier_id] = step.id
    return out


def _retry_problems(raw: list[Any]) -> list[str]:
    """A `retry_config` must name this step or an earlier one."""
    out: list[str] = []
    seen: list[str] = []
    for data in raw:
        if not isinstance(data, dict) or not isinstance(data.get("id"), str):
            continue
        step_id = data["id"]
        seen.append(step_id)
        retry = data.get("retry_config")
        if not isinstance(retry, dict):
            continue
        retries = retry.get("max_retries", 1)
        if isinstance(retries, int) and not isinstance(retries, bool) and retries < 0:
            out.append(
                f"step {step_id!r}: retry_config.max_retries: must be 0 or more, got {retries}"
            )
        target = retry.get("retry_from_step_id", retry.get("go_to_step_id"))
        if isinstance(target, str) and target not in seen:
            all_ids = [d.get("id") for d in raw if isinstance(d, dict)]
            where = (
                "a later step"
                if target in all_ids
                else f"no step of the task{did_you_mean(target, seen)}"
            )
            out.append(
                f"step {step_id!r}: retry_config.retry_from_step_id: {target!r} is {where}; "
                "a retry restarts from this step or an earlier one"
            )
    return out
