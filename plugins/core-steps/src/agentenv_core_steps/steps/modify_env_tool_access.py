"""`modify_env_tool_access`: enable or disable tools for a role on the run's gateway.

The step posts to the gateway's control routes (`POST /tools/enable|disable` with the admin
token), so from then on a caller with that role neither sees the tools in `tools/list` nor
can call them. The rules after the change are kept under `tool_access_changes.<step id>`.
"""

from __future__ import annotations

from typing import Any, ClassVar

import attrs

from agent_env.context import StepContext
from agent_env.errors import StepFailed
from agent_env.models import Step
from agent_env.suggest import did_you_mean
from agentenv_core_steps.gateway import gateway_for
from agentenv_core_steps.steps.reset_env import deployed_env
from agentenv_core_steps.tool_access import ToolAccessError, apply_tool_access

ACTIONS = ("disable", "enable")


@attrs.frozen(kw_only=True)
class ModifyEnvToolAccess(Step):
    """Fields as the existing bundles use them: `env_id`, `action`, `role`, `tools`."""

    type: ClassVar[str] = "modify_env_tool_access"
    bundle_refs: ClassVar[dict[str, tuple[str, ...]]] = {"env": ("env_id",)}

    env_id: str
    action: str
    role: str
    tools: list[str]

    def check(self, bundle: Any) -> list[str]:
        problems = []
        if self.action not in ACTIONS:
            problems.append(
                f"action: {self.action!r} is not one of {', '.join(map(repr, ACTIONS))}"
                f"{did_you_mean(self.action, ACTIONS)}"
            )
        if not self.role.strip():
            problems.append("role: a non-empty role name is required (or '*' for every role)")
        if not self.tools:
            problems.append("tools: name at least one tool (or '*' for every tool)")
        return problems

    async def execute(self, ctx: StepContext) -> None:
        name, record = deployed_env(ctx, self.env_id)
        gateway = await gateway_for(ctx)
        served = [t for t in record.get("tools") or [] if isinstance(t, str)]
        foreign = [t for t in self.tools if t != "*" and served and t not in served]
        if foreign:
            raise StepFailed(
                self.id,
                f"env {name!r} serves no tool {foreign[0]!r}{did_you_mean(foreign[0], served)}; "
                f"its tools: {', '.join(served)}",
            )
        try:
            roles = await apply_tool_access(gateway, self.action, self.role, list(self.tools))
        except ToolAccessError as e:
            raise StepFailed(self.id, str(e), failure_class=e.failure_class) from None
        after = roles.get(self.role) or {"disabled": [], "enabled": []}
        ctx.set(
            "tool_access_changes",
            self.id,
            value={
                "env_id": self.env_id,
                "action": self.action,
                "role": self.role,
                "tools_requested": list(self.tools),
                "role_state_after": after,
            },
        )
        ctx.log(
            f"{self.action}d {', '.join(self.tools)} for role {self.role!r} on env {name!r}; "
            f"disabled now: {', '.join(after.get('disabled') or []) or 'none'}"
        )
