"""The `local` sandbox provider's own costs (figures, not pass/fail).

Run: .venv/bin/python bench/local_sandbox.py [--runs 20]
Per operation, median and p90 in ms: create, write_file, exec of `true` (argv) and of a shell
line, teardown; and deploy-to-first-response of a server (create + start_process of a small
Python HTTP server + GETs until it answers 200), the local floor of issue 5's deploy-to-first-
tool-call (target there: under 300 ms as a local process). Also `reap_orphans` with no lease.
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
from agent_env.sandboxes.manager import SandboxManager


def get(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1) as response:
            return response.status == 200
    except (urllib.error.URLError, ConnectionError, OSError):
        return False


async def main(runs: int) -> None:
    home = Path(tempfile.mkdtemp(prefix="bench-local-"))
    provider = LocalProvider({}, home=home)
    times: dict[str, list[float]] = {}

    def add(name: str, started: float) -> float:
        now = time.perf_counter()
        times.setdefault(name, []).append((now - started) * 1000)
        return now

    for _ in range(runs):
        t = time.perf_counter()
        box = await provider.create(SandboxSpec())
        t = add("create", t)
        await box.write_file("/app/server.py", SERVER.encode())
        t = add("write_file", t)
        await box.exec(["true"])
        t = add("exec argv", t)
        await box.exec("cd /app && test -f server.py")
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

    class NoPlugins:
        sandbox_providers = None

    manager = SandboxManager(NoPlugins(), None, home)
    t = time.perf_counter()
    for _ in range(1000):
        await manager.reap_orphans()
    times["reap_orphans, no lease (per call)"] = [(time.perf_counter() - t)]  # s/1000 = ms
    (home / "leases").mkdir(exist_ok=True)
    t = time.perf_counter()
    for _ in range(1000):
        await manager.reap_orphans()
    times["reap_orphans, empty lease folder (per call)"] = [(time.perf_counter() - t)]

    print(f"{'operation':45} {'median ms':>10} {'p90 ms':>8}")
    for name, values in times.items():
        values.sort()
        p90 = values[min(len(values) - 1, int(len(values) * 0.9))]
        print(f"{name:45} {statistics.median(values):10.3f} {p90:8.3f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=20)
    anyio.run(main, parser.parse_args().runs)
