"""The installed entry points of agent-env's groups (`agent_env` and `agent_env.*`), read
through an index kept in the cache folder.

Scanning with `importlib.metadata` imports it (and the email parser it reads METADATA with)
and opens every distribution's files: about a tenth of `agent-env run hello`. The index
holds what one scan found, under a fingerprint of every `sys.path` folder (its mtime, the
name of each `*.dist-info` / `*.egg-info` in it and the mtime and size of its
`entry_points.txt`) that costs one `stat` per folder and per distribution. A folder whose
mtime is the one the index holds keeps the listing the index holds (the test `FileFinder`
uses to trust its own listing), once that mtime was `SETTLE_NS` older than the listing: a
folder changed within its mtime's clock tick may change again without a new mtime, so it is
listed again (`scandir`) until it settles. Installing, removing or upgrading a distribution
(a new or removed metadata folder), editing an `entry_points.txt`, or a changed `sys.path`
makes the fingerprint differ, and the next call scans again. Any problem with the index
(missing, unreadable, corrupt, not writable) is a scan, never an error.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import stat
import sys
import time
import zlib
from pathlib import Path
from typing import Any

#: Entry-point groups the index keeps: ours and the existing product's (`agent_env.*`).
PREFIX = "agent_env"
#: Bumped when the index's layout changes (an old index is then a miss).
INDEX_FORMAT = 1
#: A folder modified this recently (nanoseconds) before it was listed may change again
#: within its mtime's tick: its listing is trusted by its mtime only when it is older.
SETTLE_NS = 2_000_000_000

#: What `installed` found per `sys.path`, once `read_once()` was called (the console script:
#: one command per process, where the plugin manager and the bundle sources each asked,
#: fingerprinting every distribution twice); None: every call checks the fingerprint (an
#: embedding process, tests, a server that outlives installs).
_found_once: dict[tuple[str, ...], list[InstalledEntryPoint]] | None = None


def read_once() -> None:
    """Fingerprint and read the index at most once per `sys.path` in this process from now on
    (for a process that runs one command: nothing it does installs on its own `sys.path`)."""
    global _found_once
    if _found_once is None:
        _found_once = {}


class InstalledEntryPoint:
    """One entry point: `group`, `name`, `value` (`module[:attr]`) and its distribution's
    `dist` name and `version` (None when unknown)."""

    __slots__ = ("dist", "group", "name", "value", "version")

    def __init__(
        self, group: str, name: str, value: str, dist: str | None, version: str | None
    ) -> None:
        self.group, self.name, self.value = group, name, value
        self.dist, self.version = dist, version

    def __repr__(self) -> str:
        return f"InstalledEntryPoint({self.group!r}, {self.name!r}, {self.value!r}, {self.dist!r})"

    def to_list(self) -> list[str | None]:
        return [self.group, self.name, self.value, self.dist, self.version]

    def load(self) -> Any:
        """The object the value names (`module` or `module:attr.attr`), imported."""
        module, _, attrs = self.value.split("[")[0].strip().partition(":")
        obj: Any = importlib.import_module(module.strip())
        for part in filter(None, attrs.strip().split(".")):
            obj = getattr(obj, part)
        return obj


def normalize_dist(name: str) -> str:
    """A distribution name as pip compares them: lowercase, runs of `-_.` become `-`."""
    return re.sub(r"[-_.]+", "-", name).lower()


def installed(group: str | None = None) -> list[InstalledEntryPoint]:
    """The entry points of `group` (one of ours; None: all of ours) on `sys.path`, in
    `sys.path` order."""
    if group is not None and not _ours(group):
        raise ValueError(f"the entry-point index keeps only {PREFIX}* groups, not {group!r}")
    found = _indexed()
    return found if group is None else [ep for ep in found if ep.group == group]


def _ours(group: str) -> bool:
    return group == PREFIX or group.startswith(PREFIX + ".")


def _indexed() -> list[InstalledEntryPoint]:
    key = tuple(sys.path)
    if _found_once is not None and key in _found_once:
        return list(_found_once[key])
    index = _index_path()
    data = _load(index)
    listed_ns = time.time_ns()
    settled = _settled_listings(data)
    fingerprint = _fingerprint(settled)
    found = _read(data, fingerprint)
    if found is None:
        found = _scan()
        _write(index, fingerprint, found, listed_ns)
    elif _settled_since(fingerprint, settled, listed_ns):
        _write(index, fingerprint, found, listed_ns)  # the next command lists fewer folders
    if _found_once is not None:
        _found_once[key] = list(found)
    return found


def _scan() -> list[InstalledEntryPoint]:
    """What `importlib.metadata.entry_points()` finds in our groups: a distribution found
    twice on `sys.path` counts once, the first."""
    from importlib.metadata import distributions

    found, seen = [], set()
    for dist in distributions():
        meta = dist.metadata  # one METADATA parse for the name and the version
        name = meta["Name"]
        key = normalize_dist(name) if name else None
        if key in seen:
            continue
        seen.add(key)
        for ep in dist.entry_points:
            if _ours(ep.group):
                found.append(
                    InstalledEntryPoint(ep.group, ep.name, ep.value, name, meta["Version"])
                )
    return found


def _fingerprint(settled: dict[str, tuple[int, list[str]]] | None = None) -> list[Any]:
    """What decides the index: per `sys.path` folder, its mtime and its metadata folders with
    their `entry_points.txt`. `settled`: folder -> (mtime, metadata folder names) from the
    index (`_settled_listings`), used instead of listing a folder whose mtime is that one."""
    parts: list[Any] = [sys.version, sys.prefix]
    for entry in sys.path:
        folder = entry or "."
        try:
            st = os.stat(folder)
        except OSError:
            parts.append([entry])
            continue
        if not stat.S_ISDIR(st.st_mode):  # a zip or egg on the path
            parts.append([entry, st.st_mtime_ns, st.st_size])
            continue
        known = settled.get(entry) if settled else None
        if known is not None and known[0] == st.st_mtime_ns:
            names = known[1]
        else:
            names = _metadata_folders(folder)
        metas: list[list[Any]] = []
        prefix = os.path.join(folder, "")
        for name in names:
            # inline: this loop runs once per installed distribution per command
            try:
                found = os.stat(prefix + name + _ENTRY_POINTS_FILE)
            except OSError:
                metas.append([name])
            else:
                metas.append([name, found.st_mtime_ns, found.st_size])
        parts.append([entry, st.st_mtime_ns, sorted(metas)])
    return parts


def _settled_since(
    fingerprint: list[Any], settled: dict[str, tuple[int, list[str]]], listed_ns: int
) -> bool:
    """Whether a folder this fingerprint listed has settled since the index was written
    (rewriting the index then spares the next command its `scandir`)."""
    return any(
        len(part) == 3
        and isinstance(part[2], list)
        and part[0] not in settled
        and part[1] <= listed_ns - SETTLE_NS
        for part in fingerprint[2:]
    )


def _metadata_folders(folder: str) -> list[str]:
    try:
        with os.scandir(folder) as it:
            return [item.name for item in it if item.name.endswith(_META_SUFFIXES)]
    except OSError:
        return []


def _settled_listings(data: dict[str, Any] | None) -> dict[str, tuple[int, list[str]]]:
    """The listings of an index's fingerprint that can be trusted by their folder's mtime:
    folders last modified at least `SETTLE_NS` before the index listed them."""
    if data is None:
        return {}
    try:
        listed_ns = data.get("listed_ns")
        if not isinstance(listed_ns, int):
            return {}
        out: dict[str, tuple[int, list[str]]] = {}
        for part in data["fingerprint"][2:]:
            if len(part) == 3 and isinstance(part[2], list) and isinstance(part[1], int):
                entry, mtime, metas = part
                if mtime <= listed_ns - SETTLE_NS:
                    out[entry] = (mtime, [str(m[0]) for m in metas])
        return out
    except (KeyError, TypeError, IndexError, AttributeError):
        return {}


_META_SUFFIXES = (".dist-info", ".egg-info")
#: Joined to a metadata folder's path as `os.path.join` would (that path never ends in "/").
_ENTRY_POINTS_FILE = os.sep + "entry_points.txt"


def _index_path() -> Path:
    from agent_env.paths import cache_dir

    # a name per installation and `sys.path` (the console script's differs from `python -c`'s
    # or `python -m`'s by its first entry: one index each, rather than each rescanning over the
    # other's); no hashlib: loading OpenSSL costs the CLI's start-up ~2 ms. A clash only costs
    # rescans, as the fingerprint tells them apart
    where = "\0".join([sys.executable, sys.prefix, *sys.path]).encode()
    key = f"{zlib.crc32(where):08x}"
    return cache_dir() / "entry-points" / f"{key}.json"


def _load(index: Path) -> dict[str, Any] | None:
    """The index file's content (None when it is missing, unreadable or not this layout)."""
    try:
        data = json.loads(index.read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("format") != INDEX_FORMAT:
        return None
    return data


def _read(data: dict[str, Any] | None, fingerprint: list[Any]) -> list[InstalledEntryPoint] | None:
    try:
        if data is None or data["fingerprint"] != fingerprint:
            return None
        return [InstalledEntryPoint(*row) for row in data["entry_points"]]
    except (ValueError, KeyError, TypeError):
        return None


def _write(
    index: Path, fingerprint: list[Any], found: list[InstalledEntryPoint], listed_ns: int
) -> None:
    data = {
        "format": INDEX_FORMAT,
        "prefix": sys.prefix,
        "listed_ns": listed_ns,
        "fingerprint": fingerprint,
        "entry_points": [ep.to_list() for ep in found],
    }
    try:
        from agent_env.fsutil import atomic_write

        index.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(index, json.dumps(data), fsync=False)
    except (OSError, TypeError):
        return
    _drop_gone(index)


def _drop_gone(index: Path) -> None:
    """Remove the indexes of installations that are gone (a deleted venv, a `uvx` run's
    environment): run on a write, so the folder holds one file per live installation."""
    for other in index.parent.glob("*.json"):
        if other == index:
            continue
        try:
            prefix = json.loads(other.read_bytes()).get("prefix")
            if not (isinstance(prefix, str) and os.path.isdir(prefix)):
                other.unlink()
        except (OSError, ValueError, AttributeError):
            other.unlink(missing_ok=True)
