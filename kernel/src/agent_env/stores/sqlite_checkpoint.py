"""Checkpoints of the document store's write-ahead log, run behind the writes.

SQLite checkpoints the log itself (`wal_autocheckpoint`, 1000 pages) inside whichever commit
crosses the mark: that commit copies the log into the database and fsyncs both, 10-25 ms,
and the store commits on the event loop (`SqliteDocumentStore._try_fast`), so every session
of the process waited for it (one OpenEnv episode in twenty at one session). The store turns
that off and `Checkpointer` runs a PASSIVE checkpoint (it never blocks a writer or a reader)
on one background thread after every `EVERY` commits. Durability does not change: a commit is
as durable as `synchronous` says before any checkpoint copies it.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import weakref
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

#: Commits between two checkpoints: a document write is a few pages, so about SQLite's own
#: 1000-page mark.
EVERY = 256

_LIVE: weakref.WeakSet[Checkpointer] = weakref.WeakSet()


def _fresh_in_child() -> None:
    for checkpointer in list(_LIVE):
        checkpointer._fresh()


os.register_at_fork(after_in_child=_fresh_in_child)


class Checkpointer:
    """Counts the commits of one store in this process and checkpoints behind them."""

    def __init__(self, path: Path, busy_timeout: float):
        self.path = path
        self.busy_timeout = busy_timeout
        self._fresh()
        _LIVE.add(self)

    def _fresh(self) -> None:
        """Nothing running: at start, and in a forked child (the thread did not come along)."""
        self._lock = threading.Lock()
        self._commits = 0
        self._thread: ThreadPoolExecutor | None = None
        self._running: Future[None] | None = None

    def committed(self) -> None:
        """Count one commit; every `EVERY`th starts a checkpoint unless one still runs."""
        self._commits += 1
        if self._commits % EVERY:
            return
        with self._lock:
            if self._running is not None and not self._running.done():
                return
            if self._thread is None:
                self._thread = ThreadPoolExecutor(1, thread_name_prefix="sqlite-checkpoint")
            self._running = self._thread.submit(self.checkpoint)

    def checkpoint(self) -> None:
        """A PASSIVE checkpoint on a connection of its own; a failure (the database busy
        with another checkpoint, or gone) leaves it to the next one."""
        try:
            conn = sqlite3.connect(self.path, timeout=self.busy_timeout, isolation_level=None)
        except sqlite3.Error:
            return
        try:
            conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
        except sqlite3.Error:
            pass
        finally:
            conn.close()

    def close(self) -> None:
        """Wait for a running checkpoint and end the thread."""
        with self._lock:
            thread, self._thread = self._thread, None
        if thread is not None:
            thread.shutdown(wait=True)
