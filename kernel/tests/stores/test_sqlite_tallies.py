"""The SQLite document store's tallies: grouped counts kept by triggers on every write, what
`count_by` with a one-field filter and a covered query's total read."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from agent_env.stores.sqlite import SqliteDocumentStore

pytestmark = pytest.mark.anyio

FIELDS = ["task.name", "status", "scores"]


def _doc(run: str, task: str, status: str, score: float | None = None) -> dict:
    return {
        "run_id": run,
        "task": {"name": task},
        "status": status,
        "scores": {} if score is None else {"v": score, "é": 1},
    }


async def _truth(store: SqliteDocumentStore, run: str) -> list:
    """The same counts read the slow way (every document)."""
    counts: dict = {}
    for _, doc in await store.list("trials"):
        if doc.get("run_id") == run:
            import json

            scores = json.dumps(doc["scores"], separators=(",", ":"), ensure_ascii=False)
            key = (doc["task"]["name"], doc["status"], scores)
            counts[key] = counts.get(key, 0) + 1
    return sorted(counts.items())


async def test_counts_follow_inserts_updates_and_deletes(tmp_path: Path) -> None:
    store = SqliteDocumentStore(home=tmp_path)
    for i in range(6):
        await store.put("trials", f"a{i}", _doc("r1", f"t{i % 2}", "passed", 1.0))
    await store.put("trials", "b0", _doc("r2", "t0", "failed"))
    # the first ask makes the tally from what is stored
    assert await store.count_by("trials", FIELDS, where={"run_id": "r1"}) == await _truth(
        store, "r1"
    )
    await store.put("trials", "a0", _doc("r1", "t0", "failed", 0.0))  # moves between groups
    await store.create("trials", "a9", _doc("r1", "t1", "running"))
    await store.delete("trials", "a1")
    await store.put("trials", "a2", _doc("r2", "t0", "failed"))  # moves to another run
    for run in ("r1", "r2", "nobody"):
        assert await store.count_by("trials", FIELDS, where={"run_id": run}) == await _truth(
            store, run
        )
    # a query's total over the run and some tallied fields is summed from the tally
    page = await store.query("trials", where={"run_id": "r1", "status": "passed"}, limit=1)
    assert (page.total, len(page.items), page.has_more) == (3, 1, True)
    assert (await store.query("trials", where={"run_id": "r1"})).total == 5
    none = await store.query("trials", where={"run_id": "r1", "task.name": None})
    assert none.total == 0
    await store.close()


async def test_writes_of_another_process_are_counted(tmp_path: Path) -> None:
    store = SqliteDocumentStore(home=tmp_path)
    await store.put("trials", "x", _doc("r", "t", "passed", 1.0))
    assert await store.count_by("trials", ["status"], where={"run_id": "r"}) == [(("passed",), 1)]
    code = (
        "import anyio, sys\n"
        "from pathlib import Path\n"
        "from agent_env.stores.sqlite import SqliteDocumentStore\n"
        "async def main():\n"
        "    s = SqliteDocumentStore(home=Path(sys.argv[1]))\n"
        "    for i in range(20):\n"
        "        await s.put('trials', f'p{i}', {'run_id': 'r', 'status': 'failed'})\n"
        "    await s.put('trials', 'x', {'run_id': 'r', 'status': 'failed'})\n"
        "    await s.close()\n"
        "anyio.run(main)\n"
    )
    subprocess.run([sys.executable, "-c", code, str(tmp_path)], check=True, timeout=60)
    assert await store.count_by("trials", ["status"], where={"run_id": "r"}) == [(("failed",), 21)]
    # a store opened later finds the tally and answers totals from it
    other = SqliteDocumentStore(home=tmp_path)
    assert (await other.query("trials", where={"run_id": "r", "status": "failed"})).total == 21
    assert other._planner.covering("trials", {"run_id": "r", "status": "failed"}) is not None
    await other.close()
    await store.close()


async def test_concurrent_writers_keep_the_counts_exact(tmp_path: Path) -> None:
    """Four processes write and rewrite records of one run at once; the tally still equals
    the documents (each trigger runs in its write's own transaction)."""
    store = SqliteDocumentStore(home=tmp_path)
    assert await store.count_by("trials", ["status"], where={"run_id": "r"}) == []
    code = (
        "import anyio, sys\n"
        "from pathlib import Path\n"
        "from agent_env.stores.sqlite import SqliteDocumentStore\n"
        "async def main():\n"
        "    s = SqliteDocumentStore(home=Path(sys.argv[1]))\n"
        "    me = sys.argv[2]\n"
        "    for i in range(150):\n"
        "        await s.put('trials', f'{me}-{i}', {'run_id': 'r', 'status': 'running'})\n"
        "        await s.put('trials', f'{me}-{i}', {'run_id': 'r', 'status': 'sp'[i % 2]})\n"
        "        if i % 10 == 0:\n"
        "            await s.delete('trials', f'{me}-{i}')\n"
        "    await s.close()\n"
        "anyio.run(main)\n"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", code, str(tmp_path), f"w{n}"]) for n in range(4)
    ]
    for proc in procs:
        assert proc.wait(timeout=120) == 0
    truth: dict = {}
    for _, doc in await store.list("trials"):
        truth[(doc["status"],)] = truth.get((doc["status"],), 0) + 1
    counted = await store.count_by("trials", ["status"], where={"run_id": "r"})
    assert counted == sorted(truth.items()) and sum(truth.values()) == 4 * 135
    await store.close()
