"""The `local` sandbox provider's own costs, and what bubblewrap isolation adds (figures, not
pass/fail).

Run: .venv/bin/python bench/local_sandbox.py [--runs 20]
Per operation, median and p90 in ms, for an isolated provider (processes under bubblewrap, the
default) and an unisolated one (`bwrap = ""`), interleaved in one loop so both see the same
machine load: create, write_file, exec of `true` (argv) and of a shell line, teardown; and
deploy-to-first-response of a server (create + start_process of a small Python HTTP server +
GETs until it answers 200), the local floor of issue 5's deploy-to-first-tool-call. Then the
cost of isolation per sandbox process (isolated minus unisolated median, aim: under 20 ms) and
the ratio, the processes each variant started (`exec` launches: one process each unisolated;
bwrap, its PID-namespace init and the command isolated), and `reap_orphans` with no lease.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import anyio
from _pong import SERVER  # bench/ is the script's folder: on the path when run

from agent_env.sandbox import SandboxSpec
from agent_env.sandboxes.local import LocalProvider
from agent_env.sandboxes.local.isolation import probe
from agent_env.sandboxes.manager import SandboxManager

#: Processes one launch starts: the command; under bwrap also bwrap and its PID-ns init.
PROCESSES_PER_LAUNCH = {"isolated": 3, "unisolated": 1}


def get(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1) as response:
            return response.status == 200
    except (urllib.error.URLError, ConnectionError, OSError):
        return False


async def one_round(provider: LocalProvider, add) -> int:
    """The operations once on `provider`; the number of process launches it made."""
    t = time.perf_counter()
    box = await provider.create(SandboxSpec())
    t = add("create", t)
    await box.write_file("/app/server.py", SERVER.encode())
    t = add("write_file", t)
    await box.exec(["true"])
    t = add("exec argv `true`", t)
    await box.exec("cd /app && test -f server.py && echo ok")
    t = add("exec shell line", t)
    await box.teardown()
    add("teardown (no servers)", t)

    t = time.perf_counter()
    box = await provider.create(SandboxSpec())
    await box.write_file("/app/server.py", SERVER.encode())
    url = (await box.start_process(["python3", "/app/server.py"], port=0)).url
    while not await anyio.to_thread.run_sync(get, url):
        await anyio.sleep(0.005)
    t = add("deploy to first response", t)
    await box.teardown()
    add("teardown (one server)", t)
    return 3


async def main(runs: int) -> None:
    found = probe()
    if not found.available:
        raise SystemExit(f"bubblewrap cannot run here: {found.reason}")
    home = Path(tempfile.mkdtemp(prefix="bench-local-"))
    providers = {
        "isolated": LocalProvider({}, home=home / "isolated"),
        "unisolated": LocalProvider({"bwrap": ""}, home=home / "unisolated"),
    }
    times: dict[str, dict[str, list[float]]] = {name: {} for name in providers}
    launches = dict.fromkeys(providers, 0)
    for provider in providers.values():  # one warm-up round each, not counted
        await one_round(provider, lambda _op, started: time.perf_counter())

    for i in range(runs):
        order = list(providers) if i % 2 == 0 else list(providers)[::-1]
        for name in order:

            def add(op: str, started: float, name: str = name) -> float:
                now = time.perf_counter()
                times[name].setdefault(op, []).append((now - started) * 1000)
                return now

            launches[name] += await one_round(providers[name], add)

    print(f"bubblewrap: {found.executable}; {runs} interleaved rounds per variant")
    print(f"{'operation':30} {'variant':11} {'median ms':>10} {'p90 ms':>8}")
    for op in times["isolated"]:
        for name in providers:
            values = sorted(times[name][op])
            p90 = values[min(len(values) - 1, int(len(values) * 0.9))]
            print(f"{op:30} {name:11} {statistics.median(values):10.3f} {p90:8.3f}")
    print()
    print(f"{'isolation cost per process':30} {'extra ms':>10} {'ratio':>8}")
    for op in ("exec argv `true`", "exec shell line", "deploy to first response"):
        iso = statistics.median(times["isolated"][op])
        plain = statistics.median(times["unisolated"][op])
        print(f"{op:30} {iso - plain:10.3f} {iso / plain:7.2f}x")
    for name, count in launches.items():
        started = count * PROCESSES_PER_LAUNCH[name]
        print(f"processes started, {name}: {started} ({count} launches)")

    class NoPlugins:
        sandbox_providers = None

    manager = SandboxManager(NoPlugins(), None, home)
    t = time.perf_counter()
    for _ in range(1000):
        await manager.reap_orphans()
    per_call = time.perf_counter() - t  # s/1000 = ms
    print(f"reap_orphans, no lease (per call): {per_call:.3f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=20)
    anyio.run(main, parser.parse_args().runs)
