"""Tool-call latency and throughput: direct to an env vs through the gateway, in one run.

Starts the echo example env and a gateway in front of it as separate processes, then measures
sequential latency (p50/p99) and throughput with N concurrent clients for both paths. The load
generator is the same lean keep-alive client for both paths, so the difference is the gateway.

    .venv/bin/python bench/gateway.py [--calls 2000] [--clients 32] [--seconds 5]

A/B against another copy of the protocol package (e.g. `git archive main protocol/src | tar -x
-C /tmp/base`), alternating whole runs in one session and printing medians and ratios:

    .venv/bin/python bench/gateway.py --baseline /tmp/base/protocol/src [--ab-runs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time

import anyio

from agentenv_protocol.client import EnvClient
from agentenv_protocol.fastpost import PostPool
from agentenv_protocol.mcp_http import McpHttp


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(args: list[str], env: dict) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, *args],
        env={**os.environ, **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


async def wait_ready(url: str, token: str | None = None) -> None:
    async with EnvClient(url, token=token) as client:
        await client.wait_ready(timeout=30)


def cpu_seconds(pid: int) -> float:
    """User+system CPU time of a process (Linux /proc), 0 where unavailable."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def lean_client(url: str, headers: dict) -> tuple[McpHttp, PostPool]:
    pool = PostPool(url)
    return McpHttp(url + "/mcp", pool=pool, headers=headers), pool


async def sequential(url: str, headers: dict, calls: int) -> list[float]:
    mcp, pool = lean_client(url, headers)
    try:
        for _ in range(50):
            await mcp.request("tools/call", {"name": "echo", "arguments": {"text": "warm"}})
        out = []
        for i in range(calls):
            t = time.perf_counter()
            answer = await mcp.request(
                "tools/call", {"name": "echo", "arguments": {"text": f"hi {i}"}}
            )
            out.append(time.perf_counter() - t)
            assert "result" in answer and not answer["result"].get("isError"), answer
        return out
    finally:
        await pool.aclose()


async def throughput(url: str, headers: dict, clients: int, seconds: float) -> tuple[float, int]:
    done = 0
    mcp, pool = lean_client(url, headers)
    try:
        deadline = time.perf_counter() + seconds

        async def worker(n: int) -> None:
            nonlocal done
            while time.perf_counter() < deadline:
                answer = await mcp.request(
                    "tools/call", {"name": "echo", "arguments": {"text": f"w{n}"}}
                )
                assert "result" in answer, answer
                done += 1

        start_t = time.perf_counter()
        async with anyio.create_task_group() as tg:
            for n in range(clients):
                tg.start_soon(worker, n)
        return done / (time.perf_counter() - start_t), done
    finally:
        await pool.aclose()


async def run(args: argparse.Namespace) -> None:
    env_port, gw_port, token = free_port(), free_port(), "bench-admin-token"
    env_url, gw_url = f"http://127.0.0.1:{env_port}", f"http://127.0.0.1:{gw_port}"
    procs = [
        start(
            ["-m", "agentenv_protocol.examples.echo"],
            {"MCP_HOST": "127.0.0.1", "MCP_PORT": str(env_port)},
        )
    ]
    try:
        await wait_ready(env_url)
        procs.append(
            start(
                [
                    "-m",
                    "agentenv_protocol.gateway",
                    "--env",
                    f"echo={env_url}",
                    "--port",
                    str(gw_port),
                ],
                {"AGENTENV_GATEWAY_TOKEN": token},
            )
        )
        await wait_ready(gw_url, token)
        auth = {"authorization": f"Bearer {token}"}
        paths = (("direct", env_url, {}), ("gateway", gw_url, auth))
        lat: dict[str, list[float]] = {label: [] for label, *_ in paths}
        tputs: dict[str, list[float]] = {label: [] for label, *_ in paths}
        cpu: dict[str, list[list[float]]] = {label: [] for label, *_ in paths}
        for _ in range(args.rounds):  # interleaved, so a noisy neighbour hits both paths alike
            for label, url, headers in paths:
                lat[label] += await sequential(url, headers, args.calls // args.rounds)
                before = [cpu_seconds(p.pid) for p in procs]
                tput, calls = await throughput(
                    url, headers, args.clients, args.seconds / args.rounds
                )
                cpu[label].append(
                    [
                        (cpu_seconds(p.pid) - b) * 1e6 / calls
                        for p, b in zip(procs, before, strict=False)
                    ]
                )
                tputs[label].append(tput)
        rows = []
        for label, *_ in paths:
            used = [statistics.median(c[i] for c in cpu[label]) for i in range(len(procs))]
            rows.append(
                (
                    label,
                    pct(lat[label], 0.5) * 1e3,
                    pct(lat[label], 0.99) * 1e3,
                    statistics.mean(lat[label]) * 1e3,
                    statistics.median(tputs[label]),
                    used[0],
                    used[1] if label == "gateway" else 0.0,
                )
            )
        print(
            f"\ntool call 'echo' ({args.calls} sequential calls; {args.clients} concurrent clients for "
            f"{args.seconds:g}s; {args.rounds} interleaved rounds, median throughput; {os.cpu_count()} CPUs)"
        )
        print(
            f"{'path':<10}{'p50 ms':>10}{'p99 ms':>10}{'mean ms':>10}{'calls/s':>12}{'env us/call':>14}"
            f"{'gw us/call':>12}"
        )
        for label, p50, p99, mean, tput, env_cpu, gw_cpu in rows:
            print(
                f"{label:<10}{p50:>10.3f}{p99:>10.3f}{mean:>10.3f}{tput:>12.0f}{env_cpu:>14.0f}"
                f"{(f'{gw_cpu:.0f}' if gw_cpu else '-'):>12}"
            )
        (_, d50, _, _, dt, _, _), (_, g50, _, _, gt, _, _) = rows
        if args.json:
            print("BENCH " + json.dumps({r[0]: r[1:] for r in rows}))
        print(
            f"\ngateway adds {g50 - d50:.3f} ms at p50 (target < 1 ms); keeps {100 * gt / dt:.0f}% of direct "
            f"throughput (target >= 70%)"
        )
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()


COLUMNS = ("p50 ms", "p99 ms", "mean ms", "calls/s", "env us/call", "gw us/call")


def ab(args: argparse.Namespace, argv: list[str]) -> None:
    """Alternate whole runs of this bench on the baseline package and on this tree's."""
    passthrough = [a for a in argv if a not in ("--baseline", args.baseline)]
    results: dict[str, list[dict]] = {"baseline": [], "this tree": []}
    for i in range(args.ab_runs):
        for label, path in (("baseline", args.baseline), ("this tree", None)):
            env = {**os.environ}
            if path:
                env["PYTHONPATH"] = os.pathsep.join(filter(None, [path, env.get("PYTHONPATH")]))
            out = subprocess.run(
                [sys.executable, __file__, *passthrough, "--json"],
                env=env,
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            line = next(x for x in out.splitlines() if x.startswith("BENCH "))
            results[label].append(json.loads(line[6:]))
            print(f"run {i + 1} {label}: {line[6:]}", flush=True)
    print(f"\nmedians of {args.ab_runs} alternating runs each (ratio = this tree / baseline)")
    for path in ("direct", "gateway"):
        for col, name in enumerate(COLUMNS):
            base, new = (
                statistics.median(r[path][col] for r in results[k])
                for k in ("baseline", "this tree")
            )
            ratio = f"{new / base:.2f}x" if base else "-"
            print(f"{path:<9}{name:<13}{base:>10.3f}{new:>10.3f}{ratio:>8}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=6.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="also print the rows as one JSON line")
    parser.add_argument("--baseline", help="A/B: the src dir of the protocol package to compare")
    parser.add_argument("--ab-runs", type=int, default=3, help="A/B: runs of each side")
    args = parser.parse_args()
    if args.baseline:
        ab(args, sys.argv[1:])
    else:
        anyio.run(run, args)


if __name__ == "__main__":
    main()
