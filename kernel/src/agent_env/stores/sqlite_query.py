"""SQL for the SQLite document store's paged queries and grouped counts over JSON fields.

A dotted field `task.name` becomes `json_extract(doc, '$.task.name')`. Each query shape (the
collection, the filtered fields, then the ordered or grouped ones) gets its own expression
index, `CREATE INDEX IF NOT EXISTS` the first time it is asked, so a page or a count walks the
index instead of decoding every document of the collection.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from typing import Any

from agent_env.errors import StoreError

_FIELD_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")

Statements = list[tuple[str, tuple]]


def field_sql(field: str) -> str:
    """The SQL expression of a dotted field; `StoreError` for anything but dotted names (they
    are spliced into the SQL, which an expression index needs)."""
    if not isinstance(field, str) or not _FIELD_RE.fullmatch(field) or len(field) > 200:
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
        """Index DDL (when new), the page's SELECT, then the total's SELECT."""
        ordered = [*where, *([order_by] if order_by else [])]
        name, ddl = self._index(collection, ordered, with_key=True) if ordered else ("", [])
        table = f"documents INDEXED BY {name}" if name else "documents"
        clause, params = self._filter(collection, where)
        direction = "DESC" if descending else "ASC"
        order = f"{field_sql(order_by)} {direction}, " if order_by else ""
        return [
            *ddl,
            (
                f"SELECT key, doc FROM {table} WHERE {clause} "
                f"ORDER BY {order}key {direction} LIMIT ? OFFSET ?",
                (*params, limit, offset),
            ),
            (f"SELECT count(*) FROM {table} WHERE {clause}", params),
        ]

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
