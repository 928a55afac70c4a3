"""Exports of a run's trials. The kernel's own format, `rows`: one flat JSON row per trial
(`agent-env runs export`, `run --export`): task id and version, bundle digest, agent, model,
seed, scores, outcome, failure class, durations, costs and the task instance id
(`TaskInstanceRecord.to_row()`). Other formats (`agent_env.exports.ExportFormat`, registered by
plugins) get `trial_exports`: each trial's record, row and stored agent trajectories. Records
are read from the store one at a time."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import IO, Any, ClassVar

from agent_env.engine.records import RunRecord, TaskInstanceRecord
from agent_env.engine.stored import run_records
from agent_env.exports import ExportFormat, TrialExport
from agent_env.stores.json_objects import get_json


class RowsFormat(ExportFormat):
    """The flat row per trial as JSON lines (what `runs export` writes by default)."""

    type: ClassVar[str] = "rows"
    description: ClassVar[str] = (
        "one flat JSON line per trial: ids, task version, seed, scores, outcome, failure "
        "class, timings, costs"
    )
    needs_trajectories: ClassVar[bool] = False

    async def write(self, trials: AsyncIterator[TrialExport], out: IO[bytes]) -> int:
        count = 0
        async for trial in trials:
            out.write((json.dumps(trial.row, default=str) + "\n").encode())
            count += 1
        return count


def prompt_outputs(record: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The outputs of a record's `prompt_agent` steps, in the order its steps ran."""
    outputs = record.get("outputs") or {}
    order = list(record.get("steps") or {}) + [
        k for k in outputs if k not in (record.get("steps") or {})
    ]
    return [
        outputs[sid]
        for sid in order
        if isinstance(outputs.get(sid), dict) and "prompt_id" in outputs[sid]
    ]


async def stored_trajectories(objects: Any, record: Mapping[str, Any]) -> dict[str, Any]:
    """The agent trajectories a record's outputs name, read from the object store, by prompt id
    (the object key for an output without one), in the record's order; one the store cannot
    give is `{"missing": why}`. What `runs show`, the explorer, replay and exports all read."""
    out: dict[str, Any] = {}
    for output in (record.get("outputs") or {}).values():
        if not isinstance(output, dict) or not isinstance(output.get("trajectory"), str):
            continue
        name = output.get("prompt_id") or output["trajectory"]
        try:
            out[name] = await get_json(objects, output["trajectory"])
        except Exception as exc:  # a missing object is shown, not fatal
            out[name] = {"missing": str(exc)}
    return out


async def trajectories(objects: Any, record: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The trajectory documents a record's prompts stored, in step order; for one the object
    store does not have, `{prompt_id, missing, prompt, response}` from the record."""
    stored = await stored_trajectories(objects, record)
    out: list[dict[str, Any]] = []
    for output in prompt_outputs(record):
        key = output.get("trajectory")
        doc = stored.get(output["prompt_id"] or key) if isinstance(key, str) else None
        why = "not stored"
        if isinstance(doc, dict) and set(doc) == {"missing"}:
            why, doc = doc["missing"], None
        if not isinstance(doc, dict):
            doc = {
                "prompt_id": output["prompt_id"],
                "missing": why,
                "prompt": output.get("prompt"),
                "response": output.get("response"),
            }
        out.append(doc)
    return out


#: How many trials' trajectories `trial_exports` reads at once (object reads overlap; memory
#: stays bounded by this many trials).
READ_AHEAD = 32


async def trial_exports(
    stores: Any,
    runs: Sequence[RunRecord | Mapping[str, Any]],
    *,
    attempts: bool = False,
    with_trajectories: bool = True,
) -> AsyncIterator[TrialExport]:
    """Every trial of `runs`, in run then plan order, as a format gets it (the trajectories of
    up to `READ_AHEAD` trials are read concurrently)."""
    batch: list[TaskInstanceRecord] = []
    for run in runs:
        async for record in run_records(stores.documents, run, attempts=attempts):
            batch.append(record)
            if len(batch) >= READ_AHEAD:
                for trial in await _exports(stores, batch, with_trajectories):
                    yield trial
                batch = []
    for trial in await _exports(stores, batch, with_trajectories):
        yield trial


async def _exports(
    stores: Any, records: list[TaskInstanceRecord], with_trajectories: bool
) -> list[TrialExport]:
    import anyio

    docs = [record.to_dict() for record in records]
    found: list[list[dict[str, Any]]] = [[] for _ in records]

    async def read(i: int) -> None:
        found[i] = await trajectories(stores.objects, docs[i])

    if with_trajectories:
        async with anyio.create_task_group() as tg:
            for i in range(len(records)):
                tg.start_soon(read, i)
    return [
        TrialExport(record=doc, row=record.to_row(), trajectories=traj)
        for record, doc, traj in zip(records, docs, found, strict=True)
    ]


async def export_runs(
    stores: Any,
    fmt: ExportFormat,
    runs: Sequence[RunRecord | Mapping[str, Any]],
    out: IO[bytes],
    *,
    attempts: bool = False,
) -> int:
    """Write the trials of `runs` to `out` in `fmt`; the number of rows."""
    trials = trial_exports(
        stores, runs, attempts=attempts, with_trajectories=fmt.needs_trajectories
    )
    return await fmt.write(trials, out)
