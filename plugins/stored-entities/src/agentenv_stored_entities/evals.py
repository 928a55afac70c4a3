"""`eval create` / `eval add-tasks`: an eval stored from a file of task references, the
reference's format (a JSON array of `{"task_id": ..., "task_version": N}`, the version
optional: the latest at run time). Every reference must name a stored task (and version)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent_env.errors import AgentEnvError, BundleError, StoreError


def read_refs(path: Path) -> list[tuple[str, int | None]]:
    """(task id, version or None) for each entry of the task-reference file `path`."""
    from agentenv_stored_entities.put import read_json

    path = Path(path).expanduser()
    data = read_json(path)
    if not isinstance(data, list) or not data:
        raise BundleError(f'{path}: a JSON array of task references, e.g. [{{"task_id": "hello"}}]')
    problems, refs = [], []
    for i, entry in enumerate(data):
        where = f"{path}: entry {i}"
        if isinstance(entry, str):
            entry = {"task_id": entry}
        if not isinstance(entry, dict):
            problems.append(f"{where}: expected an object with task_id, got {entry!r}")
            continue
        unknown = sorted(set(entry) - {"task_id", "task_version"})
        if unknown:
            from agent_env.suggest import did_you_mean

            problems.append(
                f"{where}: unknown key {unknown[0]!r}"
                f"{did_you_mean(unknown[0], ('task_id', 'task_version'))}; keys: task_id, task_version"
            )
        task_id, version = entry.get("task_id"), entry.get("task_version")
        if not isinstance(task_id, str) or not task_id:
            problems.append(f"{where}: task_id: required, a task id or name")
        elif version is not None and (
            not isinstance(version, int) or isinstance(version, bool) or version < 1
        ):
            problems.append(f"{where}: task_version: a version number (1 or more), not {version!r}")
        else:
            refs.append((task_id, version))
    if problems:
        raise BundleError(f"{path}: {len(problems)} problem(s)", problems)
    return refs


async def _resolve(stores: Any, refs: list[tuple[str, int | None]]) -> dict[str, int | None]:
    """Full task id -> pinned version, every reference checked against the store."""
    from agent_env.cli.toolkit import get_version

    out: dict[str, int | None] = {}
    problems = []
    for ref, version in refs:
        try:
            task = await get_version(stores, "task", ref, version)
        except StoreError as exc:
            problems.append(f"task_id {ref!r}: {exc}")
            continue
        out[task.entity_id] = version
    if problems:
        raise AgentEnvError(
            f"{len(problems)} task reference(s) do not resolve; nothing was stored\n"
            + "\n".join(f"  - {p}" for p in problems)
        )
    return out


def _content(name: str, pins: dict[str, int | None], config: dict[str, Any]) -> dict[str, Any]:
    content: dict[str, Any] = {"name": name, "tasks": list(pins), "config": config}
    versions = {t: v for t, v in pins.items() if v is not None}
    if versions:
        content["task_versions"] = versions
    return content


async def create_eval(stores: Any, eval_id: str, refs: list[tuple[str, int | None]]) -> Any:
    """Store eval `eval_id` running the referenced tasks; a `PutResult`."""
    from agent_env.cli.toolkit import content_digest
    from agentenv_stored_entities.put import split_id

    _, name = split_id(eval_id, "eval")
    content = _content(name, await _resolve(stores, refs), {})
    return await stores.entities.put("eval", eval_id, content, digest=content_digest(content))


async def add_tasks(
    stores: Any, ref: str, version: int | None, refs: list[tuple[str, int | None]]
) -> tuple[Any, Any]:
    """A new version of eval `ref` (from `version`, default latest) with the referenced tasks
    added; one already in it is replaced (its pin too). (eval, `PutResult`)."""
    from agent_env.cli.toolkit import content_digest, get_version

    base = await get_version(stores, "eval", ref, version)
    prefix = base.entity_id.rpartition("/")[0]
    old = base.content.get("task_versions") or {}
    pins: dict[str, int | None] = {}
    for task in base.content.get("tasks", []):
        full = task if task.startswith("@") else f"{prefix}/{task}"
        pins[full] = old.get(task, old.get(full))
    pins.update(await _resolve(stores, refs))
    content = _content(
        str(base.content.get("name") or base.entity_id.rpartition("/")[2]),
        pins,
        dict(base.content.get("config") or {}),
    )
    done = await stores.entities.put(
        "eval", base.entity_id, content, digest=content_digest(content)
    )
    return base, done
