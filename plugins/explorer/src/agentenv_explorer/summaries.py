"""Run counts and statistics, remembered for runs that can no longer change.

A run whose owner process has ended (or that has nothing running or left to start) keeps its
counts until it is resumed, and a resume rewrites the run document with its new owner, which
is part of the key. So the runs page does not recount a finished 100,000-trial run on every
view (SQLite before 3.41 reads each document to group by its fields). Runs still going are
counted afresh each time: that is the live progress.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from agent_env import results
from agent_env.sandboxes.procs import ProcessIdentity

#: At most this many runs' figures are kept (the oldest dropped first).
MAX_KEPT = 5000


def _key(run: dict[str, Any]) -> str:
    return json.dumps(
        [run.get("id"), run.get("owner"), len(run.get("instances") or [])], sort_keys=True
    )


def _owner_alive(run: dict[str, Any]) -> bool:
    owner = run.get("owner") or {}
    if not isinstance(owner.get("pid"), int) or not owner.get("host"):
        return False
    identity = ProcessIdentity(
        pid=owner["pid"], start_time=owner.get("start_time"), host=str(owner["host"])
    )
    return identity.on_this_host() and identity.alive()


def settled(run: dict[str, Any], counts: dict[str, Any]) -> bool:
    """Whether `run`'s figures can no longer change without a resume."""
    if counts["running"] == 0 and counts["unfinished"] == 0:
        return True
    owner = ProcessIdentity.current()
    mine = (run.get("owner") or {}).get("pid") == owner.pid
    return not mine and not _owner_alive(run) and bool(run.get("owner"))


class RunSummaries:
    """`counts(documents, run)` and `results(documents, run)`, remembered once settled."""

    def __init__(self) -> None:
        self._counts: dict[str, dict[str, Any]] = {}
        self._results: dict[str, dict[str, Any]] = {}

    async def _remembered(
        self,
        table: dict[str, dict[str, Any]],
        run: dict[str, Any],
        compute: Callable[[], Awaitable[dict[str, Any]]],
        counts: dict[str, Any] | None,
    ) -> dict[str, Any]:
        key = _key(run)
        if key in table:
            return table[key]
        value = await compute()
        if settled(run, counts if counts is not None else value):
            if len(table) >= MAX_KEPT:
                table.pop(next(iter(table)))
            table[key] = value
        return value

    async def counts(self, documents: Any, run: dict[str, Any]) -> dict[str, Any]:
        return await self._remembered(
            self._counts, run, lambda: results.run_counts(documents, run), None
        )

    async def results(
        self, documents: Any, run: dict[str, Any], counts: dict[str, Any]
    ) -> dict[str, Any]:
        return await self._remembered(
            self._results, run, lambda: results.run_results(documents, run), counts
        )


async def warm_indexes(stores: Any) -> None:
    """Ask one query of each shape the pages use, so their indexes exist before the first
    visitor waits for them (built once per store; later starts find them). The queries name
    a run that does not exist: making the index is the only work."""
    nobody = {"id": "", "instances": []}
    await results.run_page(stores.documents, limit=1)
    await results.run_counts(stores.documents, nobody)
    await results.trial_page(stores.documents, "", limit=1)
    for kind in results.ENTITY_KINDS:
        await stores.documents.count_by(f"entities-{kind}", ["entity_id"])
