"""`agent-env eval ...`: stored evals (list, show/get, put, validate, run)."""

from __future__ import annotations

import click

from agent_env.cli.commands.entity_group import make_group
from agent_env.cli.commands.task import _options, _run_options

eval_group = make_group("eval", "Stored evals: list, show, put, validate and run them by id.")


@eval_group.command("run")
@_run_options
@click.option(
    "--k",
    "--trials",
    "trials",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Run every task of the eval this many times.",
)
@click.option(
    "--max-concurrency",
    "--concurrency",
    "concurrency",
    type=click.IntRange(min=1),
    help="At most this many task runs at once.",
)
def run(ref: str, version: int | None, **kw) -> int:
    """Run the tasks of a stored eval by id through the same run service as `agent-env run`."""
    from agent_env.cli.commands.stored_run import run_stored

    return run_stored("eval", ref, version, _options(**kw))
