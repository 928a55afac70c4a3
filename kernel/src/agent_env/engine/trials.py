"""Trials: every selected task run K times, each trial its own task instance, built only when
it starts (memory stays flat in the number of trials) and resumable as a whole run.

The run document (`runs/<run_id>`) is written before anything runs and lists every trial:
`instances[i]` (the instance id of trial i's first attempt), `tasks[i]`, `trial_index[i]`, plus
the seed table. An infrastructure failure is re-run up to `retry_infra` times as a new instance
`<id>-r1`, `<id>-r2`...; only a trial's last attempt counts. `agent-env run --resume RUN_ID`
keeps every finished trial, resumes unfinished ones from their journal (pending, running,
cancelled, or never started), and gives infrastructure failures another attempt.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agent_env.costs import spent
from agent_env.engine import tickets
from agent_env.engine.instance import TaskInstance
from agent_env.engine.records import (
    FINISHED,
    RUNS,
    RunRecord,
    Status,
    TaskInstanceRecord,
    attempt_id,
    now_iso,
    owner,
    slot_id,
)
from agent_env.engine.seeds import SeedTable, apply_seed, uses_placeholders
from agent_env.engine.stored import as_run, latest_attempt, run_records
from agent_env.reporting.results import Results
from agent_env.resources import InstanceKey


def bundle_digest(bundle: Any) -> str | None:
    """sha256 over the bundle folder's files (relative path and content), hidden files and
    caches excluded: which bundle content a trial ran."""
    return tickets.bundle_digest(Path(bundle.root))


class TrialRun:
    """The trials of one run: what each needs to build its instance, the results so far and the
    progress display. `trials` is what a runner runs (each has `await trial.run()`)."""

    def __init__(
        self,
        services: Any,
        *,
        run_id: str,
        bundle_info: Mapping[str, Any],
        tasks: Mapping[str, Any],
        task_versions: Mapping[str, int],
        seeds: SeedTable,
        retry_infra: int = 0,
        meta: Mapping[str, Any] | None = None,
        results: Results,
        progress: Any = None,
        resources: Mapping[InstanceKey[Any], Any] | None = None,
    ):
        self.services = services
        #: Resources every instance starts with (`RunRequest.resources`).
        self.resources = dict(resources or {})
        self.run_id = run_id
        self.bundle_info = dict(bundle_info)
        self.tasks = dict(tasks)
        self.task_versions = dict(task_versions)
        self.seeds = seeds
        self.retry_infra = retry_infra
        self.meta = {k: v for k, v in (meta or {}).items() if v is not None}
        self.results = results
        self.progress = progress
        self.trials: list[Trial] = []
        self.kept = 0
        #: `--budget-usd`: no trial starts once `spent` (US dollars) reaches it; `not_started`
        #: counts the trials it held back.
        self.budget: float | None = None
        self.spent = 0.0
        self.not_started = 0
        #: The bundle folder, for a runner that ships it to other machines (`agent_env.runners`).
        self.bundle_root: Path | None = None
        names = sorted({"trial", "seed", *(k for e in seeds.entries for k in e)})
        self._seeded = {
            name: uses_placeholders(getattr(t, "raw", None) or [s.id for s in t.steps], names)
            or not getattr(t, "raw", None)
            for name, t in self.tasks.items()
        }

    def steps_for(self, task_name: str, values: Mapping[str, Any]) -> list[Any]:
        task = self.tasks[task_name]
        if not self._seeded.get(task_name):
            return task.steps
        return apply_seed(task.steps, values)

    def keep(self, record: TaskInstanceRecord) -> None:
        """A finished trial from before a resume: counted, not run again."""
        self.results.add(record)
        self.spent += spent(record.cost)
        self.kept += 1

    def over_budget(self) -> bool:
        """True when the budget is spent: the trial about to start is held back (counted)."""
        if self.budget is None or self.spent < self.budget:
            return False
        self.not_started += 1
        return True

    def finished(self, record: TaskInstanceRecord) -> None:
        self.results.add(record)
        self.spent += spent(record.cost)
        if self.progress is not None:
            self.progress.finished(record.status == Status.PASSED)


#: What a finished `Trial` keeps (its `record`): small, so a run's memory stays flat.
_SUMMARY = (
    "instance_id",
    "task",
    "trial",
    "attempt",
    "status",
    "failure_class",
    "score",
)


class Trial:
    """One planned trial: creates (or resumes) its instance when run, retries infrastructure
    failures, and then keeps only its export row (`record`)."""

    __slots__ = ("attempt", "base", "index", "owner", "record", "resume", "task")

    def __init__(
        self,
        owner: TrialRun,
        base: str,
        task: str,
        index: int,
        *,
        resume: TaskInstanceRecord | None = None,
        attempt: int = 0,
    ):
        self.owner = owner
        self.base = base
        self.task = task
        self.index = index
        self.resume = resume
        self.attempt = attempt
        self.record: dict[str, Any] | None = None

    @property
    def id(self) -> str:
        return attempt_id(self.base, self.attempt)

    @property
    def task_name(self) -> str:
        return self.task

    @property
    def run_id(self) -> str:
        return self.owner.run_id

    async def _instance(self) -> TaskInstance:
        instance = await self._build()
        for key, value in self.owner.resources.items():
            await instance.sandboxes.resources.get_or_start(key, functools.partial(_same, value))
        return instance

    async def _build(self) -> TaskInstance:
        run = self.owner
        if self.resume is not None:
            record, self.resume = self.resume, None
            values = record.seed_values or run.seeds.values(self.index)
            steps = run.steps_for(self.task, values)
            return await TaskInstance.load(run.services, record, steps)
        values = run.seeds.values(self.index)
        return await TaskInstance.create(
            run.services,
            task=run.tasks[self.task],
            instance_id=self.id,
            run_id=run.run_id,
            bundle=run.bundle_info,
            task_version=run.task_versions.get(self.task),
            trial=self.index,
            seed=values["seed"],
            steps=run.steps_for(self.task, values),
            meta={**run.meta, "seed_values": values, "attempt": self.attempt},
            write=False,
        )

    def ticket(self) -> tickets.TrialTicket:
        """This trial as plain data, for a worker in another process (`agent_env.runners`)."""
        return tickets.TrialTicket(
            slot=self.base, task=self.task, index=self.index, attempt=self.attempt
        )

    async def run_remote(self, call: Any) -> dict[str, Any] | None:
        """Run this trial elsewhere: `await call(ticket)` returns its final record (a dict,
        written to the shared stores by the worker); counted here as `run()` counts."""
        run = self.owner
        if run.over_budget():
            return None
        progress = run.progress
        if progress is not None:
            progress.started()
        final: TaskInstanceRecord | None = None
        try:
            final = TaskInstanceRecord.from_dict(await call(self.ticket()))
        finally:
            if final is None and progress is not None:
                progress.abandoned()
        return self._finish(final)

    def _finish(self, final: TaskInstanceRecord) -> dict[str, Any]:
        row = final.to_row()
        self.record = {k: row[k] for k in _SUMMARY}
        self.attempt = final.attempt or self.attempt
        self.owner.finished(final)
        return self.record

    async def run(self) -> dict[str, Any] | None:
        """Run the trial to its final record (its export summary); None when the run's budget
        was spent before it started."""
        run = self.owner
        if run.over_budget():
            return None
        progress = run.progress
        if progress is not None:
            progress.started()
        retries = 0
        final: TaskInstanceRecord | None = None
        try:
            while True:
                instance = await self._instance()
                try:
                    await instance.run()
                except asyncio.CancelledError:
                    if instance.live.status == Status.CANCELLED:
                        run.results.add(instance.live)
                    raise
                final = instance.live
                del instance
                if not final.retryable() or retries >= run.retry_infra:
                    break
                retries += 1
                self.attempt += 1
                if progress is not None:
                    progress.retried += 1
        finally:
            if final is None and progress is not None:
                progress.abandoned()
        return self._finish(final)


async def plan_run(
    services: Any,
    *,
    run_id: str,
    bundle: Any,
    bundle_info: Mapping[str, Any],
    tasks: Sequence[Any],
    evals: Sequence[str],
    task_versions: Mapping[str, int],
    trials: int = 1,
    seeds: SeedTable | None = None,
    retry_infra: int = 0,
    meta: Mapping[str, Any] | None = None,
    progress: Any = None,
    options: Mapping[str, Any] | None = None,
    front_end: str | None = None,
    runner: str | None = None,
    resources: Mapping[InstanceKey[Any], Any] | None = None,
) -> TrialRun:
    """Write the run document for `trials` trials of each task and return the run to execute.

    Trials are interleaved by trial index (every task's trial 0 first) so partial results
    cover every task early."""
    if trials < 1:
        raise ValueError(f"trials must be at least 1, got {trials}")
    seeds = seeds or SeedTable()
    order = [(t.name, i) for i in range(trials) for t in tasks]
    ids = [slot_id(run_id, n) for n in range(len(order))]
    record = RunRecord(
        id=run_id,
        bundle=dict(bundle_info),
        evals=list(evals),
        instances=ids,
        tasks=[name for name, _ in order],
        trial_index=[i for _, i in order],
        trials=trials,
        task_versions={t.name: task_versions.get(t.name) for t in tasks},
        eval_tasks=_eval_tasks(bundle, evals, tasks),
        seed_table=[dict(e) for e in seeds.entries],
        seed_source=seeds.source,
        retry_infra=retry_infra,
        meta={k: v for k, v in (meta or {}).items() if v is not None},
        options=dict(options or {}),
        owner=owner(),
        created_at=now_iso(),
        front_end=front_end,
        runner=runner,
    )
    await services.stores.documents.put(RUNS, run_id, record.to_dict())
    run = TrialRun(
        services,
        run_id=run_id,
        bundle_info=bundle_info,
        tasks={t.name: t for t in tasks},
        task_versions=task_versions,
        seeds=seeds,
        retry_infra=retry_infra,
        meta=meta,
        results=Results([t.name for t in tasks], _eval_tasks(bundle, evals, tasks)),
        progress=progress,
        resources=resources,
    )
    run.trials = [Trial(run, base, name, i) for base, (name, i) in zip(ids, order, strict=True)]
    run.bundle_root = Path(bundle.root)
    return run


def _eval_tasks(bundle: Any, evals: Sequence[str], tasks: Sequence[Any]) -> dict[str, list[str]]:
    chosen = {t.name for t in tasks}
    return {
        name: [t for t in bundle.evals[name].tasks if t in chosen]
        for name in evals
        if name in bundle.evals
    }


async def resume_run(
    services: Any,
    run_doc: RunRecord | Mapping[str, Any],
    *,
    bundle: Any,
    task_versions: Mapping[str, int],
    retry_infra: int | None = None,
    progress: Any = None,
    check: Any = None,
    meta: Mapping[str, Any] | None = None,
) -> TrialRun:
    """The unfinished trials of a recorded run (its record or stored document), ready to run;
    finished ones are already counted in `results`. `check(record)` may refuse a record (e.g.
    its owner process is alive)."""
    from agent_env.engine.run import check_owner_gone, task_for_resume

    documents = services.stores.documents
    run_record = as_run(run_doc)
    if run_record.owner:
        # A run whose process still runs would start the same trials twice.
        check_owner_gone(run_record.id, run_record.owner)
        dead_owner = run_record.owner
        run_record.owner = owner()
        await documents.put(RUNS, run_record.id, run_record.to_dict())
        if services.sandboxes is not None:
            # lease the whole run's leftovers to this process before any trial adopts its own
            await services.sandboxes.take_over(run_id=run_record.id, dead_owner=dead_owner)
    ids, names = run_record.instances, run_record.tasks
    seeds = SeedTable(entries=tuple(run_record.seed_table), source=run_record.seed_source)
    task_names = list(dict.fromkeys(names))
    tasks = {
        name: task_for_resume(
            bundle,
            {"id": run_record.id, "task": {"name": name, "version": _version(run_record, name)}},
            task_versions,
        )
        for name in task_names
    }
    run = TrialRun(
        services,
        run_id=run_record.id,
        bundle_info=run_record.bundle,
        tasks=tasks,
        task_versions=task_versions,
        seeds=seeds,
        retry_infra=run_record.retry_infra if retry_infra is None else retry_infra,
        meta=run_record.meta if meta is None else meta,
        results=Results(task_names, _eval_tasks(bundle, run_record.evals, list(tasks.values()))),
        progress=progress,
    )
    run.bundle_root = Path(bundle.root)
    for base, name, i in zip(ids, names, run_record.trial_numbers(), strict=True):
        record, attempt = await latest_attempt(documents, base)
        if record is None:
            run.trials.append(Trial(run, base, name, i, attempt=0))
        elif record.retryable():
            run.trials.append(Trial(run, base, name, i, attempt=attempt + 1))
        elif record.status in FINISHED:
            run.keep(record)
        else:
            if check is not None:
                check(record)
            task_for_resume(bundle, record, task_versions)
            run.trials.append(Trial(run, base, name, i, resume=record, attempt=attempt))
    return run


def _version(run: RunRecord, name: str) -> int | None:
    return run.task_versions.get(name)


async def gather_records(
    documents: Any, run_doc: RunRecord | Mapping[str, Any]
) -> list[dict[str, Any]]:
    """Every trial's last record as stored (for `--json`), read back from the store."""
    return [r.to_dict() async for r in run_records(documents, run_doc)]


def _same(value: object) -> object:
    """`value` itself: what a resource handed in by the owner starts as."""
    return value
