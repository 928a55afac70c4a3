"""A task instance's snapshot: every env's state, the gateway's call log up to a position and
the env clock, stored as a versioned `task_snapshot` entity (its body content-addressed in the
object store, `snapshots/tasks/<sha256>.json`) under one digest.

Taking and restoring one needs the live gateway (the `snapshot_task` step of core-steps does
it); this module owns the stored form, its digest and the checks a fork runs before anything
is deployed: an unknown id (with a did-you-mean), a damaged body, a snapshot of another task.
Children of a fork find the snapshot as the instance resource `RESTORE_FROM`.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping
from typing import Any

import attrs

from agent_env.errors import AgentEnvError
from agent_env.resources import InstanceKey

KIND = "task_snapshot"
OBJECT_PREFIX = "snapshots/tasks/"


@attrs.frozen(kw_only=True)
class TaskSnapshot:
    """One stored snapshot (`id@version`) of task `task`, taken at step `at_step` of instance
    `taken_from`. `envs` maps env name -> `{via, state, digest}`; `calls` is the gateway's call
    log up to the snapshot (its position is their count); `clock` is `{armed, t0, rate}`."""

    id: str
    version: int = 0
    task: str
    at_step: str
    taken_from: str
    envs: Mapping[str, Any]
    clock: Mapping[str, Any]
    calls: tuple[Any, ...] = ()
    digest: str

    @property
    def ref(self) -> str:
        return f"{self.id}@{self.version}"

    @property
    def call_position(self) -> int:
        return len(self.calls)


def state_digest(task: str, envs: Mapping[str, Any], clock: Mapping[str, Any], calls: Any) -> str:
    """The one digest of a task instance's state: the task, each env's state digest, the clock
    and the call log (sha256 of their canonical JSON)."""
    from agentenv_protocol.snapshots import digest

    return digest(
        {
            "task": task,
            "envs": {name: state["digest"] for name, state in sorted(envs.items())},
            "clock": dict(clock),
            "calls": digest(list(calls)),
        }
    )


def _body(snapshot: TaskSnapshot) -> dict[str, Any]:
    return {
        "task": snapshot.task,
        "at_step": snapshot.at_step,
        "taken_from": snapshot.taken_from,
        "envs": dict(snapshot.envs),
        "clock": dict(snapshot.clock),
        "calls": list(snapshot.calls),
        "digest": snapshot.digest,
    }


async def save(stores: Any, snapshot: TaskSnapshot) -> TaskSnapshot:
    """Store `snapshot` under its id: a new version when its digest changed; the stored one."""
    from agentenv_protocol.snapshots import canonical

    data = canonical(_body(snapshot))
    key = f"{OBJECT_PREFIX}{hashlib.sha256(data).hexdigest()}.json"
    await stores.objects.put(key, data)
    content = {
        "task": snapshot.task,
        "at_step": snapshot.at_step,
        "taken_from": snapshot.taken_from,
        "object_key": key,
        "envs": {name: s["digest"] for name, s in sorted(snapshot.envs.items())},
        "call_position": snapshot.call_position,
        "clock": dict(snapshot.clock),
        "taken_at": time.time(),
    }
    put = await stores.entities.put(KIND, snapshot.id, content, digest=snapshot.digest)
    return attrs.evolve(snapshot, version=put.version)


def parse_ref(ref: str) -> tuple[str, int | None]:
    """`ID` or `ID@N` -> (id, version or None for the latest)."""
    if not isinstance(ref, str) or not ref.strip():
        raise AgentEnvError("a snapshot id is required (as the snapshot_task step logged it)")
    head, sep, tail = ref.strip().rpartition("@")
    if sep and tail.isdigit() and head:
        if int(tail) < 1:
            raise AgentEnvError(f"snapshot {ref.strip()!r}: versions start at 1")
        return head, int(tail)
    return ref.strip(), None


async def load(stores: Any, ref: str, *, task: str | None = None) -> TaskSnapshot:
    """Snapshot `ref` (`ID` or `ID@N`) read and checked: it exists, its body is intact (every
    digest matches its content) and, given `task`, it was taken of that task."""
    from agentenv_protocol.snapshots import check_env_state

    entity_id, version = parse_ref(ref)
    entity = await stores.entities.get(KIND, entity_id, version)
    if entity is None:
        from agent_env.suggest import did_you_mean

        known = await stores.entities.ids(KIND)
        if version is not None and entity_id in known:
            versions = await stores.entities.versions(KIND, entity_id)
            raise AgentEnvError(
                f"snapshot {entity_id!r} has no version {version} (it has "
                f"{', '.join(f'v{v}' for v in versions)})"
            )
        raise AgentEnvError(
            f"no snapshot {entity_id!r}{did_you_mean(entity_id, known)}; snapshots: "
            f"{', '.join(known[:10]) or 'none (take one with a snapshot_task step)'}"
        )
    where = f"snapshot {entity_id}@{entity.version}"
    key = entity.content.get("object_key")
    try:
        raw: bytes | None = await stores.objects.get(key) if isinstance(key, str) else None
    except KeyError:  # the object store's answer for an absent object
        raw = None
    if raw is None:
        raise AgentEnvError(f"{where} is damaged: its body {key!r} is missing from the stores")
    if f"{OBJECT_PREFIX}{hashlib.sha256(raw).hexdigest()}.json" != key:
        raise AgentEnvError(f"{where} is damaged: its body {key!r} does not match its digest")
    try:
        body = json.loads(raw)
        envs = {name: check_env_state(name, s) for name, s in dict(body["envs"]).items()}
        snapshot = TaskSnapshot(
            id=entity_id,
            version=entity.version,
            task=str(body["task"]),
            at_step=str(body["at_step"]),
            taken_from=str(body["taken_from"]),
            envs=envs,
            clock=dict(body["clock"]),
            calls=tuple(body["calls"]),
            digest=str(body["digest"]),
        )
    except (ValueError, KeyError, TypeError) as e:
        raise AgentEnvError(f"{where} is damaged: {e}") from None
    computed = state_digest(snapshot.task, snapshot.envs, snapshot.clock, snapshot.calls)
    if computed != snapshot.digest or entity.digest != snapshot.digest:
        raise AgentEnvError(f"{where} is damaged: its state does not match its digest")
    if task is not None and snapshot.task != task:
        raise AgentEnvError(
            f"{where} was taken of task {snapshot.task!r}, not {task!r}: a fork runs the task "
            "its snapshot was taken of"
        )
    return snapshot


#: The snapshot a forked task instance restores (set by `agent-env run --from-snapshot`).
RESTORE_FROM: InstanceKey[TaskSnapshot] = InstanceKey("engine.restore-from-snapshot")
