"""Resuming through the run pipeline (`RunRequest(resume=ID)`): a whole run (`run-...`: its
finished trials kept, unfinished ones resumed or started) or one task instance (`ti-...`),
with the bundle loaded again at the spec it was recorded with (pinned by its source when it
can be). Both come back as a `PreparedRun`, so they execute and end (summary, exit code) as
every run does."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

from agent_env.engine.records import DECIDED, RUNS, TaskInstanceRecord
from agent_env.runs.model import LoadedBundle, PreparedRun
from agent_env.runs.request import RunRequest

if TYPE_CHECKING:  # pragma: no cover
    from agent_env.runs.pipeline import RunPipeline


async def prepare_resume(pipeline: RunPipeline, request: RunRequest) -> PreparedRun:
    """The run or task instance `request.resume` names, ready to execute; `AgentEnvError` with
    a did-you-mean for an unknown id, or when its owner process still runs."""
    assert request.resume is not None
    run_doc = await pipeline.session.stores.documents.get(RUNS, request.resume)
    if run_doc is not None:
        return await _resume_run(pipeline, request, run_doc)
    return await _resume_instance(pipeline, request)


def reapply_agent_overrides(request: RunRequest, meta: Mapping[str, Any]) -> RunRequest:
    """A resumed run deploys the `--agent` / `--model` it started with, unless given again."""
    if request.agent or request.model or not (meta.get("agent") or meta.get("model")):
        return request
    return attrs.evolve(request, agent=meta.get("agent"), model=meta.get("model"))


async def _reload(pipeline: RunPipeline, request: RunRequest, spec: str) -> LoadedBundle:
    """The recorded bundle again, every task with this run's overrides applied."""
    loaded = await pipeline.load(attrs.evolve(request, spec=spec, resume=None), every_task=True)
    tasks = {t.name: t for t in loaded.tasks}
    return attrs.evolve(loaded, bundle=attrs.evolve(loaded.bundle, tasks=tasks))


async def _resume_run(
    pipeline: RunPipeline, request: RunRequest, run_doc: Mapping[str, Any]
) -> PreparedRun:
    from agent_env.costs import budget_of
    from agent_env.engine import trials as engine_trials
    from agent_env.engine.run import check_not_running, resume_spec

    request = reapply_agent_overrides(request, run_doc.get("meta") or {})
    loaded = await _reload(pipeline, request, resume_spec(run_doc["bundle"]))
    request = attrs.evolve(request, trials=int(run_doc.get("trials") or 1))
    retry = request.retry_infra
    trial_run = await engine_trials.resume_run(
        await pipeline.services(loaded, request),
        run_doc,
        bundle=loaded.bundle,
        task_versions=loaded.materialized.task_versions,
        retry_infra=None if retry is None else int(retry),
        check=check_not_running,
        meta={"agent": request.agent, "model": request.model}
        if (request.agent or request.model)
        else None,
    )
    from agent_env.runs.fork import reattach

    forked_from = (run_doc.get("meta") or {}).get("forked_from")
    trial_run.resources.update(await reattach(pipeline.session, forked_from))
    # the budget the run started with (or a new --budget-usd); kept trials count as spent
    budget = request.budget_usd or (run_doc.get("options") or {}).get("budget_usd")
    trial_run.budget = budget_of(pipeline.session.config, budget)
    if request.many:
        total = len(run_doc.get("instances", []))
        trial_run.progress = pipeline.observer.progress(request, total, trial_run.kept)
    if not trial_run.trials:
        pipeline.observer.notice(
            f"run {run_doc['id']}: every trial already finished; nothing to resume"
        )
    else:
        pipeline.observer.notice(
            f"resuming run {run_doc['id']}: {trial_run.kept} trial(s) finished and kept, "
            f"{len(trial_run.trials)} to run"
        )
    return PreparedRun(request=request, trial_run=trial_run, loaded=loaded, reap_used=True)


async def _resume_instance(pipeline: RunPipeline, request: RunRequest) -> PreparedRun:
    from agent_env.engine.run import check_not_running, load_record, resume_spec, task_for_resume
    from agent_env.engine.seeds import SeedTable
    from agent_env.engine.trials import Trial, TrialRun
    from agent_env.reporting.results import Results

    assert request.resume is not None
    stored = await load_record(pipeline.session.stores.documents, request.resume)
    record = TaskInstanceRecord.from_dict(stored)
    if record.status in DECIDED:
        pipeline.observer.notice(
            f"task instance {record.id} already finished: {record.outcome}; nothing to resume"
        )
        results = Results([record.task.name])
        results.add(record)
        done = TrialRun(
            None,
            run_id=record.run_id,
            bundle_info=record.bundle,
            tasks={},
            task_versions={},
            seeds=SeedTable(),
            results=results,
        )
        return PreparedRun(request=request, trial_run=done, instances=[], decided=[stored])
    check_not_running(record)
    loaded = await _reload(pipeline, request, resume_spec(record.bundle))
    task = task_for_resume(loaded.bundle, record, loaded.materialized.task_versions)
    trial_run = TrialRun(
        await pipeline.services(loaded, request),
        run_id=record.run_id,
        bundle_info=record.bundle,
        tasks={task.name: task},
        task_versions=loaded.materialized.task_versions,
        seeds=SeedTable(),
        retry_infra=int(request.retry_infra or 0),
        meta={"agent": request.agent, "model": request.model},
        results=Results([task.name]),
    )
    from agent_env.runs.fork import reattach

    trial_run.resources.update(await reattach(pipeline.session, stored.get("forked_from")))
    attempt = record.attempt or 0
    base = record.id.removesuffix(f"-r{attempt}") if attempt else record.id
    trial_run.trials = [
        Trial(trial_run, base, task.name, record.trial, resume=record, attempt=attempt)
    ]
    pipeline.observer.notice(f"resuming {record.id} (task {task.name}, status {record.status})")
    return PreparedRun(request=request, trial_run=trial_run, loaded=loaded, instances=[record.id])
