"""An index of where the console script's imports were found, for its start-up.

`agent-env run hello` imports about 380 modules; finding each one (`PathFinder`: a `stat` of
every folder on the way, up to four more per package for its `__init__` suffixes, path joins
in Python) was about a twentieth of the command's CPU, redone identically by every process.
This keeps what `PathFinder.find_spec` answered (the module's file, its loader's kind and, for
a package, its folder) in one file per command line under the cache folder (as `codecache`:
an index of every module any command imported cost a developer's `run hello` two
milliseconds to load and check), and answers the same again: the
spec is built as `FileFinder` builds it (`spec_from_file_location` with a fresh loader), so
the module, its bytecode cache and its `__file__` are what they were.

The answer can only change when a folder's listing does (a module added, removed or renamed,
a package that gains an `__init__`): the index holds the mtime of every folder its answers
depend on (each `sys.path` entry, each package folder searched), and one that differs (or a
changed `sys.path`, Python or file layout) drops the whole index; this run then records a new
one. That is the test `FileFinder` itself uses to trust its listing within a process. A folder
changed in the last two seconds is not trusted to have settled (its mtime may not tick again
for a change made within the same clock tick): nothing is written until it is older.
Editing a module in place changes no listing, and its bytecode is checked against its source
as always. Namespace packages and modules other finders serve are left to them.
"""

from __future__ import annotations

import atexit
import marshal
import os
import sys
import time
import zlib
from collections.abc import Sequence
from importlib.machinery import (
    ExtensionFileLoader,
    PathFinder,
    SourceFileLoader,
    SourcelessFileLoader,
)
from importlib.util import spec_from_file_location
from pathlib import Path
from typing import Any

from agent_env.cli.cachefiles import command_line_name, loaded, prune

#: Bumped when the file's layout changes.
FORMAT = 1
#: The loaders whose specs `FileFinder` builds from a file name alone, by kind.
LOADERS: dict[str, Any] = {
    "source": SourceFileLoader,
    "extension": ExtensionFileLoader,
    "sourceless": SourcelessFileLoader,
}
KINDS = {cls: kind for kind, cls in LOADERS.items()}
#: A folder modified this recently (nanoseconds) may change again within its mtime's tick.
SETTLE_NS = 2_000_000_000

_state: dict[str, Any] = {"installed": False, "dirty": False, "hits": 0, "misses": 0}
#: name -> (file, loader kind, package folders or None, parent `__path__` or None).
_entries: dict[str, tuple[str, str, list[str] | None, list[str] | None]] = {}
#: folder -> its mtime in nanoseconds (None: not there) when the entries were found.
_folders: dict[str, int | None] = {}


def install(command: str = "", detail: Sequence[str] = ()) -> None:
    """Answer imports from the index (when it still holds) and record what `PathFinder`
    finds beyond it, written at exit: once per process, in front of `PathFinder`. `command`
    and `detail` (the words after it) choose the file (`path`)."""
    if _state["installed"] or PathFinder not in sys.meta_path:
        return
    if not all(os.path.isabs(entry) for entry in sys.path):
        return  # a relative entry ('' for `python -c`) depends on the working folder
    _state["installed"] = True
    _state["path"] = list(sys.path)
    _state["line"] = command_line_name(command, "\0".join(detail))
    _load()
    sys.meta_path.insert(sys.meta_path.index(PathFinder), IndexedFinder)
    atexit.register(save)


def path() -> Path:
    """The index of this interpreter, `sys.path` (the console script's first entry differs
    from `python -m`'s) and command line: a command loads and checks only the modules such a
    command line imported, not those of every command run with this `sys.path`."""
    from agent_env.paths import cache_dir

    where = "\0".join([sys.executable, sys.prefix, *(_state.get("path") or sys.path)])
    key = zlib.crc32(where.encode(errors="surrogateescape"))
    line = _state.get("line") or command_line_name("", "")
    return cache_dir() / "imports" / f"{key:08x}-{line}.marshal"


def _mtime(folder: str) -> int | None:
    try:
        return os.stat(folder or ".").st_mtime_ns
    except OSError:
        return None


def _load() -> None:
    try:
        target = path()
        data = marshal.loads(target.read_bytes())
        if (
            data["format"] != FORMAT
            or data["python"] != sys.version
            or data["path"] != _state["path"]
        ):
            return
        folders = data["folders"]
        if any(_mtime(folder) != mtime for folder, mtime in folders.items()):
            return
        _folders.update(folders)
        _entries.update(data["entries"])
        loaded(target)
    except (OSError, ValueError, EOFError, KeyError, TypeError, AttributeError):
        _folders.clear()
        _entries.clear()


class IndexedFinder:
    """A meta path finder: the indexed answer, else `PathFinder`'s (recorded)."""

    @staticmethod
    def find_spec(name: str, path: Any = None, target: Any = None) -> Any:
        top = path is None
        if top and sys.path != _state["path"]:
            return None  # someone changed sys.path: PathFinder answers (and is not recorded)
        entry = _entries.get(name)
        if entry is not None and entry[3] == (None if top else list(path)):
            file, kind, package, _ = entry
            _state["hits"] += 1
            return spec_from_file_location(
                name,
                file,
                loader=LOADERS[kind](name, file),
                submodule_search_locations=None if package is None else list(package),
            )
        spec = PathFinder.find_spec(name, path, target)
        _record(name, None if top else list(path), spec)
        return spec

    @staticmethod
    def invalidate_caches() -> None:
        """`importlib.invalidate_caches()`: something changed on disk; stop answering."""
        _entries.clear()
        _state["path"] = None


def _record(name: str, parent: list[str] | None, spec: Any) -> None:
    kind = KINDS.get(type(spec.loader)) if spec is not None else None
    if kind is None or not spec.has_location or not isinstance(spec.origin, str):
        return
    package = spec.submodule_search_locations
    if package is not None:
        package = list(package)
        if len(package) != 1:
            return
    _state["misses"] += 1
    for folder in (*(sys.path if parent is None else parent), *(package or ())):
        if folder not in _folders:
            _folders[folder] = _mtime(folder)
    _entries[name] = (spec.origin, kind, package, parent)
    _state["dirty"] = True


def save() -> None:
    """Write the index when this process found modules it did not hold (at exit), unless a
    folder it depends on changed too recently to be trusted."""
    if not _state["dirty"] or _state["path"] is None:
        return
    _state["dirty"] = False
    recent = time.time_ns() - SETTLE_NS
    if any(mtime is not None and mtime > recent for mtime in _folders.values()):
        return
    data = {
        "format": FORMAT,
        "python": sys.version,
        "path": _state["path"],
        "folders": _folders,
        "entries": _entries,
    }
    try:
        from agent_env.fsutil import atomic_write

        target = path()
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(target, marshal.dumps(data), fsync=False)
        prune(target.parent)
    except (OSError, ValueError):
        pass


def stats() -> dict[str, int]:
    """How many imports this process found in the index (`hits`) and recorded (`misses`)."""
    return {"hits": _state["hits"], "misses": _state["misses"]}
