"""Where a 10-step episode's time goes at one session: reset, step and end_turn latency (p50)
and the server's CPU per episode (its whole process tree: server, env, reaper), for our OpenEnv
server with a warm pool against openenv's echo env, and optionally against a baseline copy of
our code, in interleaved blocks of episodes in one run.

    .venv/bin/python bench/episode_phases.py [--episodes 40] [--blocks 3]
        [--baseline /tmp/base]   # e.g. git archive BASE kernel/src protocol/src \\
                                 #   plugins/openenv/src plugins/core-steps/src | tar -x -C /tmp/base

Ours: reset, 9 echo calls, end_turn; openenv's: reset, 10 echo calls (bench/rollouts.py's
episode). Each phase's p50 and p99, and the mean episode (what episodes/s at one session is). The baseline server runs with PYTHONPATH at the baseline's kernel, protocol and
openenv and core-steps sources (the rest of the tree is shared) and its own AGENT_ENV_HOME.
"""

from __future__ import annotations

import argparse
import atexit
import importlib.util
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]


def _load(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(f"_bench_{name}", HERE / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


rollouts = _load("rollouts")
bench = rollouts.bench
BASE_SOURCES = (
    "kernel/src",
    "protocol/src",
    "plugins/openenv/src",
    "plugins/core-steps/src",  # the episode's steps (prompt_agent, the verifiers)
)


def tree_cpu(pid: int) -> float:
    """User+system CPU seconds of `pid` and its descendants (Linux /proc)."""
    total = 0.0
    for p in bench.tree_pids(pid):
        try:
            with open(f"/proc/{p}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, IndexError, ValueError):
            pass
    return total


async def block(url: str, ours: bool, pid: int, episodes: int, out: dict | None) -> None:
    """`episodes` episodes on one session; each phase's latency and the CPU per episode."""
    from openenv.core.generic_client import GenericEnvClient

    async with GenericEnvClient(base_url=url, message_timeout_s=600) as env:
        cpu0 = tree_cpu(pid)
        for _ in range(episodes):
            t0 = time.perf_counter()
            r = await env.reset()
            reset = time.perf_counter() - t0
            assert not r.done, r.metadata
            steps = []
            for _ in range(rollouts.STEPS - 1 if ours else rollouts.STEPS):
                s = time.perf_counter()
                r = await env.step(rollouts.ECHO)
                steps.append(time.perf_counter() - s)
                assert r.observation.get("error") is None, r.observation
            end = None
            if ours:
                s = time.perf_counter()
                r = await env.step(rollouts.END_TURN)
                end = time.perf_counter() - s
                assert r.done, r
            if out is not None:
                out["episode"].append(time.perf_counter() - t0)
                out["reset"].append(reset)
                out["step"].extend(steps)
                if end is not None:
                    out["end_turn"].append(end)
        if out is not None:
            out["cpu"].append((tree_cpu(pid) - cpu0) / episodes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=40, help="episodes per block")
    parser.add_argument("--blocks", type=int, default=3, help="interleaved blocks per server")
    parser.add_argument(
        "--baseline", help="a folder holding a baseline's " + ", ".join(BASE_SOURCES)
    )
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-phases-"))
    bundle = bench.make_bundle(tmp)
    env = {**os.environ, "AGENT_ENV_HOME": str(tmp / "home")}
    env.pop("AGENT_ENV_CONFIG", None)
    servers: list[tuple[str, Any, str, bool]] = []
    proc, url = bench.start_ours(bundle, 4, env, 2)
    atexit.register(proc.terminate)
    servers.append(("ours", proc, url, True))
    if args.baseline:
        base = Path(args.baseline)
        path = os.pathsep.join(str(base / s) for s in BASE_SOURCES)
        benv = {**env, "AGENT_ENV_HOME": str(tmp / "home-baseline"), "PYTHONPATH": path}
        proc, url = bench.start_ours(bundle, 4, benv, 2)
        atexit.register(proc.terminate)
        servers.append(("baseline", proc, url, True))
    proc, url = bench.start_openenv(4)
    atexit.register(proc.terminate)
    servers.append(("openenv", proc, url, False))
    for _, _, url, _ in servers:
        anyio.run(bench.wait_health, url)
    print(f"processes this benchmark started: {len(servers)} servers", flush=True)
    figures = {
        name: {k: [] for k in ("episode", "reset", "step", "end_turn", "cpu")}
        for name, *_ in servers
    }
    for _name, proc, url, ours in servers:  # one untimed block each: warm pools, warm imports
        anyio.run(block, url, ours, proc.pid, max(5, args.episodes // 4), None)
    for _ in range(args.blocks):
        for name, proc, url, ours in servers:
            anyio.run(block, url, ours, proc.pid, args.episodes, figures[name])
    ms = lambda xs: f"{1000 * statistics.median(xs):.2f}" if xs else "-"  # noqa: E731
    p99 = lambda xs: f"{1000 * rollouts.pct(sorted(xs), 0.99):.1f}" if xs else "-"  # noqa: E731
    for name, f in figures.items():
        mean = statistics.fmean(f["episode"])
        print(
            f"{name}: episode p50 {ms(f['episode'])} ms p99 {p99(f['episode'])} ms, mean "
            f"{1000 * mean:.2f} ms ({1 / mean:.1f} episodes/s), reset p50 {ms(f['reset'])} ms "
            f"p99 {p99(f['reset'])} ms, step p50 {ms(f['step'])} ms p99 {p99(f['step'])} ms, "
            f"end_turn p50 {ms(f['end_turn'])} ms p99 {p99(f['end_turn'])} ms, server CPU per "
            f"episode {ms(f['cpu'])} ms (blocks: {', '.join(f'{1000 * c:.1f}' for c in f['cpu'])})"
        )
    theirs = statistics.median(figures["openenv"]["episode"])
    for name in figures:
        if name != "openenv":
            mine = statistics.median(figures[name]["episode"])
            print(f"{name} episode p50 / openenv's: {mine / theirs:.2f}")
    if args.baseline:
        a, b = figures["ours"], figures["baseline"]
        print(
            f"ours / baseline: episode p50 {statistics.median(a['episode']) / statistics.median(b['episode']):.2f}, "
            f"server CPU per episode {statistics.median(a['cpu']) / statistics.median(b['cpu']):.2f}"
        )
    print(f"load average at the end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
