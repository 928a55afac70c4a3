"""One flat JSON row per trial (the JSONL export of `agent-env runs export` and `run --export`):
task id and version, bundle digest, agent, model, seed, scores, outcome, failure class,
durations and the task instance id. Rows are read from the store one at a time."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from typing import IO, Any

from agent_env.engine.records import COLLECTION, attempt_id
from agent_env.engine.results import record_failure_class, trial_score


def trial_row(record: Mapping[str, Any]) -> dict[str, Any]:
    """The export row of one task instance record."""
    task = record.get("task") or {}
    bundle = record.get("bundle") or {}
    failure = record.get("failure") or {}
    seed_values = record.get("seed_values")
    return {
        "run_id": record.get("run_id"),
        "instance_id": record.get("id"),
        "task": task.get("name"),
        "task_id": task.get("id"),
        "task_version": task.get("version"),
        "trial": record.get("trial"),
        "attempt": record.get("attempt", 0),
        "bundle": bundle.get("name"),
        "bundle_digest": bundle.get("digest"),
        "agent": record.get("agent"),
        "model": record.get("model"),
        "seed": record.get("seed"),
        "seed_values": dict(seed_values) if isinstance(seed_values, Mapping) else seed_values,
        "status": record.get("status"),
        "passed": record.get("status") == "passed",
        "outcome": record.get("outcome"),
        "score": trial_score(record),
        "scores": dict(record.get("scores") or {}),
        "failure_class": record_failure_class(record),
        "failure_step": failure.get("step"),
        "failure": failure.get("message"),
        "started_at": record.get("started_at"),
        "finished_at": record.get("finished_at"),
        "seconds": record.get("seconds"),
        "step_seconds": {
            sid: info.get("seconds")
            for sid, info in (record.get("steps") or {}).items()
            if isinstance(info, Mapping)
        },
        "resumes": record.get("resumes", 0),
    }


async def run_records(
    documents: Any, run_doc: Mapping[str, Any], *, attempts: bool = False
) -> AsyncIterator[dict[str, Any]]:
    """The records of a run's trials in plan order: the last attempt of each trial (every
    attempt with `attempts`); trials that never started are skipped."""
    for base in run_doc.get("instances", []):
        attempt, record = 0, await documents.get(COLLECTION, base)
        while record is not None:
            nxt = None
            if record_failure_class(record) == "infrastructure":
                nxt = await documents.get(COLLECTION, attempt_id(base, attempt + 1))
            if nxt is None or attempts:
                yield record
            if nxt is None:
                break
            attempt, record = attempt + 1, nxt


async def write_jsonl(
    documents: Any, run_doc: Mapping[str, Any], out: IO[str], *, attempts: bool = False
) -> int:
    """Write one row per trial to `out`; the number of rows."""
    count = 0
    async for record in run_records(documents, run_doc, attempts=attempts):
        out.write(json.dumps(trial_row(record), default=str) + "\n")
        count += 1
    return count


async def run_summary(documents: Any, run_doc: Mapping[str, Any]) -> dict[str, Any]:
    """Counts and results of a recorded run, reading one record at a time (last attempts):
    `trials` (planned), `passed`, `failed` (failed or scored below 1), `unscored`,
    `cancelled`, `unfinished` (never started, pending, running), and `results`."""
    from agent_env.engine.results import Results

    names = list(dict.fromkeys(run_doc.get("tasks", [])))
    results = Results(names, run_doc.get("eval_tasks") or {})
    counts = dict.fromkeys(("passed", "failed", "unscored", "cancelled", "unfinished"), 0)
    started = 0
    async for record in run_records(documents, run_doc):
        started += 1
        results.add(record)
        status = record.get("status")
        key = {
            "scored_below": "failed",
            "pending": "unfinished",
            "running": "unfinished",
        }.get(status, status)
        if key in counts:
            counts[key] += 1
    total = len(run_doc.get("instances", []))
    counts["unfinished"] += total - started
    return {
        "trials": total,
        "trials_per_task": run_doc.get("trials", 1),
        **counts,
        "results": results.summary(),
    }
