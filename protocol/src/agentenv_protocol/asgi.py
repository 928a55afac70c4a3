"""Plain-ASGI plumbing the gateway and the env server share: read a bounded body, send JSON."""

from __future__ import annotations

import json
from typing import Any

_JSON = [(b"content-type", b"application/json")]


async def read_body(receive: Any, limit: int) -> bytes | None:
    """The request body, or None once it exceeds `limit` bytes."""
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
