"""The trigger ledger in the task instance record.

The run gateway's trigger engine keeps each trigger's status and an event log (detected,
delayed, deferred, action_ok, action_failed, fired, failed; each with its real and virtual
time). After every step of an instance that registered triggers, the ledger is copied into the
output of its first `register_env_triggers` step (`outputs.<step id>.ledger`), so the instance
record, `agent-env runs show` and the explorer carry what the triggers and their executors did
(not only the journal). The copy is bounded: the newest `MAX_EVENTS` events.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from agent_env.context import StepContext

#: How many of the newest events the record keeps (the engine itself keeps up to 2,000).
MAX_EVENTS = 500


def ledger(state: dict[str, Any]) -> dict[str, Any]:
    """The part of the engine's `state()` the record keeps."""
    events = list(state.get("events") or [])
    dropped = int(state.get("events_dropped") or 0) + max(0, len(events) - MAX_EVENTS)
    return {
        "triggers": list(state.get("triggers") or []),
        "events": events[-MAX_EVENTS:],
        "events_dropped": dropped,
    }


def record_ledger(ctx: StepContext) -> None:
    """Copy the instance gateway's trigger ledger into the record (no-op without triggers)."""
    registrations = ctx.get("env_trigger_registrations", default=None)
    if not registrations:
        return
    from agentenv_core_steps.gateway import live_gateway

    gateway = live_gateway(ctx.task_instance_id)
    if gateway is None:
        return
    step_id = registrations[0].get("step_id")
    if not step_id:
        return
    ctx.set("outputs", step_id, "ledger", value=ledger(gateway.gateway.triggers.state()))


@contextlib.asynccontextmanager
async def keeping_ledger(ctx: StepContext) -> AsyncIterator[None]:
    """Around a step: after it (passed or failed), record the ledger."""
    try:
        yield
    finally:
        record_ledger(ctx)
