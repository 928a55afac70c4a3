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
from agentenv_core_steps.gateway import RunGateway, gateway_for
from agentenv_core_steps.steps.reset_env import deployed_env

ACTIONS = ("disable", "enable")
TIMEOUT = 30.0


@attrs.frozen(kw_only=True)
class ModifyEnvToolAccess(Step):
    """Fields as the existing bundles use them: `env_id`, `action`, `role`, `tools`."""

    type: ClassVar[str] = "modify_env_tool_access"

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


class ToolAccessError(Exception):
    """The gateway refused or did not take a tool-access change."""

    def __init__(self, message: str, failure_class: str = "error"):
        super().__init__(message)
        self.failure_class = failure_class


async def apply_tool_access(
    gateway: RunGateway, action: str, role: str, tools: list[str]
) -> dict[str, Any]:
    """POST the change to the gateway's `/tools/<action>` route; the rules per role after it."""
    import httpx

    try:
        async with httpx.AsyncClient(timeout=TIMEOUT) as http:
            response = await http.post(
                f"{gateway.url}/tools/{action}",
                json={"role": role, "tools": "*" if tools == ["*"] else tools},
                headers={"authorization": f"Bearer {gateway.admin_token}"},
            )
    except httpx.HTTPError as e:
        raise ToolAccessError(
            f"the gateway did not take the change: {e}", "infrastructure"
        ) from None
    body = _json(response)
    if response.status_code != 200:
        raise ToolAccessError(
            f"{action} {tools} for role {role!r}: {body.get('error') or response.text[:300]}"
        )
    return dict(body.get("roles") or {})


async def replay_tool_access(ctx: StepContext, gateway: RunGateway) -> None:
    """Apply the task's recorded changes to a fresh gateway (a resumed run), in step order."""
    for step_id, change in (ctx.get("tool_access_changes", default={}) or {}).items():
        try:
            await apply_tool_access(
                gateway, change["action"], change["role"], list(change["tools_requested"])
            )
        except (ToolAccessError, KeyError, TypeError) as e:
            ctx.log(f"gateway: tool access of step {step_id!r} not re-applied: {e}")


def _json(response: Any) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}
