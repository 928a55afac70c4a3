"""Fork: N task instances from one stored snapshot (`agent-env run SPEC --from-snapshot ID
[--fork N]`, the OpenEnv server's reset from a snapshot), through the one run pipeline.

Each child is a trial of the snapshot's task: it deploys the task's envs as any trial does and,
at the step that took the snapshot, restores it (`snapshot_task`; OpenEnv's played agent before
its first turn) and checks that the state reads back with the snapshot's digest. Its record's
`meta.forked_from` names the snapshot (`ID@VERSION`). Everything a fork can refuse (an unknown
id, a damaged snapshot, a snapshot of another task) is refused before any trial is planned.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import attrs

from agent_env.errors import AgentEnvError

if TYPE_CHECKING:  # pragma: no cover
    from agent_env.engine.run import Session
    from agent_env.engine.snapshot import TaskSnapshot
    from agent_env.runs.model import LoadedBundle
    from agent_env.runs.request import RunRequest


def task_name(snapshot: TaskSnapshot) -> str:
    """The name of the task a snapshot was taken of (its id's last segment)."""
    return snapshot.task.rpartition("/")[2]


async def forked(session: Session, request: RunRequest) -> RunRequest:
    """`request` with its snapshot loaded and checked: the snapshot's task selected, one trial
    per child, all of them at once unless `--concurrency` says otherwise."""
    if request.eval_names:
        raise AgentEnvError("--from-snapshot runs the snapshot's task: give no --eval")
    from agent_env.engine.snapshot import RESTORE_FROM, load

    snapshot = await load(session.stores, str(request.from_snapshot))
    name = task_name(snapshot)
    if request.task_names and tuple(request.task_names) != (name,):
        raise AgentEnvError(
            f"snapshot {snapshot.ref} was taken of task {name!r}, not "
            f"{', '.join(map(repr, request.task_names))}: a fork runs the task its snapshot "
            "was taken of"
        )
    children = request.fork or 1
    return attrs.evolve(
        request,
        task_names=(name,),
        trials=children,
        concurrency=request.concurrency or children,
        sandbox_concurrency=request.sandbox_concurrency or children,
        resources={**request.resources, RESTORE_FROM: snapshot},
    )


def snapshot_of(request: RunRequest) -> TaskSnapshot | None:
    """The snapshot a forked request restores, None for any other request."""
    stored = sys.modules.get("agent_env.engine.snapshot")
    if stored is None:  # no snapshot was loaded in this process (and none is imported for it)
        return None
    found = request.resources.get(stored.RESTORE_FROM)
    return found if isinstance(found, stored.TaskSnapshot) else None


def check_task(loaded: LoadedBundle, request: RunRequest) -> None:
    """The bundle's task must be the very task the snapshot was taken of (same id)."""
    snapshot = snapshot_of(request)
    if snapshot is None:
        return
    ids = [t.id for t in loaded.tasks]
    if ids != [snapshot.task]:
        raise AgentEnvError(
            f"snapshot {snapshot.ref} was taken of task {snapshot.task!r}, not "
            f"{', '.join(map(repr, ids)) or 'none'}: a fork runs the task its snapshot was "
            "taken of (from the same bundle)"
        )


async def reattach(session: Session, forked_from: object) -> dict[Any, Any]:
    """For a resumed child of a fork (its record's `forked_from`): the snapshot it restores,
    as its instance resource, so that a child interrupted before its restore still restores."""
    if not isinstance(forked_from, str) or not forked_from:
        return {}
    from agent_env.engine.snapshot import RESTORE_FROM, load

    return {RESTORE_FROM: await load(session.stores, forked_from)}


def record_meta(request: RunRequest) -> dict[str, Any]:
    """What a child's record says of its snapshot (`forked_from: ID@VERSION`)."""
    snapshot = snapshot_of(request)
    return {} if snapshot is None else {"forked_from": snapshot.ref}
