"""`agent-env eval ...`: stored evals (list, show/get, put, validate, create, add-tasks, run)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import click

from agent_env.cli.toolkit import with_session
from agentenv_stored_entities.commands.group import echo_json, make_group
from agentenv_stored_entities.commands.stored_run import run_options, run_stored

eval_group = make_group(
    "eval", "Stored evals: list, show, put, create, add tasks to, validate and run them by id."
)

_REFS = (
    'FILEPATH is a JSON array of task references, [{"task_id": "@local/lab/hello", '
    '"task_version": 1}, {"task_id": "other"}]: a stored task id (or its name), and a version '
    "to pin (left out: the latest at run time)."
)


def _report(entity_id: str, result: Any, as_json: bool) -> None:
    if as_json:
        echo_json({"id": entity_id, "version": result.version, "status": result.status})
    else:
        click.echo(f"eval {entity_id}: {result.describe()}")


@eval_group.command("create", help=f"Store an eval of stored tasks as --id. {_REFS}")
@click.argument("filepath", type=click.Path(path_type=Path))
@click.option("--id", "entity_id", required=True, help="The eval id, e.g. @local/lab/smoke.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def create(filepath: Path, entity_id: str, as_json: bool) -> None:
    from agentenv_stored_entities.evals import create_eval, read_refs

    refs = read_refs(filepath)
    result = anyio.run(with_session, lambda s: create_eval(s.stores, entity_id, refs))
    _report(entity_id, result, as_json)


@eval_group.command(
    "add-tasks",
    help="Add stored tasks to a stored eval as a new version; a task already in it is "
    f"replaced (its pinned version too). {_REFS}",
)
@click.argument("filepath", type=click.Path(path_type=Path))
@click.option("--id", "ref", required=True, help="The eval id (or its name).")
@click.option(
    "--version", type=click.IntRange(min=1), help="Start from this version (default latest)."
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def add_tasks_cmd(filepath: Path, ref: str, version: int | None, as_json: bool) -> None:
    from agentenv_stored_entities.evals import add_tasks, read_refs

    refs = read_refs(filepath)
    base, result = anyio.run(with_session, lambda s: add_tasks(s.stores, ref, version, refs))
    _report(base.entity_id, result, as_json)


@eval_group.command("run")
@run_options("eval")
def run(**kw: Any) -> int:
    """Run the tasks of a stored eval by id through the same run service as `agent-env run`."""
    return run_stored("eval", kw)
