"""Startup benchmark: median wall time of `agent-env --version`, `agent-env --help`,
`agent-env run hello` and a bare `python -c pass` over N runs each, plus `--no-plugins --help`
(the difference is what loading the entry-point plugins costs). A figure, not a pass/fail test.
Byte-compiled modules are used (PYTHONDONTWRITEBYTECODE is unset); hello runs in a scratch home.

    .venv/bin/python bench/startup.py [-n 20]

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


def _time(cmd: list[str], runs: int, env: dict[str, str]) -> list[float]:
    for _ in range(2):  # warm the OS page cache and .pyc files
        subprocess.run(cmd, capture_output=True, check=True, env=env)
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, capture_output=True, check=True, env=env)
        samples.append((time.perf_counter() - start) * 1000)
    return samples


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--runs", type=int, default=20)
    parser.add_argument("--agent-env", default=None, help="path of the agent-env script")
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
    home = tempfile.mkdtemp(prefix="agentenv-bench-startup-")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["AGENT_ENV_HOME"] = home
    plugins = sorted(
        f"{ep.name} ({ep.dist.name if ep.dist else '?'})" for ep in entry_points(group="agent_env")
    )
    print(
        f"python {sys.version.split()[0]}, {opts.runs} runs each, "
        f"{len(plugins)} entry-point plugins: {', '.join(plugins) or 'none'}"
    )
    medians = {}
    print(f"{'command':<22}{'median ms':>10}{'min ms':>9}{'max ms':>9}{'vs python':>11}")
    for label, cmd in cases:
        samples = _time(cmd, opts.runs, env)
        medians[label] = statistics.median(samples)
        delta = medians[label] - medians["python -c pass"]
        print(
            f"{label:<22}{medians[label]:>10.1f}{min(samples):>9.1f}{max(samples):>9.1f}"
            f"{delta:>+11.1f}"
        )
    over = medians["agent-env --version"] - medians["python -c pass"]
    scan = medians["agent-env --help"] - medians["... --no-plugins --help"]
    print(f"loading entry-point plugins for --help costs {scan:.1f} ms")
    verdict = "within" if over <= TARGET_MS else "OVER"
    print(
        f"--version costs {over:.1f} ms over a bare interpreter ({verdict} the {TARGET_MS:.0f} ms target)"
    )
    hello = medians["agent-env run hello"]
    verdict = "within" if hello <= TARGET_MS else "OVER"
    print(
        f"run hello takes {hello:.1f} ms wall, {hello / medians['python -c pass']:.1f}x "
        f"python -c pass ({verdict} the {TARGET_MS:.0f} ms target)"
    )
    shutil.rmtree(home, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
