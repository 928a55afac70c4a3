"""Tool-call latency and throughput: direct to an env vs through the gateway, in one run.

Starts the echo example env and gateways in front of it as separate processes: ours (fastpost's
pooled connections towards the env, uvicorn + httptools serving, tool calls on the hot path) and
the alternatives we chose against (httpx or aiohttp towards the env; uvicorn's h11 server; no hot
path: every request through the ASGI app), see bench/_gateway_variants.py.
Then, interleaving every path in each round, it measures sequential latency (p50/p99) and the
throughput of 8, 64 and 256 concurrent clients, and finally a burst: 4,096 calls in flight at
once from 256 clients through each gateway, each answered and logged exactly once (the call-log
rows are counted). The load generator is the same lean keep-alive client for every path, so the
difference is the gateway.

    .venv/bin/python bench/gateway.py [--clients 8,64,256] [--seconds 2] [--rounds 3]
        [--variants fastpost,httpx,aiohttp,h11,asgi] [--burst 4096 --burst-clients 256]

Where our gateway's CPU per call goes: `--variants fastpost,serve-only,forward-only` adds ours
taken apart (HTTP serving alone; serving plus the forward to the env), see
bench/_gateway_variants.py's `--answer`.

A/B against another copy of the protocol package (e.g. `git archive main protocol/src | tar -x
-C /tmp/base`), alternating whole runs in one session and printing medians and ratios:

    .venv/bin/python bench/gateway.py --baseline /tmp/base/protocol/src [--ab-runs 3]
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
import json
import os
import resource
import selectors
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio

from agentenv_protocol.client import EnvClient
from agentenv_protocol.fastpost import PostPool
from agentenv_protocol.mcp_http import McpHttp

HERE = Path(__file__).resolve().parent
#: gateway variant -> (HTTP client towards the env, HTTP server); "fastpost" is what we ship
VARIANTS = {
    "fastpost": ("fastpost", "httptools"),
    "httpx": ("httpx", "httptools"),
    "aiohttp": ("aiohttp", "httptools"),
    "h11": ("fastpost", "h11"),
    "asgi": ("fastpost", "asgi"),
}
#: our gateway taken apart (`_gateway_variants.py --answer`), only when asked for by name: what
#: serving alone costs, and serving plus the forward to the env; not in the burst (their answers
#: are not the gateway's)
PARTS = {"serve-only": ("fastpost", "httptools"), "forward-only": ("fastpost", "httptools")}


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
        await client.wait_ready(timeout=180)  # a loaded machine starts processes slowly


def cpu_seconds(pid: int) -> float:
    """User+system CPU time of a process (Linux /proc), 0 where unavailable."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def own_cpu_seconds() -> float:
    """User+system CPU time of this process (the load generator)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def lean_client(url: str, headers: dict, connections: int = 256) -> tuple[McpHttp, PostPool]:
    try:
        pool = PostPool(url, max_connections=connections)
    except TypeError:  # an A/B baseline's PostPool, from before the connection cap
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
    """Calls per second of `clients` clients, each its own connection calling in a loop."""
    done = 0
    lean = [lean_client(url, headers, 1) for _ in range(clients)]
    try:
        deadline = time.perf_counter() + seconds

        async def worker(n: int) -> None:
            nonlocal done
            mcp = lean[n][0]
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
        for _, pool in lean:
            await pool.aclose()


def _request(host: str, headers: dict, text: str) -> bytes:
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": text}},
        }
    ).encode()
    extra = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    head = (
        f"POST /mcp HTTP/1.1\r\nhost: {host}\r\n{extra}content-type: application/json\r\n"
        f"accept: application/json, text/event-stream\r\ncontent-length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


def _complete(buf: bytes) -> bytes | None:
    """The body of a whole HTTP response in `buf` (content-length or chunked), else None."""
    head, sep, rest = buf.partition(b"\r\n\r\n")
    if not sep:
        return None
    lines = head.lower().split(b"\r\n")
    length = next((int(x.split(b":")[1]) for x in lines if x.startswith(b"content-length:")), None)
    if length is not None:
        return rest[:length] if len(rest) >= length else None
    if not rest.endswith(b"0\r\n\r\n"):
        return None
    body, pos = b"", 0
    while True:
        eol = rest.index(b"\r\n", pos)
        size = int(rest[pos:eol], 16)
        if size == 0:
            return body
        body += rest[eol + 2 : eol + 2 + size]
        pos = eol + 2 + size + 2


def burst(url: str, headers: dict, calls: int, clients: int) -> dict:
    """`calls` calls in flight at once from `clients` clients (calls/clients connections each):
    every request is sent as its connection opens, before any answer is read (raw sockets, so
    the load generator's own CPU stays out of the way); each call's latency, how many were
    answered with their own text, the wall time, and the texts sent."""
    host, port = url.removeprefix("http://").split(":")
    per_client = calls // clients
    sent: dict[socket.socket, tuple[str, float]] = {}
    failures: list[str] = []
    t0 = time.perf_counter()
    for c in range(clients):
        for k in range(per_client):
            text = f"burst-{c}-{k}"
            try:
                sock = socket.create_connection((host, int(port)), timeout=120)
                sock.sendall(_request(host, headers, text))
            except OSError as e:
                failures.append(f"{text}: {type(e).__name__}: {e}")
                continue
            sock.setblocking(False)
            sent[sock] = (text, time.perf_counter())
    latencies: list[float] = []
    buffers = {sock: b"" for sock in sent}
    with selectors.DefaultSelector() as selector:
        for sock in sent:
            selector.register(sock, selectors.EVENT_READ)
        deadline = time.perf_counter() + 180
        while buffers and time.perf_counter() < deadline:
            for key, _ in selector.select(timeout=1):
                sock = key.fileobj
                assert isinstance(sock, socket.socket)
                try:
                    chunk = sock.recv(65536)
                except OSError:
                    chunk = b""
                buffers[sock] += chunk
                body = _complete(buffers[sock])
                if body is None and chunk:
                    continue
                selector.unregister(sock)
                sock.close()
                del buffers[sock]
                text, started = sent[sock]
                answer = json.loads(body) if body else {}
                content = (answer.get("result") or {}).get("content") or [{}]
                if content[0].get("text") == text:
                    latencies.append(time.perf_counter() - started)
                else:
                    failures.append(f"{text}: {json.dumps(answer)[:200] or 'closed, no answer'}")
    for sock in buffers:
        failures.append(f"{sent[sock][0]}: no answer in 180s")
        sock.close()
    return {
        "sent": clients * per_client,
        "answered": len(latencies),
        "failures": failures,
        "wall": time.perf_counter() - t0,
        "latencies": latencies,
        "ids": {f"burst-{c}-{k}" for c in range(clients) for k in range(per_client)},
    }


def logged_ids(rows: list[dict]) -> list[str]:
    """The echo texts of the burst calls in a gateway's call log, one per row."""
    out = []
    for row in rows:
        text = (row.get("arguments") or {}).get("text", "")
        if text.startswith("burst-"):
            out.append(text)
    return out


async def call_log(url: str, token: str, path: Path | None) -> list[dict]:
    """A gateway's call log: its JSONL file, or (kept in memory) its `GET /trajectory`."""
    if path is not None:
        return [json.loads(line) for line in path.read_text().splitlines()]
    import httpx

    async with httpx.AsyncClient(timeout=120, trust_env=False) as http:
        r = await http.get(f"{url}/trajectory", headers={"authorization": f"Bearer {token}"})
        r.raise_for_status()
        return r.json()["calls"]


def available(variant: str) -> bool:
    upstream, _ = VARIANTS.get(variant) or PARTS[variant]
    return upstream == "fastpost" or importlib.util.find_spec(upstream) is not None


async def run(args: argparse.Namespace) -> None:
    client_counts = [int(c) for c in args.clients.split(",")]
    wanted = [v for v in args.variants.split(",") if v]
    unknown = [v for v in wanted if v not in VARIANTS and v not in PARTS]
    if unknown:
        raise SystemExit(
            f"--variants: unknown {unknown}; choose from {sorted(VARIANTS)} or {sorted(PARTS)}"
        )
    missing = [v for v in wanted if not available(v)]
    for v in missing:
        print(f"variant {v!r}: {VARIANTS[v][0]} is not installed here, so it is not measured")
    variants = [v for v in wanted if v not in missing]
    token = "bench-admin-token"
    env_port = free_port()
    env_url = f"http://127.0.0.1:{env_port}"
    logs = Path(tempfile.mkdtemp(prefix="bench-gateway-"))
    to_file = args.call_log == "file"
    procs = [
        start(
            ["-m", "agentenv_protocol.examples.echo"],
            {"MCP_HOST": "127.0.0.1", "MCP_PORT": str(env_port)},
        )
    ]
    started = 1
    try:
        await wait_ready(env_url)
        auth = {"authorization": f"Bearer {token}"}
        paths: list[tuple[str, str, dict, int]] = [("direct", env_url, {}, 0)]
        for variant in variants:
            upstream, server = VARIANTS.get(variant) or PARTS[variant]
            answer = variant if variant in PARTS else "full"
            port = free_port()
            procs.append(
                start(
                    [
                        str(HERE / "_gateway_variants.py"),
                        "--upstream",
                        upstream,
                        "--server",
                        server,
                        "--answer",
                        answer,
                        "--",
                        "--env",
                        f"echo={env_url}",
                        "--port",
                        str(port),
                        *(["--trajectory", str(logs / f"{variant}.jsonl")] if to_file else []),
                    ],
                    {"AGENTENV_GATEWAY_TOKEN": token},
                )
            )
            started += 1
            paths.append((f"gw-{variant}", f"http://127.0.0.1:{port}", auth, len(procs) - 1))
        for _, url, _, _ in paths[1:]:
            await wait_ready(url, token)
        labels = [p[0] for p in paths]
        lat: dict[str, list[float]] = {label: [] for label in labels}
        tputs = {(label, n): [] for label in labels for n in client_counts}
        cpu = {(label, n): [] for label in labels for n in client_counts}
        for _ in range(args.rounds):  # interleaved, so a noisy neighbour hits every path alike
            for label, url, headers, proc_index in paths:
                lat[label] += await sequential(url, headers, args.calls // args.rounds)
                for n in client_counts:
                    watched = [procs[0], *([procs[proc_index]] if proc_index else [])]
                    before = [cpu_seconds(p.pid) for p in watched]
                    own = own_cpu_seconds()
                    tput, calls = await throughput(url, headers, n, args.seconds)
                    used = [
                        (cpu_seconds(p.pid) - b) * 1e6 / calls
                        for p, b in zip(watched, before, strict=True)
                    ]
                    used.append((own_cpu_seconds() - own) * 1e6 / calls)
                    cpu[(label, n)].append(used)
                    tputs[(label, n)].append(tput)
        print(
            f"\ntool call 'echo': {args.calls} sequential calls per path; {args.rounds} interleaved "
            f"rounds of {args.seconds:g}s per client count (median throughput); {os.cpu_count()} "
            f"CPUs; processes started: {started} (1 env, {started - 1} gateways); the gateways' "
            f"call log: {'a JSONL file' if to_file else 'in memory, as a run keeps it'}"
        )
        print(f"{'path':<14}{'p50 ms':>9}{'p99 ms':>9}{'mean ms':>9}")
        for label in labels:
            values = lat[label]
            print(
                f"{label:<14}{pct(values, 0.5) * 1e3:>9.3f}{pct(values, 0.99) * 1e3:>9.3f}"
                f"{statistics.mean(values) * 1e3:>9.3f}"
            )
        print(
            f"\n{'path':<14}{'clients':>8}{'calls/s':>10}{'of direct':>11}{'env us':>8}"
            f"{'gw us':>7}{'load us':>9}{'of direct by CPU':>18}"
        )
        summary: dict = {}
        for n in client_counts:
            direct = statistics.median(tputs[("direct", n)])
            direct_cpu = sum(statistics.median(c[i] for c in cpu[("direct", n)]) for i in (0, -1))
            for label in labels:
                tput = statistics.median(tputs[(label, n)])
                env_cpu = statistics.median(c[0] for c in cpu[(label, n)])
                load_cpu = statistics.median(c[-1] for c in cpu[(label, n)])
                gw_cpu = (
                    statistics.median(c[1] for c in cpu[(label, n)]) if label != "direct" else 0
                )
                ratio = tput / direct if direct else 0.0
                # what two cores given to this bench alone would do: all CPU per call, summed
                by_cpu = direct_cpu / (env_cpu + gw_cpu + load_cpu)
                summary[f"{label}@{n}"] = [tput, ratio, env_cpu, gw_cpu, load_cpu, by_cpu]
                print(
                    f"{label:<14}{n:>8}{tput:>10.0f}{100 * ratio:>10.0f}%{env_cpu:>8.0f}"
                    f"{(f'{gw_cpu:.0f}' if gw_cpu else '-'):>7}{load_cpu:>9.0f}{100 * by_cpu:>17.0f}%"
                )
        print(
            "(us: CPU microseconds per call of the env, the gateway and the load generator; "
            "'by CPU' = direct's total CPU per call / this path's)"
        )
        if args.burst:
            print(
                f"\nburst: {args.burst} calls in flight at once from {args.burst_clients} clients "
                f"({args.burst // args.burst_clients} connections each)"
            )
            print(
                f"{'path':<14}{'answered':>10}{'logged once':>13}{'wall s':>8}{'calls/s':>9}"
                f"{'p50 ms':>9}{'p99 ms':>9}"
            )
            for label, url, headers, proc_index in paths:
                if label[3:] in PARTS:
                    continue
                b = await anyio.to_thread.run_sync(
                    burst, url, headers, args.burst, args.burst_clients
                )
                if proc_index:
                    log_file = logs / f"{label[3:]}.jsonl" if to_file else None
                    counts = collections.Counter(logged_ids(await call_log(url, token, log_file)))
                    once = sum(1 for i in b["ids"] if counts[i] == 1)
                    extra = sum(1 for c in counts.values() if c > 1)
                    logged = f"{once}" + (f" (+{extra} twice)" if extra else "")
                else:
                    logged = "-"
                lats = b["latencies"] or [0.0]
                summary[f"{label}@burst"] = [b["answered"], b["sent"], b["wall"]]
                print(
                    f"{label:<14}{b['answered']:>5}/{b['sent']:<4}{logged:>13}{b['wall']:>8.2f}"
                    f"{b['answered'] / b['wall']:>9.0f}{pct(lats, 0.5) * 1e3:>9.1f}"
                    f"{pct(lats, 0.99) * 1e3:>9.1f}"
                )
                for failure in sorted(set(b["failures"]))[:3]:
                    print(f"    failed: {failure}")
        if args.json:
            print("BENCH " + json.dumps(summary))
        if "fastpost" in variants:
            ours = [summary[f"gw-fastpost@{n}"] for n in client_counts]
            figures = ", ".join(
                f"{100 * r[1]:.0f}% ({100 * r[5]:.0f}% by CPU) at {n}"
                for r, n in zip(ours, client_counts, strict=True)
            )
            print(f"\nour gateway keeps {figures} clients of direct throughput (target >= 70%)")
        if "fastpost" in variants and "asgi" in variants:
            figures = ", ".join(
                f"{summary[f'gw-fastpost@{n}'][3]:.0f} vs {summary[f'gw-asgi@{n}'][3]:.0f} us "
                f"({summary[f'gw-fastpost@{n}'][3] / summary[f'gw-asgi@{n}'][3]:.2f}x) at {n}"
                for n in client_counts
            )
            print(
                f"gateway CPU per call, hot path vs every request through ASGI: {figures} clients"
            )
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()


COLUMNS = ("calls/s", "of direct", "env us", "gw us", "load us", "of direct by CPU")


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
    keys = [k for k in results["this tree"][0] if not k.endswith("@burst")]
    for key in keys:
        for col, name in enumerate(COLUMNS):
            base, new = (
                statistics.median(r[key][col] for r in results[k] if key in r)
                for k in ("baseline", "this tree")
            )
            ratio = f"{new / base:.2f}x" if base else "-"
            print(f"{key:<20}{name:<13}{base:>10.3f}{new:>10.3f}{ratio:>8}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=1500, help="sequential calls per path")
    parser.add_argument("--clients", default="8,64,256", help="client counts, comma-separated")
    parser.add_argument("--seconds", type=float, default=2.0, help="per round and client count")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--variants",
        default=",".join(VARIANTS),
        help=f"gateways to measure, comma-separated, from {', '.join(VARIANTS)}; also "
        f"{', '.join(PARTS)}: ours taken apart (serving alone; serving and the forward)",
    )
    parser.add_argument("--burst", type=int, default=4096, help="calls in flight at once (0: none)")
    parser.add_argument("--burst-clients", type=int, default=256)
    parser.add_argument(
        "--call-log",
        choices=("memory", "file"),
        default="memory",
        help="where the gateways keep their call log: in memory, as a run's gateway does "
        "(the burst's rows are read back with GET /trajectory), or in a JSONL file "
        "(--trajectory, as `python -m agentenv_protocol.gateway --trajectory` writes it)",
    )
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
