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

    def _targets(self, ctx: StepContext) -> tuple[list[str], list[str]]:
        names: list[str] = []
        missing: list[str] = []
        sandboxes = ctx.get("sandboxes", default={}) or {}
        for name in self.sandbox_names:
            (names if name in sandboxes else missing).append(name)
        for kind, wanted in (("agents", self.agent_names), ("envs", self.env_ids)):
            entries = ctx.get(kind, default={}) or {}
            for key in wanted:
                entry = entries.get(key) or entries.get(key.rstrip("/").rsplit("/", 1)[-1])
                if isinstance(entry, dict) and entry.get("sandbox") in sandboxes:
                    names.append(entry["sandbox"])
                else:
                    missing.append(f"{kind[:-1]} {key}")
        return list(dict.fromkeys(names)), missing

    async def execute(self, ctx: StepContext) -> None:
        names, missing = self._targets(ctx)
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
        ctx.log(f"torn down: {', '.join(names) or 'nothing'}")
