"""What `agent-env run` prints: progress lines on stderr, the summary and the dry-run plan on
stdout, and the exit codes (0 nothing failed; 1 a task failed or scored below 1; 2 usage error
or invalid bundle; 130 Ctrl-C; 143 SIGTERM)."""

from __future__ import annotations

import json
from typing import Any

import click

from agent_env.engine.services import Reporter
from agent_env.runs.pipeline import EXIT_FAILED as EXIT_FAILED
from agent_env.runs.pipeline import EXIT_OK as EXIT_OK
from agent_env.runs.pipeline import EXIT_SIGNAL as EXIT_SIGNAL

EXIT_USAGE = 2


def err(message: str) -> None:
    click.echo(message, err=True)


class ProgressReporter(Reporter):
    """Per-step progress lines on stderr: `[task] step: ok (0.02s)`."""

    def _tag(self, instance: Any) -> str:
        return f"[{instance.task_name}]"

    def step_started(self, instance: Any, step_id: str) -> None:
        pass

    def step_finished(
        self, instance: Any, step_id: str, status: str, seconds: float, error: str | None
    ) -> None:
        from agent_env.cli.output import echo, paint

        word = {"completed": "ok", "tolerated": "failed (tolerated)"}.get(status, status)
        word = paint(word, {"completed": "passed", "tolerated": "unscored"}.get(status, status))
        tail = f": {error}" if error else ""
        echo(f"{self._tag(instance)} {step_id}: {word} ({seconds:.2f}s){tail}", err=True)

    def log(self, instance: Any, step_id: str | None, message: str) -> None:
        where = f" {step_id}:" if step_id else ""
        err(f"{self._tag(instance)}{where} {message}")

    def instance_finished(self, instance: Any, record: dict[str, Any]) -> None:
        pass


def check_provider(session: Any, provider: str | None) -> None:
    """The run service's provider check as a usage error on `--sandbox`."""
    from agent_env.errors import PluginError, SandboxError
    from agent_env.runs.checks import check_provider as check

    try:
        check(session, provider)
    except (PluginError, SandboxError) as exc:
        raise click.BadParameter(str(exc), param_hint="--sandbox") from None


def echo_totals(run_id: str, records: list) -> None:
    """After more than one task: the failed ones again with their class and reason, then one
    line of totals (passed, not passed by failure class) and the run id."""
    from agent_env.cli.output import echo, paint

    if len(records) < 2:
        return
    not_passed = [r for r in records if r["status"] != "passed"]
    if not_passed:
        echo("not passed:")
        for r in not_passed:
            cls = r.get("failure_class") or r["status"]
            echo(f"  {r['task']['name']}  {paint(f'[{cls}]', cls)}  {reason(r)}  {r['id']}")
    classes: dict[str, int] = {}
    for r in not_passed:
        cls = r.get("failure_class") or r["status"]
        classes[cls] = classes.get(cls, 0) + 1
    by_class = ", ".join(paint(f"{c} {n}", c) for c, n in sorted(classes.items()))
    passed = len(records) - len(not_passed)
    tail = f", {len(not_passed)} not passed ({by_class})" if not_passed else ""
    head = paint(f"{passed} of {len(records)} passed", "failed" if not_passed else "passed")
    echo(f"{head}{tail}; run {run_id}")


def reason(record: dict) -> str:
    """Why a trial did not pass, in a line: its outcome (which names the failing step)."""
    return record.get("outcome") or record["status"]


def echo_trials(records: list) -> None:
    """One line a trial record: task, outcome (coloured by status), seconds, id."""
    from agent_env.cli.output import echo, paint

    width = max((len(r["task"]["name"]) for r in records), default=4)
    for r in records:
        seconds = r.get("seconds")
        took = f"{seconds:.2f}s" if isinstance(seconds, (int, float)) else "-"
        outcome = paint(r["outcome"] or r["status"], r["status"])
        echo(f"{r['task']['name']:<{width}}  {outcome}  {took}  {r['id']}")


def echo_evals(evals: list) -> None:
    for e in evals:
        click.echo(f"eval {e['name']}: {e['passed']} of {e['total']} passed")


def show_plan(
    bundle: Any, materialized: Any, tasks: list, evals: list, as_json: bool, trials: int = 1
) -> int:
    from agent_env.bundles.dag import resolve_dependencies

    plan = []
    for task in tasks:
        deps = resolve_dependencies(task.steps)
        plan.append(
            {
                "task": task.name,
                "id": task.id,
                "version": materialized.task_versions.get(task.name),
                "steps": [{"id": s.id, "type": s.type, "after": deps[s.id]} for s in task.steps],
            }
        )
    if as_json:
        click.echo(
            json.dumps(
                {
                    "dry_run": True,
                    "bundle": bundle.name,
                    "writes": materialized.lines,
                    "tasks": plan,
                    "evals": list(evals),
                    "trials": trials,
                },
                indent=2,
            )
        )
        return EXIT_OK
    click.echo(f"dry run of bundle {bundle.name!r}: nothing was written or run")
    click.echo("would write:")
    for line in materialized.lines:
        click.echo(f"  {line}")
    for item in plan:
        times = f", {trials} trials" if trials > 1 else ""
        click.echo(f"would run task {item['task']} ({len(item['steps'])} steps{times}):")
        for s in item["steps"]:
            after = ", ".join(s["after"]) or "-"
            click.echo(f"  {s['id']} ({s['type']}) after: {after}")
    for name in evals:
        click.echo(f"eval {name}")
    return EXIT_OK
