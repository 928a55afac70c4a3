"""A recorded run's counts and results, read one trial record at a time (last attempts): what
`agent-env runs list` and `runs show` print."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agent_env.cli import toolkit
from agent_env.costs import CostTotals

#: How `run_summary` counts a status (by its value).
_COUNTED_AS = {
    "passed": "passed",
    "scored_below": "failed",
    "failed": "failed",
    "unscored": "unscored",
    "cancelled": "cancelled",
    "pending": "unfinished",
    "running": "unfinished",
}

#: How many not-passed trials `run_summary` lists (all are counted).
NOT_PASSED_LISTED = 20


def not_passed_row(record: Any) -> dict[str, Any]:
    """A trial that did not pass, as `runs show` lists it: its class and why."""
    return {
        "id": record.id,
        "task": record.task.name,
        "trial": record.trial,
        "status": record.status.value,
        "failure_class": record.effective_failure_class(),
        "reason": record.outcome or record.status.value,
    }


async def run_summary(documents: Any, run: Any | Mapping[str, Any]) -> dict[str, Any]:
    """Counts and results of a recorded run (a run record or its stored document): `trials`
    (planned), `passed`, `failed` (failed or scored below 1), `unscored`, `cancelled`,
    `unfinished` (never started, pending, running), `results`, `not_passed` (the first
    `NOT_PASSED_LISTED` finished trials that did not pass, with class and reason) and `cost`
    (the trials' costs added up, `agent_env.costs.CostTotals`)."""
    run = toolkit.as_run(run)
    results = toolkit.Results(list(dict.fromkeys(run.tasks)), run.eval_tasks)
    counts = dict.fromkeys(("passed", "failed", "unscored", "cancelled", "unfinished"), 0)
    costs = CostTotals()
    started = 0
    not_passed: list[dict[str, Any]] = []
    async for record in toolkit.run_records(documents, run):
        started += 1
        results.add(record)
        costs.add(record.cost)
        counts[_COUNTED_AS[record.status.value]] += 1
        listed = len(not_passed) < NOT_PASSED_LISTED
        if listed and record.status in toolkit.FINAL and record.status.value != "passed":
            not_passed.append(not_passed_row(record))
    counts["unfinished"] += len(run.instances) - started
    return {
        "trials": len(run.instances),
        "trials_per_task": run.trials,
        **counts,
        "results": results.summary(),
        "not_passed": not_passed,
        "cost": costs.to_json(),
    }
