"""Soak: does a long-lived process stay flat? In one run:

- OpenEnv: `--episodes` episodes (default 1,000) through one `agent-env openenv serve`, driven by
  openenv's own `GenericEnvClient`, `--sessions` at a time (default 8). Each episode resets to a
  task whose env (`echo_message`) is a local process behind the episode's gateway, calls the
  tool once and ends the turn (the verifier scores the answer).
- Trials: `--trials` trials (default 2,000) of the same task through one `agent-env run
  --agent oracle --trials N` (the oracle replays the task's solution: the same tool call
  through the gateway, the same answer).

Per decile (in order of completion) it prints the wall time, the median episode/trial time and
the server's (or run's) RSS when the decile ended, then last/first ratios against the targets:
the last 10 % no slower than the first 10 % (ratio <= 1.2) and RSS grown at most 20 % from the
end of the first decile. It counts the processes each front end started (descendants seen by
polling /proc every 0.1 s; an env process lives for a whole episode, so none is missed) and
the descendants still alive at the end (leaks). The machine's load average is printed too:
the figures are only comparable under similar load.

    .venv/bin/python bench/soak.py [--episodes 1000] [--trials 2000] [--sessions 8]
                                   [--concurrency 8]

A quick check: `--episodes 100 --trials 200`; `--episodes 0` or `--trials 0` skips a part.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path

import anyio

HERE = Path(__file__).resolve().parent
# bench/openenv.py is named like the package it measures: keep bench/ off the import path.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
TARGET_RATIO = 1.2
TARGET_RSS_GROWTH = 0.20
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
    {
        "id": "agent",
        "type": "deploy_agent",
        "env_ids": ["echo"],
        # what `--agent oracle` replays in the trials; OpenEnv's client plays it in episodes
        "metadata": {
            "solution": [
                {
                    "tool_calls": [{"tool": "echo_message", "arguments": {"message": "hi"}}],
                    "response": "done",
                }
            ]
        },
    },
    {"id": "ask", "type": "prompt_agent", "prompt_id": "ask", "prompt": "Echo hi, say done."},
    {
        "id": "answer",
        "type": "agent_prompt_response_verifier",
        "verifier_id": "answer",
        "prompt_id": "ask",
        "criteria": [{"id": "done", "type": "response_contains", "needles": ["done"]}],
    },
]


def make_bundle(root: Path) -> Path:
    bundle = root / "soak"
    (bundle / "envs" / "echo").mkdir(parents=True)
    (bundle / "tasks").mkdir()
    (bundle / "envs" / "echo" / "server.py").write_text(ECHO_ENV_SERVER)
    (bundle / "envs" / "echo" / "env.toml").write_text(
        'description = "echo"\ncommand = ["python", "server.py"]\n'
        'requirements = ["agentenv-framework-protocol>=1.0"]\n'
    )
    (bundle / "tasks" / "echo.json").write_text(json.dumps(TASK))
    return bundle


class Watch:
    """Polls a process tree: RSS of the root, the tree's CPU seconds and the load average over
    time, and every descendant pid ever seen.

    The tree's CPU is the sum over every process ever seen of the last CPU time sampled for it
    (monotonic: a descendant reaped by someone else, or reparented, keeps what it was seen to
    spend); a process that lives less than one poll is missed, the same way in every decile."""

    def __init__(self, pid: int, every: float = 0.1):
        self.pid = pid
        self.every = every
        self.seen: set[int] = set()
        self._spent: dict[int, float] = {}  # pid -> CPU seconds last sampled
        self.rss: list[tuple[float, int]] = []  # (time.time(), bytes)
        self.cpu: list[tuple[float, float]] = []  # (time.time(), CPU seconds of the tree)
        self.load: list[tuple[float, float]] = []  # (time.time(), 1-minute load average)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.is_set():
            rss = rss_of(self.pid)
            if rss is None:
                return
            now = time.time()
            self.rss.append((now, rss))
            alive = descendants(self.pid)
            self.seen.update(alive)
            for pid in (self.pid, *alive):
                cpu = cpu_of(pid)
                if cpu is not None:
                    self._spent[pid] = max(cpu, self._spent.get(pid, 0.0))
            self.cpu.append((now, sum(self._spent.values())))
            self.load.append((now, os.getloadavg()[0]))
            self._stop.wait(self.every)

    def rss_at(self, when: float) -> int:
        """The last RSS sampled at or before `when`."""
        return _at(self.rss, when)

    def cpu_at(self, when: float) -> float:
        """The tree's CPU seconds at the last sample at or before `when`."""
        return _at(self.cpu, when)

    def load_at(self, when: float) -> float:
        return _at(self.load, when)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def _at(samples: list, when: float):
    before = [v for t, v in samples if t <= when]
    return before[-1] if before else samples[0][1]


_TICK = os.sysconf("SC_CLK_TCK")


def cpu_of(pid: int) -> float | None:
    """User + system CPU seconds of `pid`."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / _TICK  # utime, stime


def rss_of(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def descendants(pid: int) -> set[int]:
    out: set[int] = set()
    todo = [pid]
    while todo:
        parent = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{parent}/task")
        except OSError:
            continue
        for tid in tasks:
            try:
                with open(f"/proc/{parent}/task/{tid}/children") as f:
                    kids = [int(k) for k in f.read().split()]
            except OSError:
                continue
            for kid in kids:
                if kid not in out:
                    out.add(kid)
                    todo.append(kid)
    return out


def deciles(items: list[tuple[float, float, float]], watch: Watch, label: str) -> bool:
    """Print one line per decile of `items` = (start, end, seconds), in order of completion;
    True when the last decile meets the targets.

    Wall time is what the targets are about, but on a shared machine it follows the load: each
    decile also shows the load average when it ended and the CPU seconds the process tree
    spent per item, which does not (a process that degrades spends more CPU per item)."""
    items = sorted(items, key=lambda i: i[1])
    n = len(items)
    start = min(i[0] for i in items)
    rows = []
    previous_end = start
    previous_cpu = watch.cpu_at(start)
    for d in range(10):
        part = items[d * n // 10 : (d + 1) * n // 10]
        end = part[-1][1]
        cpu = watch.cpu_at(end)
        rows.append(
            (
                end - previous_end,
                statistics.median(i[2] for i in part),
                watch.rss_at(end),
                len(part),
                (cpu - previous_cpu) / len(part),
                watch.load_at(end),
            )
        )
        previous_end, previous_cpu = end, cpu
    print(f"{label}: decile  count   wall s  median s  RSS MB  CPU ms/item  load")
    for d, (wall, median, rss, count, cpu, load) in enumerate(rows):
        print(
            f"{label}: {d + 1:>6}{count:>7}{wall:>9.2f}{median:>10.3f}{rss / 2**20:>8.1f}"
            f"{cpu * 1000:>13.1f}{load:>6.1f}"
        )
    wall_ratio = rows[-1][0] / rows[0][0]
    median_ratio = rows[-1][1] / rows[0][1]
    cpu_ratio = rows[-1][4] / rows[0][4] if rows[0][4] else float("nan")
    growth = rows[-1][2] / rows[0][2] - 1
    ok = wall_ratio <= TARGET_RATIO and median_ratio <= TARGET_RATIO
    ok_rss = growth <= TARGET_RSS_GROWTH
    print(
        f"{label}: last/first decile wall x{wall_ratio:.2f}, median x{median_ratio:.2f} "
        f"({'within' if ok else 'OVER'} x{TARGET_RATIO}); RSS {rows[0][2] / 2**20:.1f} -> "
        f"{rows[-1][2] / 2**20:.1f} MB ({growth:+.1%}, "
        f"{'within' if ok_rss else 'OVER'} +{TARGET_RSS_GROWTH:.0%}); "
        f"total {previous_end - start:.1f} s"
    )
    print(
        f"{label}: CPU per item last/first decile x{cpu_ratio:.2f} "
        f"({'within' if cpu_ratio <= TARGET_RATIO else 'OVER'} x{TARGET_RATIO}); "
        f"load {rows[0][5]:.1f} -> {rows[-1][5]:.1f}"
    )
    return ok and ok_rss


def report_processes(label: str, watch: Watch, units: int, what: str) -> None:
    alive = descendants(watch.pid)
    print(
        f"{label}: {len(watch.seen)} processes started ({len(watch.seen) / units:.2f} per {what}),"
        f" {len(alive)} descendants alive at the end"
    )


# ---- OpenEnv ------------------------------------------------------------------------------


def start_server(bundle: Path, sessions: int, env: dict) -> tuple[subprocess.Popen, str]:
    agent_env = str(Path(sys.executable).parent / "agent-env")
    proc = subprocess.Popen(
        [agent_env, "openenv", "serve", str(bundle), "--port", "0", "--json"]
        + ["--max-sessions", str(sessions)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    return proc, json.loads(proc.stdout.readline())["url"]


async def episodes(
    url: str, count: int, sessions: int
) -> tuple[list[tuple[float, float, float]], list[str]]:
    """(start, end, seconds) of the episodes that scored 1, and what went wrong in the others
    (`count` episodes, `sessions` clients taking turns)."""
    from openenv.core.generic_client import GenericEnvClient

    done: list[tuple[float, float, float]] = []
    failed: list[str] = []
    call = {"type": "call_tool", "tool_name": "echo_message", "arguments": {"message": "hi"}}
    end = {"type": "call_tool", "tool_name": "end_turn", "arguments": {"response": "done"}}

    async def episode(env: GenericEnvClient) -> None:
        t0, w0 = time.perf_counter(), time.time()
        r = await env.reset(task="echo")
        if not r.done:
            r = await env.step(call)
            if r.observation.get("error") is None:
                r = await env.step(end)
        if r.done and r.reward == 1.0:
            done.append((w0, time.time(), time.perf_counter() - t0))
        else:
            failed.append(f"episode {len(done) + len(failed)}: {r.observation}")

    async def session(s: int) -> None:
        todo = len(range(s, count, sessions))
        while todo:
            async with GenericEnvClient(base_url=url, message_timeout_s=600) as env:
                while todo:
                    todo -= 1
                    try:
                        await episode(env)
                    except Exception as e:  # noqa: BLE001 - counted; a new client goes on
                        failed.append(f"episode {len(done) + len(failed)}: {e!r}")
                        break
                    finally:
                        if (len(done) + len(failed)) % max(1, count // 10) == 0:
                            print(f"  {len(done) + len(failed)}/{count} episodes", file=sys.stderr)

    async with anyio.create_task_group() as tg:
        for s in range(sessions):
            tg.start_soon(session, s)
    return done, failed


def run_openenv(bundle: Path, env: dict, count: int, sessions: int) -> bool:
    proc, url = start_server(bundle, sessions, env)
    watch = Watch(proc.pid)
    try:
        items, failed = anyio.run(episodes, url, count, sessions)
        print(f"openenv: {len(items)}/{count} episodes scored 1")
        for message in failed[:5]:
            print(f"openenv: {message}")
        ok = deciles(items, watch, "openenv")
        report_processes("openenv", watch, count, "episode")
        return ok
    finally:
        watch.stop()
        proc.terminate()
        try:
            proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()


# ---- agent-env run ------------------------------------------------------------------------


def run_trials(bundle: Path, env: dict, count: int, concurrency: int, tmp: Path) -> bool:
    agent_env = str(Path(sys.executable).parent / "agent-env")
    export = tmp / "trials.jsonl"
    proc = subprocess.Popen(
        [agent_env, "run", str(bundle), "--agent", "oracle", "--trials", str(count)]
        + ["--concurrency", str(concurrency), "--export", str(export)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    watch = Watch(proc.pid)
    code = proc.wait()
    watch.stop()
    rows = [json.loads(line) for line in export.read_text().splitlines()]
    passed = sum(1 for r in rows if r["status"] == "passed")
    print(f"trials: exit {code}, {passed}/{len(rows)} passed")
    for r in [r for r in rows if r["status"] != "passed"][:5]:
        print(f"trials: {r['instance_id']}: {r['outcome']} ({r['failure_class']}): {r['failure']}")
    items = [(_epoch(r["started_at"]), _epoch(r["finished_at"]), float(r["seconds"])) for r in rows]
    ok = deciles(items, watch, "trials")
    report_processes("trials", watch, count, "trial")
    return ok


def _epoch(iso: str) -> float:
    return datetime.fromisoformat(iso).timestamp()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=1000)
    parser.add_argument("--trials", type=int, default=2000)
    parser.add_argument("--sessions", type=int, default=8, help="OpenEnv clients at once")
    parser.add_argument("--concurrency", type=int, default=8, help="trials at once")
    args = parser.parse_args()
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    ok = True
    with tempfile.TemporaryDirectory(prefix="bench-soak-") as tmp:
        bundle = make_bundle(Path(tmp))
        env = {**os.environ, "AGENT_ENV_HOME": str(Path(tmp) / "home")}
        env.pop("AGENT_ENV_CONFIG", None)
        if args.episodes:
            ok &= run_openenv(bundle, env, args.episodes, args.sessions)
            print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        if args.trials:
            ok &= run_trials(bundle, env, args.trials, args.concurrency, Path(tmp))
            print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("flat (time and RSS)" if ok else "NOT flat")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
