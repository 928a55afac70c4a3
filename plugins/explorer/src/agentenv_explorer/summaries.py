"""Run counts and statistics, remembered for runs that can no longer change.

A run whose owner process has ended (or that has nothing running or left to start) keeps its
counts until it is resumed, and a resume rewrites the run document with its new owner, which
is part of the key. So the runs page does not recount a finished 100,000-trial run on every
view (SQLite before 3.41 reads each document to group by its fields). Runs still going are
counted afresh each time: that is the live progress.
"""

from __future__ import annotations

import json
from typing import Any

from agent_env import results
from agent_env.sandboxes.procs import ProcessIdentity
from agentenv_reporting import grouped

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
    """A run's grouped counts (`groups`, what `agentenv_reporting.grouped.run_counts` and
    `run_results` take), remembered once the run has settled."""

    def __init__(self) -> None:
        self._groups: dict[str, grouped.Groups] = {}

    async def groups(self, documents: Any, run: dict[str, Any]) -> grouped.Groups:
        key = _key(run)
        if key in self._groups:
            return self._groups[key]
        groups = await grouped.run_groups(documents, run["id"])
        counts = await grouped.run_counts(documents, run, groups=groups)
        if settled(run, counts):
            if len(self._groups) >= MAX_KEPT:
                self._groups.pop(next(iter(self._groups)))
            self._groups[key] = groups
        return groups

    async def counts(self, documents: Any, run: dict[str, Any]) -> dict[str, Any]:
        return await grouped.run_counts(documents, run, groups=await self.groups(documents, run))


async def warm_indexes(stores: Any) -> None:
    """Ask one query of each shape the pages use, so their indexes exist before the first
    visitor waits for them (built once per store; later starts find them). The queries name
    a run that does not exist: making the index is the only work."""
    nobody = {"id": "", "instances": []}
    await results.run_page(stores.documents, limit=1)
    await grouped.run_counts(stores.documents, nobody)
    await results.trial_page(stores.documents, "", limit=1)
    await results.trial_page(stores.documents, "", status="passed", limit=1)  # status filter
    await results.trial_page(stores.documents, "", task="-", limit=1)  # task filter
    await stores.documents.count_by(results.TRIALS, ["run_id"], where={"task.id": ""})
    for kind in results.ENTITY_KINDS:
        await stores.documents.count_by(f"entities-{kind}", ["entity_id"])


#: At most this many run pages are kept by `RunViews` (the least recently used dropped).
MAX_VIEWS = 64


class RunViews:
    """The run page's answer (`GET /api/v1/runs/ID`) of settled runs, kept while the document
    store's `revision()` stays the same: reading a 100,000-trial run's document (4.6 MB of JSON)
    is most of that answer's time. A store that cannot tell its revision keeps nothing."""

    def __init__(self) -> None:
        self._views: dict[str, tuple[object, dict[str, Any]]] = {}

    def get(self, run_id: str, revision: object | None) -> dict[str, Any] | None:
        kept = self._views.get(run_id)
        if revision is None or kept is None or kept[0] != revision:
            return None
        self._views[run_id] = self._views.pop(run_id)  # most recently used last
        return kept[1]

    def keep(self, run_id: str, revision: object | None, view: dict[str, Any]) -> None:
        if revision is None:
            return
        self._views.pop(run_id, None)
        while len(self._views) >= MAX_VIEWS:
            self._views.pop(next(iter(self._views)))
        self._views[run_id] = (revision, view)
