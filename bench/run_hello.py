"""`agent-env run hello` end to end, as a user runs it (figures, not pass/fail).

Run: .venv/bin/python bench/run_hello.py [--runs 10]
Each run is a fresh `agent-env` process against one temporary AGENT_ENV_HOME: the first run
materializes the bundle ("v1 (new)"), the later ones find it unchanged. One warm-up run in a
separate home first writes the bytecode caches (a pip install compiles them too).
Target: under 0.5 s wall per run on this machine. `cpu` is the run's CPU time (user + system,
the process and what it waited for): on a shared machine compare two trees by it.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

AGENT_ENV = Path(sys.executable).with_name("agent-env")


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_once(home: Path) -> tuple[float, float, subprocess.CompletedProcess]:
    """(wall seconds, CPU seconds, the finished process) of one `agent-env run hello`."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE",)}
    env["AGENT_ENV_HOME"] = str(home)
    cpu, t0 = _children_cpu(), time.perf_counter()
    proc = subprocess.run(
        [str(AGENT_ENV), "run", "hello"], env=env, capture_output=True, text=True, timeout=120
    )
    return time.perf_counter() - t0, _children_cpu() - cpu, proc


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run_once(Path(tmp) / "warmup")
        home = Path(tmp) / "home"
        times, cpus = [], []
        for i in range(args.runs):
            seconds, cpu, proc = run_once(home)
            if proc.returncode != 0 or "passed (hello: 1)" not in proc.stdout:
                sys.exit(f"run {i + 1} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
            first = proc.stderr.splitlines()[0] if proc.stderr else ""
            outcome = proc.stdout.split("  ")[1]
            print(f"run {i + 1:>2}: {seconds:6.3f} s  cpu {cpu:6.3f} s  {outcome:<20} {first}")
            times.append(seconds)
            cpus.append(cpu)
        left = [p for p in (home / "sandboxes").glob("*") if not p.name.startswith(".")]
        leases = list((home / "leases").glob("*")) if (home / "leases").exists() else []
        print(
            f"first (materializes): {times[0]:.3f} s; later runs: median "
            f"{statistics.median(times[1:] or times):.3f} s, min {min(times):.3f} s, "
            f"max {max(times):.3f} s; cpu median {statistics.median(cpus[1:] or cpus):.3f} s"
        )
        print(f"left behind: {len(left)} work folders, {len(leases)} leases")


if __name__ == "__main__":
    main()
