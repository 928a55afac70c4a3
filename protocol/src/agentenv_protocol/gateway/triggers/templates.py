"""Action-argument templates: `${args.x}`, `${result.x}`, `${binding}`, `${x?}` (optional).

A whole-string placeholder keeps the value's type; embedded ones are stringified. An unresolved
optional placeholder drops its key; an unresolved required one raises `Unresolved`.
"""

from __future__ import annotations

import json
import re
from typing import Any

PLACEHOLDER = re.compile(r"\$\{([A-Za-z_][\w.\-]*)(\?)?\}")
_MISSING = object()


class Unresolved(LookupError):
    """A required placeholder named nothing in the provoking call or the bindings."""


def lookup(path: str, scope: dict) -> Any:
    """`a.b.0.c` in nested dicts and lists, or `_MISSING`."""
    value: Any = scope
    for part in path.split("."):
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return _MISSING
    return value


def missing(value: Any) -> bool:
    return value is _MISSING


def _stringify(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str)


def render(value: Any, scope: dict) -> Any:
    """`value` with every placeholder filled from `scope` (`args`, `result`, bindings)."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            whole = PLACEHOLDER.fullmatch(item) if isinstance(item, str) else None
            if whole and whole.group(2) and missing(lookup(whole.group(1), scope)):
                continue
            out[key] = render(item, scope)
        return out
    if isinstance(value, list):
        return [render(item, scope) for item in value]
    if not isinstance(value, str):
        return value
    whole = PLACEHOLDER.fullmatch(value)
    if whole:
        found = lookup(whole.group(1), scope)
        if missing(found):
            if whole.group(2):
                return None
            raise Unresolved(f"placeholder ${{{whole.group(1)}}} names nothing")
        return found

    def fill(match: re.Match) -> str:
        found = lookup(match.group(1), scope)
        if missing(found):
            if match.group(2):
                return ""
            raise Unresolved(f"placeholder ${{{match.group(1)}}} names nothing")
        return _stringify(found)

    return PLACEHOLDER.sub(fill, value)


def placeholders(value: Any) -> list[str]:
    """Every placeholder path in `value` (for checks at registration)."""
    if isinstance(value, dict):
        return [p for v in value.values() for p in placeholders(v)]
    if isinstance(value, list):
        return [p for v in value for p in placeholders(v)]
    return [m.group(1) for m in PLACEHOLDER.finditer(value)] if isinstance(value, str) else []
