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
        import httpx

        name, record = deployed_env(ctx, self.env_id)
        gateway = await gateway_for(ctx)
        tools: list[str] | str = "*" if self.tools == ["*"] else list(self.tools)
        served = [t for t in record.get("tools") or [] if isinstance(t, str)]
        foreign = [t for t in self.tools if t != "*" and served and t not in served]
        if foreign:
            raise StepFailed(
                self.id,
                f"env {name!r} serves no tool {foreign[0]!r}{did_you_mean(foreign[0], served)}; "
                f"its tools: {', '.join(served)}",
            )
        try:
            async with httpx.AsyncClient(timeout=TIMEOUT) as http:
                response = await http.post(
                    f"{gateway.url}/tools/{self.action}",
                    json={"role": self.role, "tools": tools},
                    headers={"authorization": f"Bearer {gateway.admin_token}"},
                )
        except httpx.HTTPError as e:
            raise StepFailed(
                self.id, f"the gateway did not take the change: {e}", failure_class="infrastructure"
            ) from None
        body = _json(response)
        if response.status_code != 200:
            raise StepFailed(
                self.id,
                f"{self.action} {self.tools} for role {self.role!r}: "
                f"{body.get('error') or response.text[:300]}",
            )
        after = (body.get("roles") or {}).get(self.role) or {"disabled": [], "enabled": []}
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


def _json(response: Any) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}
