"""Reading a JSON object that a record names (a trajectory): an object store may fsync behind
(`agent_env.stores.filesystem`), so after a power loss such an object can be empty or cut
short though its record survived. Readers say so instead of failing on it."""

from __future__ import annotations

import json
from typing import Any

from agent_env.errors import StoreError


async def get_json(objects: Any, key: str) -> Any:
    """The JSON document stored at `key`; a `StoreError` that says the object is empty or
    torn (its size, and what did not parse) when its bytes are not one whole JSON value.
    A missing object raises what the store raises (`KeyError`)."""
    data = await objects.get(key)
    if not data.strip():
        raise StoreError(
            f"object {key!r} is empty ({len(data)} bytes): its write was lost, e.g. by a "
            "power loss before the store's fsync"
        )
    try:
        return json.loads(data)
    except ValueError as exc:
        raise StoreError(
            f"object {key!r} is torn ({len(data)} bytes that are not whole JSON: {exc}): "
            "its write was cut short, e.g. by a power loss before the store's fsync"
        ) from None
