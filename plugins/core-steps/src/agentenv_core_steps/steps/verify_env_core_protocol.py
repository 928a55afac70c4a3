"""`verify_env_core_protocol`: check that a deployed env serves the data plane's core methods
(`data/reset`, `data/add`, `data/get`) without changing its state.

`data/get` and an empty `data/add` are probed on the env's JSON-RPC endpoint: -32601 (method
not found) means unsupported, any other answer proves the handler exists. `data/reset` is
never called; it counts as supported when the card advertises it. The per-method result is
kept under `verifications.env_core_protocol`.
"""

from __future__ import annotations

from typing import Any, ClassVar

import attrs

from agent_env.context import StepContext
from agent_env.models import VerifierStep
from agentenv_core_steps.steps.reset_env import deployed_env
from agentenv_core_steps.steps.verify_env_card import TIMEOUT, fetch_card, row

METHOD_NOT_FOUND = -32601


@attrs.frozen(kw_only=True)
class VerifyEnvCoreProtocol(VerifierStep):
    type: ClassVar[str] = "verify_env_core_protocol"
    bundle_refs: ClassVar[dict[str, tuple[str, ...]]] = {"env": ("env_id",)}

    env_id: str

    async def execute(self, ctx: StepContext) -> None:
        from agentenv_core_steps.envs import secret as env_secret
        from agentenv_protocol import METHOD_ADD, METHOD_GET, METHOD_RESET

        name, record = deployed_env(ctx, self.env_id)
        url = record["url"]
        card, card_error = await fetch_card(url)
        rows = [_advertised(card, card_error, METHOD_RESET)]
        headers = env_secret.headers(ctx, name)
        rows.append(await _probe(url, METHOD_ADD, {"parts": []}, headers))
        rows.append(await _probe(url, METHOD_GET, {}, headers))
        ctx.set(
            "verifications",
            "env_core_protocol",
            value={r["id"]: {"supported": r["result"]} for r in rows},
        )
        missing = [r["id"] for r in rows if not r["result"]]
        summary = f"not supported: {', '.join(missing)}" if missing else "reset, add and get served"
        self.record(ctx, rows, f"env {name!r} data plane: {summary}")


def _advertised(card: dict[str, Any] | None, error: str, method: str) -> dict[str, Any]:
    if card is None:
        return row(method, False, f"cannot tell without the card: {error}")
    operations = (card.get("capabilities") or {}).get("operations")
    if operations is None:  # a card from before operations were advertised serves all three
        return row(method, True, "the card predates advertised operations")
    listed = method in operations
    return row(
        method,
        listed,
        "advertised on the card"
        if listed
        else f"the card's operations ({', '.join(operations) or 'none'}) do not list it",
    )


async def _probe(
    url: str, method: str, params: dict[str, Any], headers: dict[str, str]
) -> dict[str, Any]:
    import httpx

    from agentenv_protocol import RPC_PATH
    from agentenv_protocol._http import tls_context

    body = {"jsonrpc": "2.0", "id": f"verify-{method}", "method": method, "params": params}
    try:
        async with httpx.AsyncClient(timeout=TIMEOUT, verify=tls_context()) as http:
            response = await http.post(url.rstrip("/") + RPC_PATH, json=body, headers=headers)
        answer = response.json()
    except (httpx.HTTPError, ValueError) as e:
        return row(method, False, f"POST {RPC_PATH} failed: {type(e).__name__}: {e}")
    if not isinstance(answer, dict) or not ("result" in answer or "error" in answer):
        return row(
            method,
            False,
            f"POST {RPC_PATH} answered HTTP {response.status_code} without a JSON-RPC reply",
        )
    error = answer.get("error") or {}
    if isinstance(error, dict) and error.get("code") == METHOD_NOT_FOUND:
        return row(method, False, f"method not found (-32601): {error.get('message', '')}")
    if error:
        return row(method, True, f"registered (answered error {error.get('code')})")
    return row(method, True, "answered a result")
