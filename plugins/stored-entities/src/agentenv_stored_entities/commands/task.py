"""`agent-env task ...`: stored tasks (list, show/get, put, create, validate, run, run-batch)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import click

from agent_env.cli.toolkit import with_session
from agentenv_stored_entities.commands.group import echo_json, make_group
from agentenv_stored_entities.commands.stored_run import run_options, run_stored

task = make_group("task", "Stored tasks: list, show, put, create, validate and run them by id.")


@task.command("create")
@click.argument("filepath", type=click.Path(path_type=Path))
@click.option("--id", "entity_id", required=True, help="The task id, e.g. @local/lab/hello.")
@click.option("--skip-validation", is_flag=True, help="Save even if the check finds problems.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def create(filepath: Path, entity_id: str, skip_validation: bool, as_json: bool) -> None:
    """Store the steps of FILEPATH (a JSON array of steps) as task --id, a new version only
    when they changed. Names in the steps resolve against the entities stored beside the id."""
    from agentenv_stored_entities.put import create_task, read_steps

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


@task.command("run")
@run_options("task")
def run(**kw: Any) -> int:
    """Run a stored task by id through the same run service as `agent-env run`.
    Exit codes: 0 passed, 1 failed or scored below 1, 130 Ctrl-C."""
    return run_stored("task", kw)


@task.command("run-batch")
@run_options("task", trials=False)
@click.option(
    "--seeds", required=True, type=click.Path(exists=True), help="Seed table (one trial per row)."
)
def run_batch(seeds: str, **kw: Any) -> int:
    """Run a stored task once per seed row of --seeds ({placeholder} substitution)."""
    from agent_env.cli.toolkit import load_seed_table

    table = load_seed_table(Path(seeds), Path(seeds).parent)
    return run_stored("task", {**kw, "trials": max(1, len(table.entries)), "seeds": seeds})


@task.command("get-instance")
@click.option("--id", "ident", required=True, help="The task instance id (ti-...).")
def get_instance(ident: str) -> None:
    """Print a task instance's record (its steps, outcome, scores) as JSON; `runs show ID`
    shows it for reading."""
    from agent_env.cli.toolkit import load_record

    async def go(session: Any) -> Any:
        return await load_record(session.stores.documents, ident)

    echo_json(anyio.run(with_session, go))
