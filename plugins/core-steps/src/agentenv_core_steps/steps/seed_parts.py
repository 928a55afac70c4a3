"""Artifacts as data-plane parts: what `load_artifact` with `via = "data_plane"` hands an env's
`@add_data` handler.

Each file becomes one part, named in its `metadata` (`{"name": <path in the artifact>,
"artifact": <id>}`): a `.json` file holding an object becomes a `data` part (the object itself),
other UTF-8 text a `text` part, anything else a `file` part with its bytes (base64) and MIME type.
A fileset gives one part per file, in path order.
"""

from __future__ import annotations

import base64
import json
import mimetypes
from pathlib import Path
from typing import Any

#: The largest artifact file sent as one part (the gateway caps request bodies too).
MAX_PART_BYTES = 8 * 1024 * 1024


def part_for(name: str, data: bytes, artifact: str) -> dict[str, Any]:
    """One data-plane part (wire JSON) for the file `name` with content `data`."""
    if len(data) > MAX_PART_BYTES:
        raise ValueError(
            f"{name}: {len(data)} bytes is over the {MAX_PART_BYTES}-byte limit of one part; "
            'load it as files (via = "files") and have the env read it'
        )
    metadata = {"name": name, "artifact": artifact}
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is not None and name.endswith(".json"):
        try:
            value = json.loads(text)
        except ValueError as e:
            raise ValueError(f"{name}: not valid JSON ({e})") from None
        if isinstance(value, dict):
            return {"kind": "data", "data": value, "metadata": metadata}
    if text is not None:
        return {"kind": "text", "text": text, "metadata": metadata}
    mime = mimetypes.guess_type(name)[0] or "application/octet-stream"
    encoded = base64.b64encode(data).decode("ascii")
    return {
        "kind": "file",
        "file": {"bytes": encoded, "name": name, "mimeType": mime},
        "metadata": metadata,
    }


def parts_for(files: list[tuple[str, Path]], artifact: str) -> list[dict[str, Any]]:
    """The parts of an artifact's files, `(name, path)` in order."""
    return [part_for(name, path.read_bytes(), artifact) for name, path in files]
