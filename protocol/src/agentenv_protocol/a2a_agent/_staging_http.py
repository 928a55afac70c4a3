"""The HTTP face of a `StagingStore` (see staging.py): PUT/GET/DELETE an object, GET/DELETE
a prefix ending in `/`, and POST a form upload whose `key` field names the object before its
`file` part arrives, so the file streams straight into place (as object stores' POST policies do).
"""

from __future__ import annotations

import collections
from collections.abc import AsyncIterator
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from agentenv_protocol.a2a_agent.staging import (
    STAGING_ENDPOINT,
    StagingError,
    StagingStore,
    split_staged_path,
    staging_extension,
    staging_limit,
)
from agentenv_protocol.data_objects import normalized_relative_path

_MAX_FIELD_BYTES = 64 * 1024  # a form's fields besides the file (policy, signature, key)
_OCTETS = "application/octet-stream"


def routes(store: StagingStore) -> list[Route]:
    async def endpoint(request: Request) -> Response:
        try:
            return await _answer(store, request)
        except StagingError as e:
            return JSONResponse({"error": str(e)}, status_code=e.status)

    methods = ["GET", "PUT", "POST", "DELETE"]
    return [
        Route(STAGING_ENDPOINT + "/{staged:path}", endpoint, methods=methods),
        Route(STAGING_ENDPOINT, endpoint, methods=methods),
    ]


async def _answer(store: StagingStore, request: Request) -> Response:
    staging_id, path, is_prefix = split_staged_path(request.path_params.get("staged", ""))
    method = request.method
    if method == "POST":
        return await _form_upload(store, request, staging_id, path)
    if is_prefix:
        if method == "GET":
            return JSONResponse({"objects": store.list(staging_id, path)})
        if method == "DELETE":
            store.delete_prefix(staging_id, path)
            return Response(status_code=204)
        raise StagingError(400, "an object's path does not end in '/'")
    if method == "GET":
        return await _send_object(store, staging_id, path)
    if method == "DELETE":
        store.delete(staging_id, path, if_match=request.headers.get("if-match"))
        return Response(status_code=204)
    declared = request.headers.get("content-length")
    staged = await store.write(
        staging_id,
        path,
        request.stream(),
        declared=int(declared) if declared and declared.isdigit() else None,
        media_type=request.headers.get("content-type") or _OCTETS,
    )
    return _stored(path, staged)


async def _send_object(store: StagingStore, staging_id: str, path: str) -> Response:
    """The object's bytes, from a file opened now: a delete or a rewrite while they stream
    out does not cut them short (the open file keeps its content)."""
    import anyio

    staged = store.get(staging_id, path)
    try:
        handle = await anyio.open_file(staged.file, "rb")
    except FileNotFoundError:  # deleted between the lookup and the open
        raise StagingError(404, f"nothing is staged at {path!r}") from None

    async def chunks() -> AsyncIterator[bytes]:
        async with handle:
            while chunk := await handle.read(1 << 16):
                yield chunk

    headers = {"ETag": staged.etag, "Content-Length": str(staged.size_bytes)}
    return StreamingResponse(chunks(), media_type=staged.media_type, headers=headers)


def _stored(path: str, staged: Any) -> JSONResponse:
    body = {**staged.describe(path), "sha256": staged.sha256}
    return JSONResponse(body, status_code=201, headers={"ETag": staged.etag})


async def _form_upload(
    store: StagingStore, request: Request, staging_id: str, prefix: str
) -> Response:
    """Store the form's `file` at `{prefix}/{key}`; the `key` field must come first."""
    form = _FormReader(request)
    key, media_type = await form.file_part()
    try:
        relative = normalized_relative_path(key, what="the form's key")
    except ValueError as e:
        raise StagingError(400, str(e)) from None
    path = f"{prefix}/{relative}" if prefix else relative
    staged = await store.write(staging_id, path, form.file_chunks(), media_type=media_type)
    return _stored(path, staged)


class _FormReader:
    """A multipart form read as it streams in: its fields up to the `file` part, then the
    file's bytes chunk by chunk (nothing of it is buffered beyond one chunk)."""

    def __init__(self, request: Request) -> None:
        from python_multipart.multipart import MultipartParser, parse_options_header

        kind, options = parse_options_header(request.headers.get("content-type", ""))
        boundary = options.get(b"boundary")
        if kind != b"multipart/form-data" or not boundary:
            raise StagingError(400, "an upload is a multipart/form-data form")
        self._events: collections.deque[tuple[str, bytes]] = collections.deque()
        names = ("part_begin", "header_field", "header_value", "headers_finished", "part_data")
        callbacks = {f"on_{name}": self._noter(name) for name in (*names, "part_end")}
        self._parser = MultipartParser(boundary, callbacks)  # type: ignore[arg-type]
        self._stream = request.stream().__aiter__()
        self._ended = False

    def _noter(self, kind: str) -> Any:
        def note(data: bytes = b"", start: int = 0, end: int = 0) -> None:
            self._events.append((kind, data[start:end]))

        return note

    async def _next(self) -> tuple[str, bytes] | None:
        from python_multipart.exceptions import FormParserError

        while not self._events:
            if self._ended:
                return None
            try:
                try:
                    chunk = await self._stream.__anext__()
                except StopAsyncIteration:
                    self._ended = True
                    self._parser.finalize()
                    continue
                self._parser.write(chunk)
            except FormParserError as e:
                raise StagingError(400, f"the form is malformed: {e}") from None
        return self._events.popleft()

    async def file_part(self) -> tuple[str, str]:
        """(the `key` field's value, the file's media type), read up to the file's first byte."""
        fields: dict[str, bytearray] = {}
        headers: dict[bytes, bytearray] = {}
        header = b""
        name, size = "", 0
        while (event := await self._next()) is not None:
            kind, data = event
            if kind == "part_begin":
                headers, header = {}, b""
            elif kind == "header_field":
                header = data.lower()
            elif kind == "header_value":
                headers.setdefault(header, bytearray()).extend(data)
            elif kind == "headers_finished":
                name = _field_name(bytes(headers.get(b"content-disposition", b"")))
                if name == "file":
                    if "key" not in fields:
                        raise StagingError(
                            400, "the form's 'key' field must come before its 'file'"
                        )
                    media = bytes(headers.get(b"content-type", b"")).decode("latin-1").strip()
                    return fields["key"].decode("utf-8", "replace"), media or _OCTETS
                fields[name] = bytearray()
            elif kind == "part_data":
                size += len(data)
                if size > _MAX_FIELD_BYTES:
                    raise StagingError(413, f"the form's fields exceed {_MAX_FIELD_BYTES} bytes")
                fields[name].extend(data)
        raise StagingError(400, "the form has no 'file' part")

    async def file_chunks(self) -> AsyncIterator[bytes]:
        """The file part's bytes, up to its end."""
        while (event := await self._next()) is not None:
            kind, data = event
            if kind == "part_end":
                return
            if kind == "part_data" and data:
                yield data
        raise StagingError(400, "the form ended inside its 'file' part")


def _field_name(disposition: bytes) -> str:
    from python_multipart.multipart import parse_options_header

    _, options = parse_options_header(disposition)
    return options.get(b"name", b"").decode("utf-8", "replace")


def staging_routes(store: StagingStore) -> list[Any]:
    """The starlette routes serving `store` at `/ext/staging` (none when its limit is 0)."""
    return routes(store) if store.enabled else []


def a2a_service(application: Any) -> Any:
    """The staging service of an SDK agent's app (`services.py`): the routes and the card entry,
    or None when `AGENTENV_STAGING_MAX_BYTES` is 0. An agent operation under `/ext/staging`
    then fails `create_app` naming it."""
    from agentenv_protocol.a2a_agent.services import Service

    limit = staging_limit()
    if limit == 0:
        return None
    application.staging = StagingStore(limit)
    return Service(
        name="staging",
        routes=tuple(staging_routes(application.staging)),
        card_entries=(staging_extension(),),
        prefix=STAGING_ENDPOINT,
    )
