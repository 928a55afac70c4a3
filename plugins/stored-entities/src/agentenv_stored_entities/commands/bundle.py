"""`agent-env bundle init FOLDER --from-task ID | --from-eval ID`: stored entities as a folder;
`agent-env bundle push FOLDER DESTINATION`: a bundle folder published where a plugin puts it
(the hf-hub plugin: `hf://org/repo[@branch][/path]`)."""

from __future__ import annotations

from pathlib import Path

import anyio
import click

from agent_env.cli.toolkit import with_session
from agentenv_stored_entities.commands.group import echo_json


@click.group("bundle")
def bundle() -> None:
    """Bundle folders from the stores."""


@bundle.command("init")
@click.argument("folder", type=click.Path(path_type=Path))
@click.option("--from-task", metavar="ID", help="Import this stored task, by id (or name).")
@click.option("--from-eval", metavar="ID", help="Import this stored eval and every task it names.")
@click.option(
    "--version", type=click.IntRange(min=1), help="The version to import (default latest)."
)
@click.option(
    "--include-scope",
    type=click.Choice(["user"]),
    multiple=True,
    help="Keep the fields of this scope (sandbox_type, env_state_*) as stored.",
)
@click.option("--json", "as_json", is_flag=True, help="Print what was written as JSON.")
def init(
    folder: Path,
    from_task: str | None,
    from_eval: str | None,
    version: int | None,
    include_scope: tuple[str, ...],
    as_json: bool,
) -> None:
    """Write a stored task (or eval and its tasks) with the artifacts, skills, envs and agents
    stored beside it into FOLDER (new or empty), byte for byte (entities of the kinds plugins
    declare too), plus README.md and provenance.json. Nothing is written to a store; an export that fails writes nothing."""
    from agent_env.cli.toolkit import export

    if (from_task is None) == (from_eval is None):
        raise click.UsageError("give one of --from-task or --from-eval")

    def go(s):
        declared = s.plugins.registry("entity_kinds")
        return export(
            s.stores,
            folder,
            task=from_task,
            evaluation=from_eval,
            version=version,
            include_user_scope="user" in include_scope,
            kinds=[declared.get(n) for n in declared.names()],
        )

    done = anyio.run(with_session, go)
    if as_json:
        echo_json(
            {
                "folder": str(done.folder),
                "from": done.origin,
                "written": done.written,
                "left_out": done.left_out,
            }
        )
        return
    o = done.origin
    click.echo(f"Imported {o['kind']} {o['id']} v{o['version']} into {done.folder}:")
    for w in done.written:
        click.echo(f"Written: {w['folder']}: {w['kind']} {w['id']} v{w['version']}")
    for line in done.left_out:
        click.echo(f"Left out: {line}")
    click.echo(f"Run it with: agent-env run {done.folder}")


@bundle.command("push")
@click.argument("folder", type=click.Path(path_type=Path, exists=True, file_okay=False))
@click.argument("destination")
@click.option("--message", "-m", help="The commit message (default: names the folder).")
@click.option("--json", "as_json", is_flag=True, help="Print where it went as JSON.")
def push(folder: Path, destination: str, message: str | None, as_json: bool) -> int:
    """Publish the bundle FOLDER to DESTINATION (e.g. hf://org/repo, hf://org/repo@branch,
    hf://org/repo/bundles/name), after validating it as `agent-env check` does: a bundle
    with problems is not pushed. Then `agent-env run DESTINATION` runs it.

    Exit codes: 0 pushed, 1 the push failed, 2 the bundle has problems."""
    from agent_env.bundles import load_bundle
    from agent_env.errors import BundleError
    from agent_env.plugins import get_plugin_manager

    plugins = get_plugin_manager()
    try:
        bundle = load_bundle(str(folder), plugins)
    except BundleError as exc:
        click.echo(f"Error: {exc}", err=True)
        return 2
    done = plugins.push_bundle(bundle.root, destination, message)
    if done is None:
        raise BundleError(
            f"no installed plugin pushes to {destination!r}; hf://org/repo needs the "
            "agentenv-hf-hub plugin"
        )
    if as_json:
        echo_json({"bundle": bundle.name, **done})
    else:
        click.echo(
            f"Pushed bundle {bundle.name!r} to {destination}: {done.get('commit') or 'done'}"
        )
        click.echo(f"Run it with: agent-env run {destination}")
    return 0
