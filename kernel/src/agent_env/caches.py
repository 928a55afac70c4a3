"""Cache kinds: what `agent-env cache list|prune` (agentenv-caches) shows and removes. Plugins
register them through `agentenv_register_cache_kinds`; the kernel knows none of docker, the Hub
or venvs.

A kind lists its `CacheEntry`s and removes one; an entry a live run uses is never removed.
"In use" is decided from the sandbox leases whose owner is alive (`LiveUse`): an entry is in use
when one of its `refs` occurs in such a lease or in the command line of a process it tracks;
a kind can refine `in_use` (images ask the daemon which image a live container runs).

Most caches are folders under `agent_env.paths.cache_dir()`; `FolderCache` covers them::

    class VenvCache(FolderCache):
        type = "venvs"
        description = "Python virtual environments built for env requirements"
        folders = ("venvs",)
"""

from __future__ import annotations

import abc
import fcntl
import json
import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import attrs


@attrs.frozen(kw_only=True)
class CacheEntry:
    """One removable thing: `name` as shown, `size` in bytes, `last_used` (epoch seconds),
    `refs` (paths, image ids) whose presence in a live run means it is in use."""

    kind: str
    name: str
    size: int
    last_used: float
    refs: tuple[str, ...] = ()
    location: str = ""


@attrs.frozen(kw_only=True)
class LiveUse:
    """What live runs hold: their leases (as JSON text) and their tracked processes' argv."""

    leases: tuple[dict[str, Any], ...] = ()
    texts: tuple[str, ...] = ()

    @classmethod
    def scan(cls, home: Path) -> LiveUse:
        """The leases under `<home>/leases` whose owner is alive, with the argv of each process
        their sandboxes run (tracked pids, and host processes carrying the sandbox marker)."""
        from agent_env.sandboxes import leases as lease_files
        from agent_env.sandboxes import procs
        from agent_env.sandboxes.local.process import MARKER_ENV

        live: list[dict[str, Any]] = []
        texts: list[str] = []
        marked: dict[str, list[int]] | None = None
        lease_dir = Path(home) / "leases"
        try:
            names = sorted(os.listdir(lease_dir))
        except FileNotFoundError:
            names = []
        for name in names:
            if not name.endswith(lease_files.SUFFIX):
                continue
            lease = lease_files.read(lease_dir / name)
            if lease is None or not lease_files.owner_alive(lease):
                continue
            live.append(lease)
            texts.append(json.dumps(lease))
            describe = lease.get("describe")
            pids = set(describe.get("pids") or []) if isinstance(describe, dict) else set()
            if marked is None:
                marked = procs.env_values(MARKER_ENV)
            pids.update(marked.get(str(lease.get("sandbox_id")), ()))
            texts.extend(_cmdline(pid) for pid in sorted(pids))
        return cls(leases=tuple(live), texts=tuple(t for t in texts if t))

    def mentions(self, ref: str) -> bool:
        return bool(ref) and any(ref in text for text in self.texts)


def home_id() -> str:
    """A random id of this agent-env home, made on first use and kept in `<home>/home-id`.
    A cache several homes share (a Docker daemon's images) labels entries with it, so one
    home's prune removes only what that home made. A copied home keeps the id."""
    from agent_env.paths import home

    path = home() / "home-id"
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    fresh = path.with_name(f".home-id.{os.getpid()}.{uuid.uuid4().hex}")
    fresh.write_text(uuid.uuid4().hex + "\n")
    try:
        os.link(fresh, path)  # atomic and complete: the first process to make it wins
    except FileExistsError:
        pass
    finally:
        fresh.unlink(missing_ok=True)
    return path.read_text().strip()


def _cmdline(pid: Any) -> str:
    try:
        raw = Path(f"/proc/{int(pid)}/cmdline").read_bytes()
    except (OSError, ValueError):
        return ""
    return " ".join(part.decode(errors="replace") for part in raw.split(b"\0") if part)


class CacheKind(abc.ABC):
    """A kind of cache (`type` names it in `--kind`); constructed with no arguments."""

    type: ClassVar[str] = ""
    description: ClassVar[str] = ""

    @abc.abstractmethod
    def location(self) -> str:
        """Where it lives, as shown (a folder, a daemon)."""

    @abc.abstractmethod
    def entries(self) -> list[CacheEntry]:
        """Every entry now (an empty list when the cache does not exist yet)."""

    @abc.abstractmethod
    def remove(self, entry: CacheEntry) -> None:
        """Delete `entry` (gone already is fine)."""

    def in_use(self, entry: CacheEntry, live: LiveUse) -> bool:
        """Whether a live run uses `entry` (then prune keeps it)."""
        return any(live.mentions(ref) for ref in entry.refs)


class FolderCache(CacheKind):
    """A cache whose entries are the children (`depth` levels down) of `folders` under the
    cache dir; a sibling `<entry>.lock` held by a process marks the entry in use."""

    folders: ClassVar[tuple[str, ...]] = ()
    depth: ClassVar[int] = 1

    def roots(self) -> list[Path]:
        from agent_env.paths import cache_dir

        return [cache_dir() / f for f in self.folders]

    def location(self) -> str:
        return ", ".join(str(r) for r in self.roots())

    def _children(self, root: Path, depth: int) -> Iterator[Path]:
        try:
            children = sorted(root.iterdir())
        except (FileNotFoundError, NotADirectoryError):
            return
        for child in children:
            if child.name.startswith(".") or child.name.endswith(".lock"):
                continue
            if depth > 1 and child.is_dir() and not child.is_symlink():
                yield from self._children(child, depth - 1)
            else:
                yield child

    def entries(self) -> list[CacheEntry]:
        out = []
        for root in self.roots():
            for path in self._children(root, self.depth):
                size, newest = usage(path)
                out.append(
                    CacheEntry(
                        kind=self.type,
                        name=path.relative_to(root).as_posix(),
                        size=size,
                        last_used=newest,
                        refs=(str(path),),
                        location=str(path),
                    )
                )
        return out

    def remove(self, entry: CacheEntry) -> None:
        path = Path(entry.location)
        if path.is_dir() and not path.is_symlink():
            # moved aside first, so a reader never sees half a folder
            aside = path.with_name(f".{path.name}.removing-{os.getpid()}")
            try:
                os.replace(path, aside)
            except FileNotFoundError:
                return
            shutil.rmtree(aside, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
        path.with_name(path.name + ".lock").unlink(missing_ok=True)

    def in_use(self, entry: CacheEntry, live: LiveUse) -> bool:
        return super().in_use(entry, live) or _locked(Path(entry.location + ".lock"))


def _locked(lock: Path) -> bool:
    """Whether some process holds an flock on `lock` right now."""
    try:
        fd = os.open(lock, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False


def usage(path: Path) -> tuple[int, float]:
    """(bytes on disk, newest mtime) of a file or a folder tree (symlinks not followed)."""
    try:
        st = path.lstat()
    except OSError:
        return 0, 0.0
    size, newest = st.st_size, st.st_mtime
    if path.is_dir() and not path.is_symlink():
        for folder, dirs, files in os.walk(path):
            for name in (*dirs, *files):
                try:
                    st = os.lstat(os.path.join(folder, name))
                except OSError:
                    continue
                if name in files:
                    size += st.st_size
                newest = max(newest, st.st_mtime)
    return size, newest
