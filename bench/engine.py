"""The engine's own overhead with the journal on (figures, not pass/fail).

Run: .venv/bin/python bench/engine.py [--steps 1000] [--width 300] [--tasks 200]

- chain: one task of N no-op steps, each depending on the previous one;
- fan: N no-op steps in W independent chains (at most W steps run at once);
- engine only: T tasks of 3 no-op steps, 32 at once (records and journal, no sandboxes);
- hello-like: T tasks at once, each creating a local sandbox, writing a file, checking it with
  a shell command and scoring, through `LocalRunner` (real SQLite journal, real sandboxes).
Per-step overhead is wall time / steps for no-op steps: scheduling, context, wrappers hook,
one journal document per step, records. Target: under 1 ms per step. `cpu ms/step` is this
process's CPU time (all threads) per step: on a shared machine it moves much less than the
wall time, so compare two trees by it (run them alternately, several times). `gc2`: full
(generation 2) collections in the timed window, `gc ms`: time in all collections there.
"""

from __future__ import annotations

import argparse
import gc
import os
import tempfile
import time
from pathlib import Path
from typing import ClassVar

import anyio
import attrs

from agent_env.engine.instance import TaskInstance
from agent_env.engine.records import new_id
from agent_env.engine.runner import LocalRunner
from agent_env.engine.services import EngineServices
from agent_env.models import Step
from agent_env.plugins import PluginManager
from agent_env.redact import Redactor
from agent_env.sandbox import SandboxSpec
from agent_env.sandboxes.manager import SandboxManager
from agent_env.stores import open_stores


@attrs.frozen(kw_only=True)
class Noop(Step):
    type: ClassVar[str] = "noop"

    async def execute(self, ctx) -> None:
        return None


@attrs.frozen(kw_only=True)
class Box(Step):
    type: ClassVar[str] = "box"

    async def execute(self, ctx) -> None:
        await ctx.create_sandbox("main", SandboxSpec())


@attrs.frozen(kw_only=True)
class Load(Step):
    type: ClassVar[str] = "load"

    async def execute(self, ctx) -> None:
        box = await ctx.sandbox("main")
        await box.write_file("/app/greeting.txt", b"hello, world\n")


@attrs.frozen(kw_only=True)
class Verify(Step):
    type: ClassVar[str] = "verify"
    is_verifier: ClassVar[bool] = True

    async def execute(self, ctx) -> None:
        box = await ctx.sandbox("main")
        result = await box.exec("grep -q hello /app/greeting.txt", timeout=30)
        ok = result.exit_code == 0
        ctx.record_verifier("hello", [{"id": "grep", "result": ok}], 1.0 if ok else 0.0)


@attrs.frozen(kw_only=True)
class FakeTask:
    name: str
    id: str
    steps: list


async def make_services(home: Path) -> EngineServices:
    plugins = PluginManager(autoload=False)
    stores = open_stores({}, plugins, home=home)
    return EngineServices(
        plugins=plugins,
        config=None,
        stores=stores,
        sandboxes=SandboxManager(plugins, None, home),
        redactor=Redactor(),
    )


async def instance(services: EngineServices, name: str, steps: list) -> TaskInstance:
    task = FakeTask(name=name, id=f"@bench/{name}", steps=steps)
    return await TaskInstance.create(
        services,
        task=task,
        instance_id=new_id("ti"),
        run_id="run-bench",
        bundle={"spec": "bench", "name": "bench"},
        task_version=1,
    )


class Clock:
    """Wall and process CPU time since `start()`."""

    def __init__(self) -> None:
        self.gc_seconds = 0.0
        self._gc_started = 0.0
        gc.callbacks.append(self._on_gc)

    def _on_gc(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._gc_started = time.perf_counter()
        else:
            self.gc_seconds += time.perf_counter() - self._gc_started

    def start(self) -> None:
        self.gc2 = gc.get_stats()[2]["collections"]
        self.gc_seconds = 0.0
        self.wall, self.cpu = time.perf_counter(), time.process_time()

    def row(self, label: str, tasks: int, steps: int) -> None:
        seconds = time.perf_counter() - self.wall
        cpu = time.process_time() - self.cpu
        gc2 = gc.get_stats()[2]["collections"] - self.gc2
        print(
            f"{label:<30} {tasks:>6} {steps:>7} {seconds:>8.3f} {tasks / seconds:>9.1f} "
            f"{steps / seconds:>9.0f} {seconds / steps * 1000:>9.3f} {cpu / steps * 1000:>11.3f}"
            f" {gc2:>3} {self.gc_seconds * 1000:>6.1f}"
        )


async def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        services = await make_services(Path(tmp))
        print(
            f"{'case':<30} {'tasks':>6} {'steps':>7} {'wall s':>8} {'tasks/s':>9} "
            f"{'steps/s':>9} {'ms/step':>9} {'cpu ms/step':>11} {'gc2':>3} {'gc ms':>6}"
        )
        n, w = args.steps, args.width
        clock = Clock()

        chain = [Noop(id=f"s{i}") for i in range(n)]
        inst = await instance(services, "chain", chain)
        clock.start()
        await inst.run()
        clock.row(f"chain of {n} no-op steps", 1, n)
        assert inst.record["status"] == "unscored", inst.record["outcome"]

        fan = [Noop(id=f"s{i}", depends_on=[f"s{i - w}"] if i >= w else []) for i in range(n)]
        inst = await instance(services, "fan", fan)
        clock.start()
        await inst.run()
        clock.row(f"{w}-wide fan of {n} no-ops", 1, n)
        assert inst.record["status"] == "unscored", inst.record["outcome"]

        noop3 = [Noop(id="a"), Noop(id="b"), Noop(id="c")]
        insts = [await instance(services, f"noop{i}", noop3) for i in range(args.tasks)]
        clock.start()
        await LocalRunner(concurrency=32).run(insts)
        clock.row(f"{args.tasks} 3-no-op tasks, 32 at once", len(insts), 3 * len(insts))

        hello = [Box(id="deploy"), Load(id="load"), Verify(id="verify")]
        for concurrency in (args.tasks, 8):
            insts = [await instance(services, f"hello{i}", hello) for i in range(args.tasks)]
            clock.start()
            await LocalRunner(concurrency=concurrency).run(insts)
            clock.row(f"{args.tasks} hello-like, {concurrency} at once", len(insts), 3 * len(insts))
            bad = [i.record["outcome"] for i in insts if i.record["status"] != "passed"]
            assert not bad, bad[:3]
        left = [p for p in (Path(tmp) / "sandboxes").iterdir() if not p.name.startswith(".")]
        assert not left, f"sandboxes left behind: {left[:3]}"
        await services.stores.close()
    print(
        f"(python {os.sys.version.split()[0]}, {os.cpu_count()} cpus; journal: sqlite WAL, "
        "one document per step)"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--width", type=int, default=300)
    parser.add_argument("--tasks", type=int, default=200)
    anyio.run(main, parser.parse_args())
