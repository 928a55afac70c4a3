"""Checkpoints of the document store's write-ahead log, run behind the writes.

SQLite checkpoints the log itself (`wal_autocheckpoint`, 1000 pages) inside whichever commit
crosses the mark: that commit copies the log into the database and fsyncs both, 10-25 ms,
and the store commits on the event loop (`SqliteDocumentStore._try_fast`), so every session
of the process waited for it (one OpenEnv episode in twenty at one session). The store turns
that off and `Checkpointer` runs a PASSIVE checkpoint (it never blocks a writer or a reader)
on a thread of its own after every `EVERY` commits (at most one at a time; the thread ends
with the checkpoint, so a long-lived process keeps no thread for it between checkpoints). Durability does not change: a commit is
as durable as `synchronous` says before any checkpoint copies it.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Callable

#: Commits between two checkpoints: a document write is a few pages, so about SQLite's own
#: 1000-page mark.
EVERY = 256

_LIVE: weakref.WeakSet[Checkpointer] = weakref.WeakSet()


def _fresh_in_child() -> None:
    for checkpointer in list(_LIVE):
        checkpointer._fresh()


os.register_at_fork(after_in_child=_fresh_in_child)


class Checkpointer:
    """Counts the commits of one store in this process and runs its `checkpoint` behind them
    (the store's own connection: a connection opened and closed for it would leave its file
    descriptor open, since SQLite defers closing a file other connections of the process
    hold locks on)."""

    def __init__(self, checkpoint: Callable[[], None]):
        self.checkpoint = checkpoint
        self._fresh()
        _LIVE.add(self)

    def _fresh(self) -> None:
        """Nothing running: at start, and in a forked child (the thread did not come along)."""
        self._lock = threading.Lock()
        self._commits = 0
        self._running: threading.Thread | None = None

    def committed(self) -> None:
        """Count one commit; every `EVERY`th starts a checkpoint unless one still runs."""
        self._commits += 1
        if self._commits % EVERY:
            return
        with self._lock:
            if self._running is not None and self._running.is_alive():
                return
            self._running = threading.Thread(
                target=self.checkpoint, name="sqlite-checkpoint", daemon=True
            )
            self._running.start()

    def close(self) -> None:
        """Wait for a running checkpoint."""
        with self._lock:
            running, self._running = self._running, None
        if running is not None:
            running.join()
