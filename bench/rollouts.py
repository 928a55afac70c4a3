"""Rollouts at training speed: our OpenEnv server with warm pools (`openenv serve --pool N`) vs
an echo env served by openenv itself, interleaved in one run (issue 31).

Both servers run as separate processes on loopback for the whole run and are driven by
openenv's own `GenericEnvClient`; each figure is measured on ours, then on openenv's, then the
next figure. Ours serves bench/openenv.py's echo bundle (one env behind the run's gateway, one
agent, one prompt); a pooled reset resets a deployed instance (the env's data/reset and re-seed,
the gateway's per-episode state) instead of deploying one.

Printed, ours | openenv | ratio:
- warm-up: the time until the pool had served N concurrent resets once (the fill);
- reset p50/p99 from a warm pool, one session resetting one episode after another
  (target: <= 20 ms on local envs, <= 50 ms on Docker);
- N concurrent resets (N = the largest level): time until the last answered (target: within 2x);
- 10-step episodes per second at each level (ours: reset, 9 echo calls, end_turn; openenv's:
  reset, 10 echo calls) (target: >= openenv's), `--rounds` times (each round runs every level
  on ours then on openenv's), then each level's median ratio over the rounds and the load;
- failed resets in `--reset-rounds` rounds of N concurrent resets (target 0), with reasons;
- processes: what each server runs (its process tree) after the warm-up and at the end, and
  how many processes this benchmark started;
- fork: bench/_fork.py's measurement of N children from one snapshot, cold and onto a warm
  pool (`fork_section`, `--fork N`, 0 to skip).

    .venv/bin/python bench/rollouts.py [--levels 1,16,64] [--seconds 5] [--rounds 1]
        [--pool 64] [--reset-rounds 10] [--docker] [--fork 32] [--config FILE]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

HERE = Path(__file__).resolve().parent
# bench/openenv.py is named like the package it measures: keep bench/ off the import path and
# load the helpers by path.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]


def _load(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(f"_bench_{name}", HERE / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


bench = _load("openenv")
ECHO = {"type": "call_tool", "tool_name": "echo_message", "arguments": {"message": "hi"}}
END_TURN = {"type": "call_tool", "tool_name": "end_turn", "arguments": {"response": "done"}}
STEPS = 10


def pct(ordered: list[float], q: float) -> float:
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


async def _finish(env: Any, ours: bool) -> None:
    """End an episode so that its instance goes back to the pool (ours) or simply move on."""
    if ours:
        r = await env.step(END_TURN)
        assert r.done, r


async def reset_latency(url: str, episodes: int, ours: bool) -> dict[str, float]:
    """One session, `episodes` episodes one after another: the latency of each reset."""
    from openenv.core.generic_client import GenericEnvClient

    took: list[float] = []
    failed = 0
    async with GenericEnvClient(base_url=url, message_timeout_s=600) as env:
        for _ in range(episodes):
            t0 = time.perf_counter()
            r = await env.reset()
            took.append(time.perf_counter() - t0)
            if r.done:
                failed += 1
                continue
            await _finish(env, ours)
    took.sort()
    return {
        "p50_ms": 1000 * statistics.median(took),
        "p99_ms": 1000 * pct(took, 0.99),
        "failed": failed,
    }


async def concurrent_resets(url: str, sessions: int, ours: bool) -> tuple[float, list[str]]:
    """`sessions` sessions reset at once: (seconds until the last answered, failure reasons);
    then each ends its episode (ours: its instance goes back to the pool)."""
    from openenv.core.generic_client import GenericEnvClient

    failures: list[str] = []
    connected, answered = anyio.Event(), anyio.Event()
    counts = {"connected": 0, "answered": 0}
    started, ended = [0.0], [0.0]

    async def session() -> None:
        async with GenericEnvClient(base_url=url, message_timeout_s=600) as env:
            counts["connected"] += 1
            if counts["connected"] == sessions:
                started[0] = time.perf_counter()
                connected.set()
            await connected.wait()
            r = None
            try:
                r = await env.reset()
                if r.done:
                    failures.append(str(r.metadata.get("error") or "(empty reason)"))
            except Exception as e:  # the client raised: the worst failure, counted too
                failures.append(f"the client raised {type(e).__name__}: {e}")
            counts["answered"] += 1
            if counts["answered"] == sessions:
                ended[0] = time.perf_counter()
                answered.set()
            await answered.wait()
            if r is not None and not r.done:
                await _finish(env, ours)

    async with anyio.create_task_group() as tg:
        for _ in range(sessions):
            tg.start_soon(session)
    return ended[0] - started[0], failures


async def episodes(url: str, sessions: int, seconds: float, ours: bool) -> dict[str, float]:
    """`sessions` sessions each running 10-step episodes for `seconds`: episodes/s, and p50
    of one whole episode."""
    from openenv.core.generic_client import GenericEnvClient

    done: list[float] = []
    failed = [0]
    stop_at = [0.0]
    connected = anyio.Event()
    count = [0]

    async def session() -> None:
        async with GenericEnvClient(base_url=url, message_timeout_s=600) as env:
            count[0] += 1
            if count[0] == sessions:
                stop_at[0] = time.perf_counter() + seconds
                connected.set()
            await connected.wait()
            while time.perf_counter() < stop_at[0]:
                t0 = time.perf_counter()
                r = await env.reset()
                if r.done:
                    failed[0] += 1
                    continue
                for _ in range(STEPS - 1 if ours else STEPS):
                    r = await env.step(ECHO)
                    assert r.observation.get("error") is None, r.observation
                await _finish(env, ours)
                done.append(time.perf_counter() - t0)

    async with anyio.create_task_group() as tg:
        for _ in range(sessions):
            tg.start_soon(session)
    done.sort()
    return {
        "episodes_per_s": len(done) / seconds,
        "episode_p50_ms": 1000 * statistics.median(done) if done else float("nan"),
        "failed": failed[0],
    }


def fork_section(url: str, children: int = 32) -> None:
    """Fork of `children` from one task snapshot (bench/_fork.py, in this process, its own
    home): cold (each child deploys its envs) against the same trials deployed without a
    snapshot, and onto a warm pool filled ahead (what a long-lived server with --pool holds).
    `url` is unused: the fork runs through the run pipeline, not the OpenEnv server."""
    fork = _load("_fork")
    figures = fork.measure_fork(children, 1)
    (cold,) = figures["rounds"]
    warm = figures["warm"]
    print(
        f"fork of {children} from one snapshot: cold {cold['wall_s']:.3f} s "
        f"(deploy-only {figures['deploy_only_wall_p50_s']:.3f} s, "
        f"{figures['fork_over_deploy_only']}x), onto a warm pool {warm['wall_s']:.3f} s "
        f"({warm['reused']}/{warm['children']} on warm instances; target <= "
        f"{figures['target_s']} s); digests all equal: "
        f"{cold['digests_equal'] and warm['digests_equal']}; peak processes "
        f"{cold['peak_processes']}/{warm['peak_processes']}"
    )


def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}" if b else "n/a"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--levels", default="1,16,64")
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument(
        "--rounds", type=int, default=1, help="rounds of the episodes/s levels, interleaved"
    )
    parser.add_argument(
        "--pool", type=int, default=0, help="warm instances (default: largest level)"
    )
    parser.add_argument("--episodes", type=int, default=30, help="episodes for the reset p50")
    parser.add_argument("--reset-rounds", type=int, default=10)
    parser.add_argument("--docker", action="store_true", help="our env in a Docker sandbox")
    parser.add_argument(
        "--fork", type=int, default=32, help="children of the fork measurement (0: skip it)"
    )
    parser.add_argument(
        "--config",
        help="a config.toml for our server (e.g. [stores.filesystem] fsync = false, to see "
        "what durable recording costs); default: none",
    )
    args = parser.parse_args()
    levels = [int(x) for x in args.levels.split(",")]
    n = max(levels)
    pool = args.pool or n
    started_here = 0
    with tempfile.TemporaryDirectory(prefix="bench-rollouts-") as tmp:
        bundle = bench.make_bundle(Path(tmp), "docker" if args.docker else None)
        env = {**os.environ, "AGENT_ENV_HOME": str(Path(tmp) / "home")}
        env.pop("AGENT_ENV_CONFIG", None)
        if args.config:
            env["AGENT_ENV_CONFIG"] = str(Path(args.config).resolve())
        ours, ours_url = bench.start_ours(bundle, n, env, pool)
        theirs, theirs_url = bench.start_openenv(n)
        started_here += 2
        print(
            f"ours: openenv serve --pool {pool} ({'docker' if args.docker else 'local'} env), "
            f"pid {ours.pid}; openenv's echo env: pid {theirs.pid}",
            flush=True,
        )
        try:
            anyio.run(bench.wait_health, ours_url)
            anyio.run(bench.wait_health, theirs_url)
            run(args, levels, n, ours, ours_url, theirs, theirs_url)
        finally:
            for proc in (ours, theirs):
                proc.terminate()
                try:
                    proc.wait(timeout=180)
                except subprocess.TimeoutExpired:
                    proc.kill()
    print(
        f"processes this benchmark started: {started_here} (the two servers; their children "
        "are counted in their process trees above)"
    )


def run(
    args: Any,
    levels: list[int],
    n: int,
    ours: subprocess.Popen,
    ours_url: str,
    theirs: subprocess.Popen,
    theirs_url: str,
) -> None:
    both: list[tuple[str, str, bool, subprocess.Popen]] = [
        ("ours", ours_url, True, ours),
        ("openenv", theirs_url, False, theirs),
    ]

    def each(fn: Callable[[str, bool], Any]) -> dict[str, Any]:
        return {name: fn(url, is_ours) for name, url, is_ours, _ in both}

    # the warm-up: N sessions at once make the pool deploy (or finish filling) N instances
    warm = each(lambda url, o: anyio.run(concurrent_resets, url, n, o))
    print(
        f"warm-up, {n} concurrent resets: ours {warm['ours'][0]:.2f} s "
        f"({len(warm['ours'][1])} failed) | openenv {warm['openenv'][0]:.2f} s"
    )
    time.sleep(2.0)  # the last episodes' instances are recycled
    print(
        f"processes after the warm-up: ours {len(bench.tree_pids(ours.pid))}, "
        f"openenv {len(bench.tree_pids(theirs.pid))}"
    )

    lat = each(lambda url, o: anyio.run(reset_latency, url, args.episodes, o))
    print(
        f"reset from a warm pool, 1 session, {args.episodes} episodes: ours p50 "
        f"{lat['ours']['p50_ms']:.1f} ms p99 {lat['ours']['p99_ms']:.1f} ms "
        f"({lat['ours']['failed']} failed) | openenv p50 {lat['openenv']['p50_ms']:.2f} ms "
        f"p99 {lat['openenv']['p99_ms']:.2f} ms | target ours p50 <= "
        f"{50 if args.docker else 20} ms"
    )

    ratios: dict[int, list[float]] = {level: [] for level in levels}
    for rnd in range(args.rounds):
        for level in levels:
            ep = each(lambda url, o, level=level: anyio.run(episodes, url, level, args.seconds, o))
            mine, their_rate = ep["ours"]["episodes_per_s"], ep["openenv"]["episodes_per_s"]
            if their_rate:
                ratios[level].append(mine / their_rate)
            print(
                f"{'' if args.rounds == 1 else f'round {rnd + 1}: '}{level:>3} sessions, "
                f"10-step episodes: ours {mine:.1f}/s (p50 {ep['ours']['episode_p50_ms']:.0f} "
                f"ms, {ep['ours']['failed']} failed) | openenv {their_rate:.1f}/s "
                f"(p50 {ep['openenv']['episode_p50_ms']:.0f} ms) | ratio {ratio(mine, their_rate)} "
                f"(target >= 1) | load {os.getloadavg()[0]:.1f}",
                flush=True,
            )
            time.sleep(1.0)
    if args.rounds > 1:
        for level, got in ratios.items():
            print(
                f"{level:>3} sessions, episodes/s ours / openenv's over {args.rounds} rounds: "
                f"median {statistics.median(got):.2f} (each: "
                f"{', '.join(f'{r:.2f}' for r in got)})"
            )

    failed_total = 0
    times: dict[str, list[float]] = {"ours": [], "openenv": []}
    for r in range(args.reset_rounds):
        got = each(lambda url, o: anyio.run(concurrent_resets, url, n, o))
        for name in times:
            times[name].append(got[name][0])
        failures = got["ours"][1]
        failed_total += len(failures)
        print(
            f"round {r + 1}: {n} concurrent resets: ours {got['ours'][0]:.3f} s, "
            f"{len(failures)} failed | openenv {got['openenv'][0]:.3f} s, "
            f"{len(got['openenv'][1])} failed | ratio {ratio(got['ours'][0], got['openenv'][0])}",
            flush=True,
        )
        for reason in sorted(set(failures)):
            print(f"  failed: {reason[:300]}")
        time.sleep(0.5)
    if args.reset_rounds:
        ours_med = statistics.median(times["ours"])
        theirs_med = statistics.median(times["openenv"])
        print(
            f"{n} concurrent resets, median of {args.reset_rounds} rounds: ours {ours_med:.3f} s "
            f"| openenv {theirs_med:.3f} s | ratio {ratio(ours_med, theirs_med)} (target <= 2); "
            f"failed resets in {args.reset_rounds} rounds: {failed_total} (target 0)"
        )
    print(
        f"processes at the end: ours {len(bench.tree_pids(ours.pid))}, "
        f"openenv {len(bench.tree_pids(theirs.pid))}"
    )
    if args.fork:
        fork_section(ours_url, args.fork)


if __name__ == "__main__":
    main()
