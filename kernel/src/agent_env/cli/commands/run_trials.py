"""What the run commands show of a run (`CliObserver`, given to `agent_env.runs.pipeline`):
notices and step progress on stderr, the live progress line of a run with trials, and the
result on stdout (per-trial lines, the results table, or `--json`)."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

import click

from agent_env.cli.commands.run_output import (
    ProgressReporter,
    echo_evals,
    echo_totals,
    echo_trials,
)
from agent_env.cli.commands.run_output import err as _err
from agent_env.cli.startup import resume_collector
from agent_env.engine.services import Reporter
from agent_env.runs.pipeline import Progress, RunObserver, RunResult
from agent_env.runs.request import RunRequest


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


class CliObserver(RunObserver):
    """Shows a run on the terminal; `signals` is the list the command's signal guard fills.
    `show_result=False` leaves the result to the command (`env deploy`)."""

    def __init__(
        self,
        request: RunRequest,
        *,
        interval: float = 10.0,
        signals: Sequence[int] = (),
        show_result: bool = True,
    ) -> None:
        self.request = request
        self.interval = interval
        self.signals = signals
        self.show_result = show_result

    def notice(self, line: str) -> None:
        _err(line)

    def reporter(self, request: RunRequest) -> Reporter:
        # asked once, as the run's engine services are built: set-up is over, trials start
        resume_collector()
        return QuietReporter() if request.many else ProgressReporter()

    def progress(self, request: RunRequest, total: int, kept: int) -> Progress | None:
        from agent_env.cli.progress import Progress as Display

        return Display(total, kept=kept, interval=self.interval)

    def finished(self, result: RunResult) -> None:
        if self.show_result:
            show(result, self.request, self.signals)


def show(result: RunResult, request: RunRequest, signals: Sequence[int] = ()) -> None:
    """Print the result: per-trial lines for single-trial runs, the results table otherwise,
    or `--json`."""
    from agent_env.cli.output import echo, paint_rate
    from agent_env.reporting.results import format_table

    if request.as_json:
        data: dict[str, Any] = {
            "run_id": result.run_id,
            "exit_code": result.exit_code,
            "tasks": result.records,
            "evals": result.evals,
            "results": result.summary,
        }
        if result.not_run:
            data["not_run"] = list(result.not_run)
        click.echo(json.dumps(data, indent=2, default=str))
        return
    if result.single:
        echo_trials(result.records)
        echo_totals(result.run_id, result.records)
    else:
        click.echo(f"run {result.run_id}")
        for line in format_table(result.summary, wide=request.wide, style=paint_rate):
            echo(line)
    echo_evals(result.evals)
    if signals:
        _err(
            f"interrupted: {result.unfinished} trial(s) did not finish; resume with: "
            f"agent-env run --resume {result.run_id}"
        )
    sys.stdout.flush()


def observer(session: Any, request: RunRequest, signals: Sequence[int] = ()) -> CliObserver:
    """The observer of a run command, with the config's `[run] progress_interval`."""
    interval = session.config.get("run", "progress_interval", 10.0)
    return CliObserver(request, interval=interval, signals=signals)
