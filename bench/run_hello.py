"""`agent-env run hello` end to end, as a user runs it (figures, not pass/fail).

Run: .venv/bin/python bench/run_hello.py [--runs 10]
Each run is a fresh `agent-env` process against one temporary AGENT_ENV_HOME: the first run
materializes the bundle ("v1 (new)"), the later ones find it unchanged. One warm-up run in a
separate home first writes the bytecode caches (a pip install compiles them too).
Target: under 0.5 s wall per run on this machine. `cpu` is the CPU time (user + system) of the
run and of every process it started, detached ones included (`bench/_proctree.py`: a
watchdog supervisor the run leaves behind is reaped here and counted); `outlived` is how many
of them were still running when the run exited. On a shared machine compare two trees by cpu.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _proctree import TreeRun, become_subreaper, run_tree  # noqa: E402

AGENT_ENV = Path(sys.executable).with_name("agent-env")


def run_once(home: Path) -> tuple[TreeRun, str, str]:
    """The process-tree figures, stdout and stderr of one `agent-env run hello`."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE",)}
    env["AGENT_ENV_HOME"] = str(home)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        result = run_tree([str(AGENT_ENV), "run", "hello"], env, stdout=out, stderr=err)
        out.seek(0)
        err.seek(0)
        return result, out.read().decode(), err.read().decode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    become_subreaper()
    with tempfile.TemporaryDirectory() as tmp:
        run_once(Path(tmp) / "warmup")
        home = Path(tmp) / "home"
        times, cpus = [], []
        for i in range(args.runs):
            result, stdout, stderr = run_once(home)
            if result.exit_code != 0 or "passed (hello: 1)" not in stdout:
                sys.exit(f"run {i + 1} failed ({result.exit_code}):\n{stdout}\n{stderr}")
            first = stderr.splitlines()[0] if stderr else ""
            outcome = stdout.split("  ")[1]
            seconds, cpu = result.wall_ms / 1000, result.tree_cpu_ms / 1000
            print(
                f"run {i + 1:>2}: {seconds:6.3f} s  cpu {cpu:6.3f} s  outlived "
                f"{result.outlived}  {outcome:<20} {first}"
            )
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
