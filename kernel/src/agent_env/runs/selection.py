"""Which tasks of a bundle a run runs, as the existing `agent-env` chooses them.

`--task`/`--eval` pick tasks and evals by name. With neither, a bundle that has evals runs
every eval (so only the tasks some eval names) and reports the others as not run; a bundle
without evals runs every task.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs


@attrs.frozen(kw_only=True)
class Selection:
    """The tasks to run (bundle order), the evals to report, and the tasks no eval names that
    running every eval left out."""

    tasks: list[Any]
    evals: list[str]
    not_run: list[Any] = attrs.field(factory=list)

    def not_run_lines(self, *, would: bool = False) -> list[str]:
        """One line per task left out, with the option that runs it."""
        verb = "would not run" if would else "did not run"
        return [
            f"{_path(task)} is not named by any eval, so it {verb}; run it with --task {task.name}"
            for task in self.not_run
        ]


def select(bundle: Any, tasks: Sequence[str] = (), evals: Sequence[str] = ()) -> Selection:
    """The selection of `--task tasks` and `--eval evals`; `BundleError` with a did-you-mean
    for a name the bundle lacks."""
    every = not tasks and not evals
    if every:
        if not bundle.evals:
            return Selection(tasks=list(bundle.tasks.values()), evals=[])
        evals = sorted(bundle.evals)
    chosen: dict[str, Any] = {}
    for name in tasks:
        task = bundle.task(name)
        chosen.setdefault(task.name, task)
    eval_names: list[str] = []
    for name in evals:
        for task in bundle.eval(name):
            chosen.setdefault(task.name, task)
        eval_names.append(bundle.resolve_name(name))
    if not every:
        return Selection(tasks=list(chosen.values()), evals=eval_names)
    return Selection(  # every eval: in the bundle's order, and the tasks left out
        tasks=[t for t in bundle.tasks.values() if t.name in chosen],
        evals=eval_names,
        not_run=[t for t in bundle.tasks.values() if t.name not in chosen],
    )


def _path(task: Any) -> str:
    """`tasks/<name>.json`, as the bundle has it."""
    path = getattr(task, "path", None)
    if path is None:
        return f"task {task.name!r}"
    return f"{path.parent.name}/{path.name}"
