"""One flat JSON row per trial (the JSONL export of `agent-env runs export` and `run --export`):
task id and version, bundle digest, agent, model, seed, scores, outcome, failure class,
durations and the task instance id (`TaskInstanceRecord.to_row()`). Records are read from the
store one at a time."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import IO, Any

from agent_env.engine.records import RunRecord, Status, TaskInstanceRecord
from agent_env.engine.stored import as_run, run_records
from agent_env.reporting.results import FINAL, Results


async def write_jsonl(
    documents: Any, run: RunRecord | Mapping[str, Any], out: IO[str], *, attempts: bool = False
) -> int:
    """Write one row per trial of `run` (its record or stored document) to `out`; the number
    of rows."""
    count = 0
    async for record in run_records(documents, run, attempts=attempts):
        out.write(json.dumps(record.to_row(), default=str) + "\n")
        count += 1
    return count


#: How `run_summary` counts a status.
_COUNTED_AS = {
    Status.PASSED: "passed",
    Status.SCORED_BELOW: "failed",
    Status.FAILED: "failed",
    Status.UNSCORED: "unscored",
    Status.CANCELLED: "cancelled",
    Status.PENDING: "unfinished",
    Status.RUNNING: "unfinished",
}


#: How many not-passed trials `run_summary` lists (all are counted).
NOT_PASSED_LISTED = 20


def not_passed_row(record: TaskInstanceRecord) -> dict[str, Any]:
    """A trial that did not pass, as `runs show` lists it: its class and why."""
    return {
        "id": record.id,
        "task": record.task.name,
        "trial": record.trial,
        "status": record.status.value,
        "failure_class": record.effective_failure_class(),
        "reason": record.outcome or record.status.value,
    }


async def run_summary(documents: Any, run: RunRecord | Mapping[str, Any]) -> dict[str, Any]:
    """Counts and results of a recorded run, reading one record at a time (last attempts):
    `trials` (planned), `passed`, `failed` (failed or scored below 1), `unscored`,
    `cancelled`, `unfinished` (never started, pending, running), `results`, and `not_passed`
    (the first `NOT_PASSED_LISTED` finished trials that did not pass, with class and reason)."""
    run = as_run(run)
    results = Results(list(dict.fromkeys(run.tasks)), run.eval_tasks)
    counts = dict.fromkeys(("passed", "failed", "unscored", "cancelled", "unfinished"), 0)
    started = 0
    not_passed: list[dict[str, Any]] = []
    async for record in run_records(documents, run):
        started += 1
        results.add(record)
        counts[_COUNTED_AS[record.status]] += 1
        listed = len(not_passed) < NOT_PASSED_LISTED
        if listed and record.status in FINAL and record.status != Status.PASSED:
            not_passed.append(not_passed_row(record))
    counts["unfinished"] += len(run.instances) - started
    return {
        "trials": len(run.instances),
        "trials_per_task": run.trials,
        **counts,
        "results": results.summary(),
        "not_passed": not_passed,
    }
