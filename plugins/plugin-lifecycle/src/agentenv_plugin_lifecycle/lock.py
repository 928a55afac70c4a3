"""One `plugin add`/`remove` at a time per environment: an exclusive `flock` on a file in the
environment's prefix, held until the change is verified (or rolled back)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from agent_env.errors import PluginError

LOCK_NAME = ".agentenv-plugins.lock"


@contextlib.contextmanager
def environment_lock(
    prefix: Path, *, timeout: float = 600.0, waiting: Callable[[str], None] | None = None
) -> Iterator[Path]:
    """Hold the environment's plugin lock; wait up to `timeout` seconds for another holder
    (telling `waiting` who it is, once) and fail naming it when the wait runs out."""
    path = Path(prefix) / LOCK_NAME
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = time.monotonic() + timeout
        told = False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                holder = os.pread(fd, 200, 0).decode(errors="replace").strip() or "another process"
                if time.monotonic() >= deadline:
                    raise PluginError(
                        f"another plugin add/remove ({holder}) holds {path}; gave up after "
                        f"{timeout:g}s (retry when it has finished)"
                    ) from None
                if waiting is not None and not told:
                    told = True
                    waiting(f"waiting for another plugin add/remove ({holder}) to finish")
                time.sleep(0.1)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()}".encode(), 0)
        try:
            yield path
        finally:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
