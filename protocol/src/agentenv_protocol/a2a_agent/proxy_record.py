"""Recorded model calls for the proxy: reading an OpenAI or Anthropic message (or a string) as
content blocks, holding the actions to the tool calls the last call made, and the OTel GenAI
spans the proxy's trajectory is made of."""

from __future__ import annotations

import json
import secrets
import time
from typing import Any

import attrs

from agentenv_protocol.a2a_agent.proxy_types import BashAction, ToolAction
from agentenv_protocol.agent.types import Usage

_BLOCK_FIELDS = {"text": ("text",), "thinking": ("thinking",), "tool_use": ("id", "name", "input")}


def completion_blocks(message: Any) -> list[dict[str, Any]]:
    """`message` as content blocks (`thinking`, `text`, `tool_use`); ValueError saying why a
    message in any other shape isn't one the proxy records."""
    if isinstance(message, str):
        return [{"type": "text", "text": message}]
    if not isinstance(message, dict):
        raise ValueError("'message' must be a string or a message object")
    if message.get("role") != "assistant":
        raise ValueError(f"'message.role' must be 'assistant', got {message.get('role')!r}")
    blocks: list[dict[str, Any]] = []
    reasoning = message.get("reasoning_content")
    if reasoning is not None:
        if not isinstance(reasoning, str):
            raise ValueError("'message.reasoning_content' must be a string")
        blocks.append({"type": "thinking", "thinking": reasoning})
    content = message.get("content")
    if isinstance(content, str):
        blocks.append({"type": "text", "text": content})
    elif isinstance(content, list):
        blocks.extend(_block(item, n) for n, item in enumerate(content))
    elif content is not None:
        raise ValueError("'message.content' must be a string, a list of blocks or null")
    calls = message.get("tool_calls") or []
    if not isinstance(calls, list):
        raise ValueError("'message.tool_calls' must be a list")
    blocks.extend(_tool_call(call, n) for n, call in enumerate(calls))
    return blocks


def _block(item: Any, n: int) -> dict[str, Any]:
    kind = item.get("type") if isinstance(item, dict) else None
    fields = _BLOCK_FIELDS.get(kind) if isinstance(kind, str) else None
    if fields is None:
        raise ValueError(
            f"'message.content[{n}]' is a {kind!r} block; the proxy records "
            f"{', '.join(_BLOCK_FIELDS)} blocks"
        )
    block = {"type": kind, **{f: item.get(f) for f in fields}}
    if kind == "tool_use" and not (
        isinstance(block["name"], str) and isinstance(block["input"], dict)
    ):
        raise ValueError(
            f"'message.content[{n}]': a tool_use block needs a name and an input object"
        )
    if kind == "tool_use" and not isinstance(block["id"], str):
        block["id"] = f"call_{n}"
    if kind != "tool_use" and not isinstance(block[fields[0]], str):
        raise ValueError(f"'message.content[{n}].{fields[0]}' must be a string")
    return block


def _tool_call(call: Any, n: int) -> dict[str, Any]:
    where = f"'message.tool_calls[{n}]'"
    function = call.get("function") if isinstance(call, dict) else None
    if not isinstance(function, dict) or not isinstance(function.get("name"), str):
        raise ValueError(f"{where} needs a function with a name")
    arguments = function.get("arguments")
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except ValueError as e:
            raise ValueError(f"{where}.function.arguments is not JSON: {e}") from None
    if not isinstance(arguments, dict):
        raise ValueError(f"{where}.function.arguments must be a JSON object")
    call_id = call.get("id") if isinstance(call.get("id"), str) else f"call_{n}"
    return {"type": "tool_use", "id": call_id, "name": function["name"], "input": arguments}


def usage_tokens(usage: Any) -> tuple[int, int]:
    """(input, output) tokens from an OpenAI (`prompt_tokens`) or Anthropic (`input_tokens`)
    usage object; ValueError for anything else."""
    if usage is None:
        return 0, 0
    if not isinstance(usage, dict):
        raise ValueError("'usage' must be an object")
    tokens = []
    for names in (("prompt_tokens", "input_tokens"), ("completion_tokens", "output_tokens")):
        value = next((usage[n] for n in names if usage.get(n) is not None), 0)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ValueError(f"'usage.{names[0]}' must be a whole number >= 0")
        tokens.append(value)
    return tokens[0], tokens[1]


@attrs.frozen(kw_only=True)
class ModelCall:
    """A model call a driver records: its content blocks, model and token counts."""

    blocks: list[dict[str, Any]]
    model: str | None
    tokens_in: int
    tokens_out: int
    started: float = attrs.Factory(time.time)

    @classmethod
    def parse(cls, body: dict[str, Any]) -> ModelCall:
        """The call a `record` body describes; ValueError naming what is wrong."""
        model = body.get("model")
        if model is not None and not isinstance(model, str):
            raise ValueError("'model' must be a string")
        tokens_in, tokens_out = usage_tokens(body.get("usage"))
        blocks = completion_blocks(body.get("message"))
        return cls(blocks=blocks, model=model, tokens_in=tokens_in, tokens_out=tokens_out)


def record(turn: Any, call: ModelCall, offered: dict[str, str | None]) -> None:
    """Add `call` to the turn: its span, its usage, and the tool calls its actions must now
    carry out (those to tools the turn offers: name -> server, None for bash)."""
    turn.expected = expected_calls(call.blocks, offered)
    attributes: dict[str, Any] = {
        "gen_ai.completion": as_json({"content": call.blocks}),
        "gen_ai.usage.input_tokens": call.tokens_in,
        "gen_ai.usage.output_tokens": call.tokens_out,
    }
    if call.model:
        attributes["gen_ai.request.model"] = call.model
    turn.spans.append(
        span(
            "chat",
            "chat",
            trace_id=turn.trace_id,
            parent=turn.span_id,
            started=call.started,
            ok=True,
            attributes=attributes,
        )
    )
    turn.usage += Usage(
        prompt_tokens=call.tokens_in,
        completion_tokens=call.tokens_out,
        total_tokens=call.tokens_in + call.tokens_out,
        model_calls=1,
    )


@attrs.frozen(kw_only=True)
class ExpectedCall:
    """A tool call a recorded model call made, which an action must carry out."""

    name: str
    server: str | None  # None: the proxy's own bash
    arguments: dict[str, Any]

    def matches(self, action: BashAction | ToolAction) -> bool:
        if isinstance(action, BashAction):
            return self.server is None and self.arguments.get("command") == action.command
        return (
            self.server == action.server
            and self.name == action.name
            and same_json(self.arguments, action.arguments)
        )


def expected_calls(
    blocks: list[dict[str, Any]], offered: dict[str, str | None]
) -> list[ExpectedCall]:
    """The calls in `blocks` to tools the turn offers (name -> server, None for bash); calls to
    other tools aren't checked."""
    return [
        ExpectedCall(name=b["name"], server=offered[b["name"]], arguments=b["input"])
        for b in blocks
        if b["type"] == "tool_use" and b["name"] in offered
    ]


def same_json(a: Any, b: Any) -> bool:
    """JSON equality where a whole float equals its int, but a bool is never a number."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_json(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def span_id() -> str:
    return secrets.token_hex(8)


def span(
    name: str,
    operation: str,
    *,
    trace_id: str,
    parent: str | None,
    started: float,
    ok: bool,
    attributes: dict[str, Any],
    own_id: str | None = None,
) -> dict[str, Any]:
    """One finished OTel GenAI span; JSON-valued attributes are given as JSON strings."""
    return {
        "name": name,
        "trace_id": trace_id,
        "span_id": own_id or span_id(),
        "parent_span_id": parent,
        "start_time_unix_nano": int(started * 1e9),
        "end_time_unix_nano": time.time_ns(),
        "attributes": {"gen_ai.operation.name": operation, **attributes},
        "status": {"status_code": "OK" if ok else "ERROR"},
    }


def as_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)
