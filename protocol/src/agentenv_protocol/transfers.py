"""Object transfers through grants: a caller hands out short-lived URLs, the other side moves bytes.

A grant is a wire model (`WriteObject` for one PUT, `ReadObject` for one GET, `WriteNamespaceGrant`
for several POST-policy uploads under one root). Each check runs before any byte moves: expiry,
the size limits, and paths that stay under the root. Grant URLs and signed fields never appear in
a repr or an error message, since they are credentials.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Literal
from urllib.parse import urlsplit

import anyio
import httpx
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictInt, ValidationError

from agentenv_protocol.data_objects import normalized_relative_path

TRANSFER_TIMEOUT = httpx.Timeout(60.0, connect=30.0)


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


class TransferError(RuntimeError):
    """A transfer that did not happen or did not verify; the message never names the grant URL."""


def _check_unexpired(expires_at: datetime) -> None:
    if datetime.now(UTC) >= expires_at:
        raise TransferError("the transfer grant has expired")


def _read_source(source: Path | str | bytes) -> bytes:
    if isinstance(source, bytes):
        return source
    try:
        return Path(source).read_bytes()
    except OSError as e:
        raise TransferError(f"the transfer source could not be read: {e.strerror}") from None


def _check_size(size: int, limit: int, what: str) -> None:
    if size > limit:
        raise TransferError(f"{what} is {size} bytes, over its limit of {limit}")


def _raise_for_status(response: httpx.Response, verb: str) -> None:
    if response.status_code >= 300:
        raise TransferError(f"the object store refused the {verb}: HTTP {response.status_code}")


async def upload(target: WriteObject, source: Path | str | bytes) -> Uploaded:
    """PUT `source` (bytes or a file) to the grant's URL; the answer names its size and sha256."""
    _check_unexpired(target.write.expires_at)
    body = _read_source(source)
    _check_size(len(body), target.max_bytes, "the upload")
    headers = {"Content-Type": target.media_type, **(target.write.headers or {})}
    try:
        async with httpx.AsyncClient(timeout=TRANSFER_TIMEOUT) as http:
            response = await http.put(target.write.url, content=body, headers=headers)
    except httpx.HTTPError as e:
        raise TransferError(f"the upload failed: {type(e).__name__}") from None
    _raise_for_status(response, "upload")
    return Uploaded(size_bytes=len(body), sha256=hashlib.sha256(body).hexdigest())


async def download(source: ReadObject, destination: Path | str) -> Path:
    """GET the object into `destination`, refusing one over `max_bytes` or not matching its digest."""
    _check_unexpired(source.read.expires_at)
    try:
        async with httpx.AsyncClient(timeout=TRANSFER_TIMEOUT) as http:
            response = await http.get(source.read.url, headers=source.read.headers or {})
    except httpx.HTTPError as e:
        raise TransferError(f"the download failed: {type(e).__name__}") from None
    _raise_for_status(response, "download")
    body = response.content
    _check_size(len(body), source.max_bytes, "the download")
    if source.size_bytes is not None and len(body) != source.size_bytes:
        raise TransferError(
            f"the download is {len(body)} bytes, the grant says {source.size_bytes}"
        )
    if source.sha256 is not None and hashlib.sha256(body).hexdigest() != source.sha256:
        raise TransferError("the download does not match the grant's sha256")
    path = Path(destination)
    partial = path.with_name(path.name + ".partial")
    partial.write_bytes(body)
    partial.replace(path)
    return path


class NamespaceUploader:
    """Uploads objects under one `WriteNamespaceGrant`, keeping count of its object and byte limits."""

    def __init__(self, grant: WriteNamespaceGrant) -> None:
        self.grant = grant
        self.objects = 0
        self.total_bytes = 0

    async def upload(self, path: str, source: Path | str | bytes) -> Uploaded:
        """POST `source` at `root_path/path`; the limits are checked before anything is sent."""
        grant = self.grant
        path = normalized_relative_path(path)
        _check_unexpired(grant.expires_at)
        body = _read_source(source)
        if self.objects + 1 > grant.max_objects:
            raise TransferError(f"the grant allows {grant.max_objects} object(s), all used")
        _check_size(len(body), grant.max_object_bytes, f"object {path!r}")
        _check_size(self.total_bytes + len(body), grant.max_total_bytes, "the namespace total")
        await anyio.to_thread.run_sync(self._post, f"{grant.root_path}/{path}", body)
        self.objects += 1
        self.total_bytes += len(body)
        return Uploaded(size_bytes=len(body), sha256=hashlib.sha256(body).hexdigest())

    def _post(self, key: str, body: bytes) -> None:
        policy = self.grant.write
        # The key must precede the file: POST-policy stores read the form in order.
        form = {**policy.fields, policy.path_field: key}
        try:
            with httpx.Client(timeout=TRANSFER_TIMEOUT) as http:
                response = http.post(
                    policy.url,
                    data=form,
                    files={policy.file_field: (key.rsplit("/", 1)[-1], body)},
                    headers=policy.headers or {},
                )
        except httpx.HTTPError as e:
            raise TransferError(f"the upload of {key!r} failed: {type(e).__name__}") from None
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
