"""`agent-env init bundle|env|task NAME`: write a working starting point (never overwriting);
`agent-env plugin new NAME`: a plugin package whose own tests pass.

Exit codes: 0 written; 1 a file already exists or the name is invalid (nothing written).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click


def _dir_option(default: Path | None, shown: str) -> Any:
    return click.option(
        "--dir",
        "folder",
        type=click.Path(file_okay=False, path_type=Path),
        default=default,
        help=f"The bundle folder to write into (default: {shown}).",
    )


_json_option = click.option(
    "--json", "as_json", is_flag=True, help="Print what was written as JSON."
)


def _write(folder: Path, planned: dict[str, str], as_json: bool, kind: str, name: str) -> None:
    from agentenv_scaffold.starters import write_new

    written = write_new(folder, planned)
    rel = [p.relative_to(folder).as_posix() for p in written]
    if as_json:
        payload = {"kind": kind, "name": name, "folder": str(folder.resolve()), "files": rel}
        click.echo(json.dumps(payload, indent=2))
        return
    for path in rel:
        click.echo(f"wrote {folder / path}")


@click.group("init")
def init() -> None:
    """Write a new bundle, env or task that works as is."""


@init.command("bundle")
@click.argument("name")
@_dir_option(None, "./NAME")
@_json_option
def init_bundle(name: str, folder: Path | None, as_json: bool) -> None:
    """A bundle folder with env NAME (two tools and the data plane) and task NAME, which
    passes with the scripted agent: `agent-env run FOLDER`."""
    from agentenv_scaffold.starters import check_name, plan_bundle

    target = folder if folder is not None else Path(check_name(name, "bundle"))
    _write(target, plan_bundle(name), as_json, "bundle", name)
    if not as_json:
        click.echo(f"next: agent-env check {target} && agent-env run {target}", err=True)


@init.command("env")
@click.argument("name")
@_dir_option(Path("."), ".")
@_json_option
def init_env(name: str, folder: Path, as_json: bool) -> None:
    """An env under envs/NAME: env.toml (a local command) and server.py, built on
    agentenv_protocol, with tools add_item and list_items and data/reset, add, get."""
    from agentenv_scaffold.starters import plan_env

    _write(folder, plan_env(name), as_json, "env", name)
    if not as_json:
        click.echo(f"next: agent-env env check {folder / 'envs' / name}", err=True)


@init.command("task")
@click.argument("name")
@click.option("--env", "env", metavar="ENV", help="The env the task deploys (default: NAME).")
@_dir_option(Path("."), ".")
@_json_option
def init_task(name: str, env: str | None, folder: Path, as_json: bool) -> None:
    """tasks/NAME.json and its verifier artifact: the task deploys ENV (an env written by
    `init env`), prompts the scripted agent and checks the env's state, answer and calls."""
    from agentenv_scaffold.starters import plan_task

    env = env or name
    _write(folder, plan_task(name, env, folder), as_json, "task", name)
    if not as_json:
        if not (folder / "envs" / env).is_dir():
            click.echo(
                f"note: {folder / 'envs' / env} does not exist yet: "
                f"agent-env init env {env} --dir {folder}",
                err=True,
            )
        click.echo(f"next: agent-env check {folder}", err=True)


@click.command("new")
@click.argument("name")
@click.option(
    "--dir",
    "parent",
    type=click.Path(file_okay=False),
    default=".",
    show_default=True,
    help="Create the package folder in this folder.",
)
def new_plugin(name: str, parent: str) -> None:
    """Create a plugin package NAME (pyproject, hooks.py, an example step type, tests, README)."""
    import importlib.util
    import shlex
    import sys
    from pathlib import Path

    from agentenv_scaffold.plugin import scaffold

    created = scaffold(name, Path(parent))
    click.echo(f"created {created.root}")
    for path in created.files:
        click.echo(f"  {path.relative_to(created.root)}")
    # The tests import agent_env: run them with the Python agent-env runs on, not the shell's.
    pytest = f"{shlex.quote(sys.executable)} -m pytest"
    click.echo(f"next: cd {created.root} && {pytest}   (then: agent-env plugin add {created.root})")
    if importlib.util.find_spec("pytest") is None:
        click.echo("  (pytest is not installed next to agent-env yet: install it there first)")
