"""The default object store: files under `<home>/objects`, written atomically.

A write goes to a temp file in `<root>/.staging/` and is renamed over the target, so a reader
sees the old object or the new one, never a torn one, even across processes. `put` returns once
the object is in place: every process reads it, and a crash of this process (SIGKILL, Ctrl-C)
loses nothing, since the bytes are in the OS's page cache. What an fsync adds is surviving a
power loss or an OS crash; the `fsync` setting says when it runs (`FSYNC_MODES`):

- `"behind"` (the default): the file's fsync, then its folder's, then the parent's of every
  folder the put created, run in order on one background thread; `flush`/`close` wait for
  them, and `put` waits when `fsync_backlog` puts' fsyncs are pending (back-pressure). A power loss can lose the last milliseconds of writes: a reader of
  an object named by a record may find it empty or torn, and must say so.
- `"always"` (or `true`): the file is fsynced before the rename (never torn, even on power
  loss); the folders' fsyncs run behind as above. It cost 4-30 ms per put on a busy disk, on
  every episode's trajectory.
- `"off"` (or `false`): no fsync at all.
"""

from __future__ import annotations

import os
import shutil
import threading
import weakref
from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any

from agent_env.aio import to_thread
from agent_env.errors import ConfigError, StoreError
from agent_env.fsutil import discard, fsync_path, mkstemp, replacing
from agent_env.stores.base import ObjectStore
from agent_env.stores.names import STAGING_DIR, check_object_key, check_object_prefix
from agent_env.stores.support import home_path, object_bytes, reject_unknown_settings

_CHUNK = 1 << 20

#: The values of the `fsync` setting (`true` means "always", `false` means "off").
FSYNC_MODES = ("behind", "always", "off")
#: The default `fsync_backlog`: how many objects' fsyncs may wait on the background thread
#: before `put` waits for one to finish.
FSYNC_BACKLOG = 256


def fsync_mode(value: Any) -> str:
    """The `fsync` setting as one of `FSYNC_MODES`; a `ConfigError` naming it otherwise."""
    if value is True or value is False:
        return "always" if value else "off"
    if value in FSYNC_MODES:
        return str(value)
    from agent_env.suggest import did_you_mean

    hint = did_you_mean(value, FSYNC_MODES) if isinstance(value, str) else ""
    raise ConfigError(
        f"[stores.filesystem] fsync = {value!r}: not an fsync mode{hint}; use "
        '"behind" (the default), "always" (or true) or "off" (or false)'
    )


def _backlog(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(
            f"[stores.filesystem] fsync_backlog = {value!r}: a whole number of at least 1"
        )
    return value


def _fsync_all(paths: tuple[Path, ...]) -> None:
    """fsync each path in order: an object's file, then its folder (the rename), then the
    parent of each folder its put created, deepest first, so a folder entry never survives a
    power loss that what it names did not."""
    for path in paths:
        fsync_path(path)


def _missing_folders(folder: Path) -> list[Path]:
    """`folder` and its ancestors that do not exist yet, deepest first (one `stat` when
    `folder` exists: the common case)."""
    missing: list[Path] = []
    while not folder.is_dir() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    return missing


#: Every live store of this process: a forked child gets fresh locks for them (a lock copied
#: while another thread held it would stay held in the child forever).
_STORES: weakref.WeakSet[FilesystemObjectStore] = weakref.WeakSet()


def _fresh_locks_in_child() -> None:
    for store in list(_STORES):
        store._fresh_sync_state()


os.register_at_fork(after_in_child=_fresh_locks_in_child)


class FilesystemObjectStore(ObjectStore):
    """`[stores] object = "filesystem"`; settings: `root` (default `<home>/objects`), `fsync`
    (`FSYNC_MODES`, default "behind") and `fsync_backlog` (default `FSYNC_BACKLOG`)."""

    type = "filesystem"

    def __init__(self, settings: Mapping[str, Any] | None = None, *, home: Path | None = None):
        super().__init__(settings, home=home)
        reject_unknown_settings("filesystem", self.settings, ("root", "fsync", "fsync_backlog"))
        self.root = home_path(self.settings, "root", home, "objects")
        self.fsync = fsync_mode(self.settings.get("fsync", "behind"))
        self.fsync_backlog = _backlog(self.settings.get("fsync_backlog", FSYNC_BACKLOG))
        self._fresh_sync_state()
        _STORES.add(self)

    def _fresh_sync_state(self) -> None:
        """No background fsyncs: at start, and in a forked child (the parent's thread and
        its queue did not come along; the parent still runs its own)."""
        self._syncing: set[Future[None]] = set()
        self._sync_lock = threading.Lock()
        self._sync_room = threading.Condition(self._sync_lock)
        self._syncer: ThreadPoolExecutor | None = None

    def _path(self, key: str) -> Path:
        return self.root.joinpath(*check_object_key(key).split("/"))

    def _write(self, key: str, write: Any) -> None:
        target = self._path(key)
        # the folders this put creates: their entries in their parents need an fsync too
        created = _missing_folders(target.parent) if self.fsync != "off" else []
        staging = self.root / STAGING_DIR
        for attempt in range(5):
            try:
                staging.mkdir(parents=True, exist_ok=True)
                fd, tmp = mkstemp(staging, "put-")
                break
            except OSError as exc:
                if attempt == 4:
                    raise StoreError(
                        f"object store {self.root}: cannot write {key!r}: {exc}"
                    ) from exc
        try:
            with os.fdopen(fd, "wb") as fh:
                write(fh)
                fh.flush()
                if self.fsync == "always":
                    os.fsync(fh.fileno())
            for attempt in range(5):
                try:
                    target.parent.mkdir(parents=True, exist_ok=True)
                    if target.is_dir():
                        raise IsADirectoryError(target)
                    os.replace(tmp, target)
                    break
                except IsADirectoryError:
                    raise StoreError(
                        f"cannot put object {key!r}: other objects live under {key + '/'!r}"
                    ) from None
                except (FileNotFoundError, NotADirectoryError, FileExistsError) as exc:
                    # a concurrent delete pruned the folder, or a parent part is an object
                    if attempt == 4 or self._parent_is_object(key):
                        raise StoreError(
                            f"cannot put object {key!r}: a parent part is an object ({exc})"
                        ) from None
        except BaseException:
            discard(tmp)
            raise
        folders = (target.parent, *(folder.parent for folder in created))
        if self.fsync == "behind":
            self._sync_behind((target, *folders))
        elif self.fsync == "always":
            self._sync_behind(folders)

    def _sync_behind(self, paths: tuple[Path, ...]) -> None:
        """fsync `paths` in order on the background thread (`flush`/`close` wait for it); wait
        first while `fsync_backlog` syncs are pending, so a disk slower than the writers
        holds the writers back instead of a queue growing without bound."""
        with self._sync_room:
            if self._syncer is None:
                self._syncer = ThreadPoolExecutor(1, thread_name_prefix="objects-fsync")
            self._sync_room.wait_for(lambda: len(self._syncing) < self.fsync_backlog)
            future = self._syncer.submit(_fsync_all, paths)
            self._syncing.add(future)
        future.add_done_callback(self._synced)

    def _synced(self, future: Future[None]) -> None:
        with self._sync_room:
            self._syncing.discard(future)
            self._sync_room.notify()

    def flush(self) -> None:
        """Wait until every fsync this process's puts started so far has finished."""
        with self._sync_lock:
            pending = list(self._syncing)
        wait(pending)

    async def close(self) -> None:
        await to_thread(self.flush)
        with self._sync_lock:
            syncer, self._syncer = self._syncer, None
        if syncer is not None:  # a put since the flush may have queued one more
            await to_thread(syncer.shutdown)

    def _parent_is_object(self, key: str) -> bool:
        parts = key.split("/")[:-1]
        path = self.root
        for part in parts:
            path = path / part
            if path.is_file():
                return True
        return False

    def _put(self, key: str, data: bytes) -> None:
        self._write(key, lambda fh: fh.write(data))

    def _put_file(self, key: str, source: Path) -> None:
        def copy(fh: Any) -> None:
            with open(source, "rb") as src:
                shutil.copyfileobj(src, fh, _CHUNK)

        self._write(key, copy)

    def _get(self, key: str) -> bytes:
        path = self._path(key)
        try:
            return path.read_bytes()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            raise KeyError(key) from None

    def _get_file(self, key: str, dest: Path) -> None:
        path = self._path(key)
        try:
            src = open(path, "rb")  # noqa: SIM115 (closed by the with below)
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            raise KeyError(key) from None
        with src, replacing(dest) as tmp, open(tmp, "wb") as out:
            shutil.copyfileobj(src, out, _CHUNK)

    def _delete(self, key: str) -> None:
        path = self._path(key)
        try:
            path.unlink()
        except (FileNotFoundError, NotADirectoryError):
            return
        except IsADirectoryError:
            raise StoreError(
                f"cannot delete {key!r}: it is a folder of objects, not an object"
            ) from None
        parent = path.parent
        while parent != self.root:
            try:
                parent.rmdir()
            except OSError:
                break
            parent = parent.parent

    def _list(self, prefix: str) -> list[str]:
        base = prefix.rpartition("/")[0]
        start = self.root.joinpath(*base.split("/")) if base else self.root
        found: list[str] = []
        if not start.is_dir():
            return found
        for dirpath, dirnames, filenames in os.walk(start):
            rel = os.path.relpath(dirpath, self.root).replace(os.sep, "/")
            rel = "" if rel == "." else rel + "/"
            if not rel:
                dirnames[:] = [d for d in dirnames if d != STAGING_DIR]
            dirnames[:] = [
                d
                for d in dirnames
                if (rel + d + "/").startswith(prefix) or prefix.startswith(rel + d + "/")
            ]
            found.extend(rel + f for f in filenames if (rel + f).startswith(prefix))
        return sorted(found)

    async def put(self, key: str, data: bytes) -> None:
        check_object_key(key)
        await to_thread(self._put, key, object_bytes(key, data))

    async def get(self, key: str) -> bytes:
        check_object_key(key)
        return await to_thread(self._get, key)

    async def exists(self, key: str) -> bool:
        return await to_thread(self._path(key).is_file)

    async def delete(self, key: str) -> None:
        check_object_key(key)
        await to_thread(self._delete, key)

    async def list(self, prefix: str = "") -> list[str]:
        check_object_prefix(prefix)
        return await to_thread(self._list, prefix)

    async def put_file(self, key: str, path: Path) -> None:
        check_object_key(key)
        await to_thread(self._put_file, key, Path(path))

    async def get_file(self, key: str, path: Path) -> None:
        check_object_key(key)
        await to_thread(self._get_file, key, Path(path))
