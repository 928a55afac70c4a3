"""Keeping the env clock and the triggers across a crashed run.

`sync_env_clock` records `env_clock` in the task state (journaled with the step); the trigger
engine writes a snapshot of its triggers and their progress to
`<AGENT_ENV_HOME>/triggers/<task instance>.json` on every change. When a resumed run starts a
fresh gateway, `restore` re-arms the clock where it would be now and takes the snapshot back,
so fired triggers stay fired and time triggers go on after the marks they handled. Only onto
the same envs: the snapshot names the envs (by URL) its triggers acted on, and when the resume
deployed them anew (their sandboxes were gone) the snapshot is dropped and the re-run steps
register the triggers from scratch.
"""

from __future__ import annotations

import json
import time
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_env.context import StepContext
from agent_env.paths import home

if TYPE_CHECKING:
    from agentenv_core_steps.gateway import RunGateway


#: The snapshot's record of the envs (name -> URL) its triggers acted on.
ENVS_KEY = "agentenv_envs"


def snapshot_path(task_instance_id: str) -> Path:
    return home() / "triggers" / f"{task_instance_id}.json"


def persist_triggers(gateway: RunGateway) -> None:
    """Make the gateway's trigger engine write its snapshot on every change."""
    from agent_env.fsutil import atomic_write

    path = snapshot_path(gateway.task_instance_id)

    def write(snapshot: dict[str, Any]) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        # the envs the triggers drove, by URL: a restore applies only to these same envs
        snapshot = {**snapshot, ENVS_KEY: dict(gateway.envs)}
        atomic_write(path, json.dumps(snapshot, default=str), mode=0o600)

    gateway.gateway.triggers.on_change = write


def clock_now(record: dict[str, Any], wall: float | None = None) -> str:
    """Where a clock armed as `record` says is now: its virtual time plus the real time since."""
    from agentenv_protocol.gateway.clock import iso, parse_time

    start = parse_time(record["virtual_time"])
    ran = max(0.0, (wall or time.time()) - float(record["armed_at"]))
    return iso(start + timedelta(seconds=ran * float(record["virtual_seconds_per_real_second"])))


def restore(ctx: StepContext, gateway: RunGateway) -> None:
    """Re-arm the clock and take back the trigger snapshot on a fresh gateway (a resumed run)."""
    record = ctx.get("env_clock", default=None)
    if isinstance(record, dict) and record.get("virtual_time"):
        try:
            gateway.gateway.clock.set_time(
                clock_now(record), record.get("virtual_seconds_per_real_second")
            )
            ctx.log(f"env clock re-armed at {gateway.gateway.clock.read()['virtual_time']}")
        except (ValueError, KeyError, TypeError) as e:
            ctx.log(f"env clock not re-armed: {e}")
    path = snapshot_path(gateway.task_instance_id)
    if path.exists():
        try:
            snapshot = json.loads(path.read_text())
        except (OSError, ValueError) as e:
            ctx.log(f"trigger state {path} not restored: {e}")
            return
        drove = snapshot.pop(ENVS_KEY, None)
        adopted = dict(gateway.envs)
        if drove is not None and any(adopted.get(n) != url for n, url in drove.items()):
            # The envs were deployed anew (their sandboxes were gone, e.g. reaped by the
            # watchdog): what fired acted on the old ones, so the triggers start over.
            forget(gateway.task_instance_id)
            ctx.log("trigger state not restored: its envs were deployed anew")
            return
        engine = gateway.gateway.triggers
        engine.bind(gateway.url)
        engine.restore(snapshot)
        persist_triggers(gateway)
        fired = [
            t["spec"]["id"] for t in snapshot.get("triggers") or [] if t.get("status") == "fired"
        ]
        ctx.log(
            f"{len(snapshot.get('triggers') or [])} trigger(s) restored"
            + (f"; already fired: {', '.join(fired)}" if fired else "")
        )


def forget(task_instance_id: str) -> None:
    """The instance ended: its trigger snapshot is no longer needed."""
    snapshot_path(task_instance_id).unlink(missing_ok=True)
