"""The trigger engine: registered triggers, what provokes them, and a worker thread that fires
their actions on the env clock.

Action triggers fire after a successful call of their tool by a provoking role (the gateway
calls `on_call`); time triggers run only while the clock is armed, polled every real second and
after each call. Actions call the gateway's own `/mcp` (so they are logged like any call) as
role `as`, change tool access, or ask an executor agent. `state()` is `GET /triggers/state`;
`snapshot()`/`restore()` carry the triggers and what they did across a resumed run.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import httpx

from agentenv_protocol.gateway.clock import EnvClock, iso, parse_time
from agentenv_protocol.gateway.triggers import hours as H
from agentenv_protocol.gateway.triggers.actions import act, post_to_gateway
from agentenv_protocol.gateway.triggers.durations import Span
from agentenv_protocol.gateway.triggers.errors import TriggerError
from agentenv_protocol.gateway.triggers.marks import exhausted, first_mark, relative
from agentenv_protocol.gateway.triggers.matching import result_value, where_holds
from agentenv_protocol.gateway.triggers.model import Job, Trigger
from agentenv_protocol.gateway.triggers.spec import check_spec

TRIGGERS_EXTENSION_URI = "urn:agentenv:triggers/v1"
FEATURES = [
    "named_executors",
    "provoking_roles",
    "action_delay",
    "executor_hours",
    "unless",
    "executor_hours_time_zone",
]
POLL_SECONDS = 1.0
MAX_MARKS = 1000
MAX_EVENTS = 2000


class TriggerEngine:
    """The triggers of one gateway. `bind(url)` tells it where its gateway serves (actions call
    back into it with `admin_token`); the worker thread starts with the first registration."""

    def __init__(
        self,
        clock: EnvClock,
        *,
        known_tools: Callable[[], list[str] | None] = lambda: None,
        admin_token: str | None = None,
        on_change: Callable[[dict], None] | None = None,
    ) -> None:
        self.clock = clock
        self.known_tools = known_tools
        self.on_change = on_change
        self.triggers: dict[str, Trigger] = {}
        self.watch_roles: list[str] | None = None
        self.executors: dict[str, dict] = {}
        self.events: list[dict] = []
        self.events_dropped = 0
        self._seq = 0
        self._jobs: list[Job] = []
        self._cond = threading.Condition(threading.RLock())
        self._thread: threading.Thread | None = None
        self._stopping = False
        self.base_url: str | None = None
        self.admin_token = admin_token
        clock.listeners.append(self.wake)

    # --- wiring -----------------------------------------------------------------------------
    def bind(self, base_url: str) -> None:
        """Where the gateway serves (the first trigger request tells); actions call back there."""
        if self.base_url is None:
            self.base_url = base_url.rstrip("/")

    def wake(self) -> None:
        with self._cond:
            self._cond.notify_all()

    def stop(self) -> None:
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=2)
        if self.wake in self.clock.listeners:
            self.clock.listeners.remove(self.wake)

    def _ensure_thread(self) -> None:
        if self._thread is None and not self._stopping:
            self._thread = threading.Thread(target=self._loop, name="trigger-engine", daemon=True)
            self._thread.start()

    # --- events -----------------------------------------------------------------------------
    def _event(self, kind: str, trigger_id: str | None, **detail: Any) -> None:
        self._seq += 1
        event: dict[str, Any] = {"seq": self._seq, "ts": iso(datetime.now(UTC))}
        now = self.clock.now()
        if now is not None:
            event["virtual_time"] = iso(now.replace(microsecond=0))
        event.update(kind=kind, trigger_id=trigger_id, **detail)
        self.events.append(event)
        if len(self.events) > MAX_EVENTS:
            del self.events[0]
            self.events_dropped += 1

    def _changed(self) -> None:
        if self.on_change is not None:
            try:
                self.on_change(self.snapshot())
            except Exception:  # noqa: BLE001 - persistence must never stop the engine
                pass

    # --- registration -----------------------------------------------------------------------
    def register(self, body: Any) -> dict:
        """`POST /triggers/register`: additive and idempotent by id; all-or-nothing."""
        if not isinstance(body, dict):
            raise TriggerError(
                "the body must be an object {triggers, watch_roles?, executor?, executors?}"
            )
        unknown = sorted(set(body) - {"triggers", "watch_roles", "executor", "executors"})
        if unknown:
            raise TriggerError(
                f"unknown key {unknown[0]!r} (known: triggers, watch_roles, executor, executors)"
            )
        with self._cond:
            executors = dict(self.executors)
            named = dict(body.get("executors") or {})
            if body.get("executor") is not None:
                named["default"] = body["executor"]
            for name, config in named.items():
                config = self._check_executor(name, config)
                if name in executors and executors[name] != config:
                    raise TriggerError(
                        f"executor {name!r} conflicts with the already-registered one"
                    )
                executors[name] = config
            watch = body.get("watch_roles")
            if watch is not None:
                if not isinstance(watch, list) or not all(isinstance(r, str) and r for r in watch):
                    raise TriggerError("watch_roles must be a list of role names")
                if self.watch_roles is not None and set(watch) != set(self.watch_roles):
                    raise TriggerError(
                        f"watch_roles {sorted(watch)} conflicts with the already-registered "
                        f"{sorted(self.watch_roles)}"
                    )
            specs = body.get("triggers")
            if not isinstance(specs, list):
                raise TriggerError("triggers must be a list of trigger objects")
            ids = set(self.triggers)
            new: list[dict] = []
            added: list[str] = []
            for spec in specs:
                if isinstance(spec, dict) and spec.get("id") in self.triggers:
                    ours = self.triggers[spec["id"]].spec
                    if ours != spec:
                        raise TriggerError(
                            f"trigger {spec['id']!r} is already registered with a different spec"
                        )
                    added.append(spec["id"])
                    continue
                checked = check_spec(
                    spec, ids=ids, known_tools=self.known_tools(), executors=executors
                )
                if checked["id"] in {s["id"] for s in new}:
                    raise TriggerError(f"trigger {checked['id']!r} appears twice in the batch")
                ids.add(checked["id"])
                new.append(checked)
                added.append(checked["id"])
            self.executors = executors
            if watch is not None and self.watch_roles is None:
                self.watch_roles = list(watch)
            for spec in new:
                self.triggers[spec["id"]] = Trigger(spec)
                self._event("added", spec["id"])
            self._changed()
            self._ensure_thread()
            self._cond.notify_all()
            return {"ok": True, "added": added, "all": list(self.triggers)}

    @staticmethod
    def _check_executor(name: str, config: Any) -> dict:
        where = f"executor {name!r}"
        if not isinstance(config, dict) or not isinstance(config.get("a2a_url"), str):
            raise TriggerError(f"{where} must be an object with an a2a_url")
        unknown = sorted(set(config) - {"a2a_url", "timeout_seconds", "role", "hours"})
        if unknown:
            raise TriggerError(f"{where}: unknown key {unknown[0]!r}")
        out = dict(config)
        if config.get("hours") is not None:
            out["hours"] = H.normalize_hours(config["hours"], f"{where}.hours")
        return out

    def remove(self, ids: Any) -> dict:
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise TriggerError("ids must be a list of trigger ids")
        with self._cond:
            removed = [i for i in ids if self.triggers.pop(i, None) is not None]
            self._jobs = [j for j in self._jobs if j.trigger.id not in removed]
            for tid in removed:
                self._event("removed", tid)
            self._changed()
            return {"ok": True, "removed": removed}

    def clear(self) -> dict:
        with self._cond:
            self.triggers, self._jobs, self.events = {}, [], []
            self.watch_roles, self.executors, self.events_dropped = None, {}, 0
            self._changed()
            return {"ok": True}

    def state(self) -> dict:
        with self._cond:
            return {
                "config": {
                    "watch_roles": sorted(self.watch_roles or ["default"]),
                    "executor_configured": "default" in self.executors,
                    "executors": sorted(self.executors),
                },
                "triggers": [t.describe() for t in self.triggers.values()],
                "events": [dict(e) for e in self.events],
                "events_dropped": self.events_dropped,
            }

    # --- persistence ------------------------------------------------------------------------
    def snapshot(self) -> dict:
        """Everything `restore` needs: specs, config, each trigger's progress, the events."""
        with self._cond:
            return {
                "watch_roles": self.watch_roles,
                "executors": self.executors,
                "triggers": [
                    {
                        "spec": t.spec,
                        "next_mark": iso(t.next_mark) if t.next_mark else None,
                        **{k: getattr(t, k) for k in Trigger.RUNTIME},
                    }
                    for t in self.triggers.values()
                ],
                "events": list(self.events),
                "seq": self._seq,
            }

    def restore(self, snapshot: dict) -> None:
        """Take back a snapshot (a resumed run; re-arm the clock first): fired triggers stay
        fired, time triggers keep their next mark, a time trigger caught mid-firing fires
        again, and an action trigger caught mid-firing is armed again (its firing `failed`)."""
        with self._cond:
            self.watch_roles = snapshot.get("watch_roles")
            self.executors = dict(snapshot.get("executors") or {})
            self.events = list(snapshot.get("events") or [])
            self._seq = int(snapshot.get("seq") or len(self.events))
            for item in snapshot.get("triggers") or []:
                trigger = Trigger(item["spec"])
                for key in Trigger.RUNTIME:
                    setattr(trigger, key, item.get(key, getattr(trigger, key)))
                if item.get("next_mark"):
                    trigger.next_mark = parse_time(item["next_mark"])
                if self.clock.armed and (trigger.next_mark is not None or trigger.marks):
                    trigger.anchored_arm = self.clock.arms  # no re-anchoring on restore
                self.triggers[trigger.id] = trigger
                if trigger.status not in ("firing", "queued"):
                    continue
                if trigger.kind == "time":
                    trigger.status = "queued"
                    self._queue(trigger, {}, {"resumed": True})
                else:
                    trigger.status = "armed"
                    self._event("failed", trigger.id, error="its firing was cut off by a crash")
            if self.triggers:
                self._ensure_thread()

    # --- provoking ----------------------------------------------------------------------------
    def _provokes(self, role: str, roles: list[str] | None) -> bool:
        if roles:
            return role in roles
        executor_roles = {c.get("role") for c in self.executors.values()}
        return role in (self.watch_roles or ["default"]) and role not in executor_roles

    def on_call(self, role: str, tool: str, arguments: dict, answer: dict) -> None:
        """After each tool call through the gateway: fire matching action triggers, cancel
        deadlines whose `unless` call came, and evaluate time triggers."""
        if not self.triggers or answer.get("isError") or "jsonrpc" in answer:
            self.wake()
            return
        result = result_value(answer)
        with self._cond:
            for trigger in list(self.triggers.values()):
                if trigger.kind == "action":
                    when = trigger.when
                    done = trigger.status == "fired" and not when.get("repeat")
                    if (
                        done
                        or trigger.status in ("firing", "queued", "cancelled")
                        or when["tool"] != tool
                        or not self._provokes(role, when.get("roles"))
                        or not where_holds(when.get("where"), arguments, result)
                    ):
                        continue
                    trigger.detected_at = iso(datetime.now(UTC))
                    trigger.status = "queued"
                    self._event("detected", trigger.id, provoking={"tool": tool, "role": role})
                    self._queue(trigger, {"args": arguments, "result": result}, {})
                elif trigger.kind == "time" and "unless" in trigger.when:
                    unless = trigger.when["unless"]
                    if (
                        trigger.status == "armed"
                        and unless["tool"] == tool
                        and self._provokes(role, unless.get("roles"))
                        and where_holds(unless.get("where"), arguments, result)
                    ):
                        trigger.status = "cancelled"
                        trigger.next_mark = None
                        self._event("cancelled", trigger.id, provoking={"tool": tool, "role": role})
            self._changed()
            self._cond.notify_all()

    def _queue(self, trigger: Trigger, scope: dict, detail: dict) -> None:
        trigger.pending += 1
        self._jobs.append(Job(trigger, scope, None, detail))

    # --- the clock ----------------------------------------------------------------------------
    def _now(self) -> datetime:
        return self.clock.now() or datetime.now(UTC)

    def _t0(self) -> datetime | None:
        state = self.clock.state()
        return parse_time(state["t0"]) if state.get("armed") else None

    def _evaluate_time(self) -> None:
        now = self.clock.now()
        t0 = self._t0()
        if now is None or t0 is None:
            return
        for trigger in list(self.triggers.values()):
            if trigger.kind != "time" or trigger.status in ("cancelled", "failed"):
                continue
            if trigger.status == "fired" and trigger.every is None:
                continue
            if trigger.anchored_arm != self.clock.arms:
                first = trigger.anchored_arm is None
                trigger.anchored_arm = self.clock.arms
                one_shot_done = trigger.every is None and trigger.marks > 0
                if (first or relative(trigger)) and not one_shot_done:
                    trigger.next_mark = first_mark(trigger, t0, self.triggers)
                    if first and trigger.next_mark is not None and trigger.every is not None:
                        for _ in range(min(trigger.marks, MAX_MARKS)):  # a restored trigger
                            trigger.next_mark += trigger.every.draw()
                    if trigger.next_mark is not None:
                        self._event(
                            "anchored" if first else "reanchored",
                            trigger.id,
                            next_mark=iso(trigger.next_mark),
                        )
            if trigger.next_mark is None and "after" in trigger.when and not trigger.marks:
                trigger.next_mark = first_mark(trigger, t0, self.triggers)
            if trigger.next_mark is None or trigger.next_mark > now:
                continue
            if trigger.status in ("firing", "queued"):
                continue
            marks: list[datetime] = []
            capped = False
            while trigger.next_mark is not None and trigger.next_mark <= now:
                if exhausted(trigger, trigger.next_mark):
                    trigger.next_mark = None
                    break
                if len(marks) >= MAX_MARKS:
                    capped = True
                    break
                trigger.marks += 1
                marks.append(trigger.next_mark)
                trigger.next_mark = (
                    trigger.next_mark + trigger.every.draw() if trigger.every else None
                )
            if trigger.next_mark is not None and exhausted(trigger, trigger.next_mark):
                trigger.next_mark = None
            if not marks:
                continue
            trigger.detected_at = iso(datetime.now(UTC))
            trigger.status = "queued"
            self._event(
                "detected",
                trigger.id,
                provoking={"source": "clock"},
                due=len(marks),
                capped=capped,
                first_mark=iso(marks[0]),
                last_mark=iso(marks[-1]),
            )
            # every due mark fires (a clock that jumped past three marks of `count = 3` fires
            # three times, in mark order); `capped` says marks beyond MAX_MARKS were dropped
            for mark in marks:
                self._queue(trigger, {}, {"mark": iso(mark), "capped": capped})

    # --- the worker ---------------------------------------------------------------------------
    def _loop(self) -> None:
        with httpx.Client(timeout=120.0) as http:
            while True:
                with self._cond:
                    if self._stopping:
                        return
                    self._evaluate_time()
                    now = self._now()
                    ready = [j for j in self._jobs if j.due is None or j.due <= now]
                    if not ready:
                        self._cond.wait(timeout=self._wait_seconds(now))
                        continue
                    job = ready[0]
                    self._jobs.remove(job)
                    job.trigger.status = "firing"
                try:
                    self._run(job, http)
                except Exception as e:  # noqa: BLE001 - one bad firing must not stop the engine
                    with self._cond:
                        self._fail(job, f"{type(e).__name__}: {e}")
                with self._cond:
                    self._changed()

    def _wait_seconds(self, now: datetime) -> float:
        waits = [POLL_SECONDS]
        rate = float(self.clock.state().get("virtual_seconds_per_real_second") or 0)
        for job in self._jobs:
            if job.due is not None and rate > 0:
                waits.append(max(0.01, (job.due - now).total_seconds() / rate))
            elif job.due is not None and not self.clock.armed:
                waits.append(max(0.01, (job.due - now).total_seconds()))
        return min(waits)

    def _later(self, job: Job, due: datetime) -> None:
        job.due = due
        job.trigger.status = "queued"
        self._jobs.append(job)

    def _run(self, job: Job, http: httpx.Client) -> None:
        trigger = job.trigger
        actions = trigger.spec["actions"]
        while job.index < len(actions):
            action = actions[job.index]
            with self._cond:
                if trigger.id not in self.triggers:
                    return
                if "delay" in action and job.delayed_index != job.index:
                    job.delayed_index = job.index
                    span = Span(action["delay"], "delay").draw()
                    due = self._now() + span
                    self._event("delayed", trigger.id, action_index=job.index, until=iso(due))
                    self._later(job, due)
                    return
                if action["type"] == "nl":
                    config = self.executors[action.get("executor", "default")]
                    hours = config.get("hours")
                    now = self.clock.now()
                    opening = H.next_opening(hours, now) if hours and now is not None else None
                    if opening is not None:
                        self._event(
                            "deferred", trigger.id, action_index=job.index, until=iso(opening)
                        )
                        self._later(job, opening)
                        return
            ok, detail = act(action, job, http, self.executors, self._post)
            with self._cond:
                if not ok:
                    self._event("action_failed", trigger.id, action_index=job.index, detail=detail)
                    self._fail(job, str(detail.get("error")))
                    return
                self._event(
                    "action_ok",
                    trigger.id,
                    action_index=job.index,
                    detail=detail,
                    changelog_id_before=None,
                    changelog_id_after=None,
                )
            job.index += 1
        with self._cond:
            trigger.pending = max(0, trigger.pending - 1)
            trigger.fire_count += 1
            trigger.fired_at = iso(datetime.now(UTC))
            now = self.clock.now()
            trigger.fired_virtual = iso(now) if now else trigger.fired_at
            trigger.status = "queued" if trigger.pending else "fired"
            self._event("fired", trigger.id, fire_count=trigger.fire_count, **job.detail)

    def _fail(self, job: Job, reason: str) -> None:
        trigger = job.trigger
        trigger.pending = max(0, trigger.pending - 1)
        trigger.failure_count += 1
        trigger.last_failure_at = iso(datetime.now(UTC))
        # a failed action trigger waits for the next provoking call; a failed time trigger retires
        trigger.status = "failed" if trigger.kind == "time" else "armed"
        if trigger.kind == "time":  # retired: the marks still queued behind this one are dropped
            dropped = [j for j in self._jobs if j.trigger is trigger]
            self._jobs = [j for j in self._jobs if j.trigger is not trigger]
            trigger.pending = max(0, trigger.pending - len(dropped))
        self._event("failed", trigger.id, error=reason[:500], **job.detail)

    def _post(self, http: httpx.Client, path: str, body: dict, role: str | None) -> dict:
        return post_to_gateway(http, self.base_url, self.admin_token, path, body, role)


def wait_for(engine: TriggerEngine, predicate: Callable[[dict], bool], timeout: float) -> dict:
    """Poll `engine.state()` until `predicate` holds or `timeout` real seconds pass."""
    deadline = time.monotonic() + timeout
    while True:
        state = engine.state()
        if predicate(state) or time.monotonic() >= deadline:
            return state
        time.sleep(0.005)


__all__ = ["FEATURES", "TRIGGERS_EXTENSION_URI", "TriggerEngine", "TriggerError"]
