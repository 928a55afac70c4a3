"""Evals at scale: `agent-env run hello --trials N --concurrency 32` as a user runs it
(figures, not pass/fail, except that the aggregates must be right).

Run: .venv/bin/python bench/evals.py [--trials 250 500 1000] [--concurrency 32] [--repeat 1]

Each row is a fresh `agent-env` process on a fresh AGENT_ENV_HOME (local sandbox, SQLite
document store). Reported: wall time of the whole command, trials per second over the trial
phase (the progress line's rate: from the first trial start to the last finish), the peak
resident memory of the process (ru_maxrss), the CPU time per trial of the agent-env process
and of the commands its sandboxes ran (independent of what else loads the machine), and a
check that the results table says every trial passed and the JSONL export has one row per
trial. Targets: >= 100 trials/s; peak memory flat in the number of trials.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

AGENT_ENV = Path(sys.executable).with_name("agent-env")
RATE = re.compile(r"trials (\d+)/(\d+) done.*?(\d+\.\d+)/s")


def one(trials: int, concurrency: int, tmp: Path, extra: list[str]) -> dict:
    home = tmp / f"home-{trials}-{time.monotonic_ns()}"
    export = home / "trials.jsonl"
    env = {
        **os.environ,
        "AGENT_ENV_HOME": str(home),
        "AGENT_ENV_RUN_PROGRESS_INTERVAL": "3600",
    }
    cmd = [
        str(AGENT_ENV),
        "run",
        "hello",
        "--trials",
        str(trials),
        "--concurrency",
        str(concurrency),
        "--export",
        str(export),
        *extra,
    ]
    home.mkdir(parents=True)
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = proc.communicate(timeout=1800)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.exit(f"run failed ({proc.returncode}):\n{err[-3000:]}")
    [line] = [ln for ln in out.splitlines() if ln.startswith("hello ")]
    cells = line.split()
    assert cells[1:4] == [str(trials), str(trials), "1.000"], line
    assert cells[-1] == "1.000", line  # pass@K
    rows = [json.loads(line) for line in export.read_text().splitlines()]
    assert len(rows) == trials and len({r["instance_id"] for r in rows}) == trials
    assert sorted(r["trial"] for r in rows) == list(range(trials))
    m = RATE.findall(err)
    rate = float(m[-1][2]) if m else trials / wall
    return {"trials": trials, "wall": wall, "rate": rate}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, nargs="+", default=[250, 500, 1000])
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("extra", nargs="*", help="more `agent-env run` arguments")
    args = parser.parse_args()
    print(
        f"{'trials':>7} {'wall s':>8} {'trials/s':>9} {'peak RSS MB':>12} {'cpu ms/trial':>13}"
        f"  load"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for trials in args.trials:
            for _ in range(args.repeat):
                before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
                row = measure(trials, args.concurrency, Path(tmp), args.extra)
                after = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
                peak = row.pop("peak_kb", None) or max(before, after)
                print(
                    f"{row['trials']:>7} {row['wall']:>8.2f} {row['rate']:>9.1f} "
                    f"{peak / 1024:>12.1f} {row['cpu'] / trials * 1000:>13.2f}  "
                    f"{os.getloadavg()[0]:.1f}"
                )
    print(
        f"(python {sys.version.split()[0]}, {os.cpu_count()} cpus, concurrency "
        f"{args.concurrency}; trials/s over the trial phase; peak RSS of the agent-env process; "
        "cpu = agent-env plus the commands it ran; load = 1-minute load average after the row)"
    )


def measure(trials: int, concurrency: int, tmp: Path, extra: list[str]) -> dict:
    """`one()` in a child of its own, so ru_maxrss is this run's peak alone."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            row = one(trials, concurrency, tmp, extra)
            usage = resource.getrusage(resource.RUSAGE_CHILDREN)
            row["peak_kb"] = usage.ru_maxrss
            row["cpu"] = usage.ru_utime + usage.ru_stime
            os.write(write, json.dumps(row).encode())
        finally:
            os._exit(0)
    os.close(write)
    data = b""
    while chunk := os.read(read, 65536):
        data += chunk
    os.waitpid(pid, 0)
    if not data:
        sys.exit("the measuring child failed")
    return json.loads(data)


if __name__ == "__main__":
    main()
