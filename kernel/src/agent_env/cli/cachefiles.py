"""The files of the console script's start-up caches (`codecache`, `importcache`): one per
command line, so a command loads only what such a command line used (not what every command
ever run did), and the least recently used dropped past `MAX_FILES` (runs of throwaway
bundles would otherwise add a file each, forever)."""

from __future__ import annotations

import os
import zlib
from pathlib import Path

#: Files kept in a cache's folder: past this, a write drops the ones least recently loaded.
MAX_FILES = 64


def command_line_name(command: str, detail: str) -> str:
    """The part of a cache file's name that tells command lines apart: the command's word
    (`root` for none, `other` for an odd one), plus a checksum of the words after it."""
    word = command if command.replace("-", "").isalnum() and len(command) <= 40 else "other"
    suffix = f"-{zlib.crc32(detail.encode(errors='surrogateescape')):08x}" if detail else ""
    return f"{word or 'root'}{suffix}"


def loaded(path: Path) -> None:
    """Note that `path` was just used (its mtime: the last a full folder drops)."""
    try:
        os.utime(path)
    except OSError:
        pass


def prune(folder: Path) -> None:
    """Keep the `MAX_FILES` files of `folder` loaded or written last."""
    files = []
    for item in folder.glob("*.marshal"):
        try:
            files.append((item.stat().st_mtime_ns, item))
        except OSError:
            continue
    for _, item in sorted(files, reverse=True)[MAX_FILES:]:
        item.unlink(missing_ok=True)
