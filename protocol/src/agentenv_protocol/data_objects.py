"""Exports uploaded through a `write_namespace` grant (`urn:agentenv:data-objects/v1`).

A `data/get` handler that takes a `write_namespace` argument may upload its export instead of
inlining it, and answers with a file part whose metadata names the object's path relative to
the grant's `root_path`. These helpers build and read that part, and own the one path rule.
"""

from __future__ import annotations

import inspect

from agentenv_protocol.constants import DATA_OBJECTS_EXTENSION_URI
from agentenv_protocol.types import EnvironmentExtension, FilePart, FileWithUri

_NOT_NORMALIZED = "not a normalized relative path"


def normalized_relative_path(value: object, *, what: str = "path") -> str:
    """`value` if it is a non-empty `a/b/c` path with no empty, `.` or `..` segment; else ValueError."""
    if not isinstance(value, str) or not value or value.startswith("/") or "\\" in value:
        raise ValueError(f"{what} {value!r} is {_NOT_NORMALIZED}")
    if any(segment in ("", ".", "..") for segment in value.split("/")):
        raise ValueError(f"{what} {value!r} is {_NOT_NORMALIZED}")
    return value


def uploaded_file_part(
    path: str, *, name: str | None = None, mime_type: str | None = None
) -> FilePart:
    """The `data/get` answer for an export uploaded at `path` under the grant's `root_path`."""
    path = normalized_relative_path(path)
    return FilePart(
        file=FileWithUri(uri=path, name=name, mimeType=mime_type),
        metadata={DATA_OBJECTS_EXTENSION_URI: {"path": path}},
    )


def uploaded_object_path(part: object) -> str | None:
    """Where (relative to the grant's root) a `data/get` part says its export was uploaded.

    None for a part that names no upload (not a file part, or no data-objects metadata);
    ValueError for a marker whose path could escape the root.
    """
    metadata = part.metadata if isinstance(part, FilePart) else None
    if not metadata or DATA_OBJECTS_EXTENSION_URI not in metadata:
        return None
    marker = metadata[DATA_OBJECTS_EXTENSION_URI]
    if not isinstance(marker, dict):
        raise ValueError(f"the {DATA_OBJECTS_EXTENSION_URI} marker {marker!r} is {_NOT_NORMALIZED}")
    return normalized_relative_path(marker.get("path"))


def takes_write_namespace(get_handler: object) -> bool:
    """Whether a `data/get` handler accepts a grant (then its env advertises the extension)."""
    try:
        # any object may come in: signature() raises for what is not callable (caught below)
        return "write_namespace" in inspect.signature(get_handler).parameters  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False


def data_objects_extension() -> EnvironmentExtension:
    """The card entry of an env whose `data/get` can upload its export through a grant."""
    return EnvironmentExtension(
        uri=DATA_OBJECTS_EXTENSION_URI,
        description="data/get accepts a write_namespace grant and may answer with uploaded objects.",
    )
