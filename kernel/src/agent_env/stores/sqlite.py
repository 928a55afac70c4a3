"""The default document store: one SQLite file in WAL mode, shared by every agent-env process.

Each statement runs in autocommit mode, so `create` is a single `INSERT ... ON CONFLICT DO
NOTHING` and SQLite's file lock makes it atomic across processes; `busy_timeout` absorbs
contention. One connection per store instance, guarded by a lock, reopened after a fork.

Fast path: a statement first runs right in the event loop on a second connection that never
waits (busy timeout 0, lock taken only if free); only when that would block (another writer,
another thread) does it go to a worker thread. A WAL commit without contention takes tens of
microseconds, less than the thread hop it saves, and the journal writes one per step.
Reads go the same way: `get`, and `list` when it has at most `FAST_LIST_ROWS` rows.
The log's checkpoints run behind the writes, on a thread of their own (`sqlite_checkpoint`).
"""

from __future__ import annotations

import builtins
import json
import os
import sqlite3
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agent_env.aio import to_thread
from agent_env.errors import ConfigError, StoreError
from agent_env.stores.base import DocumentStore, Page, _sort_key
from agent_env.stores.names import check_collection, check_document_key, check_document_prefix
from agent_env.stores.sqlite_checkpoint import Checkpointer
from agent_env.stores.sqlite_query import TALLY_SCHEMA, QueryPlanner, Tally, tally_groups
from agent_env.stores.support import encode_document, home_path, reject_unknown_settings

_SCHEMA = """
CREATE TABLE IF NOT EXISTS documents (
    collection TEXT NOT NULL,
    key TEXT NOT NULL,
    doc TEXT NOT NULL,
    PRIMARY KEY (collection, key)
) WITHOUT ROWID
"""
_SYNC_MODES = ("OFF", "NORMAL", "FULL", "EXTRA")
_LIST = (
    "SELECT key, doc FROM documents WHERE collection=? AND key>=? "
    "AND substr(key, 1, ?)=? ORDER BY key"
)
#: A list this long or shorter is read in the event loop (see `list`): an entity's versions
#: or a run's few documents take tens of microseconds, less than a thread hop.
FAST_LIST_ROWS = 64


class SqliteDocumentStore(DocumentStore):
    """`[stores] document = "sqlite"`; settings: `path` (default `<home>/documents.sqlite3`),
    `busy_timeout` seconds (default 30), `synchronous` (default NORMAL: durable across process
    crashes, may lose the last commits on power loss)."""

    type = "sqlite"

    def __init__(self, settings: Mapping[str, Any] | None = None, *, home: Path | None = None):
        super().__init__(settings, home=home)
        reject_unknown_settings("sqlite", self.settings, ("path", "busy_timeout", "synchronous"))
        self.path = home_path(self.settings, "path", home, "documents.sqlite3")
        self.busy_timeout = float(self.settings.get("busy_timeout", 30))
        self.synchronous = str(self.settings.get("synchronous", "NORMAL")).upper()
        if self.synchronous not in _SYNC_MODES:
            from agent_env.suggest import did_you_mean

            raise ConfigError(
                f"[stores.sqlite] synchronous = {self.synchronous!r}: not a mode"
                f"{did_you_mean(self.synchronous, _SYNC_MODES)}; use one of "
                + ", ".join(_SYNC_MODES)
            )
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._pid = 0
        self._closed = False
        self._fast_lock = threading.Lock()
        self._fast: sqlite3.Connection | None = None
        self._fast_pid = 0
        self._planner = QueryPlanner()
        self._checkpointer = Checkpointer(self._checkpoint)

    def _connection(self) -> sqlite3.Connection:
        if self._closed:
            raise StoreError(f"the sqlite document store at {self.path} is closed")
        if self._conn is None or self._pid != os.getpid():
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._conn, self._pid = self._open(), os.getpid()
        return self._conn

    def _open(self) -> sqlite3.Connection:
        """Connect and set up; switching to WAL and creating the table can report "locked"
        without waiting while another process does the same, so those steps are retried."""
        deadline = time.monotonic() + self.busy_timeout
        delay = 0.005
        while True:
            conn = None
            try:
                conn = sqlite3.connect(
                    self.path,
                    timeout=self.busy_timeout,
                    isolation_level=None,
                    check_same_thread=False,
                )
                if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                    conn.execute("PRAGMA journal_mode=WAL")
                self._set_up(conn)
                conn.execute(_SCHEMA)
                for ddl in TALLY_SCHEMA:
                    conn.execute(ddl)
                return conn
            except sqlite3.OperationalError as exc:
                if conn is not None:
                    conn.close()
                busy = "locked" in str(exc) or "busy" in str(exc)
                if not busy or time.monotonic() > deadline:
                    raise StoreError(f"cannot open the document store {self.path}: {exc}") from exc
                time.sleep(delay)
                delay = min(delay * 2, 0.1)
            except sqlite3.Error as exc:
                if conn is not None:
                    conn.close()
                raise StoreError(f"cannot open the document store {self.path}: {exc}") from exc

    def _checkpoint(self) -> None:
        """A PASSIVE checkpoint (it never blocks a writer or a reader) on the store's
        connection; a failure (another checkpoint running, the store closed) leaves it to the
        next one."""
        with self._lock:
            try:
                self._connection().execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
            except (sqlite3.Error, StoreError):
                pass

    def _run(self, sql: str, params: tuple = ()) -> sqlite3.Cursor:
        with self._lock:
            try:
                return self._connection().execute(sql, params)
            except sqlite3.Error as exc:
                raise StoreError(f"document store {self.path}: {exc}") from exc

    def _try_fast(self, sql: str, params: tuple, fetch: bool | int = False) -> tuple[Any] | None:
        """Run `sql` without waiting: `(rowcount,)`, with `fetch=True` `(first row,)`, with
        `fetch=N` `(up to N rows,)`; None when that would wait (then use a thread)."""
        if not self._fast_lock.acquire(blocking=False):
            return None
        try:
            if self._closed:
                raise StoreError(f"the sqlite document store at {self.path} is closed")
            try:
                if self._fast is None or self._fast_pid != os.getpid():
                    self._connection()  # the slow connection sets up the file (WAL, schema)
                    self._fast = self._open_fast()
                    self._fast_pid = os.getpid()
                cursor = self._fast.execute(sql, params)
                if fetch is True:
                    return (cursor.fetchone(),)
                return (cursor.fetchmany(fetch) if fetch else cursor.rowcount,)
            except sqlite3.OperationalError as exc:
                if "locked" in str(exc) or "busy" in str(exc):
                    return None
                raise StoreError(f"document store {self.path}: {exc}") from exc
            except sqlite3.Error as exc:
                raise StoreError(f"document store {self.path}: {exc}") from exc
        finally:
            self._fast_lock.release()

    def _open_fast(self) -> sqlite3.Connection:
        """A connection that never waits; closed again when even its setup would wait (a
        PRAGMA can meet a lock held by another writer: seen under load on CI)."""
        conn = sqlite3.connect(self.path, timeout=0, isolation_level=None, check_same_thread=False)
        try:
            self._set_up(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    def _set_up(self, conn: sqlite3.Connection) -> None:
        """A connection's write settings: `synchronous`, and no checkpoint inside a commit
        (the `Checkpointer` runs them behind)."""
        conn.execute(f"PRAGMA synchronous={self.synchronous}")
        conn.execute("PRAGMA wal_autocheckpoint=0")

    async def _execute(self, sql: str, params: tuple) -> int:
        """The statement's rowcount (a write: counted for the checkpoints)."""
        done = self._try_fast(sql, params)
        if done is None:
            done = ((await to_thread(self._run, sql, params)).rowcount,)
        self._checkpointer.committed()
        return done[0]

    def _get(self, collection: str, key: str) -> dict[str, Any] | None:
        with self._lock:
            try:
                row = (
                    self._connection()
                    .execute(
                        "SELECT doc FROM documents WHERE collection=? AND key=?", (collection, key)
                    )
                    .fetchone()
                )
            except sqlite3.Error as exc:
                raise StoreError(f"document store {self.path}: {exc}") from exc
        return None if row is None else json.loads(row[0])

    def _list(self, collection: str, prefix: str) -> list[tuple[str, str]]:
        with self._lock:
            try:
                return (
                    self._connection()
                    .execute(_LIST, (collection, prefix, len(prefix), prefix))
                    .fetchall()
                )
            except sqlite3.Error as exc:
                raise StoreError(f"document store {self.path}: {exc}") from exc

    def revision(self) -> object | None:
        """The database file's and its write-ahead log's identity, size and modification time:
        every commit (WAL mode, any connection or process) writes the log. Two commits within
        one timestamp tick that leave the log the same size look alike; the next write tells."""
        marks: list[tuple[int, int, int] | None] = []
        for suffix in ("", "-wal"):
            try:
                st = os.stat(f"{self.path}{suffix}")
            except OSError:
                marks.append(None)
                continue
            marks.append((st.st_ino, st.st_size, st.st_mtime_ns))
        return tuple(marks)

    async def get(self, collection: str, key: str) -> dict[str, Any] | None:
        check_collection(collection)
        check_document_key(key)
        done = self._try_fast(
            "SELECT doc FROM documents WHERE collection=? AND key=?", (collection, key), True
        )
        if done is None:
            return await to_thread(self._get, collection, key)
        return None if done[0] is None else json.loads(done[0][0])

    async def put(self, collection: str, key: str, doc: Mapping[str, Any]) -> None:
        check_collection(collection)
        check_document_key(key)
        text = encode_document(doc)
        await self._execute(
            "INSERT INTO documents (collection, key, doc) VALUES (?, ?, ?) "
            "ON CONFLICT (collection, key) DO UPDATE SET doc=excluded.doc",
            (collection, key, text),
        )

    async def create(self, collection: str, key: str, doc: Mapping[str, Any]) -> bool:
        check_collection(collection)
        check_document_key(key)
        text = encode_document(doc)
        rowcount = await self._execute(
            "INSERT INTO documents (collection, key, doc) VALUES (?, ?, ?) "
            "ON CONFLICT (collection, key) DO NOTHING",
            (collection, key, text),
        )
        return rowcount == 1

    async def delete(self, collection: str, key: str) -> None:
        check_collection(collection)
        check_document_key(key)
        await to_thread(
            self._run, "DELETE FROM documents WHERE collection=? AND key=?", (collection, key)
        )

    async def list(self, collection: str, prefix: str = "") -> list[tuple[str, dict[str, Any]]]:
        """A short list (up to `FAST_LIST_ROWS` rows, such as an entity's versions) is read
        right in the event loop when that does not wait; a longer one on a thread."""
        check_collection(collection)
        check_document_prefix(prefix)
        params = (collection, prefix, len(prefix), prefix)
        done = self._try_fast(f"{_LIST} LIMIT {FAST_LIST_ROWS + 1}", params, FAST_LIST_ROWS + 1)
        if done is not None and len(done[0]) <= FAST_LIST_ROWS:
            rows = done[0]
        else:
            rows = await to_thread(self._list, collection, prefix)
        return [(k, json.loads(d)) for k, d in rows]

    def _select(
        self, statements: builtins.list[tuple[str, tuple]]
    ) -> builtins.list[builtins.list[tuple]]:
        """Run `statements` (index DDL first, then SELECTs) on the store's connection; the rows
        of each."""
        with self._lock:
            try:
                conn = self._connection()
                self._load_tallies(conn)
                return [conn.execute(sql, params).fetchall() for sql, params in statements]
            except sqlite3.Error as exc:
                raise StoreError(f"document store {self.path}: {exc}") from exc

    def _load_tallies(self, conn: sqlite3.Connection) -> None:
        if not self._planner.tallies_loaded:
            shapes = conn.execute("SELECT collection, scope, fields FROM tally_shapes").fetchall()
            self._planner.known(shapes)
            self._planner.tallies_loaded = True

    def _page(self, args: tuple) -> tuple[builtins.list, int]:
        """The page's (key, doc text) rows in order and the total; `args` as `page` takes."""
        collection = args[0]
        with self._lock:
            try:
                conn = self._connection()
                self._load_tallies(conn)
                plan = self._planner.page(*args)
                results = [conn.execute(sql, params).fetchall() for sql, params in plan]
                self._planner.mark_indexed(plan)
                keys = [k for (k,) in results[-2]]
                docs = dict(conn.execute(*self._planner.documents(collection, keys)).fetchall())
            except sqlite3.Error as exc:
                raise StoreError(f"document store {self.path}: {exc}") from exc
        return [(k, docs[k]) for k in keys if k in docs], int(results[-1][0][0])

    async def query(
        self,
        collection: str,
        *,
        where: Mapping[str, Any] | None = None,
        order_by: str | None = None,
        descending: bool = False,
        limit: int = 50,
        offset: int = 0,
    ) -> Page:
        """Filtered, ordered and paged in SQLite on an expression index made for the query's
        shape the first time it is asked (so a page costs the page, not the collection); the
        total comes from a tally when one covers the filter (see `count_by`)."""
        check_collection(collection)
        limit, offset = max(int(limit), 0), max(int(offset), 0)
        args = (collection, dict(where or {}), order_by, descending, limit, offset)
        self._planner.page(*args)  # a bad field name fails here, before the thread hop
        rows, total = await to_thread(self._page, args)
        items = [(k, json.loads(d)) for k, d in rows]
        return Page(items=items, total=total, limit=limit, offset=offset)

    async def count_by(
        self,
        collection: str,
        fields: Sequence[str],
        *,
        where: Mapping[str, Any] | None = None,
    ) -> builtins.list[tuple[tuple[Any, ...], int]]:
        """Grouped counts computed in SQLite on an index covering `where` and `fields`. With a
        filter on one field (a run's records by `run_id`) the counts come from a tally the
        store keeps on every write (made, with its triggers, the first time the shape is
        asked), so they cost the groups, not the documents."""
        check_collection(collection)
        where = dict(where or {})
        if len(where) == 1 and fields:
            tally = Tally(collection, next(iter(where)), list(fields))
            rows = await to_thread(self._tally_rows, tally, where)
            return sorted(tally_groups(rows), key=lambda kv: tuple(_sort_key(v) for v in kv[0]))
        plan = self._planner.counts(collection, list(fields), where)
        rows = (await to_thread(self._select, plan))[-1]
        self._planner.mark_indexed(plan)
        return [(tuple(row[:-1]), int(row[-1])) for row in rows]

    def _tally_rows(self, tally: Tally, where: Mapping[str, Any]) -> builtins.list[tuple[str, int]]:
        """The tally's rows for `where`, making the tally first when this store has none."""
        with self._lock:
            try:
                conn = self._connection()
                self._load_tallies(conn)
                if tally.name not in self._planner.tallies:
                    self._make_tally(conn, tally)
                return conn.execute(*tally.rows(where)).fetchall()
            except sqlite3.Error as exc:
                raise StoreError(f"document store {self.path}: {exc}") from exc

    def _make_tally(self, conn: sqlite3.Connection, tally: Tally) -> None:
        conn.execute("BEGIN IMMEDIATE")
        try:
            made = conn.execute(
                "SELECT 1 FROM tally_shapes WHERE name = ?", (tally.name,)
            ).fetchone()
            if made is None:  # another process may have made it meanwhile
                for sql, params in tally.create():
                    conn.execute(sql, params)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        self._planner.tallies[tally.name] = tally

    async def close(self) -> None:
        await to_thread(self._checkpointer.close)
        with self._lock, self._fast_lock:
            self._closed = True
            conn, self._conn = self._conn, None
            fast, self._fast = self._fast, None
        if conn is not None and self._pid == os.getpid():
            conn.close()
        if fast is not None and self._fast_pid == os.getpid():
            fast.close()
