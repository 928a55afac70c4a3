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
