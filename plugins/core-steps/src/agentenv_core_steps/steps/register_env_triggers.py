"""`register_env_triggers`: register triggers on the run gateway's trigger engine.

Triggers fire while the agent works: after a provoking tool call (action triggers) or at marks
on the env clock (time triggers). Natural-language actions go to an executor agent deployed in
this task (`executor_agent_name`, or each nl action's `executor`), optionally only within its
working hours (`executor_hours`: `{agent: {start, end, days?, utc_offset? | time_zone?}}`).
With `await_fired` the step waits until those triggers fired. The registration goes to
`env_trigger_registrations` before any wait; the engine's own record of what fired is
`GET /triggers/state` (copied to `env_trigger_states.<step id>` once the awaited ones fired).
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

import anyio
import attrs

from agent_env.context import StepContext
from agent_env.errors import StepFailed
from agent_env.models import Step
from agentenv_core_steps.gateway import gateway_for
from agentenv_core_steps.steps.reset_env import deployed_env
from agentenv_core_steps.triggers.control import gateway_call
from agentenv_core_steps.triggers.resume import persist_triggers

TRIGGERS_URI = "urn:agentenv:triggers/v1"
POLL_SECONDS = 1.0
FAILURE_EVENTS = 6


@attrs.frozen(kw_only=True)
class RegisterEnvTriggers(Step):
    """Fields as the existing bundles use them."""

    type: ClassVar[str] = "register_env_triggers"
    bundle_refs: ClassVar[dict[str, tuple[str, ...]]] = {"env": ("env_id",)}

    env_id: str
    triggers: list[dict[str, Any]]
    watch_roles: list[str] | None = None
    executor_agent_name: str | None = None
    executor_timeout_seconds: int = 120
    executor_hours: dict[str, dict[str, Any]] | None = None
    await_fired: list[str] | None = None
    await_timeout_seconds: float = 120

    def check(self, bundle: Any) -> list[str]:
        from agentenv_protocol.gateway.triggers.errors import TriggerError
        from agentenv_protocol.gateway.triggers.hours import normalize_hours

        problems = []
        if not self.triggers:
            problems.append("triggers: register at least one trigger")
        ids = [t.get("id") for t in self.triggers if isinstance(t, dict)]
        for tid in self.await_fired or []:
            if tid not in ids:
                problems.append(
                    f"await_fired: {tid!r} is not a trigger this step registers "
                    f"(its ids: {', '.join(map(str, filter(None, ids))) or 'none'})"
                )
        if self.await_timeout_seconds <= 0:
            problems.append("await_timeout_seconds: must be > 0")
        for agent, hours in (self.executor_hours or {}).items():
            try:
                normalize_hours(hours, f"executor_hours.{agent}")
            except TriggerError as e:
                problems.append(str(e))
        return problems

    def _needed_features(self) -> set[str]:
        needed = set()
        for spec in self.triggers:
            when = spec.get("when") or {}
            if when.get("roles") or (when.get("unless") or {}).get("roles"):
                needed.add("provoking_roles")
            if "unless" in when:
                needed.add("unless")
            if when.get("type") == "website":
                needed.add("website")
            for action in spec.get("actions") or []:
                if "delay" in action:
                    needed.add("action_delay")
                if action.get("executor"):
                    needed.add("named_executors")
        if self.executor_hours:
            needed.add("executor_hours")
            if any("time_zone" in h for h in self.executor_hours.values()):
                needed.add("executor_hours_time_zone")
        return needed

    def _executor(self, ctx: StepContext, agent: str) -> dict[str, Any]:
        record = (ctx.get("agents", default={}) or {}).get(agent)
        if not isinstance(record, dict) or not record.get("url"):
            deployed = sorted(ctx.get("agents", default={}) or {})
            raise StepFailed(
                self.id,
                f"executor agent {agent!r} is not deployed as an A2A agent in this task "
                f"(deployed: {', '.join(deployed) or 'none'}); deploy it with deploy_agent first",
            )
        role = record.get("role")
        if not role:
            raise StepFailed(self.id, f"executor agent {agent!r} needs an explicit role")
        if self.watch_roles and role in self.watch_roles:
            raise StepFailed(
                self.id,
                f"executor agent {agent!r} acts as role {role!r}, which is in watch_roles: its "
                "own calls would provoke the triggers it runs",
            )
        config = {
            "a2a_url": record["url"],
            "timeout_seconds": self.executor_timeout_seconds,
            "role": role,
        }
        hours = (self.executor_hours or {}).get(agent)
        if hours is not None:
            config["hours"] = hours
        return config

    def _executors(self, ctx: StepContext) -> tuple[dict | None, dict[str, dict]]:
        named = sorted(
            {
                a["executor"]
                for spec in self.triggers
                for a in spec.get("actions") or []
                if isinstance(a, dict) and a.get("type") == "nl" and a.get("executor")
            }
        )
        used = set(named) | ({self.executor_agent_name} if self.executor_agent_name else set())
        unused = sorted(set(self.executor_hours or {}) - used)
        if unused:
            raise StepFailed(
                self.id,
                f"executor_hours names {', '.join(map(repr, unused))}, which no nl action "
                "uses (set executor_agent_name or an action's executor)",
            )
        default = (
            self._executor(ctx, self.executor_agent_name) if self.executor_agent_name else None
        )
        return default, {name: self._executor(ctx, name) for name in named}

    async def execute(self, ctx: StepContext) -> None:
        from agentenv_protocol.client_helpers import extension_params

        name, _ = deployed_env(ctx, self.env_id)
        gateway = await gateway_for(ctx)
        default, named = self._executors(ctx)
        offered = set(extension_params(gateway.gateway.card(), TRIGGERS_URI).get("features") or [])
        missing = sorted(self._needed_features() - offered)
        if missing:
            raise StepFailed(
                self.id,
                f"the run's gateway lacks trigger feature(s) {', '.join(missing)}; redeploy it "
                "on a gateway image that does",
            )
        body: dict[str, Any] = {"triggers": list(self.triggers)}
        if self.watch_roles is not None:
            body["watch_roles"] = list(self.watch_roles)
        if default is not None:
            body["executor"] = default
        if named:
            body["executors"] = named
        persist_triggers(gateway)
        answer = await gateway_call(
            self.id, gateway, "POST", "/triggers/register", body, what="trigger registration"
        )
        entry: dict[str, Any] = {
            "step_id": self.id,
            "env_id": self.env_id,
            "added": answer.get("added") or [],
            "executor_agent_name": self.executor_agent_name,
            "executor_agent_names": sorted(named),
        }
        registrations = list(ctx.get("env_trigger_registrations", default=[]) or [])
        registrations.append(entry)
        ctx.set("env_trigger_registrations", value=registrations)
        ctx.log(f"registered trigger(s) {', '.join(entry['added'])} on env {name!r}")
        if self.await_fired:
            state = await self._await(ctx, gateway, entry, registrations)
            ctx.set("env_trigger_states", self.id, value=state)

    async def _await(
        self, ctx: StepContext, gateway: Any, entry: dict[str, Any], registrations: list
    ) -> dict[str, Any]:
        """The engine's state once every awaited trigger fired; StepFailed when one failed,
        was cancelled, or the timeout passed. `entry["awaited"]` keeps the last statuses."""
        wanted = list(self.await_fired or [])
        deadline = time.monotonic() + float(self.await_timeout_seconds)
        statuses: dict[str, str] = {}
        while True:
            state = await gateway_call(
                self.id, gateway, "GET", "/triggers/state", what="trigger state"
            )
            statuses = {
                t["id"]: t["status"] for t in state.get("triggers") or [] if t["id"] in wanted
            }
            entry["awaited"] = statuses
            ctx.set("env_trigger_registrations", value=[*registrations[:-1], entry])
            if all(statuses.get(t) == "fired" for t in wanted):
                ctx.log(f"awaited trigger(s) fired: {', '.join(wanted)}")
                return state
            bad = {t: s for t, s in statuses.items() if s in ("failed", "cancelled")}
            if bad or time.monotonic() >= deadline:
                failures = [
                    e
                    for e in state.get("events") or []
                    if e.get("trigger_id") in wanted
                    and e.get("kind") in ("action_failed", "failed")
                ][-FAILURE_EVENTS:]
                why = (
                    f"awaited trigger(s) {', '.join(bad)} ended {', '.join(sorted(set(bad.values())))}"
                    if bad
                    else f"awaited triggers did not all fire within {self.await_timeout_seconds:g}s"
                )
                raise StepFailed(self.id, f"{why}; statuses {statuses}; failures {failures}")
            await anyio.sleep(POLL_SECONDS)
