"""Matching a tool call against a trigger's `where` predicates, reading a call's result, and
redacting action arguments for the event log."""

from __future__ import annotations

import json
import re
from typing import Any

from agentenv_protocol.gateway.triggers.templates import lookup, missing

_ID_KEY = re.compile(r"^(id|name|title|type|kind|status|[a-z_]*_id|[a-z]+Id)$")


def redact_args(args: Any) -> Any:
    """Identifier-like keys keep short scalar values; every other value keeps only its shape."""
    if not isinstance(args, dict):
        return {"redacted": {"type": type(args).__name__}}
    out = {}
    for key, value in args.items():
        short = isinstance(value, (int, float, bool)) or (
            isinstance(value, str) and len(value) <= 200
        )
        if _ID_KEY.match(str(key)) and short:
            out[key] = value
        else:
            shape: dict[str, Any] = {"type": type(value).__name__}
            if hasattr(value, "__len__"):
                shape["len"] = len(value)
            out[key] = {"redacted": shape}
    return out


def matches(pred: dict, found: Any) -> bool:
    if "exists" in pred:
        return (not missing(found)) == pred["exists"]
    if missing(found):
        return False
    if "equals" in pred:
        return found == pred["equals"]
    text = found if isinstance(found, str) else str(found)
    return re.search(pred["regex"], text) is not None


def where_holds(where: dict | None, args: dict, result: Any) -> bool:
    scope = {"args": args, "result": result}
    for field, pred in (where or {}).items():
        path = field if field.startswith(("args.", "result.")) else f"args.{field}"
        if not matches(pred, lookup(path, scope)):
            return False
    return True


def result_value(answer: dict) -> Any:
    """What `${result.x}` reads: the structured content, else the text parsed as JSON."""
    structured = answer.get("structuredContent")
    if isinstance(structured, dict):
        return structured
    text = "\n".join(c.get("text", "") for c in answer.get("content") or [] if isinstance(c, dict))
    try:
        return json.loads(text)
    except ValueError:
        return text
