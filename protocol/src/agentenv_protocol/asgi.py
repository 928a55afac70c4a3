"""Plain-ASGI plumbing the gateway and the env server share: read a bounded body, send JSON."""

from __future__ import annotations

import json
from typing import Any

_JSON = [(b"content-type", b"application/json")]


def declared_length(scope: Any) -> int | None:
    """The request's Content-Length header as an int (None when absent or not a number)."""
    for key, value in scope.get("headers") or ():
        if key == b"content-length":
            return int(value) if value.isdigit() else None
    return None


async def read_body(receive: Any, limit: int, scope: Any = None) -> bytes | None:
    """The request body, or None once it exceeds `limit` bytes (at once, without reading it,
    when `scope` declares a longer Content-Length)."""
    if scope is not None and (declared_length(scope) or 0) > limit:
        return None
    chunks, size = [], 0
    while True:
        message = await receive()
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body"):
            return b"".join(chunks)


async def respond(send: Any, status: int, body: Any, headers: list | None = None) -> None:
    """Send `body` (bytes, or anything json.dumps takes) as one JSON response."""
    data = body if isinstance(body, bytes) else json.dumps(body, default=str).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [*_JSON, (b"content-length", str(len(data)).encode()), *(headers or [])],
        }
    )
    await send({"type": "http.response.body", "body": data})
