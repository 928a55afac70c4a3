"""What the watchdog costs and what it buys (figures, not pass/fail).

Run: .venv/bin/python bench/watchdog.py [--runs 8] [--kills 5]

1. `agent-env run hello`, fresh processes against one home, alternating the watchdog on and
   off (`AGENT_ENV_WATCHDOG=0`): wall time and CPU, the supervisor's included (this process
   is a child subreaper, so the supervisor is reparented to it and its CPU is counted).
   The ratio on/off of the medians measured in this one run is the figure to compare.
2. SIGKILL of `agent-env run` mid-step: seconds until the sandbox's processes are gone, with
   the watchdog (without it they stay until the next command).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

AGENT_ENV = Path(sys.executable).with_name("agent-env")
PR_SET_CHILD_SUBREAPER = 36
SLOW = [
    {"id": "box", "type": "deploy_sandbox", "sandbox_name": "box", "sandbox_mode": "vm"},
    {
        "id": "wait",
        "type": "verify_sandbox",
        "sandbox_name": "box",
        "verifier_id": "wait",
        "criteria": [{"id": "w", "type": "bash_cmd_succeeds", "bash_cmd": "sleep 300"}],
    },
]


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _reap_orphans() -> None:
    """Wait for the reparented supervisors, so their CPU lands in RUSAGE_CHILDREN."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            time.sleep(0.01)


def env_for(home: Path, watchdog: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_ENV_")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["AGENT_ENV_HOME"] = str(home)
    env["AGENT_ENV_WATCHDOG"] = "1" if watchdog else "0"
    return env


def run_once(home: Path, watchdog: bool) -> tuple[float, float]:
    cpu, t0 = _children_cpu(), time.perf_counter()
    proc = subprocess.run(
        [str(AGENT_ENV), "run", "hello"],
        env=env_for(home, watchdog),
        capture_output=True,
        text=True,
        timeout=120,
    )
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.exit(f"run failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    _reap_orphans()
    return wall, _children_cpu() - cpu


def marked(home: Path) -> list[int]:
    sys.path.insert(0, str(Path(__file__).parents[1] / "kernel" / "src"))
    from agent_env.sandboxes import procs

    folders = {p.name for p in (home / "sandboxes").glob("*")}
    return [
        p for v, pids in procs.env_values("AGENTENV_SANDBOX").items() if v in folders for p in pids
    ]


def kill_once(tmp: Path, index: int) -> float:
    home, bundle = tmp / f"kill-home-{index}", tmp / f"kill-bundle-{index}"
    (bundle / "tasks").mkdir(parents=True)
    (bundle / "tasks" / "slow.json").write_text(json.dumps(SLOW))
    proc = subprocess.Popen(
        [str(AGENT_ENV), "run", str(bundle)],
        env=env_for(home, True),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while not marked(home):
        if time.monotonic() > deadline or proc.poll() is not None:
            sys.exit("the slow step never started")
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    killed = time.perf_counter()
    while marked(home):
        if time.perf_counter() - killed > 30:
            sys.exit("the sandbox outlived its run by 30 s")
        time.sleep(0.01)
    gone = time.perf_counter() - killed
    _reap_orphans()
    return gone


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--kills", type=int, default=5)
    args = parser.parse_args()
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        run_once(tmp_path / "warmup", True)
        figures: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
        for i in range(args.runs):
            for watchdog in (i % 2 == 0, i % 2 != 0):  # alternate which goes first
                figures[watchdog].append(run_once(tmp_path / f"home-{watchdog}", watchdog))
        for watchdog in (False, True):
            walls = [w for w, _ in figures[watchdog]]
            cpus = [c for _, c in figures[watchdog]]
            print(
                f"watchdog {'on ' if watchdog else 'off'}: wall median {statistics.median(walls):.3f} s"
                f" (min {min(walls):.3f}), cpu median {statistics.median(cpus):.3f} s"
            )
        on, off = figures[True], figures[False]
        wall_ratio = statistics.median(w for w, _ in on) / statistics.median(w for w, _ in off)
        cpu_ratio = statistics.median(c for _, c in on) / statistics.median(c for _, c in off)
        print(f"on/off: wall x{wall_ratio:.2f}, cpu x{cpu_ratio:.2f} (supervisor included)")
        gone = [kill_once(tmp_path, i) for i in range(args.kills)]
        print(
            f"SIGKILL mid-step -> sandbox processes gone after: median {statistics.median(gone):.2f} s,"
            f" max {max(gone):.2f} s ({args.kills} kills; without the watchdog: until the next command)"
        )


if __name__ == "__main__":
    main()
