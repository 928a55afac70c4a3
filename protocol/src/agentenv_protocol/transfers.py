"""Object transfers through grants: a caller hands out short-lived URLs, the other side moves bytes.

A grant is a wire model (`WriteObject` for one PUT, `ReadObject` for one GET, `WriteNamespaceGrant`
for several POST-policy uploads under one root). Each check runs before any byte moves: expiry,
the size limits, and paths that stay under the root. Grant URLs and signed fields never appear in
a repr or an error message, since they are credentials.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import os
from collections.abc import Awaitable, Callable, Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar
from urllib.parse import urlsplit, urlunsplit

import anyio
import httpx
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictInt, ValidationError

from agentenv_protocol.data_objects import normalized_relative_path

T = TypeVar("T")
TRANSFER_TIMEOUT = httpx.Timeout(60.0, connect=30.0)
#: On a grant whose URL names the holder's own staging: the path its own server serves it at.
STAGING_PATH_HEADER = "AgentEnv-Staging-Path"
_SERVING_PORT: contextvars.ContextVar[int | None] = contextvars.ContextVar(
    "agentenv_serving_port", default=None
)


@contextlib.contextmanager
def serving_on(port: int) -> Iterator[None]:
    """Mark the code inside (a request being served) as served on `port` of this machine."""
    token = _SERVING_PORT.set(port)
    try:
        yield
    finally:
        _SERVING_PORT.reset(token)


def serving_port() -> int | None:
    """The port the request being served came in on, else `A2A_PORT` (set by AgentEnv on the
    agents it deploys); None when neither names a valid port."""
    port = _SERVING_PORT.get()
    if port is not None:
        return port
    raw = os.environ.get("A2A_PORT", "").strip()
    return int(raw) if raw.isdigit() and 0 < int(raw) < 65536 else None


def loopback_url(url: str, headers: dict[str, str] | None) -> str | None:
    """For a grant naming a path on its holder's own server (`AgentEnv-Staging-Path`, which the
    URL's path must end with): that path on this machine's loopback, where the holder's server
    listens; None for any other grant (a sandbox cannot always call its own public URL)."""
    wanted = STAGING_PATH_HEADER.lower()
    path = next((v for k, v in (headers or {}).items() if k.lower() == wanted), None)
    port = serving_port()
    if not path or not path.startswith("/") or port is None:
        return None
    parts = urlsplit(url)
    if not parts.path.endswith(path):
        return None
    return urlunsplit(("http", f"127.0.0.1:{port}", path, parts.query, ""))


def _headers_for(headers: dict[str, str] | None) -> dict[str, str]:
    wanted = STAGING_PATH_HEADER.lower()
    return {k: v for k, v in (headers or {}).items() if k.lower() != wanted}


async def _request(
    http: httpx.AsyncClient, method: str, url: str, headers: dict[str, str] | None, **kwargs: Any
) -> httpx.Response:
    """One request for a grant: to the holder's own server over loopback first when the grant
    names its staging (any answer from there is final), else or when nothing listens there,
    to the grant's URL."""
    sent = {**kwargs.pop("extra_headers", {}), **_headers_for(headers)}
    local = loopback_url(url, headers)
    if local is not None:
        try:
            return await http.request(method, local, headers=sent, **kwargs)
        except httpx.ConnectError:
            pass
    return await http.request(method, url, headers=sent, **kwargs)


_LOOPBACK_HOSTS = {"127.0.0.1", "localhost", "::1"}


def _https(url: str) -> str:
    """Grant URLs carry credentials, so only https travels; plain http only to this machine."""
    parsed = urlsplit(url)
    if parsed.scheme == "https" and parsed.hostname:
        return url
    if parsed.scheme == "http" and parsed.hostname in _LOOPBACK_HOSTS:
        return url
    raise ValueError("a grant URL must use https (http only to a loopback address)")


def _aware(moment: datetime) -> datetime:
    if moment.tzinfo is None:
        raise ValueError("expires_at needs a time zone")
    return moment.astimezone(UTC)


HttpsUrl = Annotated[str, AfterValidator(_https)]
UtcTimestamp = Annotated[datetime, AfterValidator(_aware)]
RelativePath = Annotated[
    str, AfterValidator(lambda v: normalized_relative_path(v, what="root_path"))
]
Sha256 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]


class TransferModel(BaseModel):
    """Grants are strict: an unknown key is an error, not something to ignore silently."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class HttpGetGrant(TransferModel):
    kind: Literal["http-get"]
    url: HttpsUrl = Field(repr=False)
    expires_at: UtcTimestamp
    headers: dict[str, str] | None = Field(default=None, repr=False)


class HttpPutGrant(TransferModel):
    kind: Literal["http-put"]
    url: HttpsUrl = Field(repr=False)
    expires_at: UtcTimestamp
    headers: dict[str, str] | None = Field(default=None, repr=False)


class HttpPostPolicyGrant(TransferModel):
    """A form POST: `fields` (the signed policy) first, then the object key, then the file."""

    kind: Literal["http-post-policy"]
    url: HttpsUrl = Field(repr=False)
    fields: dict[str, str] = Field(repr=False)
    path_field: str = Field(min_length=1)
    file_field: str = Field(min_length=1)
    headers: dict[str, str] | None = Field(default=None, repr=False)


class WriteNamespaceGrant(TransferModel):
    """Leave to upload up to `max_objects` objects under `root_path` until `expires_at`."""

    root_path: RelativePath
    expires_at: UtcTimestamp
    max_objects: StrictInt = Field(gt=0)
    max_object_bytes: StrictInt = Field(gt=0)
    max_total_bytes: StrictInt = Field(gt=0)
    write: HttpPostPolicyGrant


class ReadObject(TransferModel):
    media_type: str = Field(min_length=3)
    max_bytes: StrictInt = Field(gt=0)
    size_bytes: StrictInt | None = Field(default=None, ge=0)
    sha256: Sha256 | None = None
    read: HttpGetGrant


class WriteObject(TransferModel):
    media_type: str = Field(min_length=3)
    max_bytes: StrictInt = Field(gt=0)
    write: HttpPutGrant


class Uploaded(TransferModel):
    size_bytes: StrictInt = Field(ge=0)
    sha256: Sha256


#: code -> (HTTP status a handler answers with, whether the same grant may be retried)
TRANSFER_ERROR_CODES: dict[str, tuple[int, bool]] = {
    "invalid_transfer": (400, False),
    "grant_expired": (410, False),
    "transfer_too_large": (413, False),
    "integrity_mismatch": (422, False),
    "transfer_rejected": (502, False),
    "transfer_unavailable": (502, True),
    "transfer_timeout": (504, True),
}
_ATTEMPTS = 3
_RETRY_BACKOFF_SECONDS = 0.5


class TransferError(RuntimeError):
    """A transfer that did not happen or did not verify: a `code` of `TRANSFER_ERROR_CODES`,
    which gives its HTTP status and whether it is retryable. The message never names the grant
    URL, a provider's answer or a local path."""

    def __init__(self, code: str, message: str, *, retryable: bool | None = None) -> None:
        if code not in TRANSFER_ERROR_CODES:
            known = ", ".join(TRANSFER_ERROR_CODES)
            raise ValueError(f"unknown transfer error code {code!r}; known: {known}")
        super().__init__(message)
        self.code = code
        self.message = message
        self.status_code, default = TRANSFER_ERROR_CODES[code]
        self.retryable = default if retryable is None else retryable

    def body(self) -> dict[str, Any]:
        """The JSON body a handler answers with."""
        return {"error": {"code": self.code, "message": self.message, "retryable": self.retryable}}


def _check_unexpired(expires_at: datetime) -> None:
    if datetime.now(UTC) >= expires_at:
        raise TransferError("grant_expired", "the transfer grant has expired")


def _read_source(source: Path | str | bytes) -> bytes:
    if isinstance(source, bytes):
        return source
    try:
        return Path(source).read_bytes()
    except OSError as e:
        message = f"the transfer source could not be read: {e.strerror}"
        raise TransferError("invalid_transfer", message) from None


def _check_size(size: int, limit: int, what: str) -> None:
    if size > limit:
        message = f"{what} is {size} bytes, over its limit of {limit}"
        raise TransferError("transfer_too_large", message)


def _raise_for_status(response: httpx.Response, verb: str) -> None:
    status = response.status_code
    if status < 300:
        return
    transient = status >= 500 or status in (408, 429)
    code = "transfer_unavailable" if transient else "transfer_rejected"
    raise TransferError(code, f"the object store refused the {verb}: HTTP {status}")


def _failed(e: httpx.HTTPError, verb: str) -> TransferError:
    if isinstance(e, httpx.TimeoutException):
        return TransferError("transfer_timeout", f"the {verb} timed out")
    return TransferError("transfer_unavailable", f"the {verb} failed: {type(e).__name__}")


async def _attempts(expires_at: datetime, attempt: Callable[[], Awaitable[T]]) -> T:
    """`attempt()`, again after a retryable failure: at most `_ATTEMPTS` times, while the grant
    is unexpired."""
    for number in range(1, _ATTEMPTS + 1):
        _check_unexpired(expires_at)
        try:
            return await attempt()
        except TransferError as e:
            if not e.retryable or number == _ATTEMPTS or datetime.now(UTC) >= expires_at:
                raise
        await anyio.sleep(_RETRY_BACKOFF_SECONDS * number)
    raise AssertionError("unreachable")


async def upload(target: WriteObject, source: Path | str | bytes) -> Uploaded:
    """PUT `source` (bytes or a file, read again for each attempt) to the grant's URL; the
    answer names its size and sha256."""
    grant = target.write

    async def attempt() -> Uploaded:
        body = _read_source(source)
        _check_size(len(body), target.max_bytes, "the upload")
        try:
            async with httpx.AsyncClient(timeout=TRANSFER_TIMEOUT) as http:
                response = await _request(
                    http,
                    "PUT",
                    grant.url,
                    grant.headers,
                    content=body,
                    extra_headers={"Content-Type": target.media_type},
                )
        except httpx.HTTPError as e:
            raise _failed(e, "upload") from None
        _raise_for_status(response, "upload")
        return Uploaded(size_bytes=len(body), sha256=hashlib.sha256(body).hexdigest())

    return await _attempts(grant.expires_at, attempt)


async def download(source: ReadObject, destination: Path | str) -> Path:
    """GET the object into `destination` (whole or not at all), refusing one over `max_bytes`
    or not matching its size and digest."""

    async def attempt() -> bytes:
        try:
            async with httpx.AsyncClient(timeout=TRANSFER_TIMEOUT) as http:
                response = await _request(http, "GET", source.read.url, source.read.headers)
        except httpx.HTTPError as e:
            raise _failed(e, "download") from None
        _raise_for_status(response, "download")
        return response.content

    body = await _attempts(source.read.expires_at, attempt)
    _check_size(len(body), source.max_bytes, "the download")
    if source.size_bytes is not None and len(body) != source.size_bytes:
        message = f"the download is {len(body)} bytes, the grant says {source.size_bytes}"
        raise TransferError("integrity_mismatch", message)
    if source.sha256 is not None and hashlib.sha256(body).hexdigest() != source.sha256:
        raise TransferError("integrity_mismatch", "the download does not match the grant's sha256")
    path = Path(destination)
    partial = path.with_name(path.name + ".partial")
    partial.write_bytes(body)
    partial.replace(path)
    return path


class NamespaceUploader:
    """Uploads objects under one `WriteNamespaceGrant`, keeping count of its object and byte
    limits (an object written again counts once, at its latest size)."""

    def __init__(self, grant: WriteNamespaceGrant) -> None:
        self.grant = grant
        self.sizes: dict[str, int] = {}

    @property
    def objects(self) -> int:
        return len(self.sizes)

    @property
    def total_bytes(self) -> int:
        return sum(self.sizes.values())

    async def upload(self, path: str, source: Path | str | bytes) -> Uploaded:
        """POST `source` at `root_path/path`; the limits are checked before anything is sent."""
        grant = self.grant
        path = normalized_relative_path(path)
        local = loopback_url(grant.write.url, grant.write.headers)  # before leaving this context

        async def attempt() -> Uploaded:
            body = _read_source(source)
            others = {p: size for p, size in self.sizes.items() if p != path}
            if len(others) + 1 > grant.max_objects:
                message = f"the grant allows {grant.max_objects} object(s), all used"
                raise TransferError("transfer_too_large", message)
            _check_size(len(body), grant.max_object_bytes, f"object {path!r}")
            total = sum(others.values()) + len(body)
            _check_size(total, grant.max_total_bytes, "the namespace total")
            key = f"{grant.root_path}/{path}"
            await anyio.to_thread.run_sync(self._post, key, body, local)
            self.sizes[path] = len(body)
            return Uploaded(size_bytes=len(body), sha256=hashlib.sha256(body).hexdigest())

        return await _attempts(grant.expires_at, attempt)

    def _post(self, key: str, body: bytes, local: str | None) -> None:
        policy = self.grant.write
        # The key must precede the file: POST-policy stores read the form in order.
        form = {**policy.fields, policy.path_field: key}
        files = {policy.file_field: (key.rsplit("/", 1)[-1], body)}
        headers = _headers_for(policy.headers)
        try:
            with httpx.Client(timeout=TRANSFER_TIMEOUT) as http:
                response = None
                if local is not None:
                    with contextlib.suppress(httpx.ConnectError):
                        response = http.post(local, data=form, files=files, headers=headers)
                if response is None:
                    response = http.post(policy.url, data=form, files=files, headers=headers)
        except httpx.HTTPError as e:
            raise _failed(e, f"upload of {key!r}") from None
        _raise_for_status(response, f"upload of {key!r}")


def write_namespace_grant(value: object) -> WriteNamespaceGrant:
    """The `write_namespace` param as a `WriteNamespaceGrant`; ValueError naming the bad fields.

    The message gives field paths and reasons, never the values pydantic saw: a grant carries
    a signed URL and policy fields.
    """
    try:
        return WriteNamespaceGrant.model_validate(value)
    except ValidationError as e:
        problems = []
        for item in e.errors(include_input=False, include_url=False):
            where = ".".join(["write_namespace", *map(str, item["loc"])])
            problems.append(f"{where}: {item['msg'].removeprefix('Value error, ')}")
        raise ValueError("; ".join(problems)) from None


class ServingPortMiddleware:
    """ASGI middleware marking each request with `serving_on(the port it came in on)`, so the
    transfer helpers reach the server's own staging over loopback; each of `on_port` hears
    the port first."""

    def __init__(self, app: Any, on_port: Iterable[Callable[[int], None]] = ()) -> None:
        self.app = app
        self.on_port = tuple(on_port)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        server = scope.get("server") if scope["type"] in ("http", "websocket") else None
        port = server[1] if server and isinstance(server[1], int) else None
        if port is None:
            await self.app(scope, receive, send)
            return
        for listener in self.on_port:
            listener(port)
        with serving_on(port):
            await self.app(scope, receive, send)
