"""The data plane on a computer: `data/add` writes file parts under the session user's home
(from inline bytes, an https URL or a read grant), every part checked before any is written and
each written atomically; `data/get` returns the files under the settings' `data_paths`, inline
or uploaded under a write-namespace grant."""

from __future__ import annotations

import base64
import binascii
import mimetypes
import os
import tempfile
from pathlib import Path, PurePosixPath
from typing import Any

import httpx

from agentenv_protocol.authoring import add_data, get_data
from agentenv_protocol.computer import linux
from agentenv_protocol.constants import DATA_OBJECTS_EXTENSION_URI
from agentenv_protocol.errors import AgentEnvError
from agentenv_protocol.transfers import NamespaceUploader, ReadObject, download

MAX_URL_BYTES = 100 * 1024 * 1024
URL_TIMEOUT_S = 60
_TYPES = {".md": "text/markdown", ".json": "application/json"}


def _refused(message: str) -> AgentEnvError:
    return AgentEnvError("add_failed", message)


def home() -> Path:
    return Path(os.environ.get("HOME") or Path.home())


def media_type(path: str) -> str:
    suffix = PurePosixPath(path).suffix.lower()
    return _TYPES.get(suffix) or mimetypes.guess_type(path)[0] or "application/octet-stream"


def _relative(value: object) -> str:
    if isinstance(value, str) and value:
        p = PurePosixPath(value)
        if not p.is_absolute() and str(p) == value and all(s not in ("..", ".") for s in p.parts):
            return value
    raise _refused(f"{value!r} is not a normalized path relative to the home")


def _inside(root: Path, rel: str) -> Path:
    """`root/rel` with its symlinks resolved, refused when that leaves the home."""
    target = (root / rel).resolve()
    if not target.is_relative_to(root.resolve()):
        raise _refused(f"{rel!r} is outside the home")
    return target


def _plan(part: dict, root: Path) -> tuple[Path, str, Any]:
    """(target, source kind, source) of one part, or why it is refused."""
    marker = (part.get("metadata") or {}).get(DATA_OBJECTS_EXTENSION_URI)
    if part.get("kind") != "file" or not isinstance(marker, dict) or "path" not in marker:
        raise _refused(
            "data/add on a computer takes file parts naming their path under metadata "
            f"{DATA_OBJECTS_EXTENSION_URI!r}"
        )
    rel = _relative(marker["path"])
    target = _inside(root, rel)
    if marker.get("read") is not None:
        try:
            return target, "grant", ReadObject.model_validate(marker["read"])
        except ValueError:
            raise _refused("the part's read grant is not a valid ReadObject") from None
    file = part.get("file") or {}
    if "bytes" in file:
        try:
            return target, "bytes", base64.b64decode(file["bytes"], validate=True)
        except (binascii.Error, ValueError):
            raise _refused("the part's bytes are not base64") from None
    uri = file.get("uri")
    if not isinstance(uri, str) or not uri.startswith("https://"):
        raise _refused(f"a file part's uri is an https URL, got {uri!r}")
    return target, "url", uri


async def _fetch(url: str) -> bytes:
    body = bytearray()
    async with (
        httpx.AsyncClient(timeout=URL_TIMEOUT_S, follow_redirects=True) as http,
        http.stream("GET", url) as response,
    ):
        if response.status_code >= 400:
            raise _refused(f"GET {url} answered {response.status_code}")
        async for chunk in response.aiter_bytes():
            body += chunk
            if len(body) > MAX_URL_BYTES:
                raise _refused(f"{url} is over {MAX_URL_BYTES} bytes")
    return bytes(body)


class ComputerDataPlane:
    """Data-plane handlers of `ComputerDriverEnvironment` (mixed into it)."""

    @add_data
    async def computer_add_data(self: Any, parts: list) -> None:
        root = home()
        plans = [
            _plan(
                p.model_dump(by_alias=True, exclude_none=True)
                if hasattr(p, "model_dump")
                else dict(p),
                root,
            )
            for p in parts
        ]
        for target, kind, source in plans:
            try:
                if kind == "grant":
                    target.parent.mkdir(parents=True, exist_ok=True)
                    fd, temp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
                    os.close(fd)
                    try:
                        await download(source, Path(temp))
                        linux.os.replace(temp, target)
                    finally:
                        if os.path.exists(temp):
                            os.unlink(temp)
                    continue
                data = source if kind == "bytes" else await _fetch(source)
                linux.write_atomic(target, data)
            except AgentEnvError:
                raise
            except Exception as e:
                raise _refused(f"writing {target.relative_to(root.resolve())} failed: {e}") from e

    @get_data
    async def computer_get_data(self: Any, write_namespace: Any = None) -> list[dict]:
        root = home().resolve()
        found: dict[str, Path] = {}
        for entry in self.settings.data_paths:
            start = root / entry
            candidates = sorted(start.rglob("*")) if start.is_dir() else [start]
            for path in candidates:
                if not path.is_file() or not path.resolve().is_relative_to(root):
                    continue
                found.setdefault(path.relative_to(root).as_posix(), path)
        uploader = NamespaceUploader(write_namespace) if write_namespace is not None else None
        parts = []
        for rel, path in sorted(found.items()):
            file: dict = {}
            if uploader is not None:
                await uploader.upload(rel, path)
                file["uri"] = rel
            else:
                file["bytes"] = base64.b64encode(path.read_bytes()).decode()
            file.update(mimeType=media_type(rel), name=path.name)
            parts.append(
                {
                    "kind": "file",
                    "file": file,
                    "metadata": {DATA_OBJECTS_EXTENSION_URI: {"path": rel}},
                }
            )
        return parts
