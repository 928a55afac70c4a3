"""The run-wide choices of `agent-env run` that replace what the tasks name, for this run only
(the stored tasks stay as written): `--sandbox P` (a provider or a fallback chain `a,b`),
`--judge-model M` and `--user-model M`.

The kernel owns the options; each step type says which of them it takes and which of its
fields each one replaces (`Step.run_overrides`, e.g. a judge declares
`{"judge_model": RunOverride(("default_model",))}`). A step whose type declares nothing is
left alone, whatever fields it has. A run option that no selected step takes is reported once
as changing nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from agent_env.errors import PluginError
from agent_env.models import RunOverride
from agent_env.runs.options import RunOptions
from agent_env.suggest import did_you_mean


@attrs.frozen
class RunOption:
    """A run option a step type may take: its flag and what the report calls such steps."""

    flag: str
    steps: str  # "judge(s)": in "applies to 2 judge(s) in 1 task(s)"
    none: str  # "judges": in "no selected task has judges"


#: `RunOptions` field -> the option, for every option a step type may declare.
OPTIONS: Mapping[str, RunOption] = {
    "provider": RunOption(
        "--sandbox", "step(s) that choose a sandbox", "steps that choose a sandbox"
    ),
    "judge_model": RunOption("--judge-model", "judge(s)", "judges"),
    "user_model": RunOption("--user-model", "simulated user(s)", "simulated users"),
}


def declared(step_type: type) -> Mapping[str, RunOverride]:
    """`step_type.run_overrides`, checked: each key a run option of `OPTIONS`, each field one
    of the type's attrs fields. A wrong declaration is a `PluginError` naming the step type."""
    table = getattr(step_type, "run_overrides", None) or {}
    name = getattr(step_type, "type", None) or step_type.__name__
    where = f"step type {name!r}: run_overrides"
    if not isinstance(table, Mapping):
        raise PluginError(f"{where}: expected a mapping of run option -> RunOverride")
    fields = {f.name for f in attrs.fields(step_type)} if attrs.has(step_type) else set()
    for option, override in table.items():
        if option not in OPTIONS:
            raise PluginError(
                f"{where}: {option!r} is not a run option{did_you_mean(str(option), OPTIONS)}; "
                f"run options: {', '.join(OPTIONS)}"
            )
        if not isinstance(override, RunOverride):
            raise PluginError(f"{where}[{option!r}]: expected a RunOverride, not {override!r}")
        for field in override.fields:
            if field not in fields:
                raise PluginError(
                    f"{where}[{option!r}]: {name!r} has no field {field!r}"
                    f"{did_you_mean(field, fields)}"
                )
    return table


def fields_for(step_type: type, option: str) -> tuple[str, ...]:
    """The fields of `step_type` that run option `option` replaces (none when undeclared)."""
    override = declared(step_type).get(option)
    return override.fields if override else ()


def values(options: RunOptions) -> dict[str, str]:
    """The overrides `options` asks for: option name -> value."""
    return {name: value for name in OPTIONS if (value := getattr(options, name, None))}


def apply(tasks: Iterable[Any], options: RunOptions) -> tuple[list[Any], list[str]]:
    """(`tasks` with the overridden fields set, one report line per override given)."""
    wanted = values(options)
    tasks = list(tasks)
    if not wanted:
        return tasks, []
    counts = dict.fromkeys(wanted, 0)
    touched: dict[str, set[str]] = {k: set() for k in wanted}
    unused: dict[str, str] = {}
    out = []
    for task in tasks:
        steps = []
        for step in task.steps:
            taken = {o: t for o, t in declared(type(step)).items() if o in wanted}
            changes: dict[str, str] = {}
            for option, override in taken.items():
                counts[option] += 1
                touched[option].add(task.name)
                if override.unused:
                    unused.setdefault(option, override.unused)
                changes.update(dict.fromkeys(override.fields, wanted[option]))
            steps.append(attrs.evolve(step, **changes) if changes else step)
        out.append(attrs.evolve(task, steps=steps))
    lines = [
        _line(o, wanted[o], counts[o], len(touched[o]), unused.get(o) if counts[o] else None)
        for o in wanted
    ]
    return out, lines


def apply_to_bundle(bundle: Any, options: RunOptions) -> tuple[Any, list[str]]:
    """`bundle` whose tasks carry the overrides (for a resumed run, which reads the bundle)."""
    tasks, lines = apply(bundle.tasks.values(), options)
    if not lines:
        return bundle, lines
    return attrs.evolve(bundle, tasks={t.name: t for t in tasks}), lines


def _line(option: str, value: str, steps: int, tasks: int, unused: str | None) -> str:
    spec = OPTIONS[option]
    flag = f"{spec.flag} {value}"
    if not steps:
        return f"{flag}: no selected task has {spec.none}, so it changes nothing"
    where = f"{steps} {spec.steps} in {tasks} task(s)"
    if unused:
        return f"{flag}: set on {where}, but {unused}"
    return f"{flag}: applies to {where}"
