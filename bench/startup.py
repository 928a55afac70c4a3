"""Startup benchmark: median wall and CPU time of `agent-env --version`, `agent-env --help`,
`agent-env run hello` and a bare `python -c pass` over N rounds, plus `--no-plugins --help`
(the difference is what loading the entry-point plugins costs). A figure, not a pass/fail test.
Byte-compiled modules are used (PYTHONDONTWRITEBYTECODE is unset); hello runs in a scratch home.
The cases run interleaved, one of each per round, so a load spike hits them alike.

    .venv/bin/python bench/startup.py [-n 20] [--compare OTHER/agent-env]

`--compare` times `run hello` of another installation too (e.g. a checkout of the previous
commit), in the same rounds: before/after as ratios to `python -c pass` measured together.
CPU time (user + system of the process and the children it waited for) is steadier than wall
time on a loaded machine.

Targets: `--version` within 150 ms of the bare interpreter with every in-tree plugin installed;
`run hello` within 150 ms wall.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from importlib.metadata import entry_points
from pathlib import Path

TARGET_MS = 150.0


def _once(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall ms, cpu ms) of one run of `cmd`."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = (time.perf_counter() - start) * 1000
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{' '.join(cmd)} failed (exit {os.waitstatus_to_exitcode(status)})")
    return wall, (usage.ru_utime + usage.ru_stime) * 1000


def _python_of(script: str) -> str:
    """The interpreter a console script runs with (its shebang)."""
    first = Path(script).read_text(encoding="utf-8", errors="replace").splitlines()[0]
    return first[2:].strip() if first.startswith("#!") else sys.executable


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--runs", type=int, default=20)
    parser.add_argument("--agent-env", default=None, help="path of the agent-env script")
    parser.add_argument(
        "--compare", default=None, help="another installation's agent-env script: time its hello"
    )
    opts = parser.parse_args()
    script = opts.agent_env or str(Path(sys.executable).with_name("agent-env"))
    if not os.path.exists(script):
        script = shutil.which("agent-env") or sys.exit("agent-env is not installed")
    cases = [
        ("python -c pass", [sys.executable, "-c", "pass"]),
        ("agent-env --version", [script, "--version"]),
        ("agent-env --help", [script, "--help"]),
        ("... --no-plugins --help", [script, "--no-plugins", "--help"]),
        ("agent-env run hello", [script, "run", "hello"]),
    ]
    if opts.compare:
        cases.append(("compare: run hello", [opts.compare, "run", "hello"]))
    home = tempfile.mkdtemp(prefix="agentenv-bench-startup-")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["AGENT_ENV_HOME"] = home
    scripts = [script] + ([opts.compare] if opts.compare else [])
    for python in {_python_of(s) for s in scripts}:  # byte-compile what the runs import
        subprocess.run([python, "-c", "import agent_env.cli.main"], env=env, check=True)
    plugins = sorted(
        f"{ep.name} ({ep.dist.name if ep.dist else '?'})" for ep in entry_points(group="agent_env")
    )
    print(
        f"python {sys.version.split()[0]}, {opts.runs} rounds, "
        f"{len(plugins)} entry-point plugins: {', '.join(plugins) or 'none'}"
    )
    samples: dict[str, list[tuple[float, float]]] = {label: [] for label, _ in cases}
    for round_ in range(opts.runs + 2):  # two warm-up rounds: page cache and .pyc files
        for label, cmd in cases:
            result = _once(cmd, env)
            if round_ >= 2:
                samples[label].append(result)
    wall = {k: statistics.median(w for w, _ in v) for k, v in samples.items()}
    cpu = {k: statistics.median(c for _, c in v) for k, v in samples.items()}
    base = "python -c pass"
    print(f"{'command':<22}{'wall ms':>9}{'x python':>10}{'cpu ms':>9}{'x python':>10}")
    for label, _ in cases:
        print(
            f"{label:<22}{wall[label]:>9.1f}{wall[label] / wall[base]:>10.1f}"
            f"{cpu[label]:>9.1f}{cpu[label] / cpu[base]:>10.1f}"
        )
    over = wall["agent-env --version"] - wall[base]
    scan = wall["agent-env --help"] - wall["... --no-plugins --help"]
    print(f"loading entry-point plugins for --help costs {scan:.1f} ms")
    verdict = "within" if over <= TARGET_MS else "OVER"
    print(
        f"--version costs {over:.1f} ms over a bare interpreter ({verdict} the {TARGET_MS:.0f} ms target)"
    )
    hello = wall["agent-env run hello"]
    verdict = "within" if hello <= TARGET_MS else "OVER"
    print(
        f"run hello takes {hello:.1f} ms wall, {hello / wall[base]:.1f}x "
        f"python -c pass ({verdict} the {TARGET_MS:.0f} ms target)"
    )
    if opts.compare:
        other = "compare: run hello"
        print(
            f"run hello vs the compared installation: wall x{hello / wall[other]:.2f}, "
            f"cpu x{cpu['agent-env run hello'] / cpu[other]:.2f}"
        )
    shutil.rmtree(home, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
