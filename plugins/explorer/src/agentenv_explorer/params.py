"""Reading and checking request parameters; a bad one is a 400 that names it."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from agent_env.suggest import did_you_mean

MAX_LIMIT = 500


class BadRequest(ValueError):
    """A request the API refuses; `status` is the HTTP status (400 unless said)."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


def whole(query: Any, name: str, default: int, low: int, high: int) -> int:
    raw = query.get(name)
    if raw in (None, ""):
        return default
    try:
        value = int(raw)
    except ValueError:
        value = low - 1
    if not low <= value <= high:
        raise BadRequest(f"{name}: {raw!r} is not a whole number from {low} to {high}")
    return value


def paging(query: Any, default_limit: int = 50) -> tuple[int, int]:
    """(limit, offset) from `?limit=&offset=`."""
    return (
        whole(query, "limit", default_limit, 1, MAX_LIMIT),
        whole(query, "offset", 0, 0, 10**9),
    )


def choice(query: Any, name: str, known: Iterable[str]) -> str | None:
    raw = query.get(name)
    if raw in (None, ""):
        return None
    known = list(known)
    if raw not in known:
        raise BadRequest(
            f"{name}: {raw!r} is not one of {', '.join(known)}{did_you_mean(raw, known)}"
        )
    return raw


def only(query: Any, names: Iterable[str]) -> None:
    """Refuse query parameters the route does not know (a typo would silently filter nothing)."""
    names = list(names)
    for key in query:
        if key not in names and key != "token":
            raise BadRequest(
                f"unknown query parameter {key!r}{did_you_mean(key, names)}; "
                f"known: {', '.join(names) or 'none'}"
            )


async def json_body(request: Any, example: str = '{"spec": "hello"}') -> dict[str, Any]:
    """The request's JSON object body (`{}` when empty); 400 when it is not one."""
    import json

    try:
        body = json.loads(await request.body() or b"{}")
    except json.JSONDecodeError as exc:
        raise BadRequest(f"the body is not JSON: {exc}") from None
    if not isinstance(body, dict):
        raise BadRequest(f"the body must be a JSON object such as {example}")
    return body
