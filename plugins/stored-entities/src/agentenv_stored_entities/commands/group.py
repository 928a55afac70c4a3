"""The commands every stored-entity group shares (`list`, `show`/`get`, `put`, `validate`),
built for one kind; `task`, `eval`, `env`, `agent`/`a2a-agent` and `artifact` add their own."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypeVar, overload

import anyio
import click

from agent_env.cli.toolkit import with_session


def echo_json(value: Any) -> None:
    click.echo(json.dumps(value, indent=2, default=str))


def echo_materialized(done: Any, as_json: bool) -> None:
    """What a put wrote: one line per entity, or JSON rows of kind, name and version."""
    if as_json:
        echo_json([{"kind": k, "name": n, "version": v} for (k, n), v in done.versions.items()])
        return
    for line in done.lines:
        click.echo(line)


def put_bundle(kind: str, path: Path, dry_run: bool, as_json: bool) -> None:
    """`<kind> put PATH`: the `kind` entities of the bundle around PATH, and what they need."""
    from agentenv_stored_entities.put import put_path

    done = anyio.run(with_session, lambda s: put_path(s, kind, path, dry_run=dry_run))
    echo_materialized(done, as_json)


def path_or_id(path: Path | None, entity_id: str | None, source: Any, flag: str) -> bool:
    """True for a put by id (`--id` with `flag`), False for a put of bundle PATH; a usage
    error unless exactly one of the two forms is given."""
    if path is not None and (entity_id or source):
        raise click.UsageError(f"give PATH, or --id with {flag}, not both")
    if path is None and not (entity_id and source):
        raise click.UsageError(f"give PATH, or --id with {flag}")
    return path is None


def _show_text(data: dict[str, Any]) -> None:
    click.echo(f"{data['kind']} {data['id']} v{data['version']} (of {data['versions']})")
    click.echo(f"digest: {data['digest']}")
    if data.get("type"):
        click.echo(f"type: {data['type']}")
    for rel, digest in sorted(data["files"].items()):
        click.echo(f"file: {rel}  {digest[:12]}")
    runs = data["runs"]
    click.echo(f"runs: {len(runs)}" + ("" if runs else " (no run has used this version)"))
    for r in runs:
        click.echo(f"  {r['run_id']}  as {r['id']} v{r['version']}")


_ONE_OF = "give a PATH or a stored ID (or --id ID)"


G = TypeVar("G", bound=click.Group)


@overload
def make_group(
    kind: str, help_text: str, *, name: str | None = None, declared: Any = None
) -> click.Group: ...


@overload
def make_group(
    kind: str, help_text: str, *, name: str | None = None, cls: type[G], declared: Any = None
) -> G: ...


def make_group(
    kind: str,
    help_text: str,
    *,
    name: str | None = None,
    cls: type[click.Group] = click.Group,
    declared: Any = None,
) -> click.Group:
    """A click group named `name` (default `kind`) with list, show, get, put and validate;
    `declared` (an `EntityKind` a plugin registered) reads and checks files its own way."""

    @click.group(name or kind, cls=cls, help=help_text)
    def group() -> None:
        pass

    @group.command("list")
    @click.option("--match", metavar="TEXT", help="Only ids that contain TEXT.")
    @click.option("--type", "type_", metavar="TYPE", help=f"Only {kind}s of this type.")
    @click.option(
        "--limit",
        type=click.IntRange(min=0),
        default=50,
        show_default=True,
        help="At most this many rows; 0 lists them all.",
    )
    @click.option("--offset", type=click.IntRange(min=0), default=0, help="Skip this many rows.")
    @click.option("--json", "as_json", is_flag=True, help="Print JSON.")
    def list_cmd(
        match: str | None, type_: str | None, limit: int, offset: int, as_json: bool
    ) -> None:
        from agentenv_stored_entities.catalog import list_entities

        async def go(session: Any) -> Any:
            return await list_entities(
                session.stores, kind, match=match, type_=type_, offset=offset, limit=limit or None
            )

        page = anyio.run(with_session, go)
        if as_json:
            echo_json({"total": page.total, "offset": offset, "rows": page.rows})
            return
        if not page.rows:
            click.echo(f"No {kind}s stored" + (" match" if match or type_ else "") + ".")
            return
        for r in page.rows:
            extra = f"  {r['type']}" if r["type"] else ""
            click.echo(f"{r['id']}  v{r['version']}{extra}  {r['digest'][:19]}")
        if page.total > offset + len(page.rows):
            click.echo(
                f"({page.total - offset - len(page.rows)} more; use --offset/--limit)", err=True
            )

    list_cmd.help = f"List the stored {kind}s (the latest version of each), filtered and paged."

    def _show(ref: str, version: int | None, as_json: bool) -> None:
        from agentenv_stored_entities.catalog import show

        data = anyio.run(with_session, lambda s: show(s.stores, kind, ref, version))
        if as_json:
            echo_json(data)
        else:
            _show_text(data)

    @group.command(
        "show",
        help=f"Show a stored {kind}: a version, its digest, files and the runs that used it.",
    )
    @click.argument("ref", metavar="ID")
    @click.option("--version", type=click.IntRange(min=1), help="This version (default latest).")
    @click.option("--json", "as_json", is_flag=True, help="Print JSON, content included.")
    def show_cmd(ref: str, version: int | None, as_json: bool) -> None:
        _show(ref, version, as_json)

    @group.command("get", help=f"Print a stored {kind} as JSON (the reference's `get --id`).")
    @click.option("--id", "ref", required=True, help=f"The {kind} id (or its name).")
    @click.option("--version", type=click.IntRange(min=1), help="This version (default latest).")
    def get_cmd(ref: str, version: int | None) -> None:
        _show(ref, version, True)

    put_help = (
        f"Store the {kind}s of a bundle folder, or the one at BUNDLE/<kind folder>/<name>, "
        "as new versions when their digest changed."
    )
    if declared is not None:
        put_help = (
            f"Store the {kind} at PATH ({declared.folder_name}/<name>.toml|.json, or a folder "
            f"with {declared.settings_file} and files), or every one in a {declared.folder_name}/ "
            "folder, as new versions when their digest changed; nothing is written on a problem."
        )

    @group.command("put", help=put_help)
    @click.argument("path", type=click.Path(path_type=Path))
    @click.option("--dry-run", is_flag=True, help="Show what would be written; write nothing.")
    @click.option("--json", "as_json", is_flag=True, help="Print JSON.")
    def put_cmd(path: Path, dry_run: bool, as_json: bool, entity_id: str | None = None) -> None:
        if declared is not None:
            _put_declared(declared, path, entity_id, dry_run, as_json)
            return
        put_bundle(kind, path, dry_run, as_json)

    if declared is not None:
        click.option("--id", "entity_id", help=f"Store it under this {kind} id.")(put_cmd)

    @group.command(
        "validate",
        help=f"Check a stored {kind} (ID, with --id or --version) or "
        "one on disk (PATH) the way a run would; exit 1 with every problem.",
    )
    @click.argument("target", required=False)
    @click.option("--id", "ref", help=f"A stored {kind} id (the reference's form).")
    @click.option("--version", type=click.IntRange(min=1), help="This version (default latest).")
    def validate_cmd(target: str | None, ref: str | None, version: int | None) -> None:
        from agentenv_stored_entities import put

        if ref is None:
            if target is None:
                raise click.UsageError(_ONE_OF)
            if Path(target).exists():
                if declared is not None:
                    from agentenv_stored_entities.declared import read

                    read(declared, Path(target))
                else:
                    put.validate_path(_plugins(), kind, Path(target))
                click.echo(f"{target}: valid")
                return
            ref = target  # not a path on disk: a stored id
        elif target is not None:
            raise click.UsageError(_ONE_OF)
        if declared is not None:
            from agentenv_stored_entities.declared import validate_stored

            root = anyio.run(
                with_session, lambda s: validate_stored(s.stores, declared, ref, version)
            )
        elif kind in ("task", "eval"):
            root = anyio.run(with_session, lambda s: put.validate_stored(s, kind, ref, version))
        else:
            from agent_env.cli.toolkit import get_version

            root = anyio.run(with_session, lambda s: get_version(s.stores, kind, ref, version))
        click.echo(f"{kind} {root.entity_id} v{root.version}: valid")

    return group


def _put_declared(
    declared: Any, path: Path, entity_id: str | None, dry_run: bool, as_json: bool
) -> None:
    from agentenv_stored_entities.declared import put

    rows = anyio.run(
        with_session,
        lambda s: put(s.stores, declared, path, entity_id=entity_id, dry_run=dry_run),
    )
    if as_json:
        echo_json([{k: v for k, v in r.items() if k != "line"} for r in rows])
        return
    for row in rows:
        click.echo(row["line"])


def _plugins() -> Any:
    from agent_env.plugins import get_plugin_manager

    return get_plugin_manager()
