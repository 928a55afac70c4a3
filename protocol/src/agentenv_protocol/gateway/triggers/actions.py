"""Taking a trigger's actions: a tool call through the gateway's own `/mcp` as role `as`, a
tool-access change, or an instruction for an executor agent."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import httpx

from agentenv_protocol.context import ROLE_HEADER
from agentenv_protocol.gateway.triggers.executor import ExecutorError, call_executor
from agentenv_protocol.gateway.triggers.matching import redact_args
from agentenv_protocol.gateway.triggers.model import Job
from agentenv_protocol.gateway.triggers.templates import Unresolved, render

DEFAULT_ACTION_ROLE = "trigger"


def act(
    action: dict,
    job: Job,
    http: httpx.Client,
    executors: dict[str, dict],
    post: Callable[[httpx.Client, str, dict, str | None], dict],
) -> tuple[bool, dict]:
    """Take one action; (ok, detail for the event log)."""
    kind = action["type"]
    if kind == "tool":
        try:
            args = render(action.get("args") or {}, job.scope)
        except Unresolved as e:
            return False, {"tool": action["tool"], "error": str(e)}
        role = action.get("as") or DEFAULT_ACTION_ROLE
        detail = {"tool": action["tool"], "args": redact_args(args), "as": role}
        answer = post(
            http,
            "/mcp",
            {
                "jsonrpc": "2.0",
                "id": uuid.uuid4().hex,
                "method": "tools/call",
                "params": {"name": action["tool"], "arguments": args},
            },
            role,
        )
        if "error" in answer:
            return False, {**detail, "error": str(answer["error"])[:500]}
        result = answer.get("result") or {}
        if result.get("isError"):
            text = " ".join(c.get("text", "") for c in result.get("content") or [])
            return False, {**detail, "error": text[:500]}
        return True, detail
    if kind == "permission":
        body = {"role": action["role"], "tools": action["tools"]}
        answer = post(http, f"/tools/{action['action']}", body, None)
        detail = {
            "permission": action["action"],
            "role": action["role"],
            "tools": action["tools"],
        }
        if not answer.get("ok"):
            return False, {**detail, "error": str(answer.get("error") or answer)[:500]}
        return True, detail
    name = action.get("executor", "default")
    try:
        reply = call_executor(executors[name], job.trigger.id, action["instruction"])
    except ExecutorError as e:
        return False, {"executor": name, "error": f"executor attempt 1 did not complete: {e}"}
    return True, {"executor": name, "reply": {"redacted": {"type": "str", "len": len(reply)}}}


def post_to_gateway(
    http: httpx.Client,
    base_url: str | None,
    admin_token: str | None,
    path: str,
    body: dict,
    role: str | None,
) -> dict:
    """POST `body` to the gateway at `path` as `role` (admin token); its JSON or `{error}`."""
    if base_url is None:
        return {"error": "the trigger engine is not bound to its gateway yet"}
    headers = {"authorization": f"Bearer {admin_token}"}
    if role:
        headers[ROLE_HEADER] = role
    try:
        response = http.post(base_url + path, json=body, headers=headers)
        answer = response.json()
    except (httpx.HTTPError, ValueError) as e:
        return {"error": f"{type(e).__name__}: {e}"}
    return answer if isinstance(answer, dict) else {"error": str(answer)[:300]}
