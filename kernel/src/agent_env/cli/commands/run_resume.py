"""`agent-env run --resume ID`: one task instance (`ti-...`) or a whole run (`run-...`),
loading the bundle at the spec it was recorded with (pinned by its source when it can be)."""

from __future__ import annotations

from typing import Any

from agent_env.cli.commands.run import _check_provider, _execute, _execute_trials, _load
from agent_env.cli.commands.run_output import ProgressReporter, err, summarize


async def resume(session: Any, opts: dict[str, Any], caught: list[int]) -> int:
    """Resume one task instance, or every unfinished instance of a run (`run-...`)."""
    from agent_env.engine import run as engine_run
    from agent_env.engine.instance import TaskInstance
    from agent_env.engine.records import DECIDED, RUNS

    documents = session.stores.documents
    run_doc = await documents.get(RUNS, opts["resume"])
    if run_doc is not None:
        return await resume_run(session, opts, caught, run_doc)
    records = [await engine_run.load_record(documents, opts["resume"])]
    run_id, evals = records[0]["run_id"], []
    spec = engine_run.resume_spec(records[0]["bundle"])
    todo = [r for r in records if r["status"] not in DECIDED]
    if not todo:
        err(
            f"task instance {records[0]['id']} already finished: {records[0]['outcome']}; "
            "nothing to resume"
        )
        return summarize(run_id, records, [], opts["as_json"], caught)
    for record in todo:
        engine_run.check_not_running(record)
    _check_provider(session, opts["provider"])
    bundle, materialized, _ = await _load(session, spec)
    tasks = [engine_run.task_for_resume(bundle, r, materialized.task_versions) for r in todo]
    services = await session.services(
        artifacts=materialized.artifacts,
        reporter=ProgressReporter(),
        default_provider=opts["provider"],
        keep=opts["keep"],
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
            run_id, final, engine_run.eval_summary(bundle, evals, final), opts["as_json"], caught
        )

    return await _execute(session, instances, opts, report)


async def resume_run(session: Any, opts: dict[str, Any], caught: list[int], run_doc) -> int:
    """Resume a run: finished trials kept, unfinished ones resumed or started."""
    from agent_env.cli.commands import run_trials
    from agent_env.engine import run as engine_run

    _check_provider(session, opts["provider"])
    reapply_agent_overrides(session, opts, run_doc.get("meta") or {})
    bundle, materialized, _ = await _load(session, engine_run.resume_spec(run_doc["bundle"]))
    trials = int(run_doc.get("trials") or 1)
    opts["trials"] = trials
    services = await session.services(
        artifacts=materialized.artifacts,
        reporter=run_trials.QuietReporter() if trials > 1 else ProgressReporter(),
        default_provider=opts["provider"],
        keep=opts["keep"],
    )
    trial_run = await run_trials.resume(session, services, opts, run_doc, bundle, materialized)
    if not trial_run.trials:
        err(f"run {run_doc['id']}: every trial already finished; nothing to resume")
    else:
        err(
            f"resuming run {run_doc['id']}: {trial_run.kept} trial(s) finished and kept, "
            f"{len(trial_run.trials)} to run"
        )
    code = await _execute_trials(session, trial_run, opts, caught)
    reaped = await session.sandboxes.reap_used()
    if reaped:
        err(f"reaped {len(reaped)} sandbox(es) the interrupted run left and no trial adopted")
    return code


def reapply_agent_overrides(session: Any, opts: dict[str, Any], meta: dict[str, Any]) -> None:
    """A resumed run deploys the `--agent` / `--model` it started with, unless given again."""
    if opts.get("agent") or opts.get("model") or not (meta.get("agent") or meta.get("model")):
        return
    from agent_env.config import configure, load_config

    overrides = {"override": meta.get("agent"), "model_override": meta.get("model")}
    configure(agents={k: v for k, v in overrides.items() if v})
    session.config = load_config(plugins=session.plugins)
    opts.update(agent=meta.get("agent"), model=meta.get("model"))
