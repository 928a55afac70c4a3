"""`/api/v1/objects/content` and `/metadata`: one blob of the configured object store by its
key (`object_url`), as the existing product serves them. A URL of another store is refused;
HTML, SVG and XML are served under `Content-Security-Policy: sandbox`."""

from __future__ import annotations

import mimetypes
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from agentenv_explorer.params import BadRequest, only

#: Types a browser could run script in: served sandboxed.
ACTIVE = ("text/html", "image/svg+xml", "application/xml", "text/xml", "application/xhtml+xml")


def _key(request: Request) -> str:
    from agent_env.errors import StoreError
    from agent_env.stores.names import check_object_key

    only(request.query_params, ("object_url",))
    key = request.query_params.get("object_url") or ""
    if not key:
        raise BadRequest("object_url: required, the key of an object in the configured store")
    if "://" in key:
        raise BadRequest(
            f"object_url: {key!r} is not an object of the configured store; give its key "
            "(as the records name it, e.g. trial-logs/ti-.../env_notes.log)"
        )
    try:
        check_object_key(key)
    except StoreError as exc:
        raise BadRequest(f"object_url: {exc}") from None
    return key


async def _get(request: Request, key: str) -> bytes:
    objects: Any = request.app.state.explorer.stores.objects
    try:
        return await objects.get(key)
    except KeyError:
        raise BadRequest(f"no object {key!r} in the configured object store", 404) from None


def _type(key: str) -> str:
    return mimetypes.guess_type(key)[0] or (
        "text/plain" if key.endswith((".log", ".jsonl")) else "application/octet-stream"
    )


async def content(request: Request) -> Response:
    key = _key(request)
    data = await _get(request, key)
    kind = _type(key)
    name = key.rpartition("/")[2].replace('"', "")
    headers = {"Content-Disposition": f'inline; filename="{name}"'}
    if kind in ACTIVE:
        headers["Content-Security-Policy"] = "sandbox"
    return Response(data, media_type=kind, headers=headers)


async def metadata(request: Request) -> JSONResponse:
    key = _key(request)
    return JSONResponse({"size_bytes": len(await _get(request, key)), "content_type": _type(key)})


ROUTES = [
    Route("/api/v1/objects/content", content, methods=["GET"]),
    Route("/api/v1/objects/metadata", metadata, methods=["GET"]),
]
