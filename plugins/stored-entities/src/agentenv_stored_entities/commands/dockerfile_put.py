"""The reference's Dockerfile puts: `agent-env env mcp-server put --id ID --dockerfile PATH`
and `agent-env a2a-agent put --id ID --dockerfile PATH` store the build context (the
Dockerfile's folder, or `--context`) as an env or agent folder, checked as a bundle's would be."""

from __future__ import annotations

from pathlib import Path

import anyio
import click

from agentenv_stored_entities.commands.group import (
    echo_materialized,
    path_or_id,
    put_bundle,
    with_session,
)


def put_dockerfile(
    kind: str, entity_id: str, dockerfile: Path, context: Path | None, dry_run: bool, as_json: bool
) -> None:
    from agentenv_stored_entities.put import put_as

    done = anyio.run(
        with_session,
        lambda s: put_as(
            s,
            kind,
            entity_id,
            context or Path(dockerfile).parent,
            dockerfile=Path(dockerfile),
            dry_run=dry_run,
        ),
    )
    echo_materialized(done, as_json)


def _options(f):
    for option in reversed(
        [
            click.option(
                "--dockerfile", type=click.Path(path_type=Path), help="The Dockerfile to build."
            ),
            click.option(
                "--context",
                type=click.Path(file_okay=False, path_type=Path),
                help="The build context (default: the Dockerfile's folder); stored as the folder.",
            ),
            click.option(
                "--dry-run", is_flag=True, help="Show what would be written; write nothing."
            ),
            click.option("--json", "as_json", is_flag=True, help="Print JSON."),
        ]
    ):
        f = option(f)
    return f


@click.group("mcp-server")
def mcp_server() -> None:
    """MCP server envs by id, the reference's `env mcp-server put`."""


@mcp_server.command("put")
@click.option("--id", "entity_id", required=True, help="The env id, e.g. @local/lab/echo.")
@_options
def mcp_server_put(
    entity_id: str, dockerfile: Path | None, context: Path | None, dry_run: bool, as_json: bool
) -> None:
    """Store the build context of --dockerfile as env --id (its folder: the Dockerfile, an
    optional env.toml and the server's files); a new version only when it changed."""
    if dockerfile is None:
        raise click.UsageError("give --dockerfile (the env's Dockerfile)")
    put_dockerfile("env", entity_id, dockerfile, context, dry_run, as_json)


@click.command("put")
@click.argument("path", type=click.Path(path_type=Path), required=False)
@click.option(
    "--id", "entity_id", help="The agent id, e.g. @local/lab/my-agent (with --dockerfile)."
)
@_options
def a2a_agent_put(
    path: Path | None,
    entity_id: str | None,
    dockerfile: Path | None,
    context: Path | None,
    dry_run: bool,
    as_json: bool,
) -> None:
    """Store agents: from a bundle (PATH: BUNDLE or BUNDLE/agents/<name>), or the build context
    of --dockerfile under --id (the reference's form); a new version only when it changed."""
    path_or_id(path, entity_id, dockerfile, "--dockerfile")  # a usage error unless one form
    if entity_id and dockerfile:
        put_dockerfile("agent", entity_id, dockerfile, context, dry_run, as_json)
    elif path is not None:
        put_bundle("agent", path, dry_run, as_json)
