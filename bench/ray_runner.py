"""Trials/s of `agent-env run hello --trials N` on the Ray runner vs the local runner, in one
run on one machine (figures, not pass/fail).

Run: .venv/bin/python bench/ray_runner.py [--trials 1000] [--cpus 2] [--concurrency 8]
A Ray head (`ray start --head --num-cpus CPUS`) is started first and stopped at the end, so
the Ray figures leave out the cluster's start-up; each run is a fresh `agent-env` process
with its own AGENT_ENV_HOME (local stores: a one-node cluster). Also printed: a 1-trial Ray
run (the fixed cost of connecting and starting the actor pool) and the per-trial overhead
the Ray runner adds, (wall_ray - wall_local) / N and the same net of the fixed cost.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent
AGENT_ENV = BIN / "agent-env"
RAY = BIN / "ray"


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_ENV_")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.update(AGENT_ENV_HOME=str(home), RAY_USAGE_STATS_ENABLED="0", RAY_AUTH_MODE="disabled")
    return env


def run(home: Path, *args: str) -> tuple[float, dict]:
    t0 = time.perf_counter()
    proc = subprocess.run(
        [str(AGENT_ENV), "run", "hello", "--json", *args],
        env=_env(home),
        capture_output=True,
        text=True,
        timeout=3600,
    )
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.exit(f"agent-env run hello {' '.join(args)} failed:\n{proc.stderr[-2000:]}")
    return wall, json.loads(proc.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--cpus", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args()
    n, conc = args.trials, str(args.concurrency)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        port = 26379
        # --block: terminating `ray start` stops what it started, and nothing else
        head = subprocess.Popen(
            [
                str(RAY),
                "start",
                "--head",
                "--block",
                f"--num-cpus={args.cpus}",
                f"--port={port}",
                "--node-ip-address=127.0.0.1",
                "--include-dashboard=false",
                "--disable-usage-stats",
                f"--temp-dir={root / 'ray'}",
            ],
            env=_env(root),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        time.sleep(8)  # the head's start-up (about 4 s on an idle machine)
        if head.poll() is not None:
            sys.exit("ray start --head exited")
        address = f"127.0.0.1:{port}"
        try:
            run(root / "warm", "--trials", "2")  # bytecode caches
            local, out_l = run(root / "local", "--trials", str(n), "--concurrency", conc)
            ray_args = ("--runner", "ray", "--address", address, "--concurrency", conc)
            fixed, _ = run(root / "ray1", "--trials", "1", *ray_args)
            ray, out_r = run(root / "ray", "--trials", str(n), *ray_args)
        finally:
            os.killpg(head.pid, signal.SIGTERM)
            head.wait(timeout=120)
    for out in (out_l, out_r):
        assert out["results"]["tasks"][0]["passed"] == n, out["results"]
    print(f"hello x {n} trials, concurrency {conc}, Ray head of {args.cpus} CPUs (same machine)")
    print(f"  local runner : {local:7.2f} s wall  {n / local:7.1f} trials/s")
    print(f"  ray runner   : {ray:7.2f} s wall  {n / ray:7.1f} trials/s  (ratio {local / ray:.2f})")
    print(f"  ray, 1 trial : {fixed:7.2f} s wall  (connect + actor pool start-up)")
    per = (ray - local) / n * 1000
    net = (ray - fixed - local) / n * 1000
    print(f"  overhead per trial: {per:.2f} ms; net of the fixed cost: {net:.2f} ms")


if __name__ == "__main__":
    main()
