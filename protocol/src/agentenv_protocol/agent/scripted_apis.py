"""The other wire formats `ScriptedModelServer` answers in, besides chat completions: the
Anthropic Messages API (`POST /v1/messages`, JSON or SSE) and the OpenAI Responses API
(`POST /v1/responses`, JSON or SSE), so CLI coding agents (Claude Code, Codex, ...) can be
driven by a script. A reply is the same `{content?, tool_calls?}` in every format.
"""

from __future__ import annotations

import json
from typing import Any

USAGE_IN, USAGE_OUT = 11, 7


def tool_names(request: dict[str, Any]) -> list[str]:
    """The names of the tools a request offers, in any of the three formats."""
    return [n for n, _ in _offered(request.get("tools") or [], None)]


def _offered(tools: list[Any], namespace: str | None) -> list[tuple[str, str | None]]:
    """(name, namespace) of each tool; a Responses `namespace` tool holds its own tools."""
    found: list[tuple[str, str | None]] = []
    for tool in tools:
        if not isinstance(tool, dict):
            continue
        if tool.get("type") == "namespace":
            found += _offered(tool.get("tools") or [], tool.get("name"))
            continue
        name = tool.get("name") or (tool.get("function") or {}).get("name")
        if isinstance(name, str):
            found.append((name, namespace))
    return found


def resolve_tool(name: str, offered: list[str]) -> str:
    """A scripted bare tool name as the agent named it: `add_note` is `mcp__gateway__add_note`
    for Claude Code, `gateway__add_note` or `gateway.add_note` elsewhere."""
    if name in offered:
        return name
    for candidate in offered:
        if candidate.endswith(("__" + name, "." + name, "-" + name, "_" + name)):
            return candidate
    return name


def _calls(reply: dict[str, Any], request: dict[str, Any], serial: int) -> list[dict[str, Any]]:
    offered = _offered(request.get("tools") or [], None)
    namespaces = dict(offered)
    calls = []
    for i, c in enumerate(reply.get("tool_calls") or []):
        name = resolve_tool(c["name"], [n for n, _ in offered])
        calls.append(
            {
                "id": c.get("id") or f"call_{serial}_{i}",
                "name": name,
                "namespace": namespaces.get(name),
                "arguments": c.get("arguments") or {},
            }
        )
    return calls


def sse(events: list[tuple[str, dict[str, Any]]]) -> bytes:
    """`event: NAME` / `data: JSON` frames."""
    return "".join(f"event: {n}\ndata: {json.dumps(d)}\n\n" for n, d in events).encode()


# --- Anthropic Messages ---------------------------------------------------------------------
def anthropic_message(reply: dict[str, Any], request: dict[str, Any], serial: int) -> dict:
    content: list[dict[str, Any]] = []
    if reply.get("content"):
        content.append({"type": "text", "text": reply["content"]})
    calls = _calls(reply, request, serial)
    content += [
        {
            "type": "tool_use",
            "id": c["id"].replace("call_", "toolu_"),
            "name": c["name"],
            "input": c["arguments"],
        }
        for c in calls
    ]
    return {
        "id": f"msg_{serial}",
        "type": "message",
        "role": "assistant",
        "model": request.get("model") or "scripted-model",
        "content": content,
        "stop_reason": "tool_use" if calls else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": USAGE_IN, "output_tokens": USAGE_OUT},
    }


def anthropic_stream(message: dict[str, Any]) -> bytes:
    head = dict(message, content=[], stop_reason=None)
    events: list[tuple[str, dict[str, Any]]] = [
        ("message_start", {"type": "message_start", "message": head})
    ]
    for i, block in enumerate(message["content"]):
        if block["type"] == "text":
            start, delta = (
                {"type": "text", "text": ""},
                {"type": "text_delta", "text": block["text"]},
            )
        else:
            start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        events += [
            (
                "content_block_start",
                {"type": "content_block_start", "index": i, "content_block": start},
            ),
            ("content_block_delta", {"type": "content_block_delta", "index": i, "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": i}),
        ]
    events += [
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                "usage": {"output_tokens": USAGE_OUT},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return sse(events)


# --- OpenAI Responses -----------------------------------------------------------------------
def response_object(reply: dict[str, Any], request: dict[str, Any], serial: int) -> dict:
    output: list[dict[str, Any]] = []
    if reply.get("content"):
        output.append(
            {
                "type": "message",
                "id": f"msg_{serial}",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": reply["content"], "annotations": []}],
            }
        )
    for c in _calls(reply, request, serial):
        if c["namespace"]:
            output.append(
                {
                    "type": "function_call",
                    "id": f"fc_{c['id']}",
                    "call_id": c["id"],
                    "namespace": c["namespace"],
                    "name": c["name"],
                    "arguments": json.dumps(c["arguments"]),
                    "status": "completed",
                }
            )
            continue
        output.append(
            {
                "type": "function_call",
                "id": f"fc_{c['id']}",
                "call_id": c["id"],
                "name": c["name"],
                "arguments": json.dumps(c["arguments"]),
                "status": "completed",
            }
        )
    return {
        "id": f"resp_{serial}",
        "object": "response",
        "status": "completed",
        "model": request.get("model") or "scripted-model",
        "output": output,
        "usage": {
            "input_tokens": USAGE_IN,
            "output_tokens": USAGE_OUT,
            "total_tokens": USAGE_IN + USAGE_OUT,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }


def responses_stream(response: dict[str, Any]) -> bytes:
    head = dict(response, status="in_progress", output=[])
    events: list[tuple[str, dict[str, Any]]] = [
        ("response.created", {"type": "response.created", "response": head})
    ]
    for i, item in enumerate(response["output"]):
        events += [
            (
                "response.output_item.added",
                {"type": "response.output_item.added", "output_index": i, "item": item},
            ),
            (
                "response.output_item.done",
                {"type": "response.output_item.done", "output_index": i, "item": item},
            ),
        ]
    events.append(("response.completed", {"type": "response.completed", "response": response}))
    return sse(events)
