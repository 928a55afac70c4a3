"""Calls to the run gateway's control routes (`/clock/*`, `/triggers/*`) with its admin token;
a refusal becomes StepFailed with the gateway's message."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agent_env.errors import StepFailed

if TYPE_CHECKING:
    from agentenv_core_steps.gateway import RunGateway

TIMEOUT = 30.0


async def gateway_call(
    step_id: str,
    gateway: RunGateway,
    method: str,
    path: str,
    body: dict[str, Any] | None = None,
    *,
    what: str,
    timeout: float = TIMEOUT,
) -> dict[str, Any]:
    """The JSON answer of `method path`; StepFailed naming `what` on an HTTP error."""
    import httpx

    from agentenv_protocol._http import client

    try:  # the shared TLS context: a fresh one per call loaded the CA bundle (~60 ms)
        async with client(timeout) as http:
            response = await http.request(
                method,
                gateway.url + path,
                json=body,
                headers={"authorization": f"Bearer {gateway.admin_token}"},
            )
    except httpx.HTTPError as e:
        raise StepFailed(
            step_id, f"{what}: the gateway did not answer: {e}", failure_class="infrastructure"
        ) from None
    try:
        answer = response.json()
    except ValueError:
        answer = {"error": response.text[:300]}
    if response.status_code >= 400:
        error = answer.get("error") if isinstance(answer, dict) else answer
        raise StepFailed(step_id, f"{what} failed (HTTP {response.status_code}): {error}")
    return answer if isinstance(answer, dict) else {}
