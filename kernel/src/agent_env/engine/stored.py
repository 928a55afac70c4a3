"""Reading records back from the document store, as models: one task instance record, one run
record, a trial's last attempt, and a run's trials in plan order (one record at a time, so
memory stays flat in the number of trials)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any

from agent_env.engine.records import (
    COLLECTION,
    RUNS,
    RunRecord,
    TaskInstanceRecord,
    attempt_id,
)


def as_run(run: RunRecord | Mapping[str, Any]) -> RunRecord:
    """`run` as a model (a stored run document is structured)."""
    return run if isinstance(run, RunRecord) else RunRecord.from_dict(run)


async def read_run(documents: Any, run_id: str) -> RunRecord | None:
    """The stored run record `run_id` (None when there is none)."""
    doc = await documents.get(RUNS, run_id)
    return None if doc is None else RunRecord.from_dict(doc)


async def read_record(documents: Any, instance_id: str) -> TaskInstanceRecord | None:
    """The stored record of `instance_id` (None when there is none)."""
    doc = await documents.get(COLLECTION, instance_id)
    return None if doc is None else TaskInstanceRecord.from_dict(doc)


async def latest_attempt(documents: Any, base: str) -> tuple[TaskInstanceRecord | None, int]:
    """The record of a trial's last attempt and its number ((None, 0): never started)."""
    record, attempt = await read_record(documents, base), 0
    while record is not None and record.effective_failure_class() == "infrastructure":
        nxt = await read_record(documents, attempt_id(base, attempt + 1))
        if nxt is None:
            break
        record, attempt = nxt, attempt + 1
    return record, attempt


async def run_records(
    documents: Any, run: RunRecord | Mapping[str, Any], *, attempts: bool = False
) -> AsyncIterator[TaskInstanceRecord]:
    """The records of a run's trials in plan order: the last attempt of each trial (every
    attempt with `attempts`); trials that never started are skipped."""
    # a stored run document is read as it is: its ids need no model (building the run
    # record's structure function costs every `agent-env run` several milliseconds)
    instances = (run.get("instances") or []) if isinstance(run, Mapping) else run.instances
    for base in instances:
        attempt, record = 0, await read_record(documents, base)
        while record is not None:
            nxt = None
            if record.effective_failure_class() == "infrastructure":
                nxt = await read_record(documents, attempt_id(base, attempt + 1))
            if nxt is None or attempts:
                yield record
            if nxt is None:
                break
            attempt, record = attempt + 1, nxt
