"""The parts of a message an agent receives and answers with, and their A2A wire form.

A2A sends parts as `{kind: "text", text}`, `{kind: "data", data}` and `{kind: "file", file:
{name?, mimeType?, bytes | uri}}` (bytes base64-encoded). An agent sees them as the frozen
values below; `from_wire` refuses a part it cannot read with a message naming its index.
"""

from __future__ import annotations

import copy
from typing import Any, Union

import attrs


@attrs.frozen(kw_only=True)
class TextPart:
    """Plain text."""

    text: str
    metadata: dict[str, Any] | None = None

    def to_wire(self) -> dict[str, Any]:
        return _with_metadata({"kind": "text", "text": self.text}, self.metadata)


@attrs.frozen(kw_only=True)
class DataPart:
    """A JSON object."""

    data: dict[str, Any] = attrs.field(converter=copy.deepcopy)
    metadata: dict[str, Any] | None = None

    def to_wire(self) -> dict[str, Any]:
        return _with_metadata({"kind": "data", "data": self.data}, self.metadata)


@attrs.frozen(kw_only=True)
class FilePart:
    """A file, inline (`bytes`: base64 text) or by reference (`uri`): exactly one of them."""

    name: str | None = None
    mime_type: str | None = None
    bytes: str | None = None
    uri: str | None = None
    metadata: dict[str, Any] | None = None

    def __attrs_post_init__(self) -> None:
        if (self.bytes is None) == (self.uri is None):
            raise ValueError("a file part has exactly one of 'bytes' or 'uri'")

    def to_wire(self) -> dict[str, Any]:
        file: dict[str, Any] = {}
        if self.name is not None:
            file["name"] = self.name
        if self.mime_type is not None:
            file["mimeType"] = self.mime_type
        if self.bytes is not None:
            file["bytes"] = self.bytes
        else:
            file["uri"] = self.uri
        return _with_metadata({"kind": "file", "file": file}, self.metadata)


TaskPart = Union[TextPart, DataPart, FilePart]  # noqa: UP007 (a runtime alias for isinstance)


def _with_metadata(wire: dict[str, Any], metadata: dict[str, Any] | None) -> dict[str, Any]:
    if metadata:
        wire["metadata"] = dict(metadata)
    return wire


def from_wire(raw: Any, index: int = 0) -> TaskPart:
    """The part `raw` (an A2A part object); ValueError naming `parts[index]` and the field."""
    where = f"parts[{index}]"
    if not isinstance(raw, dict):
        raise ValueError(f"{where} must be an object")
    kind, metadata = raw.get("kind"), raw.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise ValueError(f"{where}.metadata must be an object")
    if kind == "text":
        if not isinstance(raw.get("text"), str):
            raise ValueError(f"{where}.text must be a string")
        return TextPart(text=raw["text"], metadata=metadata)
    if kind == "data":
        if not isinstance(raw.get("data"), dict):
            raise ValueError(f"{where}.data must be an object")
        return DataPart(data=raw["data"], metadata=metadata)
    if kind == "file":
        file = raw.get("file")
        if not isinstance(file, dict):
            raise ValueError(f"{where}.file must be an object")
        for key in ("name", "mimeType", "bytes", "uri"):
            if file.get(key) is not None and not isinstance(file[key], str):
                raise ValueError(f"{where}.file.{key} must be a string")
        try:
            return FilePart(
                name=file.get("name"),
                mime_type=file.get("mimeType"),
                bytes=file.get("bytes"),
                uri=file.get("uri"),
                metadata=metadata,
            )
        except ValueError as e:
            raise ValueError(f"{where}.file: {e}") from None
    raise ValueError(f"{where}.kind must be 'text', 'data' or 'file'; got {kind!r}")


def to_wire(part: Any) -> dict[str, Any]:
    """The A2A form of `part`; TypeError for anything that is not a part."""
    if isinstance(part, TextPart | DataPart | FilePart):
        return part.to_wire()
    raise TypeError(f"a part is a TextPart, DataPart or FilePart; got {type(part).__name__}")
