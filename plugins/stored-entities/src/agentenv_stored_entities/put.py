"""Put bundle entities into the stores (a new version only when the digest changed), create a
task from a steps file under a chosen id, and validate what is on disk or stored."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import attrs

from agent_env.cli.toolkit import ResolvedSource
from agent_env.errors import AgentEnvError, BundleError

#: kind -> (kind folder, the Bundle map); task and eval puts bring what their steps name.
KIND_FOLDERS = {
    "task": ("tasks", "tasks"),
    "eval": ("evals", "evals"),
    "env": ("envs", "envs"),
    "agent": ("agents", "agents"),
    "artifact": ("artifacts", "artifacts"),
    "skill": ("skills", "skills"),
}
SUPPORT = ("artifacts", "skills", "envs", "agents")


def locate(path: Path, kind: str) -> tuple[Path, str | None]:
    """(bundle root, entity name or None for all of them) for `path`: a bundle folder, or a
    file or folder inside one of its kind folders (`tasks/x.json`, `artifacts/greeting/`)."""
    path = Path(path).expanduser().absolute()
    if not path.exists():
        raise AgentEnvError(f"{path}: no such file or folder")
    folder = KIND_FOLDERS[kind][0]
    if path.parent.name == folder:
        name = path.name[: -len(path.suffix)] if path.is_file() else path.name
        return path.parent.parent, name
    if path.name == folder:
        return path.parent, None
    if path.is_dir():
        return path, None
    raise AgentEnvError(
        f"{path}: not a bundle folder nor inside its {folder}/ folder; put a {kind} from "
        f"BUNDLE or BUNDLE/{folder}/<name>"
    )


def select(bundle: Any, kind: str, name: str | None) -> Any:
    """`bundle` cut down to the `kind` entities asked for (all, or `name`) and, for tasks and
    evals, the artifacts, skills, envs and agents they may name (and an eval's tasks)."""
    attr = KIND_FOLDERS[kind][1]
    chosen = getattr(bundle, attr)
    if name is not None:
        if kind == "task":
            chosen = {bundle.task(name).name: bundle.task(name)}
        elif name in chosen:
            chosen = {name: chosen[name]}
        else:
            from agent_env.suggest import did_you_mean

            raise BundleError(
                f"bundle {bundle.name!r} has no {kind} {name!r}{did_you_mean(name, chosen)}; "
                f"{attr}: {', '.join(sorted(chosen)) or 'none'}"
            )
    if not chosen:
        raise BundleError(f"bundle {bundle.name!r} ({bundle.root}) has no {attr}")
    keep: dict[str, Any] = {a: {} for a in (*SUPPORT, "tasks", "evals")}
    keep[attr] = dict(chosen)
    if kind in ("task", "eval"):
        for a in SUPPORT:
            keep[a] = dict(getattr(bundle, a))
    if kind == "eval":
        keep["tasks"] = {
            t: bundle.tasks[t] for e in chosen.values() for t in e.tasks if t in bundle.tasks
        }
    return attrs.evolve(bundle, **keep)


async def put_path(session: Any, kind: str, path: Path, *, dry_run: bool = False) -> Any:
    """Validate the bundle around `path`, then materialize the `kind` entities it names (and
    what they need); the `Materialized` report. Nothing is written when the bundle is invalid."""
    from agent_env.bundles import load_bundle, materialize

    root, name = locate(path, kind)
    bundle = load_bundle(str(root), session.plugins)
    return await materialize(select(bundle, kind, name), session.stores, dry_run=dry_run)


def validate_path(plugins: Any, kind: str, path: Path) -> Any:
    """The bundle around `path`, checked (every problem at once in a `BundleError`), cut down
    to what a put of it would write."""
    from agent_env.bundles import load_bundle

    root, name = locate(path, kind)
    return select(load_bundle(str(root), plugins), kind, name)


async def validate_stored(session: Any, kind: str, ref: str, version: int | None) -> Any:
    """Load a stored task or eval as a bundle (every check a run makes); its root entity."""
    from agent_env.cli.toolkit import stored_bundle

    _, _, root = await stored_bundle(
        session.stores, session.plugins, session.config.home, kind, ref, version
    )
    return root


def read_json(path: Path) -> Any:
    """The JSON in file `path`; an error naming the file when it cannot be read or parsed."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise AgentEnvError(f"{path}: cannot be read: {exc.strerror}") from None
    except ValueError as exc:
        raise BundleError(f"{path}: not valid JSON: {exc}") from None


def read_steps(path: Path) -> list[Any]:
    """A task file: a JSON array of step objects."""
    path = Path(path).expanduser()
    steps = read_json(path)
    if not isinstance(steps, list) or not all(isinstance(s, dict) for s in steps):
        raise BundleError(f"{path}: a task file is a JSON array of step objects")
    return steps


async def create_task(
    session: Any, entity_id: str, steps: list[Any], *, skip_validation: bool = False
) -> tuple[Any, str | None]:
    """Store `steps` as task `entity_id` (checked against the artifacts, envs and agents stored
    beside it, unless `skip_validation`): (`PutResult`, the problems found or None)."""
    from agent_env.bundles import load_bundle
    from agent_env.cli.toolkit import content_digest, write_siblings

    prefix, name = split_id(entity_id, "task")
    problems = None
    with tempfile.TemporaryDirectory(prefix="agent-env-task-") as tmp:
        out = Path(tmp)
        (out / "tasks").mkdir()
        (out / "tasks" / f"{name}.json").write_text(json.dumps(steps), encoding="utf-8")
        await write_siblings(session.stores, out, prefix)
        source = ResolvedSource(path=out, id_prefix=prefix or None, name=prefix.rpartition("/")[2])
        try:
            load_bundle(source, session.plugins)
        except BundleError as exc:
            problems = str(exc).replace(str(out), entity_id)
            if not skip_validation:
                raise BundleError(f"task {entity_id}: {problems}") from None
    content = {"name": name, "steps": steps}
    result = await session.stores.entities.put(
        "task", entity_id, content, digest=content_digest(content)
    )
    return result, problems


def split_id(entity_id: str, what: str) -> tuple[str, str]:
    """(prefix, name) of `entity_id`; an id must end in a name."""
    prefix, _, name = entity_id.rpartition("/")
    if not name or not entity_id.strip() or name.startswith("."):
        raise AgentEnvError(f"--id {entity_id!r}: the {what} id must end in a name")
    return prefix, name


async def put_as(
    session: Any,
    kind: str,
    entity_id: str,
    source: Path,
    *,
    config: dict[str, Any] | None = None,
    dockerfile: Path | None = None,
    dry_run: bool = False,
) -> Any:
    """Put the files of `source` (a folder, or one file) as `kind` `entity_id` (an artifact
    or a skill): staged as `<kind folder>/<name>/` of a bundle and checked by the bundle parser,
    so it is stored exactly as a bundle's would be; `config` becomes its `artifact.toml`, and
    `dockerfile` (a file anywhere) its `Dockerfile`. The `Materialized` report; nothing is
    written when the check finds a problem."""
    import shutil

    from agent_env.bundles import load_bundle, materialize
    from agent_env.cli.toolkit import toml_dumps as dumps

    source = Path(source).expanduser().absolute()
    if not source.exists():
        raise AgentEnvError(f"{source}: no such file or folder")
    prefix, name = split_id(entity_id, kind)
    with tempfile.TemporaryDirectory(prefix="agent-env-put-") as tmp:
        target = Path(tmp) / KIND_FOLDERS[kind][0] / name
        if source.is_dir():
            shutil.copytree(source, target, symlinks=False)
        else:
            target.mkdir(parents=True)
            shutil.copy2(source, target / source.name)
        if config:
            (target / "artifact.toml").write_text(dumps(config), encoding="utf-8")
        if dockerfile is not None:
            if not Path(dockerfile).is_file():
                raise AgentEnvError(f"--dockerfile {dockerfile}: no such file")
            shutil.copyfile(dockerfile, target / "Dockerfile")
        resolved = ResolvedSource(
            path=Path(tmp), id_prefix=prefix or None, name=prefix.rpartition("/")[2]
        )
        try:
            bundle = load_bundle(resolved, session.plugins)
        except BundleError as exc:
            staged = f"{KIND_FOLDERS[kind][0]}/{name}"

            def here(problem: str) -> str:
                problem = problem.replace(f"{tmp}/{staged}", str(source))
                return (
                    str(source) + problem[len(staged) :] if problem.startswith(staged) else problem
                )

            raise BundleError(
                f"{kind} {entity_id}", [here(p) for p in exc.problems] or [here(str(exc))]
            ) from None
        return await materialize(select(bundle, kind, name), session.stores, dry_run=dry_run)


async def get_files(stores: Any, kind: str, ref: str, version: int | None, out: Path) -> Any:
    """Write the files of stored `kind` `ref` into `out` (new or empty; nothing written on an
    error); the stored `Entity`."""
    from agent_env.bundles import fetch_files
    from agent_env.cli.toolkit import empty_folder, filled, get_version

    out = empty_folder(out, "download")
    entity = await get_version(stores, kind, ref, version)
    with filled(out) as staging:
        await fetch_files(stores.objects, dict(entity.files or {}), staging)
    return entity
