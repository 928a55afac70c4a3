"""The trials half of `agent-env run`: plan or resume a run's trials (engine.trials), run them
with the live progress display, and print the results (table, `--json`, `--export`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import click

from agent_env.cli.commands.run_output import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_SIGNAL,
    ProgressReporter,
    echo_evals,
    echo_totals,
    echo_trials,
)
from agent_env.cli.commands.run_output import err as _err
from agent_env.engine.services import Reporter
from agent_env.runs.options import RunOptions


class QuietReporter(Reporter):
    """With many trials per-step lines would drown the progress line: only step failures of
    the first few trials that fail are shown."""

    def __init__(self, limit: int = 5):
        self.limit = limit
        self.shown = 0

    def step_finished(self, instance, step_id, status, seconds, error) -> None:
        if error and status == "failed" and self.shown < self.limit:
            self.shown += 1
            more = "" if self.shown < self.limit else " (further failures: see the table)"
            _err(
                f"[{instance.task_name} #{instance.record.get('trial', 0)}] {step_id}: "
                f"{instance.services.redactor(error)}{more}"
            )


def make_progress(session: Any, total: int, kept: int = 0) -> Any:
    from agent_env.cli.progress import Progress

    interval = session.config.get("run", "progress_interval", 10.0)
    return Progress(total, kept=kept, interval=interval)


async def services(session: Any, materialized: Any, options: RunOptions) -> Any:
    """The session's services for running `options`' trials of a materialized bundle:
    progress lines for one run, quiet for many."""
    return await session.services(
        artifacts=materialized.artifacts,
        reporter=QuietReporter() if options.many else ProgressReporter(),
        default_provider=options.provider,
        keep=options.keep,
        agent=options.agent,
        model=options.model,
    )


def meta(options: RunOptions) -> dict[str, Any]:
    return {"agent": options.agent, "model": options.model}


async def plan(
    session, services, options: RunOptions, bundle, materialized, tasks, evals, spec
) -> Any:
    """Write the run document and return the `TrialRun` (its `trials` go to the runner)."""
    from agent_env.runs import service

    k = options.trials
    progress = make_progress(session, k * len(tasks)) if k > 1 else None
    return await service.plan(
        session, services, options, bundle, materialized, tasks, evals, spec, progress=progress
    )


async def resume(session, services, options: RunOptions, run_doc, bundle, materialized) -> Any:
    from agent_env.engine import run as engine_run
    from agent_env.engine import trials as engine_trials

    retry = options.retry_infra
    trial_run = await engine_trials.resume_run(
        services,
        run_doc,
        bundle=bundle,
        task_versions=materialized.task_versions,
        retry_infra=None if retry is None else int(retry),
        check=engine_run.check_not_running,
        meta=meta(options) if (options.agent or options.model) else None,
    )
    if int(run_doc.get("trials") or 1) > 1:
        total = len(run_doc.get("instances", []))
        trial_run.progress = make_progress(session, total, kept=trial_run.kept)
    return trial_run


async def execute(
    session: Any,
    trial_run: Any,
    options: RunOptions,
    caught: list[int],
    *,
    not_run: list[str] | None = None,
) -> int:
    """Run the trials of `trial_run` through the run service, then `report` them; `not_run`
    names the tasks no eval names, which running every eval left out."""
    from agent_env.runs import service

    async def summary() -> int:
        return await report(session, trial_run, options, caught, not_run=not_run)

    return await service.execute(
        session, trial_run.trials, options, summary, progress=trial_run.progress
    )


def exit_code(summary: dict[str, Any], caught: list[int]) -> int:
    if caught:
        return EXIT_SIGNAL.get(caught[0], 130)
    bad = any(
        any(c != "unscored" for c in s["failures"]) or s["excluded"].get("infrastructure")
        for s in summary["tasks"]
    )
    return EXIT_FAILED if bad else EXIT_OK


async def report(
    session: Any,
    trial_run: Any,
    options: RunOptions,
    caught: list[int],
    *,
    not_run: list[str] | None = None,
) -> int:
    """Print the summary (per-trial lines for single-trial runs, the results table otherwise),
    write `--export`; the exit code."""
    from agent_env.cli.output import echo, paint_rate
    from agent_env.engine import trials as engine_trials
    from agent_env.engine.records import RUNS
    from agent_env.reporting.export import write_jsonl
    from agent_env.reporting.results import format_table

    documents = session.stores.documents
    summary = trial_run.results.summary()
    code = exit_code(summary, caught)
    run_doc = await documents.get(RUNS, trial_run.run_id)
    with anyio.CancelScope(shield=True):
        if options.export and run_doc is not None:
            path = Path(options.export).expanduser()
            with open(path, "w", encoding="utf-8") as out:
                rows = await write_jsonl(documents, run_doc, out)
            _err(f"wrote {rows} trial row(s) to {path}")
        single = not options.many and int((run_doc or {}).get("trials") or 1) == 1
        wanted = run_doc is not None and (options.as_json or single)
        records = await engine_trials.gather_records(documents, run_doc) if wanted else []
    evals = [
        {"name": e["name"], "passed": e["passed"], "total": e["trials"]} for e in summary["evals"]
    ]
    if options.as_json:
        data = {
            "run_id": trial_run.run_id,
            "exit_code": code,
            "tasks": records,
            "evals": evals,
            "results": summary,
        }
        if not_run:
            data["not_run"] = list(not_run)
        click.echo(json.dumps(data, indent=2, default=str))
        return code
    if single:
        echo_trials(records)
        echo_totals(trial_run.run_id, records)
    else:
        click.echo(f"run {trial_run.run_id}")
        for line in format_table(summary, wide=options.wide, style=paint_rate):
            echo(line)
    echo_evals(evals)
    if caught:
        unstarted = sum(1 for t in trial_run.trials if t.record is None)
        _err(
            f"interrupted: {unstarted} trial(s) did not finish; resume with: "
            f"agent-env run --resume {trial_run.run_id}"
        )
    sys.stdout.flush()
    return code
