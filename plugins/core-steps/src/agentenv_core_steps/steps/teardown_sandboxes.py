"""`teardown_sandboxes`: release named sandboxes (and agents' and envs' sandboxes) mid-run.

Best effort: a name that is not deployed or a teardown that fails is logged, never raised,
so `fail_task_on_error` defaults to and must stay false.
"""

from __future__ import annotations

from typing import Any, ClassVar

import attrs

from agent_env.context import StepContext
from agent_env.models import Step

TORN_DOWN_KEY = "torn_down_sandbox_ids"


@attrs.frozen(kw_only=True)
class TeardownSandboxes(Step):
    type: ClassVar[str] = "teardown_sandboxes"
    bundle_refs: ClassVar[dict[str, tuple[str, ...]]] = {"env": ("env_ids[]",)}

    fail_task_on_error: bool = False
    sandbox_names: list[str] = attrs.field(factory=list)
    agent_names: list[str] = attrs.field(factory=list)
    env_ids: list[str] = attrs.field(factory=list)

    def check(self, bundle: Any) -> list[str]:
        problems = []
        if self.fail_task_on_error:
            problems.append("fail_task_on_error must be false: teardown_sandboxes is best effort")
        if not (self.sandbox_names or self.agent_names or self.env_ids):
            problems.append("needs at least one of sandbox_names, agent_names, env_ids")
        return problems

    def _targets(self, ctx: StepContext) -> tuple[list[str], list[str], dict[str, str]]:
        """(sandbox names, what was not deployed, env key -> its sandbox name)."""
        names: list[str] = []
        missing: list[str] = []
        env_sandboxes: dict[str, str] = {}
        sandboxes = ctx.get("sandboxes", default={}) or {}
        for name in self.sandbox_names:
            (names if name in sandboxes else missing).append(name)
        for kind, wanted in (("agents", self.agent_names), ("envs", self.env_ids)):
            entries = ctx.get(kind, default={}) or {}
            for key in wanted:
                found = key if key in entries else key.rstrip("/").rsplit("/", 1)[-1]
                entry = entries.get(found)
                if isinstance(entry, dict) and entry.get("sandbox") in sandboxes:
                    names.append(entry["sandbox"])
                    if kind == "envs":
                        env_sandboxes[found] = entry["sandbox"]
                else:
                    missing.append(f"{kind[:-1]} {key}")
        return list(dict.fromkeys(names)), missing, env_sandboxes

    async def execute(self, ctx: StepContext) -> None:
        names, missing, env_sandboxes = self._targets(ctx)
        if missing:
            ctx.log("not deployed in this task, skipped: " + ", ".join(missing))
        done: list[str] = []
        for name in names:
            entry = ctx.get("sandboxes", name) or {}
            try:
                await ctx.teardown_sandbox(name)
            except Exception as e:  # noqa: BLE001 - best effort by contract
                ctx.log(f"teardown of sandbox {name!r} failed: {e}")
                continue
            done.append(entry.get("id", name))
        if done:
            ctx.set(TORN_DOWN_KEY, value=[*(ctx.get(TORN_DOWN_KEY) or []), *done])
        self._unregister_envs(ctx, env_sandboxes, names)
        ctx.log(f"torn down: {', '.join(names) or 'nothing'}")

    @staticmethod
    def _unregister_envs(ctx: StepContext, env_sandboxes: dict[str, str], names: list[str]) -> None:
        """An env whose sandbox is gone leaves the run's gateway (its tools stop being
        listed) and is not registered again on resume."""
        if not env_sandboxes:  # no env was deployed: no gateway to look up (nor to import)
            return
        from agentenv_core_steps.gateway import live_gateway

        gateway = live_gateway(ctx.task_instance_id)
        for env, sandbox in env_sandboxes.items():
            if sandbox not in names or ctx.get("sandboxes", sandbox) is not None:
                continue  # its teardown failed: the env may still serve
            if gateway is not None:
                gateway.remove_env(env)
            ctx.set("envs", env, "url", value=None)
            ctx.set("envs", env, "torn_down", value=True)
