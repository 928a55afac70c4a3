"""OpenEnv step throughput and latency: a trivial env through our OpenEnv server vs an echo env
served by openenv itself, in one run.

Both servers run as separate processes on loopback; the load is N concurrent sessions of
openenv's own `GenericEnvClient` over WebSocket, each reset once (all at once, timed), then calling the
echo tool as fast as it can for `--seconds`. Reported per level (1, 16, 64 sessions): steps/s,
p50/p99 step latency, and our/openenv ratios; the resets: p50/p99 of one reset and the time
until all N sessions had reset together (ours deploys the task's env and gateway per reset);
and the processes each server runs once every session has reset (its process tree: ours is
the server, the env fork server, the sandbox lease reaper (`sh`) and one env process forked
per session).

- ours: `agent-env openenv serve` on a bundle with one env (`echo_message`, a local process
  behind the run's gateway), one agent, one prompt: every step crosses the gateway (auth and
  call log) to the env.
- openenv: an `MCPEnvironment` around a FastMCP server with `echo_message`, the shape of
  OpenEnv's `envs/echo_env`, served by openenv's `create_app` (tools in-process).

    .venv/bin/python bench/openenv.py [--levels 1,16,64] [--seconds 5] [--rounds 3]
    .venv/bin/python bench/openenv.py --levels 64 --reset-rounds 10   # the reset race
    .venv/bin/python bench/openenv.py --pool 64   # ours with warm pools (openenv serve --pool)
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import anyio

HERE = Path(__file__).resolve().parent
# This file is named like the package it measures: keep bench/ off the import path, but load
# the process-tree helper from it by path.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]


def _load_proctree():
    import importlib.util

    spec = importlib.util.spec_from_file_location("_proctree", HERE / "_proctree.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


tree_pids = _load_proctree().tree_pids
ECHO_ENV_SERVER = '''
from agentenv_protocol import AgentEnvEnvironment, environment_card, tool


@environment_card(name="echo")
class Echo(AgentEnvEnvironment):
    @tool()
    def echo_message(self, message: str) -> str:
        """Echo the message back."""
        return message


if __name__ == "__main__":
    Echo().serve()
'''
TASK = [
    {"id": "env", "type": "deploy_env", "env_id": "echo"},
    {"id": "agent", "type": "deploy_agent", "env_ids": ["echo"]},
    {
        "id": "ask",
        "type": "prompt_agent",
        "prompt_id": "ask",
        "prompt": "Echo things.",
        "timeout_seconds": 3600,
    },
    {
        "id": "answer",
        "type": "agent_prompt_response_verifier",
        "verifier_id": "answer",
        "prompt_id": "ask",
        "criteria": [{"id": "done", "type": "response_contains", "needles": ["done"]}],
    },
]
OPENENV_ECHO = '''
import sys
import uvicorn
from fastmcp import FastMCP
from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.mcp_environment import MCPEnvironment
from openenv.core.env_server.mcp_types import CallToolAction, CallToolObservation
from openenv.core.env_server.types import Observation, State


class EchoMCP(MCPEnvironment):
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self):
        mcp = FastMCP("echo_env")

        @mcp.tool
        def echo_message(message: str) -> str:
            """Echo the message back."""
            return message

        super().__init__(mcp)
        self._state = State(episode_id=None, step_count=0)

    def reset(self, seed=None, episode_id=None, **kwargs):
        self._state = State(episode_id=episode_id, step_count=0)
        return Observation(done=False, reward=0.0, metadata={"status": "ready"})

    def _step_impl(self, action, timeout_s=None, **kwargs):
        return Observation(done=False, metadata={"error": "unknown action"})

    @property
    def state(self):
        return self._state


app = create_app(EchoMCP, CallToolAction, CallToolObservation, env_name="echo_env",
                 max_concurrent_envs=int(sys.argv[2]), reset_observation_cls=Observation)
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
'''


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_bundle(root: Path, sandbox_type: str | None = None) -> Path:
    """The echo bundle under `root`; `sandbox_type` (e.g. `docker`) for its env's sandbox."""
    bundle = root / ("echo-openenv" if sandbox_type is None else f"echo-openenv-{sandbox_type}")
    (bundle / "envs" / "echo").mkdir(parents=True)
    (bundle / "tasks").mkdir()
    (bundle / "envs" / "echo" / "server.py").write_text(ECHO_ENV_SERVER)
    (bundle / "envs" / "echo" / "env.toml").write_text(
        textwrap.dedent(
            """\
            description = "echo"
            command = ["python", "server.py"]
            requirements = ["agentenv-framework-protocol>=1.0"]
            """
        )
    )
    task = [dict(s) for s in TASK]
    if sandbox_type is not None:
        task[0]["sandbox_type"] = sandbox_type
    (bundle / "tasks" / "echo.json").write_text(json.dumps(task))
    # the echo env keeps no state (it serves no data/reset): a warm pool may reuse it as it is
    (bundle / "bundle.toml").write_text('reuse = "reset"\n')
    return bundle


def start_ours(
    bundle: Path, sessions: int, env: dict, pool: int = 0
) -> tuple[subprocess.Popen, str]:
    """`agent-env openenv serve` on `bundle` (with `--pool` warm instances per task)."""
    agent_env = str(Path(sys.executable).parent / "agent-env")
    proc = subprocess.Popen(
        [
            agent_env,
            "openenv",
            "serve",
            str(bundle),
            "--port",
            "0",
            "--json",
            "--max-sessions",
            str(sessions),
            "--pool",
            str(pool),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    return proc, json.loads(proc.stdout.readline())["url"]


async def wait_health(url: str) -> None:
    import httpx

    # a deadline, not a count of polls: on a loaded 2-core machine (load 28) openenv's server
    # took 151 s to import and come up
    deadline = time.monotonic() + 600
    async with httpx.AsyncClient() as client:
        while time.monotonic() < deadline:
            try:
                if (await client.get(url + "/health")).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            await anyio.sleep(0.1)
    raise RuntimeError(f"{url} did not come up within 600 s")


def start_openenv(sessions: int) -> tuple[subprocess.Popen, str]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-c", OPENENV_ECHO, str(port), str(sessions)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return proc, f"http://127.0.0.1:{port}"


async def load(url: str, sessions: int, seconds: float, server_pid: int) -> dict[str, float]:
    from openenv.core.generic_client import GenericEnvClient

    latencies: list[float] = []
    resets: list[float] = []
    ready = anyio.Event()
    n_ready = 0
    stop_at = [0.0]
    processes = [0]
    resets_started, resets_done = [0.0], [0.0]
    connected = anyio.Event()
    n_connected = 0

    async def session(i: int) -> None:
        nonlocal n_ready, n_connected
        async with GenericEnvClient(base_url=url, message_timeout_s=600) as env:
            n_connected += 1
            if n_connected == sessions:
                resets_started[0] = time.perf_counter()
                connected.set()
            await connected.wait()  # every session resets at once
            t0 = time.perf_counter()
            r = await env.reset()
            resets.append(time.perf_counter() - t0)
            assert not r.done, r.metadata
            n_ready += 1
            if n_ready == sessions:
                processes[0] = len(tree_pids(server_pid))
                resets_done[0] = time.perf_counter()
                stop_at[0] = time.perf_counter() + seconds
                ready.set()
            await ready.wait()
            action = {
                "type": "call_tool",
                "tool_name": "echo_message",
                "arguments": {"message": f"hi {i}"},
            }
            while time.perf_counter() < stop_at[0]:
                t0 = time.perf_counter()
                r = await env.step(action)
                latencies.append(time.perf_counter() - t0)
                error = r.observation.get("error")
                assert error is None, error

    async with anyio.create_task_group() as tg:
        for i in range(sessions):
            tg.start_soon(session, i)
    latencies.sort()
    resets.sort()
    return {
        "steps_per_s": len(latencies) / seconds,
        "p50_ms": 1000 * statistics.median(latencies),
        "p99_ms": 1000 * pct(latencies, 0.99),
        "reset_p50_ms": 1000 * statistics.median(resets),
        "reset_p99_ms": 1000 * pct(resets, 0.99),
        # all N sessions reset at once: until the last one answered
        "all_reset_s": resets_done[0] - resets_started[0],
        "processes": processes[0],
    }


def pct(ordered: list[float], q: float) -> float:
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def reset_round(url: str, sessions: int) -> tuple[float, list[str]]:
    """`sessions` sessions reset at once against one server: (seconds until the last answered,
    the reasons of those that failed)."""
    from openenv.core.generic_client import GenericEnvClient

    failures: list[str] = []
    connected = anyio.Event()
    n_connected = 0
    started = [0.0]

    async def session() -> None:
        nonlocal n_connected
        async with GenericEnvClient(base_url=url, message_timeout_s=600) as env:
            n_connected += 1
            if n_connected == sessions:
                started[0] = time.perf_counter()
                connected.set()
            await connected.wait()
            try:
                r = await env.reset()
            except Exception as e:  # the client raised: the worst failure, counted too
                failures.append(f"the client raised {type(e).__name__}: {e}")
                return
            if r.done:
                failures.append(str(r.metadata.get("error") or "(empty reason)"))

    async with anyio.create_task_group() as tg:
        for _ in range(sessions):
            tg.start_soon(session)
    return time.perf_counter() - started[0], failures


def reset_rounds(bundle: Path, env: dict, sessions: int, rounds: int, pool: int = 0) -> None:
    """`rounds` rounds of `sessions` concurrent resets against one server of ours (the port
    and secret race of issue 31): every round's time and failures, and the total."""
    proc, url = start_ours(bundle, sessions, env, pool)
    failed = 0
    try:
        anyio.run(wait_health, url)
        for r in range(rounds):
            took, failures = anyio.run(reset_round, url, sessions)
            failed += len(failures)
            print(
                f"reset round {r + 1}: {sessions} concurrent resets in {took:6.2f} s, "
                f"{len(failures)} failed",
                flush=True,
            )
            for reason in sorted(set(failures)):
                print(f"  failed: {reason[:300]}")
    finally:
        proc.terminate()
        proc.wait(timeout=120)
    print(f"{rounds} rounds of {sessions} concurrent resets: {failed} failed")


def measure(start, sessions: int, seconds: float, warm_up: bool = False) -> dict[str, float]:
    """One server's figures at `sessions`; `warm_up`: first one untimed round of `sessions`
    resets (with `--pool`, the timed resets then come from a filled pool)."""
    proc, url = start(sessions)
    try:
        anyio.run(wait_health, url)
        if warm_up:
            took, failures = anyio.run(reset_round, url, sessions)
            print(f"  warm-up: {sessions} resets in {took:.2f} s, {len(failures)} failed")
            time.sleep(1.0)  # the abandoned episodes' instances are reset and idle again
        return anyio.run(load, url, sessions, seconds, proc.pid)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()


def line(label: str, n: int, ours: dict[str, float], theirs: dict[str, float]) -> str:
    """Every figure `load` computes, ours and openenv's: steps, resets, processes."""
    return (
        f"{label}{n:>3} sessions | steps: ours {ours['steps_per_s']:7.0f}/s "
        f"p50 {ours['p50_ms']:6.2f} ms p99 {ours['p99_ms']:7.2f} ms | openenv "
        f"{theirs['steps_per_s']:7.0f}/s p50 {theirs['p50_ms']:6.2f} ms "
        f"p99 {theirs['p99_ms']:7.2f} ms | throughput ratio "
        f"{ours['steps_per_s'] / theirs['steps_per_s']:.2f}\n"
        f"{label}{n:>3} sessions | resets: ours p50 {ours['reset_p50_ms']:8.1f} ms "
        f"p99 {ours['reset_p99_ms']:8.1f} ms, all {n} in {ours['all_reset_s']:6.2f} s | "
        f"openenv p50 {theirs['reset_p50_ms']:8.1f} ms p99 {theirs['reset_p99_ms']:8.1f} ms, "
        f"all {n} in {theirs['all_reset_s']:6.2f} s | ratio (all) "
        f"{ours['all_reset_s'] / theirs['all_reset_s']:.1f}\n"
        f"{label}{n:>3} sessions | processes once all had reset: ours "
        f"{ours['processes']:.0f}, openenv {theirs['processes']:.0f}"
    )


def median_of(runs: list[dict[str, float]]) -> dict[str, float]:
    return {k: statistics.median(r[k] for r in runs) for k in runs[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--levels", default="1,16,64")
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument(
        "--rounds", type=int, default=1, help="alternate the two servers this many times per level"
    )
    parser.add_argument(
        "--reset-rounds",
        type=int,
        default=0,
        help="instead: this many rounds of N concurrent resets (N: each of --levels) against "
        "our server, counting failed resets",
    )
    parser.add_argument(
        "--pool",
        type=int,
        default=0,
        help="serve ours with this many warm instances per task (`openenv serve --pool`): a "
        "reset then resets a deployed instance instead of deploying one (bench/rollouts.py "
        "measures the pooled rollouts in full)",
    )
    args = parser.parse_args()
    levels = [int(x) for x in args.levels.split(",")]
    print(f"ours: openenv serve --pool {args.pool}", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-openenv-") as tmp:
        bundle = make_bundle(Path(tmp))
        env = {**os.environ, "AGENT_ENV_HOME": str(Path(tmp) / "home")}
        env.pop("AGENT_ENV_CONFIG", None)
        if args.reset_rounds:
            for n in levels:
                reset_rounds(bundle, env, n, args.reset_rounds, args.pool)
            return
        servers = {
            "ours": lambda s: start_ours(bundle, s, env, args.pool),
            "openenv": start_openenv,
        }
        for n in levels:
            runs: dict[str, list[dict[str, float]]] = {"ours": [], "openenv": []}
            for r in range(args.rounds):
                order = ["ours", "openenv"] if r % 2 == 0 else ["openenv", "ours"]
                for name in order:
                    warm_up = name == "ours" and args.pool > 0
                    runs[name].append(measure(servers[name], n, args.seconds, warm_up))
                if args.rounds > 1:
                    print(line(f"round {r + 1}: ", n, runs["ours"][-1], runs["openenv"][-1]))
            label = "median: " if args.rounds > 1 else ""
            print(line(label, n, median_of(runs["ours"]), median_of(runs["openenv"])), flush=True)


if __name__ == "__main__":
    main()
