"""Read, check and put the entities of a kind a plugin declared (`agent_env.entities.kinds`).

A PATH is one entity (a `.json`/`.toml` file, or a folder holding `<kind>.toml` and files),
the kind's folder (`scenarios/`, every entity in it) or a bundle folder that has one. Ids
follow the bundle rule: `@local/<the folder holding the kind folder>/<name>`, or `--id`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs

from agent_env.entities.kinds import EntityKind
from agent_env.errors import AgentEnvError, BundleError

SUFFIXES = (".json", ".toml")


@attrs.frozen(kw_only=True)
class Found:
    """One entity read from disk: where from, its id, content and files."""

    name: str
    where: Path
    entity_id: str
    content: dict[str, Any]
    files: dict[str, Path]


def _entries(decl: EntityKind, path: Path) -> list[tuple[str, Path, Path]]:
    """(name, path, id root) for every entity PATH names."""
    folder = decl.folder_name
    if path.is_dir() and (path / folder).is_dir():
        path = path / folder
    if path.is_dir() and path.name == folder:
        return [
            (p.stem if p.is_file() else p.name, p, path.parent)
            for p in sorted(path.iterdir())
            if not p.name.startswith((".", "_")) and (p.is_dir() or p.suffix in SUFFIXES)
        ]
    if path.is_file() and path.suffix not in SUFFIXES:
        raise AgentEnvError(f"{path}: a {decl.kind} file is .json or .toml")
    if path.is_dir() and not (path / decl.settings_file).is_file():
        raise AgentEnvError(
            f"{path}: holds no {decl.kind}: neither a {folder}/ folder nor a "
            f"{decl.settings_file} (a {decl.kind} folder's content)"
        )
    root = path.parent.parent if path.parent.name == folder else path.parent
    return [(path.stem if path.is_file() else path.name, path, root)]


def _read(decl: EntityKind, name: str, path: Path, problems: Any) -> tuple[dict, dict]:
    from agent_env.cli.toolkit import content_files, duplicate_keys, load_json, load_toml

    files: dict[str, Path] = {}
    if path.is_dir():
        settings = path / decl.settings_file
        files = content_files(path, path, problems)
        files.pop(decl.settings_file, None)
        if not settings.is_file():
            problems.add(path, f"a {decl.kind} folder needs {decl.settings_file}")
            return {}, files
        content = load_toml(settings, problems)
    elif path.suffix == ".toml":
        content = load_toml(path, problems)
    else:
        content = load_json(path, problems)
        for dup in duplicate_keys(content):
            problems.add(path, dup)
    if content is None:
        return {}, files
    if not isinstance(content, dict):
        problems.add(path, f"a {decl.kind} is a JSON object or a TOML table")
        return {}, files
    where = path / decl.settings_file if path.is_dir() else path
    for problem in decl.problems(content):
        problems.add(where, problem)
    return {"name": name, **dict(content)}, files


def read(decl: EntityKind, path: Path, entity_id: str | None = None) -> list[Found]:
    """Every entity of `decl` that PATH names, checked; `BundleError` listing every problem
    (naming the file) when any is wrong. `entity_id` names the one entity PATH must hold."""
    from agent_env.cli.toolkit import Problems, folder_id_prefix

    path = Path(path).expanduser().absolute()
    if not path.exists():
        raise AgentEnvError(f"{path}: no such file or folder")
    entries = _entries(decl, path)
    if not entries:
        raise BundleError(f"{path}: holds no {decl.kind} (.json, .toml or a folder)")
    if entity_id is not None and len(entries) != 1:
        raise AgentEnvError(f"--id names one {decl.kind}, but {path} holds {len(entries)}")
    problems = Problems(path if path.is_dir() else path.parent)
    found = []
    for name, where, root in entries:
        content, files = _read(decl, name, where, problems)
        eid = entity_id or f"{folder_id_prefix(root)}/{name}"
        found.append(Found(name=name, where=where, entity_id=eid, content=content, files=files))
    if problems.items:
        count = len(problems.items)
        raise BundleError(
            f"{path}: {count} problem{'s' if count != 1 else ''} in {decl.kind}s", problems.items
        )
    return found


async def put(
    stores: Any, decl: EntityKind, path: Path, *, entity_id: str | None = None, dry_run: bool
) -> list[dict[str, Any]]:
    """Put every entity PATH names (all checked first; nothing written on a problem): one row
    per entity with its id, version and status."""
    from agent_env.cli.toolkit import put_entity

    rows = []
    for one in read(decl, path, entity_id):
        result, digest = await put_entity(
            stores, decl.kind, one.entity_id, one.content, one.files, dry_run=dry_run
        )
        rows.append(
            {
                "kind": decl.kind,
                "name": one.name,
                "id": one.entity_id,
                "version": result.version,
                "status": result.status,
                "digest": digest,
                "line": f"{decl.kind} {one.name}: {result.describe()}",
            }
        )
    return rows


async def validate_stored(stores: Any, decl: EntityKind, ref: str, version: int | None) -> Any:
    """The stored entity `ref`, checked against the declaration as it is now."""
    from agent_env.cli.toolkit import get_version

    entity = await get_version(stores, decl.kind, ref, version)
    content = {k: v for k, v in entity.content.items() if k not in ("name", "files")}
    problems = decl.problems(content)
    if problems:
        raise BundleError(
            f"{decl.kind} {entity.entity_id} v{entity.version} has {len(problems)} problem"
            + ("s" if len(problems) != 1 else ""),
            problems,
        )
    return entity
