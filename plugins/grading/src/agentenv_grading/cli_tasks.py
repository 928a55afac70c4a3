"""`agent-env tasks ledger|health`: how tasks behave across runs (the task ledger) and whether
a task is solvable and passes without work (the health check)."""

from __future__ import annotations

import json
from typing import Any

import anyio
import click


@click.group()
def tasks() -> None:
    """Tasks across runs: the ledger (pass rates, intervals, flakiness) and health checks."""


def _fmt_rate(entry: dict[str, Any]) -> str:
    if entry["pass_rate"] is None:
        return "      -  (no rated trials)"
    low, high = entry["interval"]
    return f"{entry['pass_rate']:7.3f}  [{low:.3f}, {high:.3f}]"


def _fmt_health(health: dict[str, Any] | None) -> str:
    if health is None:
        return "not checked"
    parts = []
    if health.get("solvable") is not None:
        parts.append("solvable" if health["solvable"] else "NOT SOLVABLE by its oracle")
    if health.get("passes_without_work"):
        parts.append("PASSES WITHOUT WORK")
    return ", ".join(parts) or "checked"


@tasks.command("ledger")
@click.argument("task", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list, one entry per version.")
@click.option(
    "--rebuild",
    is_flag=True,
    help="Re-read every trial record of the document store into the ledger first (after "
    "runs on other hosts, or to start it from existing records).",
)
def ledger(task: str | None, as_json: bool, rebuild: bool) -> None:
    """Per task version, across runs: rated trials, pass rate with a Wilson 95% interval,
    flakiness (one agent+model with different outcomes) and the last health check. TASK (a
    name or id) shows one task."""
    from agentenv_grading import ledger as book

    if rebuild:
        added = anyio.run(_rebuild)
        click.echo(f"ledger: {added} trial record(s) read from the document store", err=True)
    rows = book.entries(task)
    if task and not rows:
        from agent_env.errors import AgentEnvError
        from agent_env.suggest import did_you_mean

        known = sorted({e["task"] for e in book.entries()})
        raise AgentEnvError(
            f"the ledger has no task {task!r}{did_you_mean(task, known)}; "
            f"known: {', '.join(known) or 'none (run tasks, or --rebuild)'}"
        )
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    if not rows:
        click.echo("the ledger is empty: run tasks (or `agent-env tasks ledger --rebuild`)")
        return
    for e in rows:
        version = "-" if e["task_version"] is None else f"v{e['task_version']}"
        flaky = "  FLAKY" if e["flaky"] else ""
        click.echo(
            f"{e['task']} {version}  trials {e['trials']:>5}  passed {e['passed']:>5}  "
            f"pass rate {_fmt_rate(e)}{flaky}  health: {_fmt_health(e['health'])}"
        )


async def _rebuild() -> int:
    from agent_env.results import TRIALS, open_configured_stores
    from agentenv_grading import ledger as book

    async with await open_configured_stores() as stores:
        records = [doc for _, doc in await stores.documents.list(TRIALS)]
    return book.add_trials(records)


@tasks.command("health")
@click.argument("target", metavar="BUNDLE/TASK")
@click.option("--sandbox", "provider", help="The sandbox provider both runs use.")
@click.option("--json", "as_json", is_flag=True, help="Print the finding as JSON.")
@click.pass_context
def health(ctx: click.Context, target: str, provider: str | None, as_json: bool) -> None:
    """Run TASK of BUNDLE with its oracle (the shipped solution) and with a do-nothing agent,
    through the run pipeline; record in the ledger whether the oracle solves it and whether it
    passes without work. Exit 1 when either is wrong."""
    from agentenv_grading.health import check_health, split_target

    spec, task = split_target(target)
    finding = anyio.run(check_health, spec, task, provider)
    if as_json:
        click.echo(json.dumps(finding, indent=2))
    else:
        click.echo(f"{finding['task']}: {finding['verdict']}")
        for probe in ("oracle", "do_nothing"):
            p = finding[probe]
            name = probe.replace("_", "-")
            click.echo(f"  {name:<10} {p['status']:<12} {p['outcome']}  ({p['run_id']})")
    if not finding["healthy"]:
        ctx.exit(1)
