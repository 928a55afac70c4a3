"""`agent-env run --resume ID`: one task instance (`ti-...`) or a whole run (`run-...`),
loading the bundle at the spec it was recorded with (pinned by its source when it can be)."""

from __future__ import annotations

from typing import Any

import attrs

from agent_env.cli.commands.run_output import ProgressReporter, check_provider, err, summarize
from agent_env.runs import overrides, service
from agent_env.runs.options import RunOptions


async def resume(session: Any, options: RunOptions, caught: list[int]) -> int:
    """Resume one task instance, or every unfinished instance of a run (`run-...`)."""
    from agent_env.engine import run as engine_run
    from agent_env.engine.instance import TaskInstance
    from agent_env.engine.records import DECIDED, RUNS

    assert options.resume is not None
    documents = session.stores.documents
    run_doc = await documents.get(RUNS, options.resume)
    if run_doc is not None:
        return await resume_run(session, options, caught, run_doc)
    records = [await engine_run.load_record(documents, options.resume)]
    run_id, evals = records[0]["run_id"], []
    spec = engine_run.resume_spec(records[0]["bundle"])
    todo = [r for r in records if r["status"] not in DECIDED]
    if not todo:
        err(
            f"task instance {records[0]['id']} already finished: {records[0]['outcome']}; "
            "nothing to resume"
        )
        return summarize(run_id, records, [], options.as_json, caught)
    for record in todo:
        engine_run.check_not_running(record)
    check_provider(session, options.provider)
    bundle, materialized, _ = await _load(session, spec)
    tasks = [engine_run.task_for_resume(bundle, r, materialized.task_versions) for r in todo]
    tasks, notes = overrides.apply(tasks, options)
    for line in notes:
        err(line)
    services = await session.services(
        artifacts=materialized.artifacts,
        reporter=ProgressReporter(),
        default_provider=options.provider,
        keep=options.keep,
        agent=options.agent,
        model=options.model,
    )
    from agent_env.engine.seeds import apply_seed

    instances = []
    for record, task in zip(todo, tasks, strict=True):
        values = record.get("seed_values")
        steps = apply_seed(task.steps, values) if values else task.steps
        instances.append(await TaskInstance.load(services, record, steps))
        err(f"resuming {record['id']} (task {task.name}, status {record['status']})")
    resumed = {inst.id: inst for inst in instances}

    def report() -> int:
        final = [resumed[r["id"]].record if r["id"] in resumed else r for r in records]
        return summarize(
            run_id, final, engine_run.eval_summary(bundle, evals, final), options.as_json, caught
        )

    return await service.execute(session, instances, options, report)


async def resume_run(session: Any, options: RunOptions, caught: list[int], run_doc) -> int:
    """Resume a run: finished trials kept, unfinished ones resumed or started."""
    from agent_env.cli.commands import run_trials
    from agent_env.engine import run as engine_run

    check_provider(session, options.provider)
    options = reapply_agent_overrides(options, run_doc.get("meta") or {})
    bundle, materialized, _ = await _load(session, engine_run.resume_spec(run_doc["bundle"]))
    bundle, notes = overrides.apply_to_bundle(bundle, options)
    for line in notes:
        err(line)
    options = attrs.evolve(options, trials=int(run_doc.get("trials") or 1))
    services = await run_trials.services(session, materialized, options)
    trial_run = await run_trials.resume(session, services, options, run_doc, bundle, materialized)
    if not trial_run.trials:
        err(f"run {run_doc['id']}: every trial already finished; nothing to resume")
    else:
        err(
            f"resuming run {run_doc['id']}: {trial_run.kept} trial(s) finished and kept, "
            f"{len(trial_run.trials)} to run"
        )
    code = await run_trials.execute(session, trial_run, options, caught)
    reaped = await session.sandboxes.reap_used()
    if reaped:
        err(f"reaped {len(reaped)} sandbox(es) the interrupted run left and no trial adopted")
    return code


def reapply_agent_overrides(options: RunOptions, meta: dict[str, Any]) -> RunOptions:
    """A resumed run deploys the `--agent` / `--model` it started with, unless given again."""
    if options.agent or options.model or not (meta.get("agent") or meta.get("model")):
        return options
    return attrs.evolve(options, agent=meta.get("agent"), model=meta.get("model"))


async def _load(session: Any, spec: str) -> tuple[Any, Any, Any]:
    loaded = await service.load_bundle(session, spec)
    for line in loaded[1].lines:
        err(line)
    return loaded
