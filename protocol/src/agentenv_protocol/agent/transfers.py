"""Object-transfer requests of the agent extensions, with the existing SDK's shapes and rules:
an agent is handed presigned grants to read (`ReadObject`) or write (`WriteObject`) one object,
or a namespace to post many objects into (`WriteNamespaceGrant`), and reports what it wrote
(`Uploaded`). The snapshot (`save`/`load`), changelog (`enable`/`apply`) and trajectory
object requests are built from them.

`parse(cls, body)` checks a body the way the existing SDK does (closed objects, HTTPS URLs,
UTC timestamps, concrete media types, lowercase sha256, normalized relative paths, positive
limits, ordered changelog sequences, opaque snapshot objects) and raises `TransferRequestError`
naming each bad field; `dump(obj)` is the JSON body to send (absent optional fields left out).
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any, Literal, TypeVar
from urllib.parse import urlsplit

import attrs
import cattrs

T = TypeVar("T")
OCTETS = "application/octet-stream"
JSON = "application/json"
_MEDIA_TYPE = re.compile(r"^[!#$&^_.+\-|~0-9A-Za-z]+/[!#$&^_.+\-|~0-9A-Za-z]+$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


class TransferRequestError(ValueError):
    """A transfer request body that breaks the extension's rules; one line per bad field."""


# --- field rules --------------------------------------------------------------------------
def _https(_: Any, a: attrs.Attribute, value: str) -> None:
    parts = urlsplit(value)
    if parts.scheme != "https" or not parts.netloc:
        raise ValueError(f"{a.name}: must be an absolute HTTPS URL")


def _utc(_: Any, a: attrs.Attribute, value: datetime) -> None:
    if value.utcoffset() != timedelta(0):
        raise ValueError(f"{a.name}: must be an RFC 3339 UTC timestamp")


def _media(_: Any, a: attrs.Attribute, value: str) -> None:
    if not _MEDIA_TYPE.fullmatch(value):
        raise ValueError(f"{a.name}: must be a concrete MIME type")


def _sha(_: Any, a: attrs.Attribute, value: str | None) -> None:
    if value is not None and not _SHA256.fullmatch(value):
        raise ValueError(f"{a.name}: must be 64 lowercase hexadecimal characters")


def _relative(_: Any, a: attrs.Attribute, value: str) -> None:
    if "\\" in value or any(p in ("", ".", "..") for p in value.split("/")):
        raise ValueError(f"{a.name}: must be a normalized relative POSIX path")


def _positive(_: Any, a: attrs.Attribute, value: int) -> None:
    if isinstance(value, bool) or value <= 0:
        raise ValueError(f"{a.name}: must be an integer greater than 0")


def _not_negative(_: Any, a: attrs.Attribute, value: int | None) -> None:
    if value is not None and (isinstance(value, bool) or value < 0):
        raise ValueError(f"{a.name}: must be an integer of 0 or more")


def _media_is(expected: str) -> Any:
    def check(_: Any, a: attrs.Attribute, value: Any) -> None:
        if value is not None and value.media_type != expected:
            raise ValueError(f"{a.name}: media_type must be {expected}")

    return check


# --- grants and objects ---------------------------------------------------------------------
@attrs.frozen(kw_only=True)
class HttpGetGrant:
    kind: Literal["http-get"]
    url: str = attrs.field(validator=_https, repr=False)
    expires_at: datetime = attrs.field(validator=_utc)
    headers: dict[str, str] | None = attrs.field(default=None, repr=False)


@attrs.frozen(kw_only=True)
class HttpPutGrant:
    kind: Literal["http-put"]
    url: str = attrs.field(validator=_https, repr=False)
    expires_at: datetime = attrs.field(validator=_utc)
    headers: dict[str, str] | None = attrs.field(default=None, repr=False)


@attrs.frozen(kw_only=True)
class HttpPostPolicyGrant:
    kind: Literal["http-post-policy"]
    url: str = attrs.field(validator=_https, repr=False)
    fields: dict[str, str] = attrs.field(repr=False)
    path_field: str = attrs.field(validator=attrs.validators.min_len(1))
    file_field: str = attrs.field(validator=attrs.validators.min_len(1))
    headers: dict[str, str] | None = attrs.field(default=None, repr=False)


@attrs.frozen(kw_only=True)
class WriteNamespaceGrant:
    """Post up to `max_objects` objects under `root_path` through `write`."""

    root_path: str = attrs.field(validator=_relative)
    expires_at: datetime = attrs.field(validator=_utc)
    max_objects: int = attrs.field(validator=_positive)
    max_object_bytes: int = attrs.field(validator=_positive)
    max_total_bytes: int = attrs.field(validator=_positive)
    write: HttpPostPolicyGrant


@attrs.frozen(kw_only=True)
class ReadObject:
    """One object to read; a known `size_bytes` is at most `max_bytes`."""

    media_type: str = attrs.field(validator=_media)
    max_bytes: int = attrs.field(validator=_positive)
    size_bytes: int | None = attrs.field(default=None, validator=_not_negative)
    sha256: str | None = attrs.field(default=None, validator=_sha)
    read: HttpGetGrant

    def __attrs_post_init__(self) -> None:
        if self.size_bytes is not None and self.size_bytes > self.max_bytes:
            raise ValueError("size_bytes must not exceed max_bytes")


@attrs.frozen(kw_only=True)
class WriteObject:
    media_type: str = attrs.field(validator=_media)
    max_bytes: int = attrs.field(validator=_positive)
    write: HttpPutGrant


@attrs.frozen(kw_only=True)
class Uploaded:
    size_bytes: int = attrs.field(validator=_not_negative)
    sha256: str | None = attrs.field(default=None, validator=_sha)


# --- trajectory, snapshot and changelog requests ---------------------------------------------
@attrs.frozen(kw_only=True)
class TrajectoryWriteObjects:
    trajectory: WriteObject = attrs.field(validator=_media_is(JSON))


@attrs.frozen(kw_only=True)
class TaskObjectTrajectoryRequest:
    """trajectory/v1 `get`, variant `task_objects`: upload the task's trajectory."""

    task_id: str
    objects: TrajectoryWriteObjects


@attrs.frozen(kw_only=True)
class ContextObjectTrajectoryRequest:
    """trajectory/v1 `get`, variant `context_objects`."""

    context_id: str
    objects: TrajectoryWriteObjects


@attrs.frozen(kw_only=True)
class TrajectoryUploadedObjects:
    trajectory: Uploaded


@attrs.frozen(kw_only=True)
class TrajectoryObjectsResponse:
    objects: TrajectoryUploadedObjects


@attrs.frozen(kw_only=True)
class SnapshotWriteObjects:
    trajectory: WriteObject = attrs.field(validator=_media_is(OCTETS))
    workspace: WriteObject | None = attrs.field(default=None, validator=_media_is(OCTETS))


@attrs.frozen(kw_only=True)
class SnapshotReadObjects:
    trajectory: ReadObject = attrs.field(validator=_media_is(OCTETS))
    workspace: ReadObject | None = attrs.field(default=None, validator=_media_is(OCTETS))


@attrs.frozen(kw_only=True)
class ObjectSnapshotSaveRequest:
    """snapshot/v1 `save`: upload the context's conversation (and workspace)."""

    context_id: str
    objects: SnapshotWriteObjects


@attrs.frozen(kw_only=True)
class SnapshotUploadedObjects:
    trajectory: Uploaded
    workspace: Uploaded | None = None


@attrs.frozen(kw_only=True)
class ObjectSnapshotSaveResponse:
    context_id: str
    objects: SnapshotUploadedObjects


@attrs.frozen(kw_only=True)
class ObjectSnapshotLoadRequest:
    """snapshot/v1 `load`: restore a saved snapshot into `target_context_id` (or a new one)."""

    objects: SnapshotReadObjects
    target_context_id: str | None = None


@attrs.frozen(kw_only=True)
class ObjectSnapshotLoadResponse:
    context_id: str


@attrs.frozen(kw_only=True)
class NamespaceChangelogEnableRequest:
    """snapshot/v1 `enable-changelog`: post an increment per change into `write_namespace`."""

    write_namespace: WriteNamespaceGrant
    roots: list[str] | None = None


@attrs.frozen(kw_only=True)
class NamespaceChangelogEnableResponse:
    roots: list[str]


@attrs.frozen(kw_only=True)
class ChangelogIncrement:
    sequence: int = attrs.field(validator=_not_negative)
    object: ReadObject = attrs.field(validator=_media_is(OCTETS))


@attrs.frozen(kw_only=True)
class ObjectChangelogApplyRequest:
    """snapshot/v1 `apply-changelog`: replay increments in strictly increasing order."""

    increments: list[ChangelogIncrement]
    resume_conversation: bool = False
    target_context_id: str | None = None

    def __attrs_post_init__(self) -> None:
        sequences = [i.sequence for i in self.increments]
        if sequences != sorted(set(sequences)):
            raise ValueError("changelog increment sequences must be strictly increasing")


@attrs.frozen(kw_only=True)
class ObjectChangelogApplyResponse:
    count: int = attrs.field(validator=_not_negative)
    context_id: str | None = None


# --- reading and writing bodies ---------------------------------------------------------------
def _timestamp(value: Any, _: Any) -> datetime:
    if isinstance(value, datetime):
        return value
    if not isinstance(value, str):
        raise ValueError("must be an RFC 3339 timestamp")
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError("must be an RFC 3339 timestamp") from None


def _exactly(kind: type, message: str) -> Any:
    """A structure hook taking only values of `kind` as they are (no `"1"` -> 1, no bool
    for an int)."""

    def hook(value: Any, _: Any) -> Any:
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise ValueError(message)
        return value

    return hook


def _say(exc: BaseException, type_: Any) -> str:
    """A rule's own message, else cattrs' wording."""
    if type(exc) is ValueError:
        return str(exc)
    if "not in literal" in str(exc):
        return "must be " + " or ".join(repr(a) for a in getattr(type_, "__args__", ()))
    from cattrs.v import format_exception

    return format_exception(exc, type_)


def make_converter() -> cattrs.Converter:
    """The converter for transfer bodies: unknown keys refused, no type coercion, UTC
    timestamps as `...Z`, absent optional fields left out."""
    converter = cattrs.Converter(forbid_extra_keys=True, omit_if_default=True)
    converter.register_structure_hook(datetime, _timestamp)
    for kind, message in ((int, "an integer"), (str, "a string"), (bool, "true or false")):
        converter.register_structure_hook(kind, _exactly(kind, f"must be {message}"))
    converter.register_unstructure_hook(datetime, lambda d: d.isoformat().replace("+00:00", "Z"))
    return converter


CONVERTER = make_converter()


def parse(cls: type[T], body: Any) -> T:
    """`body` (decoded JSON) as a `cls`; TransferRequestError naming every bad field."""
    try:
        return CONVERTER.structure(body, cls)
    except (cattrs.BaseValidationError, ValueError, TypeError) as e:
        if isinstance(e, cattrs.BaseValidationError):
            lines = cattrs.transform_error(e, path=cls.__name__, format_exception=_say)
        else:
            lines = [f"{cls.__name__}: {e}"]
        raise TransferRequestError("; ".join(lines)) from None


def dump(obj: Any) -> dict[str, Any]:
    """The JSON body for `obj` (one of the classes above)."""
    return CONVERTER.unstructure(obj)


# --- moving bytes -------------------------------------------------------------------------------
class TransferError(RuntimeError):
    """A transfer that failed; `code` is the existing SDK's (`grant_expired`,
    `transfer_too_large`, `integrity_mismatch`, `transfer_rejected`, `transfer_unavailable`)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code


def _unexpired(expires_at: datetime) -> None:
    from datetime import UTC

    if expires_at <= datetime.now(UTC):
        raise TransferError("grant_expired", f"the grant expired at {expires_at.isoformat()}")


def _answered(response: Any) -> None:
    if response.status_code >= 500:
        raise TransferError("transfer_unavailable", f"the store answered {response.status_code}")
    if response.status_code >= 300:
        raise TransferError("transfer_rejected", f"the store answered {response.status_code}")


async def read_object(obj: ReadObject, client: Any) -> bytes:
    """The bytes `obj` grants, read with `client` (an `httpx.AsyncClient`): at most
    `max_bytes`, and exactly `size_bytes` and `sha256` when the grant states them."""
    import hashlib

    _unexpired(obj.read.expires_at)
    data = bytearray()
    headers = {**(obj.read.headers or {}), "accept-encoding": "identity"}  # the stored bytes
    async with client.stream("GET", obj.read.url, headers=headers) as response:
        _answered(response)
        async for chunk in response.aiter_raw():
            data += chunk
            if len(data) > obj.max_bytes:
                raise TransferError("transfer_too_large", f"more than {obj.max_bytes} bytes")
    if obj.size_bytes is not None and len(data) != obj.size_bytes:
        raise TransferError(
            "integrity_mismatch", f"{len(data)} bytes read, {obj.size_bytes} expected"
        )
    if obj.sha256 is not None and hashlib.sha256(data).hexdigest() != obj.sha256:
        raise TransferError("integrity_mismatch", "the sha256 of what was read differs")
    return bytes(data)


async def write_object(obj: WriteObject, data: bytes, client: Any) -> Uploaded:
    """PUT `data` where `obj` grants (with its headers and media type); what was written."""
    import hashlib

    _unexpired(obj.write.expires_at)
    if len(data) > obj.max_bytes:
        raise TransferError("transfer_too_large", f"{len(data)} bytes, at most {obj.max_bytes}")
    headers = {"content-type": obj.media_type, **(obj.write.headers or {})}
    response = await client.put(obj.write.url, content=data, headers=headers)
    _answered(response)
    return Uploaded(size_bytes=len(data), sha256=hashlib.sha256(data).hexdigest())
