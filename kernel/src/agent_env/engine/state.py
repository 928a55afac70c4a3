"""The task instance's state: a JSON tree changed only by ops, so it can be journaled,
rolled back and rebuilt by replaying the journal."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any


class StateError(ValueError):
    """An op cannot apply (a path runs through a value that is not an object)."""


def json_copy(value: Any) -> Any:
    """A deep copy of a JSON value; TypeError/ValueError for anything JSON cannot hold
    (objects, NaN and infinities)."""
    if value is None or isinstance(value, (str, int, bool)):
        return value
    return json.loads(json.dumps(value, allow_nan=False))


def apply_op(tree: dict[str, Any], op: dict[str, Any]) -> None:
    """Apply one `{"op": "set"|"del", "path": [...], "value": ...}` to `tree` in place."""
    path: Sequence[str] = op["path"]
    node = tree
    for i, part in enumerate(path[:-1]):
        nxt = node.get(part)
        if nxt is None:
            if op["op"] == "del":
                return
            nxt = node[part] = {}
        elif not isinstance(nxt, dict):
            where = ".".join(path[: i + 1])
            raise StateError(f"cannot write {'.'.join(path)!r}: {where!r} is not an object")
        node = nxt
    if op["op"] == "set":
        node[path[-1]] = json_copy(op["value"])
    elif op["op"] == "del":
        node.pop(path[-1], None)
    else:
        raise StateError(f"unknown state op {op['op']!r}")


def live_entries(entries: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The step entries still in force: a rollback entry drops the earlier entries of its steps
    (`start` entries, which say a step began, are not step results: see `unfinished_starts`)."""
    live: list[dict[str, Any]] = []
    for entry in entries:
        kind = entry.get("kind")
        if kind == "rollback":
            gone = set(entry["steps"])
            live = [e for e in live if e["step_id"] not in gone]
        elif kind in (None, "step"):
            live.append(entry)
    return live


def unfinished_starts(entries: Iterable[dict[str, Any]]) -> list[str]:
    """Steps whose last `start` entry has no step entry after it: they were running when the
    process that ran them died (only steps that are not re-runnable journal their start)."""
    open_: dict[str, None] = {}
    for entry in entries:
        kind = entry.get("kind")
        if kind == "start":
            open_[entry["step_id"]] = None
        elif kind in (None, "step"):
            open_.pop(entry["step_id"], None)
    return list(open_)


def replay(entries: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """The state the journal describes (rollbacks honoured)."""
    state: dict[str, Any] = {}
    for entry in live_entries(entries):
        for op in entry.get("ops", ()):
            apply_op(state, op)
    return state


def get_path(tree: Any, path: Sequence[str], default: Any = None) -> Any:
    node = tree
    for part in path:
        if not isinstance(node, dict) or part not in node:
            return default
        node = node[part]
    return node
