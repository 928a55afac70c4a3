"""Write stored entities out as a bundle folder (`agent-env bundle init`, and `task run ID`).

A task (or an eval and its tasks) is written with the artifacts, skills, envs and agents
stored beside it (the same id prefix), each at its latest version, with its files fetched by
content digest. The folder is built in a temporary sibling and renamed into place, so an export
that fails writes nothing. `provenance.json` records what each file came from; a run of the
folder records that origin in its lineage while the content is unchanged.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import attrs

from agent_env._version import __version__
from agent_env.entities.catalog import get_version
from agent_env.entities.toml_out import dumps as toml_dumps
from agent_env.errors import AgentEnvError, StoreError

PROVENANCE = "provenance.json"
#: Step fields a user picks per machine; left out unless `include_user_scope`.
USER_SCOPE_FIELDS = ("sandbox_type", "env_state_type", "env_state_instance_id")
_FOLDERS = {"artifact": "artifacts", "skill": "skills", "env": "envs", "agent": "agents"}


@attrs.frozen(kw_only=True)
class Export:
    """What an export wrote: one row per file or folder, the fields left out, the origin."""

    folder: Path
    written: list[dict[str, Any]]
    left_out: list[str]
    origin: dict[str, Any]
    tasks: list[str]


def _prefix(entity_id: str) -> str:
    return entity_id.rpartition("/")[0]


def _name(entity: Any) -> str:
    return str(entity.content.get("name") or entity.entity_id.rpartition("/")[2])


def _scoped_steps(task: Any, include_user_scope: bool, left_out: list[str]) -> list[Any]:
    steps = json.loads(json.dumps(task.content.get("steps", [])))
    if include_user_scope:
        return steps
    for step in steps:
        if not isinstance(step, dict):
            continue
        for field in USER_SCOPE_FIELDS:
            if field in step:
                del step[field]
                left_out.append(
                    f"tasks/{_name(task)}.json: step {step.get('id')!r}: {field}: dropped: user "
                    "scope, so a run takes its own; --include-scope user keeps it"
                )
    return steps


async def _siblings(stores: Any, prefix: str) -> list[Any]:
    """The latest version of every artifact, skill, env and agent stored directly under `prefix`."""
    found = []
    for kind in _FOLDERS:
        for entity_id in await stores.entities.ids(kind):
            if _prefix(entity_id) == prefix:
                found.append(await stores.entities.latest(kind, entity_id))
    return found


async def _tasks_of_eval(stores: Any, evaluation: Any) -> list[Any]:
    prefix = _prefix(evaluation.entity_id)
    pins = evaluation.content.get("task_versions") or {}
    tasks: list[Any] = []
    for ref in evaluation.content.get("tasks", []):
        entity_id = ref if ref.startswith("@") else f"{prefix}/{ref}"
        pinned = pins.get(ref)
        task = await stores.entities.get("task", entity_id, pinned)
        if task is None:
            what = f"task {ref!r}" + (f" v{pinned}" if pinned else "")
            raise StoreError(
                f"eval {evaluation.entity_id!r} v{evaluation.version} names {what}, "
                "which is not stored"
            )
        clash = [t for t in tasks if _name(t) == _name(task)]
        if clash:
            raise StoreError(
                f"eval {evaluation.entity_id!r} v{evaluation.version} has two tasks named "
                f"{_name(task)!r} ({clash[0].entity_id}, {task.entity_id}); a bundle folder "
                "holds one task per name"
            )
        tasks.append(task)
    return tasks


def _use(entity: Any, where: str) -> dict[str, Any]:
    return {
        "folder": where,
        "kind": entity.kind,
        "type": entity.content.get("type", entity.content.get("kind")),
        "id": entity.entity_id,
        "version": entity.version,
        "digest": entity.digest,
    }


async def export(
    stores: Any,
    folder: Path,
    *,
    task: str | None = None,
    evaluation: str | None = None,
    version: int | None = None,
    include_user_scope: bool = False,
    kinds: Sequence[Any] = (),
) -> Export:
    """Write `task` (or `evaluation` and its tasks) and their stored siblings into `folder`,
    which must not exist or be empty; nothing is written when anything fails. `kinds` are
    the `EntityKind`s plugins declare: their entities stored beside the tasks come along."""
    if (task is None) == (evaluation is None):
        raise AgentEnvError("give one of --from-task or --from-eval")
    folder = empty_folder(folder, "import")
    kind = "task" if task is not None else "eval"
    root = await get_version(stores, kind, task or evaluation or "", version)
    tasks = [root] if kind == "task" else await _tasks_of_eval(stores, root)
    with filled(folder) as staging:
        result = await _write(stores, staging, root, tasks, include_user_scope, kinds)
    return attrs.evolve(result, folder=folder)


def empty_folder(folder: Path, verb: str) -> Path:
    """`folder` as an absolute path; `AgentEnvError` unless it is new or empty."""
    folder = Path(folder).expanduser().absolute()
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise AgentEnvError(f"{folder}: not empty; {verb} into a new or empty folder")
    return folder


@contextlib.contextmanager
def filled(folder: Path) -> Iterator[Path]:
    """A staging sibling of (new or empty) `folder` to write into, renamed into place when the
    block succeeds and removed when it fails, so a failure writes nothing."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    try:
        yield staging
        if folder.exists():
            folder.rmdir()
        staging.rename(folder)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


async def _write(
    stores: Any,
    out: Path,
    root: Any,
    tasks: list[Any],
    include_user_scope: bool,
    kinds: Sequence[Any],
) -> Export:
    written: list[dict[str, Any]] = []
    left_out: list[str] = []
    (out / "tasks").mkdir()
    for task in tasks:
        where = f"tasks/{_name(task)}.json"
        steps = _scoped_steps(task, include_user_scope, left_out)
        (out / where).write_text(json.dumps(steps, indent=2) + "\n", encoding="utf-8")
        written.append({**_use(task, where), "unchanged": steps == task.content.get("steps")})
    if root.kind == "eval":
        (out / "evals").mkdir()
        config = dict(root.content.get("config") or {})
        config["tasks"] = [_name(t) for t in tasks]
        where = f"evals/{_name(root)}.toml"
        (out / where).write_text(toml_dumps(config), encoding="utf-8")
        written.append({**_use(root, where), "unchanged": False})
    for prefix in dict.fromkeys(_prefix(e.entity_id) for e in (root, *tasks)):
        written += await write_siblings(stores, out, prefix)
        written += await _write_declared(stores, out, prefix, kinds)
    origin = {"kind": root.kind, "id": root.entity_id, "version": root.version}
    (out / "README.md").write_text(_readme(root, written, left_out), encoding="utf-8")
    provenance = {
        "agent_env": __version__,
        "imported_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "from": {root.kind: root.entity_id, "version": root.version},
        "written": written,
        "left_out": left_out,
    }
    (out / PROVENANCE).write_text(json.dumps(provenance, indent=2) + "\n", encoding="utf-8")
    return Export(
        folder=out,
        written=written,
        left_out=left_out,
        origin=origin,
        tasks=[_name(t) for t in tasks],
    )


async def write_siblings(stores: Any, out: Path, prefix: str) -> list[dict[str, Any]]:
    """Write every artifact, skill, env and agent stored under `prefix` into bundle folder
    `out` (files by digest, an artifact's settings as `artifact.toml`); a row per folder."""
    from agent_env.bundles import fetch_files

    written = []
    for entity in await _siblings(stores, prefix):
        where = f"{_FOLDERS[entity.kind]}/{_name(entity)}"
        target = out / where
        if target.exists():
            raise StoreError(
                f"{entity.kind} {entity.entity_id}: another {entity.kind} named "
                f"{_name(entity)!r} is stored beside these tasks; a bundle folder holds one per name"
            )
        target.mkdir(parents=True)
        await fetch_files(stores.objects, dict(entity.files or {}), target)
        config = entity.content.get("config") or {}
        if entity.kind == "artifact" and config:
            (target / "artifact.toml").write_text(toml_dumps(config), encoding="utf-8")
        written.append({**_use(entity, where + "/"), "unchanged": True})
    return written


async def _write_declared(
    stores: Any, out: Path, prefix: str, kinds: Sequence[Any]
) -> list[dict[str, Any]]:
    """Write the entities of each declared kind stored under `prefix` as `put` reads them: a
    folder entity as `<folder>/<name>/` with its files and `<kind>.toml`, else `<name>.json`."""
    from agent_env.bundles import fetch_files

    written = []
    for decl in kinds:
        for entity_id in await stores.entities.ids(decl.kind):
            if _prefix(entity_id) != prefix:
                continue
            entity = await stores.entities.latest(decl.kind, entity_id)
            content = {k: v for k, v in entity.content.items() if k not in ("name", "files")}
            where = f"{decl.folder_name}/{_name(entity)}"
            if entity.files:
                (out / where).mkdir(parents=True)
                await fetch_files(stores.objects, dict(entity.files), out / where)
                (out / where / decl.settings_file).write_text(toml_dumps(content), "utf-8")
                where += "/"
            else:
                where += ".json"
                (out / where).parent.mkdir(parents=True, exist_ok=True)
                (out / where).write_text(json.dumps(content, indent=2) + "\n", "utf-8")
            written.append({**_use(entity, where), "unchanged": True})
    return written


def _readme(root: Any, written: list[dict[str, Any]], left_out: list[str]) -> str:
    lines = [
        f"{root.kind.capitalize()} {_name(root)}, exported from {root.entity_id} v{root.version}",
        "",
        "Written by `agent-env bundle init`; run it with `agent-env run <this folder>`.",
        "",
        "## Contents",
        "",
        *(f"- `{w['folder']}`: {w['kind']} {w['id']} v{w['version']}" for w in written),
    ]
    if left_out:
        lines += ["", "## Left out", "", *(f"- {line}" for line in left_out)]
    return "\n".join(lines) + "\n"
