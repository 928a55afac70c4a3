"""The trigger ledger in the task instance record.

The run gateway's trigger engine keeps each trigger's status and an event log (detected,
delayed, deferred, action_ok, action_failed, fired, failed; each with its real and virtual
time). After every step of an instance that registered triggers, the ledger is copied into the
output of its first `register_env_triggers` step (`outputs.<step id>.ledger`), so the instance
record, `agent-env runs show` and the explorer carry what the triggers and their executors did
(not only the journal). The copy is bounded: the newest `MAX_EVENTS` events.

It also keeps the clock's state (`clock`: armed, t0, rate, the virtual time when copied) and the
gateway calls the triggers' actions and their executors made (`calls`: the roles that tool
actions act `as`, `trigger` by default, and each executor's role; the newest `MAX_CALLS`).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from agent_env.context import StepContext

#: How many of the newest events the record keeps (the engine itself keeps up to 2,000).
MAX_EVENTS = 500
#: How many of the newest trigger and executor calls the record keeps.
MAX_CALLS = 200
#: The role a tool action acts as when it names none (the engine's default).
ACTION_ROLE = "trigger"


def action_roles(engine: Any) -> set[str]:
    """The roles the engine's triggers act as: tool actions' `as` and the executors' roles."""
    roles = {str(cfg.get("role")) for cfg in (engine.executors or {}).values() if cfg.get("role")}
    for trigger in list(engine.triggers.values()):
        for action in trigger.spec.get("actions") or []:
            if isinstance(action, dict) and action.get("type") == "tool":
                roles.add(str(action.get("as") or ACTION_ROLE))
    return roles


def ledger(
    state: dict[str, Any],
    clock: dict[str, Any] | None = None,
    calls: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The part of the engine's `state()` the record keeps, with the clock and the calls."""
    events = list(state.get("events") or [])
    dropped = int(state.get("events_dropped") or 0) + max(0, len(events) - MAX_EVENTS)
    calls = list(calls or [])
    return {
        "clock": dict(clock or {"armed": False}),
        "triggers": list(state.get("triggers") or []),
        "events": events[-MAX_EVENTS:],
        "events_dropped": dropped,
        "calls": calls[-MAX_CALLS:],
        "calls_dropped": max(0, len(calls) - MAX_CALLS),
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
    engine = gateway.gateway.triggers
    roles = action_roles(engine)
    calls = [c for c in gateway.calls() if c.get("role") in roles]
    state = ledger(engine.state(), gateway.gateway.clock.state(), calls)
    ctx.set("outputs", step_id, "ledger", value=state)
    ctx.set("outputs", step_id, "shown", value=shown(state))


def shown(ledger: dict[str, Any]) -> list[str]:
    """The ledger as the lines `agent-env runs show` prints under the registering step: each
    trigger's status and fire count, then its events on the env clock."""
    lines = []
    for trigger in ledger.get("triggers") or []:
        fired = trigger.get("fired_at")
        lines.append(
            f"trigger {trigger.get('id')}: {trigger.get('status')}, fired {trigger.get('fire_count', 0)}x"
            + (f", last at {fired}" if fired else "")
            + (f", failed {trigger['failure_count']}x" if trigger.get("failure_count") else "")
        )
    for event in ledger.get("events") or []:
        when = event.get("virtual_time") or event.get("ts")
        detail = event.get("detail") or {}
        what = detail.get("tool") or detail.get("executor") or detail.get("permission") or ""
        error = event.get("error") or detail.get("error")
        lines.append(
            f"  {when}  {event.get('trigger_id') or '-'} {event.get('kind')}"
            + (f" {what}" if what else "")
            + (f": {error}" if error else "")
        )
    if ledger.get("events_dropped"):
        lines.append(f"  ({ledger['events_dropped']} earlier event(s) not kept)")
    return lines


@contextlib.asynccontextmanager
async def keeping_ledger(ctx: StepContext) -> AsyncIterator[None]:
    """Around a step: after it (passed or failed), record the ledger."""
    try:
        yield
    finally:
        record_ledger(ctx)
