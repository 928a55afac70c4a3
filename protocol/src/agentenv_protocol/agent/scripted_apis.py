"""The wire formats `ScriptedModelServer` answers in: OpenAI chat completions
(`POST /v1/chat/completions`), the Anthropic Messages API (`POST /v1/messages`), the OpenAI
Responses API (`POST /v1/responses`) and Gemini's `generateContent` (`POST
/v1beta/models/M:generateContent`, `:streamGenerateContent?alt=sse`), each as JSON or streamed,
so CLI coding agents (Claude Code, Codex, Gemini CLI, OpenCode) can be driven by a script. A
reply is the same `{content?, tool_calls?}` in every format.
"""

from __future__ import annotations

import json
from typing import Any

USAGE_IN, USAGE_OUT = 11, 7


def tool_names(request: dict[str, Any]) -> list[str]:
    """The names of the tools a request offers, in any of the three formats."""
    return [n for n, _ in _offered(request.get("tools") or [], None)]


def first_user_text(request: dict[str, Any]) -> str:
    """The text of a request's first user message in any of the four formats: the prompt that
    started the conversation, the same in every request of one tool loop."""
    if "contents" in request:  # Gemini
        users = [c for c in request.get("contents") or [] if c.get("role", "user") == "user"]
        return _text(users[0].get("parts")) if users else ""
    raw = request["messages"] if "messages" in request else request.get("input")
    if isinstance(raw, str):
        return raw
    for item in raw or []:
        if isinstance(item, dict) and item.get("role") == "user":
            return _text(item.get("content"))
    return ""


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(filter(None, map(_text, content)))
    if isinstance(content, dict):
        return str(content.get("text") or "")
    return ""


def _offered(tools: list[Any], namespace: str | None) -> list[tuple[str, str | None]]:
    """(name, namespace) of each tool; a Responses `namespace` tool holds its own tools."""
    found: list[tuple[str, str | None]] = []
    for tool in tools:
        if not isinstance(tool, dict):
            continue
        if tool.get("type") == "namespace":
            found += _offered(tool.get("tools") or [], tool.get("name"))
            continue
        if "functionDeclarations" in tool:  # Gemini: one tool holds the declarations
            found += _offered(tool["functionDeclarations"] or [], namespace)
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


# --- OpenAI chat completions -----------------------------------------------------------------
def chat_completion(
    reply: dict[str, Any], request: dict[str, Any], serial: int, created: int
) -> dict:
    message: dict[str, Any] = {"role": "assistant", "content": reply.get("content")}
    calls = _calls(reply, request, serial)
    if calls:
        message["tool_calls"] = [
            {
                "id": c["id"],
                "type": "function",
                "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])},
            }
            for c in calls
        ]
    return {
        "id": f"chatcmpl-{serial}",
        "object": "chat.completion",
        "created": created,
        "model": request.get("model") or "scripted-model",
        "choices": [
            {"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}
        ],
        "usage": {
            "prompt_tokens": USAGE_IN,
            "completion_tokens": USAGE_OUT,
            "total_tokens": USAGE_IN + USAGE_OUT,
        },
    }


def chat_stream(completion: dict[str, Any]) -> bytes:
    """The completion as `chat.completion.chunk` frames ending in `data: [DONE]`."""
    choice = completion["choices"][0]
    message = choice["message"]
    head = {k: completion[k] for k in ("id", "created", "model")}
    head["object"] = "chat.completion.chunk"
    deltas: list[dict[str, Any]] = [{"role": "assistant", "content": message.get("content") or ""}]
    deltas += [
        {"tool_calls": [dict(call, index=i)]}
        for i, call in enumerate(message.get("tool_calls") or [])
    ]
    chunks = [dict(head, choices=[{"index": 0, "delta": d, "finish_reason": None}]) for d in deltas]
    chunks.append(
        dict(
            head,
            choices=[{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}],
            usage=completion["usage"],
        )
    )
    return "".join(f"data: {json.dumps(c)}\n\n" for c in chunks).encode() + b"data: [DONE]\n\n"


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
        start: dict[str, Any]
        delta: dict[str, Any]
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


# --- Gemini generateContent -------------------------------------------------------------------
def gemini_response(reply: dict[str, Any], request: dict[str, Any], model: str) -> dict:
    parts: list[dict[str, Any]] = []
    if reply.get("content"):
        parts.append({"text": reply["content"]})
    parts += [
        {"functionCall": {"id": c["id"], "name": c["name"], "args": c["arguments"]}}
        for c in _calls(reply, request, 0)
    ]
    return {
        "candidates": [
            {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
        ],
        "usageMetadata": {
            "promptTokenCount": USAGE_IN,
            "candidatesTokenCount": USAGE_OUT,
            "totalTokenCount": USAGE_IN + USAGE_OUT,
        },
        "modelVersion": model,
    }


def gemini_stream(response: dict[str, Any]) -> bytes:
    """`alt=sse`: the whole response as one `data:` frame (a valid stream of one chunk)."""
    return f"data: {json.dumps(response)}\r\n\r\n".encode()
