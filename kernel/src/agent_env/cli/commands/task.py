"""`agent-env task ...`: stored tasks (list, show/get, put, create, validate, run, run-batch)."""

from __future__ import annotations

from pathlib import Path

import anyio
import click

from agent_env.cli.commands.entity_group import echo_json, make_group, with_session

task = make_group("task", "Stored tasks: list, show, put, create, validate and run them by id.")


@task.command("create")
@click.argument("filepath", type=click.Path(path_type=Path))
@click.option("--id", "entity_id", required=True, help="The task id, e.g. @local/lab/hello.")
@click.option("--skip-validation", is_flag=True, help="Save even if the check finds problems.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def create(filepath: Path, entity_id: str, skip_validation: bool, as_json: bool) -> None:
    """Store the steps of FILEPATH (a JSON array of steps) as task --id, a new version only
    when they changed. Names in the steps resolve against the entities stored beside the id."""
    from agent_env.entities.put import create_task, read_steps

    steps = read_steps(filepath)
    result, problems = anyio.run(
        with_session, lambda s: create_task(s, entity_id, steps, skip_validation=skip_validation)
    )
    if problems:
        click.echo(f"warning: saved despite problems: {problems}", err=True)
    if as_json:
        echo_json({"id": entity_id, "version": result.version, "status": result.status})
    else:
        click.echo(f"task {entity_id}: {result.describe()}")


def _run_options(f):
    f = click.option("--id", "ref", required=True, help="The stored task id (or its name).")(f)
    f = click.option(
        "--version", type=click.IntRange(min=1), help="Task version (default latest)."
    )(f)
    f = click.option(
        "--sandbox", "provider", metavar="NAME", help="Sandbox provider for every step."
    )(f)
    f = click.option(
        "--agent", metavar="NAME", help="Deploy this agent in every deploy_agent step."
    )(f)
    f = click.option(
        "--agent-model", "--model", "model", metavar="NAME", help="Model for every agent."
    )(f)
    f = click.option("--judge-model", metavar="NAME", help="Model for every judge.")(f)
    f = click.option("--user-model", metavar="NAME", help="Model for every simulated user.")(f)
    f = click.option(
        "--retry-infra", type=click.IntRange(min=0), help="Re-run infra failures N times."
    )(f)
    f = click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")(f)
    return f


def _options(**kw):
    from agent_env.runs.options import RunOptions

    return RunOptions(
        spec=None,
        as_json=kw["as_json"],
        provider=kw["provider"],
        agent=kw["agent"],
        model=kw["model"],
        judge_model=kw["judge_model"],
        user_model=kw["user_model"],
        trials=kw.get("trials", 1),
        concurrency=kw.get("concurrency"),
        retry_infra=kw["retry_infra"],
        seeds=kw.get("seeds"),
    )


@task.command("run")
@_run_options
@click.option(
    "--k",
    "--trials",
    "trials",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Run the task this many times (pass rates, pass@k).",
)
@click.option("--concurrency", type=click.IntRange(min=1), help="At most this many trials at once.")
def run(ref: str, version: int | None, **kw) -> int:
    """Run a stored task by id through the same run service as `agent-env run`.
    Exit codes: 0 passed, 1 failed or scored below 1, 130 Ctrl-C."""
    from agent_env.cli.commands.stored_run import run_stored

    return run_stored("task", ref, version, _options(**kw))


@task.command("run-batch")
@_run_options
@click.option(
    "--seeds", required=True, type=click.Path(exists=True), help="Seed table (one trial per row)."
)
@click.option("--concurrency", type=click.IntRange(min=1), help="At most this many trials at once.")
def run_batch(ref: str, version: int | None, seeds: str, **kw) -> int:
    """Run a stored task once per seed row of --seeds ({placeholder} substitution)."""
    from agent_env.cli.commands.stored_run import run_stored
    from agent_env.engine.seeds import load_seed_table

    table = load_seed_table(Path(seeds), Path(seeds).parent)
    kw["trials"] = max(1, len(table.entries))
    kw["seeds"] = seeds
    return run_stored("task", ref, version, _options(**kw))
