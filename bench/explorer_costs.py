"""What the explorer's run page pays for a run's cost totals (`GET /api/v1/runs/ID`, `cost`):
it adds up the trial records' costs for runs of up to 1,000 records and, for bigger ones, only
says how many there are (the count comes from the grouped counts the run view already has).
Interleaved in one process over one SQLite store: a 1,000-record run summed, a 100,000-record
run capped, and the same 100,000-record run summed whole (what the page would pay without
the cap; `agent-env runs show` does that).

Run: .venv/bin/python bench/explorer_costs.py [--big 100000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).parent))
import explorer as base  # noqa: E402  (bench/explorer.py: its trial records)

from agent_env import results  # noqa: E402
from agent_env.stores.sqlite import SqliteDocumentStore  # noqa: E402
from agentenv_explorer import api_runs  # noqa: E402
from agentenv_reporting import grouped  # noqa: E402

COST = {
    "prompt_tokens": 22,
    "completion_tokens": 14,
    "total_tokens": 36,
    "models": {"m": {"prompt_tokens": 22, "completion_tokens": 14, "total_tokens": 36}},
    "sandbox_seconds": {"docker": 3.2},
    "wall_seconds": 4.1,
    "usd": 0.01,
}


async def fill(docs: SqliteDocumentStore, n: int) -> str:
    run_id = f"run-20261203{n:06d}-bench"
    for i in range(n):
        record = base.trial(run_id, i, 10)
        record["cost"] = COST
        await docs.put(results.TRIALS, record["id"], record)
    await grouped.run_groups(docs, run_id)  # the tally, made once (`agent-env up` at start)
    return run_id


async def timed(docs: Any, run_id: str, cap: int) -> tuple[float, dict[str, Any]]:
    api_runs.COST_SUMMED_UP_TO = cap
    groups = await grouped.run_groups(docs, run_id)  # the run view has them already
    t0 = time.perf_counter()
    cost = await api_runs._run_cost(docs, run_id, api_runs._records(groups))
    return (time.perf_counter() - t0) * 1000, cost


async def main(big: int, repeats: int) -> None:
    cap = api_runs.COST_SUMMED_UP_TO
    with tempfile.TemporaryDirectory() as tmp:
        docs = SqliteDocumentStore(home=Path(tmp))
        t0 = time.perf_counter()
        small, large = await fill(docs, cap), await fill(docs, big)
        print(f"filled {cap + big:,} trial records in {time.perf_counter() - t0:.0f}s")
        rows: dict[str, list[float]] = {
            f"{cap:,} records, summed": [],
            f"{big:,} records, over the cap": [],
            f"{big:,} records, summed whole": [],
        }
        for _ in range(repeats):
            for times, (run_id, limit) in zip(
                rows.values(), [(small, cap), (large, cap), (large, 10**9)], strict=True
            ):
                ms, cost = await timed(docs, run_id, limit)
                times.append(ms)
        api_runs.COST_SUMMED_UP_TO = cap
        print(f"the whole sum: {cost['trials']:,} trials, {cost['total_tokens']:,} tokens")
        for label, times in rows.items():
            print(
                f"  {label:<32} median {statistics.median(times):9.1f} ms  "
                f"(each: {', '.join(f'{t:.1f}' for t in times)})"
            )
        _, capped, whole = (statistics.median(t) for t in rows.values())
        print(f"  summing {big:,} records whole: {whole / 1000:.1f} s, vs {capped:.2f} ms capped")
        await docs.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--big", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    anyio.run(main, args.big, args.repeats)
