"""Natural-language actions: ask an A2A agent (the executor) to do them.

`message/send` to `<a2a_url>/a2a` with `contextId: trigger-<id>` and one text part, then
`tasks/get` every 2 s until the task is terminal or `timeout_seconds` pass. A completed task's
text parts are the reply; anything else is an `ExecutorError`.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import httpx

TERMINAL = {"completed", "failed", "canceled", "cancelled", "rejected"}
POLL_SECONDS = 2.0


class ExecutorError(Exception):
    """The executor was unreachable, refused, or did not complete the task in time."""


def _rpc(http: httpx.Client, url: str, method: str, params: dict, timeout: float) -> dict:
    body = {"jsonrpc": "2.0", "id": uuid.uuid4().hex, "method": method, "params": params}
    try:
        response = http.post(url, json=body, timeout=timeout)
        answer = response.json()
    except (httpx.HTTPError, ValueError) as e:
        raise ExecutorError(
            f"executor at {url}: {method} failed: {type(e).__name__}: {e}"
        ) from None
    if (
        not isinstance(answer, dict)
        or "error" in answer
        or not isinstance(answer.get("result"), dict)
    ):
        raise ExecutorError(f"executor at {url} refused {method}: {str(answer)[:300]}")
    return answer["result"]


def _text(task: dict) -> str:
    message = (task.get("status") or {}).get("message") or {}
    parts = list(message.get("parts") or [])
    for artifact in task.get("artifacts") or []:
        parts += artifact.get("parts") or []
    return "\n".join(
        p.get("text", "") for p in parts if isinstance(p, dict) and p.get("kind") == "text"
    )


def _reason(task: dict) -> str:
    """Why a task did not complete: its text, else the failure an agent-env agent reports in a
    data part, else the raw status (never an empty reason)."""
    text = _text(task).strip()
    if text:
        return text
    message = (task.get("status") or {}).get("message") or {}
    for part in message.get("parts") or []:
        failure = (part.get("data") or {}).get("failure") if isinstance(part, dict) else None
        if isinstance(failure, dict) and failure.get("message"):
            return f"{failure.get('class') or 'agent'} error: {failure['message']}"
    return f"no reason given (status {json.dumps(task.get('status') or {}, default=str)[:200]})"


def call_executor(config: dict[str, Any], trigger_id: str, instruction: str) -> str:
    """The executor's reply to `instruction`; ExecutorError when it did not complete."""
    url = str(config["a2a_url"]).rstrip("/") + "/a2a"
    timeout = float(config.get("timeout_seconds") or 120)
    deadline = time.monotonic() + timeout
    message = {
        "kind": "message",
        "messageId": uuid.uuid4().hex,
        "role": "user",
        "contextId": f"trigger-{trigger_id}",
        "parts": [{"kind": "text", "text": instruction}],
    }
    with httpx.Client() as http:
        task = _rpc(http, url, "message/send", {"message": message}, timeout)
        while (task.get("status") or {}).get("state") not in TERMINAL:
            if time.monotonic() >= deadline:
                raise ExecutorError(f"executor did not finish within {timeout:g}s")
            time.sleep(POLL_SECONDS)
            task = _rpc(http, url, "tasks/get", {"id": task.get("id")}, timeout)
    state = (task.get("status") or {}).get("state")
    if state != "completed":
        raise ExecutorError(f"executor task ended {state!r}: {_reason(task)[:300]}")
    return _text(task)
