"""The run-wide choices of `agent-env run` that replace what the tasks name, for this run
only (the stored tasks stay as written), as the existing `agent-env` applies them:

- `--sandbox P` (a provider or a fallback chain `a,b`): every step's `sandbox_type` and
  `judge_sandbox_type`, so envs, agents, sandboxes and judges deploy on P;
- `--judge-model M`: the model of every judge (`default_model` of `rubrics_verifier`);
- `--user-model M`: the model of every simulated user (`user_model` of `prompt_agent`).

A step type takes part by having the field; a run option that no selected step takes is
reported once as changing nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from agent_env.runs.options import RunOptions

#: option -> (the step fields it sets, the steps that have them, for the report)
FIELDS: Mapping[str, tuple[tuple[str, ...], str]] = {
    "sandbox": (("sandbox_type", "judge_sandbox_type"), "step(s) that choose a sandbox"),
    "judge_model": (("default_model",), "judge(s) (rubrics_verifier)"),
    "user_model": (("user_model",), "simulated user(s) (prompt_agent)"),
}
_OPTION = {"sandbox": "--sandbox", "judge_model": "--judge-model", "user_model": "--user-model"}
#: Why an option that the steps take still does nothing in this version.
_UNUSED = {
    "user_model": "this version has no simulated user (a prompt_agent runs one turn), so "
    "nothing runs on it",
}


def values(options: RunOptions) -> dict[str, str]:
    """The overrides `options` asks for: option name -> value."""
    given = {
        "sandbox": options.provider,
        "judge_model": options.judge_model,
        "user_model": options.user_model,
    }
    return {k: v for k, v in given.items() if v}


def apply(tasks: Iterable[Any], options: RunOptions) -> tuple[list[Any], list[str]]:
    """(`tasks` with the overridden fields set, one report line per override given)."""
    wanted = values(options)
    tasks = list(tasks)
    if not wanted:
        return tasks, []
    counts = dict.fromkeys(wanted, 0)
    touched: dict[str, set[str]] = {k: set() for k in wanted}
    out = []
    for task in tasks:
        steps = []
        for step in task.steps:
            new = _override(step, wanted)
            for option in new:
                counts[option] += 1
                touched[option].add(task.name)
            steps.append(attrs.evolve(step, **_flatten(new)) if new else step)
        out.append(attrs.evolve(task, steps=steps))
    return out, [_line(o, wanted[o], counts[o], len(touched[o])) for o in wanted]


def apply_to_bundle(bundle: Any, options: RunOptions) -> tuple[Any, list[str]]:
    """`bundle` whose tasks carry the overrides (for a resumed run, which reads the bundle)."""
    tasks, lines = apply(bundle.tasks.values(), options)
    if not lines:
        return bundle, lines
    return attrs.evolve(bundle, tasks={t.name: t for t in tasks}), lines


def _override(step: Any, wanted: Mapping[str, str]) -> dict[str, dict[str, str]]:
    """option -> {field: value} for the fields of `step` the options set."""
    if not attrs.has(type(step)):
        return {}
    fields = attrs.fields_dict(type(step))
    out: dict[str, dict[str, str]] = {}
    for option, value in wanted.items():
        names = [f for f in FIELDS[option][0] if f in fields]
        if names:
            out[option] = dict.fromkeys(names, value)
    return out


def _flatten(new: Mapping[str, Mapping[str, str]]) -> dict[str, str]:
    return {field: value for fields in new.values() for field, value in fields.items()}


def _line(option: str, value: str, steps: int, tasks: int) -> str:
    flag = f"{_OPTION[option]} {value}"
    what = FIELDS[option][1]
    if not steps:
        return f"{flag}: no selected task has {what.replace('(s)', 's')}, so it changes nothing"
    where = f"{steps} {what} in {tasks} task(s)"
    if option in _UNUSED:
        return f"{flag}: set on {where}, but {_UNUSED[option]}"
    return f"{flag}: applies to {where}"
