"""Documents travel as compact JSON text, so every backend stores exactly what SQLite does."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from agent_env.errors import StoreError


def encode(doc: Mapping[str, Any]) -> str:
    if not isinstance(doc, Mapping):
        raise StoreError(f"a document must be a mapping, got {type(doc).__name__}")
    try:
        return json.dumps(doc, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise StoreError(f"document is not JSON-serializable: {exc}") from None


def decode(text: str | bytes, where: str) -> dict[str, Any]:
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise StoreError(f"{where}: stored document is not valid JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise StoreError(f"{where}: stored document is not a JSON object")
    return doc
