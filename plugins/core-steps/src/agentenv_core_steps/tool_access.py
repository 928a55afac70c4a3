"""Tool-access changes on a run's gateway: apply one (`modify_env_tool_access`) and replay the
recorded ones onto a fresh gateway (a resumed run). Kept apart from the step so the gateway can
replay without importing the step module."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agent_env.context import StepContext

if TYPE_CHECKING:
    from agentenv_core_steps.gateway import RunGateway

TIMEOUT = 30.0


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

    from agentenv_protocol._http import client

    try:  # the shared TLS context (a fresh one per call loads the CA bundle)
        async with client(TIMEOUT) as http:
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
