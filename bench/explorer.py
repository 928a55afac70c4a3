"""The explorer with 100,000 trial records in the SQLite document store: how long the runs
page and a run's page take through the real app (HTTP in process), against the way
`agent-env runs list/show` read records (every run document, then each trial one at a time).

Run: .venv/bin/python bench/explorer.py [--runs 1000 --trials 100] [--big 100000] [--no-browser]
Two layouts: many runs of `--trials` trials (`--runs` x `--trials` records), then one run of
`--big` trials in a fresh store. Target: each API answer under 200 ms. Then, for the big run,
the pages as a browser renders them (`bench/_browser.py`): headless Chromium against a real
`agent-env up` over the same store, the run page (target 250 ms) and filtered views (a status
filter, a page in the middle; target 100 ms each), with a static page in the same browser as the
floor. The indexes are built first
(what `agent-env up` does at start); "first" is then a page's first view, when a finished
run's counts are computed, "warm" the views after it (finished runs' figures remembered).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from agent_env.stores.filesystem import FilesystemObjectStore
from agent_env.stores.sqlite import SqliteDocumentStore

TARGET_MS = 200.0
STATUSES = ["passed", "passed", "passed", "scored_below", "failed", "unscored"]


def trial(run_id: str, i: int, tasks: int) -> dict[str, Any]:
    status = STATUSES[i % len(STATUSES)]
    score = {"passed": 1.0, "scored_below": 0.5, "failed": 0.0}.get(status)
    return {
        "id": f"ti-{run_id[4:]}-{i:05d}",
        "run_id": run_id,
        "task": {"name": f"task-{i % tasks}", "id": f"@local/bench/task-{i % tasks}", "version": 1},
        "bundle": {"name": "bench", "spec": "bench"},
        "trial": i // tasks,
        "seed": i,
        "status": status,
        "outcome": status,
        "scores": {} if score is None else {"v": score},
        "verifiers": {
            "v": {"results": [{"id": "c", "result": status == "passed"}], "score": score}
        },
        "steps": {s: {"status": "completed", "attempts": 1, "seconds": 0.01} for s in "abcd"},
        "failure": {"step": "b", "message": "boom", "class": "agent"}
        if status == "failed"
        else None,
        "failure_class": "agent" if status == "failed" else None,
        "created_at": "2026-12-03T10:00:00.000+00:00",
        "seconds": 0.5,
        "log": [],
        "owner": {"pid": 1, "host": "bench"},
    }


async def fill(docs: SqliteDocumentStore, runs: int, trials: int, tasks: int = 10) -> list[str]:
    ids = []
    for r in range(runs):
        run_id = f"run-20261203{r:06d}-bench"
        instances = [f"ti-{run_id[4:]}-{i:05d}" for i in range(trials)]
        await docs.put(
            "runs",
            run_id,
            {
                "id": run_id,
                "bundle": {"name": "bench", "spec": "bench"},
                "instances": instances,
                "tasks": [f"task-{i % tasks}" for i in range(trials)],
                "trial_index": [i // tasks for i in range(trials)],
                "trials": max(trials // tasks, 1),
                "task_versions": {f"task-{t}": 1 for t in range(min(tasks, trials))},
                "created_at": f"2026-12-03T10:{r // 60 % 60:02d}:{r % 60:02d}.{r:06d}",
                "meta": {},
            },
        )
        for i in range(trials):
            await docs.put("task_instances", instances[i], trial(run_id, i, tasks))
        ids.append(run_id)
    return ids


def timed(client: Any, url: str, repeat: int = 5) -> tuple[float, float]:
    """(first, median of the next `repeat`) milliseconds of GET `url`."""
    took = []
    for _ in range(repeat + 1):
        t0 = time.perf_counter()
        answer = client.get(url)
        took.append((time.perf_counter() - t0) * 1000)
        assert answer.status_code == 200, answer.text
    return took[0], statistics.median(took[1:])


async def old_way_list(docs: Any, limit: int = 20) -> None:
    """What `agent-env runs list` does: every run document, then every record of the newest."""
    from agent_env.engine.records import RunRecord
    from agentenv_reporting.summary import run_summary

    runs = [RunRecord.from_dict(d) for _, d in await docs.list("runs")]
    runs.sort(key=lambda r: r.created_at or "", reverse=True)
    for run in runs[:limit]:
        await run_summary(docs, run)


async def old_way_show(docs: Any, run_id: str) -> None:
    """What `agent-env runs show RUN` does: the run's summary, reading each record."""
    from agent_env.engine.stored import read_run
    from agentenv_reporting.summary import run_summary

    await run_summary(docs, await read_run(docs, run_id))


class Stores:
    def __init__(self, home: Path):
        self.documents = SqliteDocumentStore(home=home)
        self.objects = FilesystemObjectStore(home=home)

    @property
    def entities(self) -> Any:
        from agent_env.stores.versioned import Entities

        return Entities(self.documents)

    async def close(self) -> None:
        await self.documents.close()


def measure(label: str, runs: int, trials: int, baseline: bool, browser: bool = False) -> None:
    from starlette.testclient import TestClient

    from agentenv_explorer.app import create_app

    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        stores = Stores(home)
        t0 = time.perf_counter()
        ids = anyio.run(fill, stores.documents, runs, trials)
        print(
            f"\n{label}: {runs} run(s) x {trials} trials = {runs * trials:,} records "
            f"(filled in {time.perf_counter() - t0:.1f}s)"
        )
        from agentenv_explorer.summaries import warm_indexes

        t0 = time.perf_counter()
        anyio.run(warm_indexes, stores)
        print(f"  index build at start (once per store): {time.perf_counter() - t0:.1f}s")
        app = create_app(stores, cwd=home, log_dir=home / "logs", warm=False)
        target = ids[len(ids) // 2]
        with TestClient(app, base_url="http://127.0.0.1:8234") as client:
            rows = [
                ("runs page  GET /api/v1/runs", "/api/v1/runs?limit=50"),
                ("run page   GET /api/v1/runs/ID", f"/api/v1/runs/{target}"),
                ("trials     GET /api/v1/runs/ID/trials", f"/api/v1/runs/{target}/trials?limit=50"),
                (
                    "trials p.  ... &offset=middle",
                    f"/api/v1/runs/{target}/trials?limit=50&offset={trials // 2}",
                ),
            ]
            print(f"  {'':<40} {'first':>9} {'warm':>9} {'warm/200ms':>11}")
            warm = {}
            for name, url in rows:
                first, median = timed(client, url)
                warm[name] = median
                print(f"  {name:<40} {first:>7.1f}ms {median:>7.1f}ms {median / TARGET_MS:>10.2f}x")
            page = warm[rows[1][0]] + warm[rows[2][0]]
            print(
                f"  a run's page (run + first trials page): {page:.1f} ms warm, "
                f"{page / TARGET_MS:.2f}x the {TARGET_MS:.0f} ms target; runs page "
                f"{warm[rows[0][0]]:.1f} ms, {warm[rows[0][0]] / TARGET_MS:.2f}x"
            )
            if baseline:
                docs = stores.documents
                t0 = time.perf_counter()
                anyio.run(old_way_list, docs)
                old_list = (time.perf_counter() - t0) * 1000
                t0 = time.perf_counter()
                anyio.run(old_way_show, docs, target)
                old_show = (time.perf_counter() - t0) * 1000
                print(
                    f"  baseline (record by record, as runs list/show): list {old_list:.0f} ms "
                    f"({old_list / warm[rows[0][0]]:.0f}x the runs page), show {old_show:.0f} ms "
                    f"({old_show / warm[rows[1][0]]:.0f}x the run page)"
                )
        anyio.run(stores.close)
        if browser:
            import _browser

            from agentenv_explorer.headless import problem

            why = problem()
            if why:
                print(f"  in Chromium: not measured ({why})")
            else:
                _browser.measure(home, target, trials)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--big", type=int, default=100_000)
    parser.add_argument(
        "--baseline",
        action="store_true",
        help="also time the record-by-record reads of runs list/show (minutes at 100,000)",
    )
    parser.add_argument(
        "--no-browser",
        action="store_true",
        help="skip the Chromium timings of the big run's page and filtered views",
    )
    args = parser.parse_args()
    if args.runs:
        measure("many runs", args.runs, args.trials, args.baseline)
    if args.big:
        measure("one big run", 1, args.big, args.baseline, browser=not args.no_browser)


if __name__ == "__main__":
    main()
