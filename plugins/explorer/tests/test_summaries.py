"""Run figures are remembered only once a run can no longer change: a live run is recounted on
every view (live progress), a finished one is not, and a resume (new owner) recounts."""

from __future__ import annotations

import os

import pytest

from agent_env.sandboxes.procs import ProcessIdentity
from agent_env.stores.base import DocumentStore
from agentenv_explorer.summaries import RunSummaries


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def _store(tmp_path) -> DocumentStore:
    from agent_env.stores.sqlite import SqliteDocumentStore

    return SqliteDocumentStore(home=tmp_path)


def _record(run_id: str, i: int, status: str) -> dict:
    return {"id": f"ti-{i}", "run_id": run_id, "task": {"name": "t"}, "status": status}


@pytest.mark.anyio
async def test_live_runs_are_recounted_finished_ones_remembered(tmp_path) -> None:
    docs = await _store(tmp_path)
    me = ProcessIdentity.current()
    run = {
        "id": "run-1",
        "instances": ["ti-0", "ti-1"],
        "owner": {"pid": me.pid, "start_time": me.start_time, "host": me.host},
    }
    await docs.put("task_instances", "ti-0", _record("run-1", 0, "passed"))
    await docs.put("task_instances", "ti-1", _record("run-1", 1, "running"))
    summaries = RunSummaries()
    assert (await summaries.counts(docs, run))["running"] == 1
    await docs.put("task_instances", "ti-1", _record("run-1", 1, "failed"))
    finished = await summaries.counts(docs, run)
    assert (finished["passed"], finished["failed"], finished["running"]) == (1, 1, 0)
    # settled: a later change without a resume is not seen ...
    await docs.put("task_instances", "ti-1", _record("run-1", 1, "passed"))
    assert (await summaries.counts(docs, run))["passed"] == 1
    # ... a resume writes a new owner into the run document, and the run is counted again
    resumed = {**run, "owner": {"pid": os.getpid() + 1, "start_time": 1, "host": me.host}}
    assert (await summaries.counts(docs, resumed))["passed"] == 2
    await docs.close()


@pytest.mark.anyio
async def test_the_store_revision_moves_with_every_write_from_any_connection(tmp_path) -> None:
    from agent_env.stores.sqlite import SqliteDocumentStore

    mine, other = await _store(tmp_path), SqliteDocumentStore(home=tmp_path)
    try:
        await mine.put("runs", "run-1", {"id": "run-1"})
        seen = {mine.revision()}
        for i in range(20):  # back to back: each commit is told apart
            writer = other if i % 2 else mine
            await writer.put("runs", f"run-{i}", {"id": f"run-{i}", "n": i})
            now = mine.revision()
            assert now not in seen, i
            seen.add(now)
        assert mine.revision() == other.revision()  # a token of the store, not of a connection
    finally:
        await mine.close()
        await other.close()


def test_a_kept_run_view_is_dropped_when_the_store_changes() -> None:
    from agentenv_explorer.summaries import MAX_VIEWS, RunViews

    views = RunViews()
    views.keep("run-1", ("rev", 1), {"id": "run-1"})
    assert views.get("run-1", ("rev", 1)) == {"id": "run-1"}
    assert views.get("run-1", ("rev", 2)) is None  # written since
    assert views.get("run-1", None) is None  # a store that cannot tell keeps nothing
    views.keep("run-2", None, {"id": "run-2"})
    assert views.get("run-2", None) is None
    for i in range(MAX_VIEWS + 5):
        views.keep(f"run-{i}", "r", {"i": i})
    assert views.get("run-0", "r") is None and views.get(f"run-{MAX_VIEWS + 4}", "r") is not None
