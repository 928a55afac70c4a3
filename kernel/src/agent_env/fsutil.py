"""Atomic file writes: a temp file beside the target, fsynced, then renamed over it, so a
reader (in any process) sees the old content or the new one, never a torn file. Folders are
staged beside their target the same way (`replacing_dir`)."""

from __future__ import annotations

import errno
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any


def fsync_path(path: Path | str) -> None:
    """fsync the file or folder at `path` (for a folder: make the renames inside it durable);
    best effort: a path gone since (replaced, deleted) or a folder that cannot be opened is
    skipped."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def discard(tmp: str | Path) -> None:
    """Remove a temp file that never made it into place (already gone is fine)."""
    try:
        os.unlink(tmp)
    except OSError:
        pass


#: Flags of a new temp file: as `tempfile.mkstemp` opens it (exclusive, no symlink followed).
_TEMP_FLAGS = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | os.O_CLOEXEC
_TEMP_TRIES = 100


def _temp_name(folder: Path | str, prefix: str, suffix: str) -> str:
    return os.path.abspath(os.path.join(folder, f"{prefix}{os.urandom(6).hex()}{suffix}"))


def mkstemp(folder: Path | str, prefix: str = "tmp", suffix: str = "") -> tuple[int, str]:
    """A new empty file in `folder` readable by its owner only: (open fd, absolute path), as
    `tempfile.mkstemp(suffix, prefix, folder)` gives. Not `tempfile` itself: it imports
    `random` (with `bisect`, `math`, `_sha512`), about a millisecond of every command that
    writes a file (leases, journals, objects)."""
    for _ in range(_TEMP_TRIES):
        path = _temp_name(folder, prefix, suffix)
        try:
            return os.open(path, _TEMP_FLAGS, 0o600), path
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no unused temporary file name", str(folder))


def mkdtemp(folder: Path | str, prefix: str = "tmp") -> str:
    """A new empty folder in `folder` (0700): its absolute path (`tempfile.mkdtemp`'s)."""
    for _ in range(_TEMP_TRIES):
        path = _temp_name(folder, prefix, "")
        try:
            os.mkdir(path, 0o700)
            return path
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no unused temporary folder name", str(folder))


def _temp_beside(dest: Path, prefix: str | None, suffix: str) -> tuple[int, str]:
    """A new empty temp file in `dest`'s folder (created if missing): (open fd, path).

    The folder is made only when the first try finds it missing: it almost always exists,
    and a `mkdir` per write is a syscall every lease and journal file would pay."""
    name = f".{dest.name}." if prefix is None else prefix
    try:
        return mkstemp(dest.parent, name, suffix)
    except FileNotFoundError:
        dest.parent.mkdir(parents=True, exist_ok=True)
        return mkstemp(dest.parent, name, suffix)


@contextmanager
def replacing(dest: Path | str, *, prefix: str | None = None, suffix: str = "") -> Iterator[str]:
    """Yield the path of an empty temp file beside `dest`; fill it in the block. On a normal
    exit it is renamed over `dest`, on an exception it is removed and `dest` is untouched."""
    dest = Path(dest)
    fd, tmp = _temp_beside(dest, prefix, suffix)
    os.close(fd)
    try:
        yield tmp
        os.replace(tmp, dest)
    except BaseException:
        discard(tmp)
        raise


def atomic_write(
    path: Path | str,
    data: bytes | str,
    *,
    mode: int | None = None,
    fsync: bool = True,
    prefix: str | None = None,
) -> None:
    """Write `data` (text is UTF-8) to `path` atomically; `mode` sets the permissions before
    any byte is written (e.g. 0o600 for secrets), `fsync=False` trades durability for speed.

    The bytes go through the temp file's own descriptor: reopening it with `"wb"` would
    truncate it, ext4 (`auto_da_alloc`) then starts writing it back at close, and a later
    unlink of the file waits for that (it made lease files ~10x slower to remove)."""
    path = Path(path)
    body = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = _temp_beside(path, prefix, "")
    try:
        with os.fdopen(fd, "wb") as fh:
            if mode is not None:
                os.fchmod(fh.fileno(), mode)
            fh.write(body)
            if fsync:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        discard(tmp)
        raise


@contextmanager
def replacing_dir(dest: Path | str) -> Iterator[Path]:
    """Yield a path in a fresh staging folder beside `dest`; create the new folder (or file)
    there in the block. On a normal exit it is renamed onto `dest` (an old `dest` is moved
    aside first and removed after), so `dest` is never half written; on an exception, or
    if nothing was created, `dest` is untouched. The staging folder is always removed."""
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(mkdtemp(dest.parent, f".{dest.name}."))
    staged = staging / "new"
    try:
        yield staged
        if not (staged.exists() or staged.is_symlink()):
            raise FileNotFoundError(f"replacing_dir: nothing was staged for {dest}")
        old = staging / "old"
        had_old = dest.exists() or dest.is_symlink()
        if had_old:
            os.rename(dest, old)
        try:
            os.rename(staged, dest)
        except BaseException:
            if had_old:
                os.rename(old, dest)
            raise
        fsync_path(dest.parent)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def open_private(path: Path | str, mode: str = "wb") -> IO[Any]:
    """Open `path` for writing readable by its owner only (0600, whatever the umask): process
    logs and anything else that may hold a secret the redactor cannot reach."""
    flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if "a" in mode else os.O_TRUNC)
    fd = os.open(path, flags, 0o600)
    os.fchmod(fd, 0o600)  # an existing file keeps its old mode otherwise
    return os.fdopen(fd, mode)
