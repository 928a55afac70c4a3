"""Fork of N children from one task snapshot on local envs (issue 31: 32 children within 2 s,
all with the snapshot's state digest). Figures, not pass/fail.

    .venv/bin/python bench/_fork.py [--children 32] [--rounds 3]

The task (`write_bundle`): two local envs (`notes`, whose state is its data plane, so the
default snapshot applies; `counter`, with its own `@snapshot_state`/`@restore_state`), both
starting from a random state, the env clock armed, then `snapshot_task`. A parent run takes
the snapshot; `agent-env run --from-snapshot ID --fork N`'s path (`RunRequest(from_snapshot=,
fork=)` through the one run pipeline, in this process) deploys N children, each restoring the
snapshot at that step and reading its state back. The wall time is the whole fork (plan,
deploy 2N env processes and N gateways, restore, read back, teardown), measured per round;
printed with the children's digests (all equal to the snapshot's?) and the processes the
fork's trials started (the peak of this process's tree, sampled every 10 ms).
Baseline, interleaved: the same N trials of the task without a snapshot (plain `--trials N`
of a task that only deploys), i.e. what the fork costs over deploying alone.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]

NOTES = '''
import secrets
from agentenv_protocol import (
    AgentEnvEnvironment, DataPart, add_data, environment_card, get_data, reset_data, tool,
)


@environment_card(name="notes")
class Notes(AgentEnvEnvironment):
    def __init__(self):
        self.notes = {"start-" + secrets.token_hex(4): "a state no other process starts with"}

    @tool()
    def add_note(self, title: str, body: str) -> str:
        """Add or replace a note."""
        self.notes[title] = body
        return title

    @tool()
    def list_notes(self) -> list:
        """The titles of all notes."""
        return sorted(self.notes)

    @reset_data
    def reset(self) -> None:
        self.notes.clear()

    @add_data
    def load(self, parts: list) -> None:
        for part in parts:
            self.notes.update(part.data.get("notes", {}))

    @get_data
    def export(self) -> list:
        return [DataPart(data={"notes": dict(sorted(self.notes.items()))})]


if __name__ == "__main__":
    Notes().serve()
'''
COUNTER = '''
import secrets
from agentenv_protocol import (
    AgentEnvEnvironment, environment_card, restore_state, snapshot_state, tool,
)


@environment_card(name="counter")
class Counter(AgentEnvEnvironment):
    def __init__(self):
        self.count = secrets.randbelow(10**9)

    @tool()
    def bump(self, by: int = 1) -> int:
        """Add to the counter."""
        self.count += by
        return self.count

    @snapshot_state
    def save(self) -> dict:
        return {"count": self.count}

    @restore_state
    def load(self, state: dict) -> None:
        self.count = int(state["count"])


if __name__ == "__main__":
    Counter().serve()
'''
DEPLOY = [
    {"id": "notes", "type": "deploy_env", "env_id": "notes", "depends_on": []},
    {"id": "counter", "type": "deploy_env", "env_id": "counter", "depends_on": []},
    {
        "id": "clock",
        "type": "sync_env_clock",
        "env_id": "notes",
        "virtual_time": "2026-03-08T06:59:00Z",
        "virtual_seconds_per_real_second": 0,
        "depends_on": ["notes", "counter"],
    },
]
TASKS = {
    "t": [*DEPLOY, {"id": "snap", "type": "snapshot_task", "depends_on": ["clock"]}],
    "deploy-only": DEPLOY,
}


def write_bundle(root: Path, tasks: dict[str, list[dict[str, Any]]] | None = None) -> Path:
    """The bench's bundle at `root` (`tasks` replaces its tasks)."""
    files = {
        "README.md": "# Fork bench: two local envs and a task snapshot\n",
        # warm instances may be reused without a data/reset of `counter`: every child of a
        # fork restores the whole snapshot (both envs' states), which is its reset
        "bundle.toml": 'name = "fork-bench"\nreuse = "reset"\n',
        "envs/notes/env.toml": 'description = "notes"\ncommand = ["python", "server.py"]\n',
        "envs/notes/server.py": NOTES,
        "envs/counter/env.toml": 'description = "counter"\ncommand = ["python", "server.py"]\n',
        "envs/counter/server.py": COUNTER,
    }
    for name, steps in (tasks or TASKS).items():
        files[f"tasks/{name}.json"] = json.dumps(steps, indent=1)
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


class PeakProcesses:
    """The most descendants this process had at once while running (sampled every 10 ms)."""

    def __init__(self) -> None:
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _count(self) -> int:
        children: dict[int, list[int]] = {}
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
        seen, todo = 0, list(children.get(os.getpid(), []))
        while todo:
            pid = todo.pop()
            seen += 1
            todo.extend(children.get(pid, []))
        return seen

    def _sample(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self._count())
            self._stop.wait(0.01)

    def __enter__(self) -> PeakProcesses:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()


async def _records(session: Any, run_id: str) -> list[dict[str, Any]]:
    from agent_env.engine import trials
    from agent_env.engine.records import RUNS

    run_doc = await session.stores.documents.get(RUNS, run_id)
    return await trials.gather_records(session.stores.documents, run_doc)


async def take_snapshot(pipeline: Any, root: Path) -> dict[str, Any]:
    """Run the parent (task `t`); its record's `outputs.snap` (`{snapshot, digest}`)."""
    from agent_env.runs.request import RunRequest

    result = await pipeline.run(RunRequest(spec=str(root), task_names=("t",), front_end="bench"))
    (record,) = result.records
    if record.get("failure"):
        raise RuntimeError(f"the parent run failed: {record['outcome']}: {record.get('failure')}")
    return dict(record["outputs"]["snap"])


async def fork(pipeline: Any, root: Path, ref: str, n: int) -> tuple[float, list, int]:
    """Fork `n` children from snapshot `ref`: (wall seconds, their records, peak processes)."""
    from agent_env.runs.request import RunRequest

    request = RunRequest(spec=str(root), from_snapshot=ref, fork=n, front_end="bench")
    with PeakProcesses() as procs:
        t0 = time.perf_counter()
        result = await pipeline.run(request)
        wall = time.perf_counter() - t0
    return wall, await _records(pipeline.session, result.run_id), procs.peak


async def fork_warm(pipeline: Any, root: Path, ref: str, n: int) -> tuple[float, list, int]:
    """Fork `n` children from snapshot `ref` onto `n` warm instances (a warm pool filled ahead,
    as a long-lived OpenEnv server with `--pool` holds them): the children borrow deployed envs
    and gateways and only restore the snapshot. (wall seconds of the fork, records, peak)."""
    import attrs

    from agent_env.engine.instance import WARM_POOL
    from agent_env.runs import fork as forking
    from agent_env.runs.pool import TaskPools
    from agent_env.runs.request import RunRequest

    base = RunRequest(spec=str(root), from_snapshot=ref, fork=n, front_end="bench")
    chosen = await forking.forked(pipeline.session, base)
    loaded = await pipeline.load(chosen)
    pools = TaskPools(n, reuse={loaded.bundle.name: loaded.bundle.reuse})
    async with pools.running():
        services = await pipeline.services(loaded, chosen)
        for task in loaded.tasks:
            pools.fill(loaded.bundle.name, task, services)
        deadline = time.monotonic() + 600
        while pools.describe()["idle"] < n:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the warm pool did not fill: {pools.describe()}")
            await anyio_sleep(0.05)
        request = attrs.evolve(base, resources={WARM_POOL: pools})
        with PeakProcesses() as procs:
            t0 = time.perf_counter()
            result = await pipeline.run(request)
            wall = time.perf_counter() - t0
        reused = pools.describe()["reused"]
    records = await _records(pipeline.session, result.run_id)
    if reused < n:
        print(f"  (only {reused} of {n} children borrowed a warm instance)")
    return wall, records, procs.peak


async def anyio_sleep(seconds: float) -> None:
    import anyio

    await anyio.sleep(seconds)


async def deploy_only(pipeline: Any, root: Path, n: int) -> tuple[float, int]:
    """The baseline: `n` trials of the same envs deployed, no snapshot (wall s, peak processes)."""
    from agent_env.runs.request import RunRequest

    request = RunRequest(
        spec=str(root), task_names=("deploy-only",), trials=n, concurrency=n,
        sandbox_concurrency=n, front_end="bench",
    )  # fmt: skip
    with PeakProcesses() as procs:
        t0 = time.perf_counter()
        await pipeline.run(request)
        wall = time.perf_counter() - t0
    return time.perf_counter() - t0 if wall is None else wall, procs.peak


async def _measure(n: int, rounds: int) -> dict[str, Any]:
    from agent_env.engine.run import Session
    from agent_env.runs.pipeline import RunPipeline

    with tempfile.TemporaryDirectory(prefix="fork-bench-") as tmp:
        os.environ["AGENT_ENV_HOME"] = str(Path(tmp) / "home")
        root = write_bundle(Path(tmp) / "bundle")
        session = await Session.open()
        try:
            pipeline = RunPipeline(session)
            taken = await take_snapshot(pipeline, root)
            forks, bases = [], []
            for _ in range(rounds):
                wall, records, peak = await fork(pipeline, root, taken["snapshot"], n)
                digests = [((r.get("outputs") or {}).get("snap") or {}).get("restored_digest")
                           for r in records]  # fmt: skip
                restore = sorted(r["steps"]["snap"].get("seconds") or 0.0 for r in records)
                deploy = sorted(
                    max(r["steps"][s].get("seconds") or 0.0 for s in ("notes", "counter"))
                    for r in records
                )
                forks.append(
                    {
                        "wall_s": round(wall, 3),
                        "restore_step_p50_s": round(statistics.median(restore), 3),
                        "restore_step_max_s": round(restore[-1], 3),
                        "deploy_step_p50_s": round(statistics.median(deploy), 3),
                        "load_average": round(os.getloadavg()[0], 1),
                        "children": len(records),
                        "completed": sum(not r.get("failure") for r in records),
                        "digests_equal": len(set(digests)) == 1 and digests[0] == taken["digest"],
                        "distinct_digests": len(set(digests)),
                        "peak_processes": peak,
                        "forked_from": sorted({r.get("forked_from") for r in records} - {None}),
                    }
                )
                base_wall, base_peak = await deploy_only(pipeline, root, n)
                bases.append({"wall_s": round(base_wall, 3), "peak_processes": base_peak})
            warm_wall, warm_records, warm_peak = await fork_warm(
                pipeline, root, taken["snapshot"], n
            )
            warm_digests = {
                ((r.get("outputs") or {}).get("snap") or {}).get("restored_digest")
                for r in warm_records
            }
            warm = {
                "wall_s": round(warm_wall, 3),
                "children": len(warm_records),
                "completed": sum(not r.get("failure") for r in warm_records),
                "reused": sum(bool(r.get("reused")) for r in warm_records),
                "digests_equal": warm_digests == {taken["digest"]},
                "peak_processes": warm_peak,
                "load_average": round(os.getloadavg()[0], 1),
            }
        finally:
            await session.close()
    fork_p50 = statistics.median(f["wall_s"] for f in forks) if forks else None
    base_p50 = statistics.median(b["wall_s"] for b in bases) if bases else None
    return {
        "children": n,
        "snapshot": taken["snapshot"],
        "digest": taken["digest"],
        "rounds": forks,
        "deploy_only_rounds": bases,
        "fork_wall_p50_s": fork_p50,
        "deploy_only_wall_p50_s": base_p50,
        "fork_over_deploy_only": round(fork_p50 / base_p50, 2) if fork_p50 and base_p50 else None,
        "all_digests_equal": all(f["digests_equal"] for f in forks),
        "warm": warm,
        "target_s": 2.0,
    }


def measure_fork(n: int = 32, rounds: int = 1) -> dict[str, Any]:
    """Fork `n` children from one snapshot on local envs, `rounds` times; every figure."""
    import anyio

    return anyio.run(_measure, n, rounds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--children", type=int, default=32)
    parser.add_argument(
        "--rounds", type=int, default=3, help="cold forks (0: only the fork onto a warm pool)"
    )
    args = parser.parse_args()
    figures = measure_fork(args.children, args.rounds)
    for i, (f, b) in enumerate(
        zip(figures["rounds"], figures["deploy_only_rounds"], strict=True), 1
    ):
        print(
            f"round {i}: fork of {f['children']} children {f['wall_s']:.3f} s "
            f"({f['completed']} completed, digests equal: {f['digests_equal']}, "
            f"{f['distinct_digests']} distinct, peak {f['peak_processes']} processes; per "
            f"child: restore+read-back p50 {f['restore_step_p50_s']:.3f} s, max "
            f"{f['restore_step_max_s']:.3f} s, env deploy p50 {f['deploy_step_p50_s']:.3f} s; "
            f"load average {f['load_average']}); "
            f"deploy only {b['wall_s']:.3f} s (peak {b['peak_processes']} processes)"
        )
    if figures["rounds"]:
        print(
            f"fork p50 {figures['fork_wall_p50_s']:.3f} s (target <= {figures['target_s']} s), "
            f"deploy-only p50 {figures['deploy_only_wall_p50_s']:.3f} s, ratio "
            f"{figures['fork_over_deploy_only']}x; all digests equal the snapshot's "
            f"({figures['digest']}): {figures['all_digests_equal']}"
        )
    w = figures["warm"]
    print(
        f"fork onto a warm pool (filled ahead): {w['wall_s']:.3f} s for {w['children']} "
        f"children ({w['completed']} completed, {w['reused']} on warm instances, digests equal: "
        f"{w['digests_equal']}, peak {w['peak_processes']} processes, load average "
        f"{w['load_average']}; target <= "
        f"{figures['target_s']} s)"
    )
    print(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
