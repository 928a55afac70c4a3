"""SQL for the SQLite document store's paged queries and grouped counts over JSON fields.

A dotted field `task.name` becomes `json_extract(doc, '$.task.name')`. Each query shape (the
collection, the filtered fields, then the ordered or grouped ones) gets its own expression
index, `CREATE INDEX IF NOT EXISTS` the first time it is asked, so a page or a count walks the
index instead of decoding every document of the collection.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from agent_env.errors import StoreError

_FIELD_RE = r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*"

Statements = list[tuple[str, tuple]]


def field_sql(field: str) -> str:
    """The SQL expression of a dotted field; `StoreError` for anything but dotted names (they
    are spliced into the SQL, which an expression index needs)."""
    if not isinstance(field, str) or not re.fullmatch(_FIELD_RE, field) or len(field) > 200:
        raise StoreError(
            f"bad field name {field!r}: use dotted names of letters, digits and '_' (task.name)"
        )
    return f"json_extract(doc, '$.{field}')"


def _param(value: Any) -> Any:
    if isinstance(value, bool):
        return int(value)
    if value is None or isinstance(value, int | float | str):
        return value
    raise StoreError(f"a query compares fields with strings, numbers, booleans or None: {value!r}")


class QueryPlanner:
    """Builds the statements of a query and remembers which indexes this store has made."""

    def __init__(self) -> None:
        self._indexed: set[str] = set()
        #: The tallies this store knows of, by name (`known` loads those made elsewhere).
        self.tallies: dict[str, Tally] = {}
        self.tallies_loaded = False

    def _index(
        self, collection: str, fields: Sequence[str], *, with_key: bool
    ) -> tuple[str, Statements]:
        """The index name for this shape and its DDL (none when this store already made it).
        Queries name the index (`INDEXED BY`): without statistics SQLite's planner would
        rather walk the primary key in key order than use it."""
        columns = ["collection", *(field_sql(f) for f in fields)] + (["key"] if with_key else [])
        body = ", ".join(columns)
        name = "ix_" + hashlib.sha1(f"{collection}|{body}".encode()).hexdigest()[:16]
        if name in self._indexed:
            return name, []
        where = f"collection = '{collection}'"  # checked by check_collection: no quote in it
        return name, [
            (f"CREATE INDEX IF NOT EXISTS {name} ON documents ({body}) WHERE {where}", ())
        ]

    def mark_indexed(self, statements: Statements) -> None:
        for sql, _ in statements:
            if sql.startswith("CREATE INDEX IF NOT EXISTS "):
                self._indexed.add(sql.split()[5])

    @staticmethod
    def _filter(collection: str, where: Mapping[str, Any]) -> tuple[str, tuple]:
        clauses, params = [f"collection = '{collection}'"], []
        for field, value in where.items():
            if value is None:
                clauses.append(f"{field_sql(field)} IS NULL")
            else:
                clauses.append(f"{field_sql(field)} = ?")
                params.append(_param(value))
        return " AND ".join(clauses), tuple(params)

    def page(
        self,
        collection: str,
        where: Mapping[str, Any],
        order_by: str | None,
        descending: bool,
        limit: int,
        offset: int,
    ) -> Statements:
        """Index DDL (when new), the SELECT of the page's keys (the index alone is walked to
        the offset; the documents are read by key after), then the total's SELECT: a sum of
        a tally's rows when one covers the filter, else a count on the index."""
        ordered = [*where, *([order_by] if order_by else [])]
        name, ddl = self._index(collection, ordered, with_key=True) if ordered else ("", [])
        table = f"documents INDEXED BY {name}" if name else "documents"
        clause, params = self._filter(collection, where)
        direction = "DESC" if descending else "ASC"
        order = f"{field_sql(order_by)} {direction}, " if order_by else ""
        tally = self.covering(collection, where)
        total = (
            tally.rows(where, select="coalesce(sum(n), 0)")
            if tally is not None
            else (f"SELECT count(*) FROM {table} WHERE {clause}", params)
        )
        return [
            *ddl,
            (
                f"SELECT key FROM {table} WHERE {clause} "
                f"ORDER BY {order}key {direction} LIMIT ? OFFSET ?",
                (*params, limit, offset),
            ),
            total,
        ]

    @staticmethod
    def documents(collection: str, keys: Sequence[str]) -> tuple[str, tuple]:
        """The SELECT of the documents of `keys` (at most a page of them)."""
        marks = ", ".join("?" * len(keys))
        return (
            f"SELECT key, doc FROM documents WHERE collection = ? AND key IN ({marks})",
            (collection, *keys),
        )

    def known(self, shapes: Sequence[tuple[str, str, str]]) -> None:
        """Remember the tallies the store has (`(collection, scope, fields JSON)` rows)."""
        for collection, scope, fields in shapes:
            tally = Tally(collection, scope, json.loads(fields))
            self.tallies[tally.name] = tally

    def covering(self, collection: str, where: Mapping[str, Any]) -> Tally | None:
        for tally in self.tallies.values():
            if tally.covers(collection, where):
                return tally
        return None

    def counts(
        self, collection: str, fields: Sequence[str], where: Mapping[str, Any]
    ) -> Statements:
        """Index DDL (when new), then the grouped count's SELECT."""
        if not fields:
            raise StoreError("count_by needs at least one field")
        name, ddl = self._index(collection, [*where, *fields], with_key=False)
        clause, params = self._filter(collection, where)
        grouped = ", ".join(field_sql(f) for f in fields)
        return [
            *ddl,
            (
                f"SELECT {grouped}, count(*) FROM documents INDEXED BY {name} WHERE {clause} "
                f"GROUP BY {grouped} ORDER BY {grouped}",
                params,
            ),
        ]


#: Grouped counts kept up to date by triggers: one row per (tally, scope value, group values).
TALLY_SCHEMA = [
    "CREATE TABLE IF NOT EXISTS tallies (name TEXT NOT NULL, scope TEXT NOT NULL, "
    "grp TEXT NOT NULL, n INTEGER NOT NULL, PRIMARY KEY (name, scope, grp)) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS tally_shapes (name TEXT PRIMARY KEY, collection TEXT NOT NULL, "
    "scope TEXT NOT NULL, fields TEXT NOT NULL) WITHOUT ROWID",
]


class Tally:
    """Counts of a collection's documents by the values of `fields`, per value of the `scope`
    field, kept by insert/update/delete triggers on the documents table: every writer (any
    process) maintains them, so a count costs the rows of one scope value, not its documents.
    What `count_by(collection, fields, where={scope: value})` reads, and a query's total when
    its filter is the scope plus some of `fields`."""

    def __init__(self, collection: str, scope: str, fields: Sequence[str]):
        field_sql(scope)
        for field in fields:
            field_sql(field)
        self.collection, self.scope, self.fields = collection, scope, list(fields)
        body = f"{collection}|{scope}|{','.join(self.fields)}"
        self.name = "tl_" + hashlib.sha1(body.encode()).hexdigest()[:16]

    def _scope(self, row: str) -> str:
        return f"json_quote(json_extract({row}.doc, '$.{self.scope}'))"

    def _grp(self, row: str) -> str:
        return (
            "json_array("
            + ", ".join(f"json_extract({row}.doc, '$.{f}')" for f in self.fields)
            + ")"
        )

    def _add(self, row: str) -> str:
        return (
            f"INSERT INTO tallies (name, scope, grp, n) VALUES ('{self.name}', {self._scope(row)}, "
            f"{self._grp(row)}, 1) ON CONFLICT (name, scope, grp) DO UPDATE SET n = n + 1;"
        )

    def _remove(self, row: str) -> str:
        match = f"name = '{self.name}' AND scope = {self._scope(row)} AND grp = {self._grp(row)}"
        return (
            f"UPDATE tallies SET n = n - 1 WHERE {match}; "
            f"DELETE FROM tallies WHERE {match} AND n <= 0;"
        )

    def create(self) -> Statements:
        """Triggers, the backfill from the documents there are and the shape's row; run in one
        write transaction, so no write is missed or counted twice."""
        when = f"collection = '{self.collection}'"  # checked by check_collection
        return [
            (
                f"CREATE TRIGGER IF NOT EXISTS {self.name}_i AFTER INSERT ON documents "
                f"WHEN new.{when} BEGIN {self._add('new')} END",
                (),
            ),
            (
                f"CREATE TRIGGER IF NOT EXISTS {self.name}_d AFTER DELETE ON documents "
                f"WHEN old.{when} BEGIN {self._remove('old')} END",
                (),
            ),
            (
                f"CREATE TRIGGER IF NOT EXISTS {self.name}_u AFTER UPDATE OF doc ON documents "
                f"WHEN new.{when} BEGIN {self._remove('old')} {self._add('new')} END",
                (),
            ),
            (
                f"INSERT INTO tallies (name, scope, grp, n) SELECT '{self.name}', "
                f"{self._scope('d')}, {self._grp('d')}, count(*) FROM documents AS d "
                f"WHERE d.{when} GROUP BY 2, 3",
                (),
            ),
            (
                "INSERT INTO tally_shapes (name, collection, scope, fields) VALUES (?, ?, ?, ?)",
                (self.name, self.collection, self.scope, json.dumps(self.fields)),
            ),
        ]

    def covers(self, collection: str, where: Mapping[str, Any]) -> bool:
        """Whether a query's total over `where` can be summed from this tally."""
        return (
            collection == self.collection
            and self.scope in where
            and all(f == self.scope or f in self.fields for f in where)
        )

    def rows(self, where: Mapping[str, Any], select: str = "grp, n") -> tuple[str, tuple]:
        """The `(grp, n)` rows (or `select`) of the scope value `where` names, narrowed by its
        other fields."""
        clauses, params = (
            [f"name = '{self.name}'", "scope = json_quote(?)"],
            [_param(where[self.scope])],
        )
        for field, value in where.items():
            if field == self.scope:
                continue
            item = f"json_extract(grp, '$[{self.fields.index(field)}]')"
            if value is None:
                clauses.append(f"{item} IS NULL")
            else:
                clauses.append(f"{item} = ?")
                params.append(_param(value))
        return f"SELECT {select} FROM tallies WHERE {' AND '.join(clauses)}", tuple(params)


def tally_groups(rows: Sequence[tuple[str, int]]) -> list[tuple[tuple[Any, ...], int]]:
    """`count_by`'s answer from tally rows: JSON objects and lists as compact JSON text."""
    out = []
    for grp, n in rows:
        values = tuple(
            json.dumps(v, separators=(",", ":"), ensure_ascii=False)
            if isinstance(v, dict | list)
            else v
            for v in json.loads(grp)
        )
        out.append((values, int(n)))
    return out
