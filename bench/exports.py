"""What `agent-env runs export` costs per trial in each format, the kernel's `rows` (the
baseline: records only) interleaved with `chat-jsonl` and `parquet` (records plus each
trial's stored trajectory, rebuilt into a chat conversation), in one run.

`--trials` task instance records (a tool-loop trajectory of 4 model turns and 6 tool calls
each, ~5 KB) are written to a fresh local sqlite + filesystem store; then every format exports
the run `--rounds` times, the formats taking turns. Prints trials/s, microseconds per trial,
the output size, and each format's time as a ratio of `rows`. Starts no process.

    .venv/bin/python bench/exports.py [--trials 2000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import anyio

from agent_env.engine.records import RUNS, RunRecord, TaskInstanceRecord, TaskRef, slot_id
from agent_env.plugins import get_plugin_manager
from agent_env.reporting.export import export_runs
from agent_env.stores.filesystem import FilesystemObjectStore
from agent_env.stores.sqlite import SqliteDocumentStore

FORMATS = ("rows", "chat-jsonl", "parquet")


def trajectory(i: int) -> dict:
    events: list[dict] = [{"type": "user", "content": f"Save note {i} with the shopping list."}]
    for turn in range(1, 4):
        calls = [
            {"id": f"call_{turn}_{k}", "name": "add_note", "arguments": json.dumps({"k": k})}
            for k in range(2)
        ]
        events.append({"type": "model", "turn": turn, "content": None, "tool_calls": calls})
        for c in calls:
            events.append({"type": "tool", "id": c["id"], "name": c["name"],
                           "arguments": c["arguments"], "result": '{"created": "n", "count": 2}'
                           * 4, "is_error": False})  # fmt: skip
    events.append({"type": "model", "turn": 4, "content": f"Saved note {i}.", "tool_calls": []})
    return {"prompt_id": "ask", "system_prompt": "You manage notes.", "prompt": "Save a note",
            "response": f"Saved note {i}.", "events": events, "gateway_calls": []}  # fmt: skip


class Stores:
    def __init__(self, home: Path):
        self.documents = SqliteDocumentStore(home=home)
        self.objects = FilesystemObjectStore(home=home)


async def fill(stores: Stores, n: int) -> RunRecord:
    run = RunRecord.new(id="run-20260101000000-bench0", created_at="2026-01-01T00:00:00Z")
    run = run.replace(instances=[slot_id(run.id, i) for i in range(n)], tasks=["notes"] * n)
    await stores.documents.put(RUNS, run.id, run.to_dict())
    for i, ident in enumerate(run.instances):
        key = f"runs/{run.id}/{ident}/trajectories/ask.json"
        await stores.objects.put(key, json.dumps(trajectory(i)).encode())
        record = TaskInstanceRecord.new(
            id=ident, run_id=run.id, task=TaskRef(name="notes", id="@b/notes", version=1),
            status="passed", scores={"state": 1.0, "answer": 1.0}, seed=i,
            seed_values={"trial": i, "seed": i}, steps={"ask": {"status": "done"}},
            outputs={"ask": {"prompt_id": "ask", "trajectory": key, "usage": {}}},
            cost={"prompt_tokens": 100, "completion_tokens": 40, "total_tokens": 140},
        )  # fmt: skip
        await stores.documents.put("task_instances", ident, record.to_dict())
    return run


async def main(trials: int, rounds: int) -> None:
    registry = get_plugin_manager().export_formats
    with tempfile.TemporaryDirectory() as tmp:
        stores = Stores(Path(tmp))
        run = await fill(stores, trials)
        took: dict[str, list[float]] = {f: [] for f in FORMATS}
        size: dict[str, int] = {}
        for _ in range(rounds):
            for name in FORMATS:  # interleaved: each round runs every format once
                path = Path(tmp) / f"out.{name}"
                with open(path, "wb") as out:
                    start = time.perf_counter()
                    rows = await export_runs(stores, registry.get(name)(), [run], out)
                    took[name].append(time.perf_counter() - start)
                assert rows == trials
                size[name] = path.stat().st_size
        await stores.documents.close()
    base = statistics.median(took["rows"])
    print(f"{trials} trials, median of {rounds} rounds, 0 processes started")
    print(f"{'format':<12}{'trials/s':>10}{'us/trial':>10}{'MB':>8}{'x rows':>8}")
    for name in FORMATS:
        t = statistics.median(took[name])
        print(
            f"{name:<12}{trials / t:>10,.0f}{t / trials * 1e6:>10.0f}"
            f"{size[name] / 1e6:>8.2f}{t / base:>8.2f}"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    anyio.run(main, args.trials, args.rounds)
