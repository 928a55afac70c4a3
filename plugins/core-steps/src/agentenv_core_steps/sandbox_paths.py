"""Paths inside a sandbox, checked before anything runs: a relative path is taken from a base
folder (a verifier's `base_dir`, the sandbox's work folder `/app`) and must stay under it."""

from __future__ import annotations

import posixpath

#: Where a sandbox resolves relative paths (its work folder).
WORKDIR = "/app"


def escapes(path: str, base: str) -> bool:
    """True when `..` in `path` climbs out of where the path starts: `base` for a relative
    path (`../../etc/passwd` from `/app`), its first folder for an absolute one (`/app/../etc`).
    A path without `..` never escapes."""
    parts = path.split("/")
    if ".." not in parts:
        return False
    if path.startswith("/"):
        root, rest = "/" + parts[1], "/".join(parts[2:])
    else:
        root, rest = base, path
    root = posixpath.normpath("/" + root.strip("/"))
    joined = posixpath.normpath(posixpath.join(root, rest))
    return joined != root and not joined.startswith(root.rstrip("/") + "/")
