"""A trial's conversation in the OpenAI chat format, rebuilt from what its prompts recorded.

Each `prompt_agent` step stored a trajectory document (`agent_env.exports.TrialExport`): the
agent's events (`user`, `model` with `tool_calls` `{id, name, arguments}`, `tool` with the
call's `id`, `result` and `is_error`) and the gateway's call log for the prompt. The messages:
an optional `system` message, then per prompt the `user` message, an `assistant` message per
model turn (with `tool_calls`: `{id, type: "function", function: {name, arguments}}`,
arguments a JSON string), a `tool` message per result (`tool_call_id` matching its call) and
the final `assistant` answer. Agents that replay calls without model turns (scripted, the
oracle) get one assistant turn per call, with ids `call_<prompt>_<n>`; an agent that records
no events is rebuilt from the gateway's call log, so every tool result has its call.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any


def conversation(trajectories: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The trial's messages: its prompts' conversations in step order, after the first
    prompt's system prompt. A trajectory the object store no longer has (`missing`) gives its
    prompt and answer from the record, without tool calls."""
    messages: list[dict[str, Any]] = []
    system = next((t.get("system_prompt") for t in trajectories if t.get("system_prompt")), None)
    if system:
        messages.append({"role": "system", "content": str(system)})
    for n, doc in enumerate(trajectories):
        if doc.get("missing") is not None:
            messages += _answer_only(doc)
        else:
            messages += prompt_messages(doc, n)
    return messages


def prompt_messages(doc: Mapping[str, Any], n: int = 0) -> list[dict[str, Any]]:
    """The messages of one prompt's trajectory document (`n`: its place, for made-up ids)."""
    events = [e for e in doc.get("events") or [] if isinstance(e, Mapping)]
    prefix = f"call_{doc.get('prompt_id') or n}"
    if any(e.get("type") in ("model", "tool") for e in events):
        messages = _from_events(events, prefix)
    else:
        messages = _from_gateway(doc.get("gateway_calls") or [], prefix)
    if not any(m["role"] == "user" for m in messages):
        messages.insert(0, {"role": "user", "content": str(doc.get("prompt") or "")})
    response = doc.get("response")
    last = messages[-1]
    if response and not (last["role"] == "assistant" and last.get("content") == response):
        messages.append({"role": "assistant", "content": str(response)})
    return messages


def _from_events(events: Sequence[Mapping[str, Any]], prefix: str) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    announced: set[str] = set()
    made_up = 0
    for event in events:
        kind = event.get("type")
        if kind == "user":
            messages.append({"role": "user", "content": str(event.get("content") or "")})
        elif kind == "model":
            calls = [
                _tool_call(c.get("id"), c.get("name"), c.get("arguments"))
                for c in event.get("tool_calls") or []
                if isinstance(c, Mapping)
            ]
            content = event.get("content")
            if not calls and not content:
                continue
            message: dict[str, Any] = {"role": "assistant", "content": content}
            if calls:
                message["tool_calls"] = calls
                announced.update(c["id"] for c in calls)
            messages.append(message)
        elif kind == "tool":
            call_id = event.get("id")
            if call_id is None or str(call_id) not in announced:
                call_id = call_id if call_id is not None else f"{prefix}_{made_up}"
                made_up += 1
                call = _tool_call(call_id, event.get("name"), event.get("arguments"))
                messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
                announced.add(call["id"])
            messages.append(_tool_message(call_id, event.get("result")))
    return messages


def _from_gateway(calls: Sequence[Any], prefix: str) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    for i, call in enumerate(c for c in calls if isinstance(c, Mapping)):
        call_id = f"{prefix}_{i}"
        tool_call = _tool_call(call_id, call.get("tool"), call.get("arguments"))
        messages.append({"role": "assistant", "content": None, "tool_calls": [tool_call]})
        error = call.get("error")
        result = call.get("result") if error is None else error
        messages.append(_tool_message(call_id, result))
    return messages


def _answer_only(output: Mapping[str, Any]) -> list[dict[str, Any]]:
    messages = [{"role": "user", "content": str(output.get("prompt") or "")}]
    if output.get("response"):
        messages.append({"role": "assistant", "content": str(output["response"])})
    return messages


def _tool_call(call_id: Any, name: Any, arguments: Any) -> dict[str, Any]:
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments if arguments is not None else {}, sort_keys=True)
    return {
        "id": str(call_id),
        "type": "function",
        "function": {"name": str(name or ""), "arguments": arguments},
    }


def _tool_message(call_id: Any, result: Any) -> dict[str, Any]:
    content = result if isinstance(result, str) else json.dumps(result, default=str)
    return {"role": "tool", "tool_call_id": str(call_id), "content": content}
