"""`agent-env artifact ...`: stored artifacts; `artifact skill ...` for skills, and one group
per artifact type (`artifact file|fileset|image|file-artifact-universe put|get`), the
reference's `artifact <type> put --id ...` / `get --id ... --output-dir`."""

from __future__ import annotations

from pathlib import Path

import anyio
import click

from agentenv_stored_entities.commands.group import (
    echo_json,
    echo_materialized,
    make_group,
    path_or_id,
    put_bundle,
    with_session,
)

artifact = make_group("artifact", "Stored artifacts: list, show, put and validate them.")
skill = make_group("skill", "Stored skills: list, show, put, get and validate them.")
artifact.add_command(skill)

#: `artifact <group>` -> the artifact type it stores (`artifact.toml` `type`).
TYPE_GROUPS = {
    "file": "file",
    "fileset": "fileset",
    "image": "image",
    "file-artifact-universe": "file_artifact_universe",
}
_ID_HELP = "Store it under this id, e.g. @local/lab/greeting."


def _put(kind: str, entity_id: str, source: Path, config: dict, dry_run: bool, as_json: bool):
    from agentenv_stored_entities.put import put_as

    done = anyio.run(
        with_session,
        lambda s: put_as(s, kind, entity_id, source, config=config, dry_run=dry_run),
    )
    echo_materialized(done, as_json)


def _get_command(kind: str, what: str, *, json_without_dir: bool) -> click.Command:
    @click.command(
        "get",
        help=f"Download a stored {what}'s files into --output-dir (new or empty)"
        + ("; without it, print the stored version as JSON." if json_without_dir else "."),
    )
    @click.option("--id", "ref", required=True, help=f"The {what} id (or its name).")
    @click.option("--version", type=click.IntRange(min=1), help="This version (default latest).")
    @click.option(
        "--output-dir",
        type=click.Path(path_type=Path),
        required=not json_without_dir,
        help="Write the files here.",
    )
    def get(ref: str, version: int | None, output_dir: Path | None) -> None:
        if output_dir is None:
            from agentenv_stored_entities.catalog import show

            echo_json(anyio.run(with_session, lambda s: show(s.stores, kind, ref, version)))
            return
        from agentenv_stored_entities.put import get_files

        entity = anyio.run(
            with_session, lambda s: get_files(s.stores, kind, ref, version, output_dir)
        )
        count = len(entity.files or {})
        click.echo(f"{kind} {entity.entity_id} v{entity.version}: {count} file(s) in {output_dir}")

    return get


@click.command(
    "put",
    help="Store a skill: from a bundle (PATH: BUNDLE or BUNDLE/skills/<name>), or the folder "
    "--skill-dir (SKILL.md at its root) under --id; a new version only when it changed.",
)
@click.argument("path", type=click.Path(path_type=Path), required=False)
@click.option("--id", "entity_id", help=_ID_HELP)
@click.option("--skill-dir", type=click.Path(path_type=Path), help="The skill folder (with --id).")
@click.option("--dry-run", is_flag=True, help="Show what would be written; write nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def _skill_put(
    path: Path | None, entity_id: str | None, skill_dir: Path | None, dry_run: bool, as_json: bool
) -> None:
    path_or_id(path, entity_id, skill_dir, "--skill-dir")  # a usage error unless one form
    if entity_id and skill_dir:
        _put("skill", entity_id, skill_dir, {}, dry_run, as_json)
    elif path is not None:
        put_bundle("skill", path, dry_run, as_json)


skill.add_command(_skill_put)
skill.add_command(_get_command("skill", "skill", json_without_dir=True))


def _type_group(name: str, type_: str) -> click.Group:
    group = click.Group(
        name,
        help=f"Artifacts of type {type_!r}: put one by id, get its files. "
        f"(`artifact list --type {type_}` lists them.)",
    )

    @group.command(
        "put",
        help=f"Store FILEPATH, or the files of --dir, as a {type_!r} artifact under --id; a new "
        "version only when it changed. Checked as a bundle's artifact folder would be.",
    )
    @click.argument("filepath", type=click.Path(path_type=Path), required=False)
    @click.option("--id", "entity_id", required=True, help=_ID_HELP)
    @click.option(
        "--dir",
        "--file-dir",
        "folder",
        type=click.Path(path_type=Path),
        help="A folder whose files make the artifact.",
    )
    @click.option("--description", help="What the artifact holds.")
    @click.option("--dry-run", is_flag=True, help="Show what would be written; write nothing.")
    @click.option("--json", "as_json", is_flag=True, help="Print JSON.")
    def put(
        filepath: Path | None,
        entity_id: str,
        folder: Path | None,
        description: str | None,
        dry_run: bool,
        as_json: bool,
    ) -> None:
        source = filepath or folder
        if source is None or (filepath is not None and folder is not None):
            raise click.UsageError("give one of FILEPATH or --dir")
        config = {"type": type_, **({"description": description} if description else {})}
        _put("artifact", entity_id, source, config, dry_run, as_json)

    group.add_command(_get_command("artifact", f"{type_} artifact", json_without_dir=False))
    return group


for _name, _type in TYPE_GROUPS.items():
    artifact.add_command(_type_group(_name, _type))
