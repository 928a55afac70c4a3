"""`sync_env_clock`: arm the run gateway's env clock and point the env's backing servers at it.

The gateway's `set_time` arms the clock (agents then see a `get_time` tool); each backing
service whose card advertises `urn:agentenv:clock/v1` is handed `env_get_time_url` so its own
tools answer virtual time. Outcomes go to `clock_configurations` (a list, one entry per step);
`env_clock` keeps what a resumed run needs to re-arm the clock where it would be.
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

import attrs

from agent_env.context import StepContext
from agent_env.errors import StepFailed
from agent_env.models import Step
from agentenv_core_steps.envs import secret as env_secret
from agentenv_core_steps.gateway import gateway_for
from agentenv_core_steps.steps.reset_env import deployed_env
from agentenv_core_steps.triggers.control import gateway_call

CLOCK_URI = "urn:agentenv:clock/v1"
MAX_RATE = 86400


@attrs.frozen(kw_only=True)
class SyncEnvClock(Step):
    """Fields as the existing bundles use them."""

    type: ClassVar[str] = "sync_env_clock"
    bundle_refs: ClassVar[dict[str, tuple[str, ...]]] = {"env": ("env_id",)}

    env_id: str
    virtual_time: Any
    virtual_seconds_per_real_second: float = 1.0
    tolerate_missing_sync_time: bool = True
    timeout_seconds: int = 30

    def check(self, bundle: Any) -> list[str]:
        from agentenv_protocol.gateway.clock import ClockError, parse_time

        problems = []
        if not isinstance(self.virtual_time, str):
            problems.append("virtual_time must be an RFC3339 string, e.g. 2026-03-08T06:59:00Z")
        else:
            try:
                parse_time(self.virtual_time)
            except ClockError as e:
                problems.append(f"virtual_time: {e}")
        rate = self.virtual_seconds_per_real_second
        if isinstance(rate, bool) or not 0 <= rate <= MAX_RATE:
            problems.append(
                f"virtual_seconds_per_real_second must be between 0 (frozen) and {MAX_RATE} "
                f"(1 real s = 1 virtual day), got {rate!r}"
            )
        if self.timeout_seconds <= 0:
            problems.append("timeout_seconds: must be positive")
        return problems

    async def execute(self, ctx: StepContext) -> None:
        from agentenv_protocol.client_helpers import find_extension, invoke_extension

        name, record = deployed_env(ctx, self.env_id)
        gateway = await gateway_for(ctx)
        body = {
            "virtual_time": self.virtual_time,
            "virtual_seconds_per_real_second": self.virtual_seconds_per_real_second,
        }
        armed_at = time.time()
        await gateway_call(self.id, gateway, "PUT", "/clock/set-time", body, what="clock arm")
        state = await gateway_call(self.id, gateway, "GET", "/clock/state", what="clock state")
        url = state.get("env_get_time_url")
        if url:
            # the gateway names its loopback address; an env in a container reaches it through
            # the instance's relay on the provider's host address
            from agentenv_core_steps.agents.relay import reachable_url

            url = await reachable_url(ctx, url, record.get("provider"))
        ctx.set("env_clock", value={**body, "armed_at": armed_at, "set_by": self.id})
        synced: list[dict[str, Any]] = []
        skipped: list[dict[str, Any]] = []
        for service in self._services(record, name):
            card = gateway.gateway.cards.get(service)
            base = (ctx.get("envs", service, "url") or "").rstrip("/")
            item: dict[str, Any] = {"service": service, "environment": service}
            if card is None or not base:
                outcome: dict[str, Any] = {"synced": False, "reason": "no_env_card"}
            elif find_extension(card, CLOCK_URI) is None:
                outcome = {"synced": False, "reason": "not_advertised"}
            else:
                try:
                    result = await invoke_extension(
                        base,
                        card,
                        CLOCK_URI,
                        {"env_get_time_url": url},
                        timeout=self.timeout_seconds,
                        headers=env_secret.headers(ctx, service),
                    )
                except Exception as e:  # noqa: BLE001 - reported per service below
                    raise StepFailed(
                        self.id, f"{service}: handing it the clock failed: {e}"
                    ) from None
                synced.append({**item, "synced": True, "result": result})
                continue
            if not self.tolerate_missing_sync_time:
                why = (
                    "has no env card"
                    if outcome["reason"] == "no_env_card"
                    else f"does not advertise {CLOCK_URI}"
                )
                raise StepFailed(self.id, f"{service} {why}")
            skipped.append({**item, **outcome})
        configurations = list(ctx.get("clock_configurations", default=[]) or [])
        configurations.append(
            {
                "step_id": self.id,
                "env_id": self.env_id,
                "virtual_time": self.virtual_time,
                "virtual_seconds_per_real_second": self.virtual_seconds_per_real_second,
                "env_get_time_url": url,
                "synced": synced,
                "skipped": skipped,
            }
        )
        ctx.set("clock_configurations", value=configurations)
        ctx.log(
            f"env clock armed at {self.virtual_time} x{self.virtual_seconds_per_real_second:g}; "
            f"synced: {', '.join(s['service'] for s in synced) or 'none'}"
        )
        if not synced:
            ctx.log(
                "warning: no backing server takes the clock, so every tool still answers wall "
                "time (only the gateway's get_time is virtual)"
            )

    @staticmethod
    def _services(record: dict, name: str) -> list[str]:
        children = [
            e["environment_name"]
            for e in record.get("mcp_server_envs") or []
            if isinstance(e, dict) and e.get("environment_name")
        ]
        return children or [name]
