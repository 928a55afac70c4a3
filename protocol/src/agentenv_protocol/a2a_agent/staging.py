"""The staging extension (`urn:agentenv:staging/v1`): a small object store an agent serves at
`/ext/staging` on its own port, so AgentEnv can hand it objects (and take back what it wrote)
when the object store's grants cannot reach the agent.

A staged path is `{id}/{path}`: the id, at least 22 URL-safe characters that AgentEnv makes up
and never shares, is what keeps the objects private on a public agent URL, so a shorter one is
answered as if nothing were there. Paths are never folded: an empty, `.` or `..` segment or a
backslash is refused. Object names never reach the filesystem: each write lands in a file of
its own (`incoming/`, then `objects/`) under a directory only the server's user can read, and
an index in memory maps paths to files. Everything staged counts against one byte limit,
reserved before a byte is written, so a write that outgrows it leaves nothing behind.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import tempfile
import uuid
import weakref
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import attrs

from agentenv_protocol.data_objects import normalized_relative_path

STAGING_V1_URI = "urn:agentenv:staging/v1"
STAGING_ENDPOINT = "/ext/staging"
MAX_BYTES_ENV = "AGENTENV_STAGING_MAX_BYTES"
DIR_ENV = "AGENTENV_STAGING_DIR"
DEFAULT_MAX_BYTES = 16 << 30
#: An id AgentEnv generates: long enough that nobody guesses another caller's.
STAGING_ID = re.compile(r"[A-Za-z0-9_-]{22,128}")
_PRIVATE = 0o700


class StagingError(Exception):
    """A staging request refused; `status` is the HTTP status it is answered with."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def staging_limit() -> int:
    """The byte limit `AGENTENV_STAGING_MAX_BYTES` sets (16 GiB when unset; 0 turns staging off)."""
    raw = os.environ.get(MAX_BYTES_ENV, "").strip()
    if not raw:
        return DEFAULT_MAX_BYTES
    if not raw.isdigit():
        raise ValueError(f"{MAX_BYTES_ENV}={raw!r}: expected a whole number of bytes (0 = off)")
    return int(raw)


def staging_extension() -> dict[str, Any]:
    """The agent card's entry for the extension."""
    return {
        "uri": STAGING_V1_URI,
        "description": "A private object store on the agent's own server, for transfers.",
        "required": False,
        "params": {"endpoint": STAGING_ENDPOINT},
    }


def under_staging(path: str) -> bool:
    """Whether an HTTP route at `path` would collide with the staging routes."""
    return path == STAGING_ENDPOINT or path.startswith(STAGING_ENDPOINT + "/")


@attrs.frozen
class StagedObject:
    """One stored object: its file, size, digest and entity tag."""

    file: Path
    size_bytes: int
    sha256: str
    media_type: str

    @property
    def etag(self) -> str:
        return f'"{self.sha256}"'

    def describe(self, path: str) -> dict[str, Any]:
        return {"path": path, "size_bytes": self.size_bytes, "etag": self.etag}


def _private_dir(path: Path) -> Path:
    path.mkdir(mode=_PRIVATE, parents=True, exist_ok=True)
    path.chmod(_PRIVATE)  # tighten one left open by someone else
    return path


class StagingStore:
    """The objects staged on one server, under one byte limit (`max_bytes`; None reads
    `AGENTENV_STAGING_MAX_BYTES`). Its directory is `AGENTENV_STAGING_DIR` when set, else one of
    its own, made when the first object is staged (most agents never stage one, and a server
    that is killed cannot remove it) and removed when the store goes (at the latest when the
    process exits)."""

    def __init__(self, max_bytes: int | None = None, *, root: str | Path | None = None) -> None:
        limit = staging_limit() if max_bytes is None else max_bytes
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise ValueError(f"max_bytes must be a whole number of bytes >= 0, not {limit!r}")
        self.max_bytes = limit
        configured = root if root is not None else os.environ.get(DIR_ENV) or None
        self._root: Path | None = None
        if configured is not None:
            self._root = Path(configured)
            self._root.mkdir(mode=_PRIVATE, parents=True, exist_ok=True)
        self.used_bytes = 0  # committed objects plus the reservations of writes under way
        self._index: dict[str, dict[str, StagedObject]] = {}
        self._prefixes: dict[str, Counter[str]] = {}

    @property
    def enabled(self) -> bool:
        return self.max_bytes > 0

    @property
    def root(self) -> Path:
        """The store's directory (its own one is made on first use)."""
        if self._root is None:
            self._root = Path(tempfile.mkdtemp(prefix="agentenv-staging-"))
            weakref.finalize(self, shutil.rmtree, self._root, ignore_errors=True)
        return self._root

    @functools.cached_property
    def objects_dir(self) -> Path:
        return _private_dir(self.root / "objects")

    @functools.cached_property
    def incoming_dir(self) -> Path:
        return _private_dir(self.root / "incoming")

    # --- reading ------------------------------------------------------------------------------
    def get(self, staging_id: str, path: str) -> StagedObject:
        found = self._index.get(staging_id, {}).get(path)
        if found is None:
            raise StagingError(404, f"nothing is staged at {path!r}")
        return found

    def list(self, staging_id: str, prefix: str) -> list[dict[str, Any]]:
        """The objects below `prefix` ('' for all), paths relative to it, in path order."""
        objects = self._index.get(staging_id, {})
        start = f"{prefix}/" if prefix else ""
        return [
            objects[path].describe(path[len(start) :])
            for path in sorted(objects)
            if path.startswith(start)
        ]

    # --- writing ------------------------------------------------------------------------------
    async def write(
        self,
        staging_id: str,
        path: str,
        chunks: AsyncIterator[bytes],
        *,
        declared: int | None = None,
        media_type: str = "application/octet-stream",
    ) -> StagedObject:
        """Store the bytes of `chunks` at `path`; a replaced object is freed once the new one landed."""
        self._check_shape(staging_id, path)
        if declared is not None:
            self._reserve(declared)
        reserved = declared or 0
        partial = self.incoming_dir / uuid.uuid4().hex
        digest, size = hashlib.sha256(), 0
        try:
            async with await anyio.open_file(partial, "xb") as out:
                async for chunk in chunks:
                    size += len(chunk)
                    if size > reserved:
                        if declared is not None:
                            raise StagingError(400, "the body is longer than its Content-Length")
                        self._reserve(size - reserved)
                        reserved = size
                    digest.update(chunk)
                    await out.write(chunk)
            self._check_shape(staging_id, path)  # another write may have claimed the prefix
        except BaseException:
            partial.unlink(missing_ok=True)  # gone before its room is (what a waiter checks)
            self.used_bytes -= reserved
            raise
        final = self.objects_dir / partial.name
        partial.replace(final)
        staged = StagedObject(final, size, digest.hexdigest(), media_type)
        self.used_bytes -= reserved - size
        self._put(staging_id, path, staged)
        return staged

    def _reserve(self, size: int) -> None:
        if self.used_bytes + size > self.max_bytes:
            free = max(self.max_bytes - self.used_bytes, 0)
            raise StagingError(
                413, f"the object does not fit: staging holds {self.max_bytes} bytes, {free} free"
            )
        self.used_bytes += size

    def _check_shape(self, staging_id: str, path: str) -> None:
        """409 when `path` would be an object and a prefix at once."""
        objects = self._index.get(staging_id, {})
        if self._prefixes.get(staging_id, Counter())[path]:
            raise StagingError(409, f"{path!r} is a prefix of staged objects, not an object")
        for parent in _parents(path):
            if parent in objects:
                raise StagingError(409, f"{parent!r} is a staged object, not a prefix")

    def _put(self, staging_id: str, path: str, staged: StagedObject) -> None:
        if path in self._index.get(staging_id, {}):
            self._drop(staging_id, path)  # the replaced copy is freed once the new one landed
        self._index.setdefault(staging_id, {})[path] = staged
        self._prefixes.setdefault(staging_id, Counter()).update(_parents(path))

    # --- deleting -----------------------------------------------------------------------------
    def delete(self, staging_id: str, path: str, *, if_match: str | None = None) -> None:
        found = self.get(staging_id, path)
        if if_match is not None and if_match.strip() not in ("*", found.etag):
            raise StagingError(412, f"{path!r} changed since it was read")
        self._drop(staging_id, path)

    def delete_prefix(self, staging_id: str, prefix: str) -> int:
        """Remove every object below `prefix` ('' for all of the id's); how many went."""
        start = f"{prefix}/" if prefix else ""
        doomed = [p for p in self._index.get(staging_id, {}) if p.startswith(start)]
        for path in doomed:
            self._drop(staging_id, path)
        return len(doomed)

    def _drop(self, staging_id: str, path: str) -> None:
        objects = self._index[staging_id]
        staged = objects.pop(path)
        staged.file.unlink(missing_ok=True)
        self.used_bytes -= staged.size_bytes
        prefixes = self._prefixes[staging_id]
        prefixes.subtract(_parents(path))
        for parent in _parents(path):
            if prefixes[parent] <= 0:
                del prefixes[parent]
        if not objects:
            del self._index[staging_id]
            del self._prefixes[staging_id]

    def close(self) -> None:
        """Remove every staged object (the directories stay)."""
        for staging_id in list(self._index):
            self.delete_prefix(staging_id, "")


def _parents(path: str) -> list[str]:
    segments = path.split("/")
    return ["/".join(segments[:i]) for i in range(1, len(segments))]


def split_staged_path(raw: str) -> tuple[str, str, bool]:
    """`{id}/{path}` as (id, path, ends_with_slash); StagingError 404 for a guessable id and
    400 for a path that is not normalized (nothing is folded: `a//b`, `..` are refused)."""
    staging_id, _, rest = raw.partition("/")
    if not staging_id:
        raise StagingError(400, "a staged path starts with its id: /ext/staging/{id}/{path}")
    if not STAGING_ID.fullmatch(staging_id):
        raise StagingError(404, "nothing is staged there")
    trailing = rest.endswith("/") or not rest
    body = rest[:-1] if rest.endswith("/") else rest
    if body:
        try:
            normalized_relative_path(body)
        except ValueError:
            raise StagingError(400, f"{body!r} is not a normalized relative path") from None
        if any(ord(c) < 0x20 or c == "\x7f" for c in body):
            raise StagingError(400, "a staged path may not hold control characters")
    return staging_id, body, trailing
