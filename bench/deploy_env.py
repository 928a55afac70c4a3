"""Deploy-to-first-tool-call of an env, per provider, against the floor of the same work by hand
(figures, not pass/fail). Issue 5's targets: within 1.3x of the floor on Docker; under 300 ms
as a local process.

Run: .venv/bin/python bench/deploy_env.py [--runs 5] [--providers local,docker]

Framework: the real engine runs `examples/echo-docker`'s env in a task of `deploy_env` and an
`env_outcome_verifier` whose `verify` makes one tool call through the run's gateway; the time
is from the `deploy_env` step's start to that call's answer. One warm-up deploy per provider
comes first (printed separately): it builds the image, and on `local` starts the fork server
that every later local deploy of the process forks from (see envs/forkserver.py).
Floors: the same work by hand on the same API path, with no CLI process started per run.
- docker: the Docker Engine API calls `docker run -d -p 127.0.0.1::18765 IMAGE` makes, made
  in-process with the docker SDK the provider uses (create + start with the port published,
  inspect for the host port), then GETs of the card until it answers; removal not timed.
- local: what the framework's warm start does, by hand: a helper process that has already
  imported the fork server's warm set (`forkserver.PRELOAD`; started once, not timed) forks
  a child that runs `server.py` as `__main__` on a free port; the time is from the request
  to the card's answer. A cold `python server.py` (the interpreter's start and imports) is
  printed too, as what a deploy without the fork server would pay.
The framework's time also holds the tool call through the gateway; the floors stop at the
card (a tool call straight to the env costs a few ms more).
Runs alternate framework/floor so both see the same machine load.
"""

from __future__ import annotations

import argparse
import functools
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import anyio

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "echo-docker"
VERIFY = """
import asyncio, os, time
from agentenv_protocol.client import EnvClient

def verify(mcp_url):
    async def call():
        async with EnvClient(mcp_url.rsplit("/mcp", 1)[0], mcp_path="/mcp") as env:
            return await env.call_tool("echo", {"text": "hi"})
    result = asyncio.run(call())
    with open(os.environ["BENCH_STAMP"], "w") as f:
        f.write(repr(time.perf_counter()))
    return [{"id": "echo", "result": result.text == "hi", "description": result.text}]
"""
TASK = """[
  {"id": "deploy", "type": "deploy_env", "env_id": "echo", "sandbox_type": "%s"},
  {"id": "call", "type": "env_outcome_verifier", "env_id": "echo", "file_artifact_id": "call"}
]"""


def card_answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/.well-known/agent-env.json", timeout=1) as r:
            return r.status == 200
    except OSError:
        return False


async def framework_once(provider: str, bundle: Path, home: Path, stamp: Path) -> float:
    from agent_env.bundles import load_bundle, materialize
    from agent_env.engine.instance import TaskInstance
    from agent_env.engine.records import new_id
    from agent_env.engine.services import EngineServices, Reporter
    from agent_env.plugins import get_plugin_manager
    from agent_env.sandboxes.manager import SandboxManager
    from agent_env.stores import open_stores

    started: dict[str, float] = {}

    class Clock(Reporter):
        def step_started(self, instance, step_id):
            started.setdefault(step_id, time.perf_counter())

    plugins = get_plugin_manager()
    loaded = load_bundle(str(bundle), plugins)
    stores = open_stores({}, plugins, home=home)
    try:
        materialized = await materialize(loaded, stores)
        services = EngineServices(
            plugins=plugins,
            config=None,
            stores=stores,
            sandboxes=SandboxManager(plugins, None, home),
            artifacts=materialized.artifacts,
            reporter=Clock(),
        )
        instance = await TaskInstance.create(
            services,
            task=loaded.tasks[provider],
            instance_id=new_id("ti"),
            run_id="bench",
            bundle={"spec": str(bundle), "name": "bench"},
        )
        record = await instance.run()
    finally:
        await stores.close()
    if record["status"] != "passed":
        raise SystemExit(
            f"{provider}: the bench task did not pass: {record['failure'] or record['outcome']}"
        )
    return float(stamp.read_text()) - started["deploy"]


def docker_floor(client, image: str) -> float:
    """`docker run -d -p 127.0.0.1::18765 IMAGE` as Engine API calls (docker SDK), then the
    card; the container's removal is not timed."""
    t0 = time.perf_counter()
    container = client.containers.run(image, detach=True, ports={"18765/tcp": ("127.0.0.1", None)})
    try:
        container.reload()
        port = container.attrs["NetworkSettings"]["Ports"]["18765/tcp"][0]["HostPort"]
        url = f"http://127.0.0.1:{port}"
        while not card_answers(url):
            time.sleep(0.01)
        return time.perf_counter() - t0
    finally:
        container.remove(force=True, v=True)


# The local floor's helper: imports what an env server imports, then per line on stdin
# ("<port> <server.py>") forks a child that serves it, and answers the child's pid.
FORKER = """
import importlib, os, runpy, sys
from agentenv_core_steps.envs.forkserver import PRELOAD  # the fork server's warm set
for name in PRELOAD:
    try:
        importlib.import_module(name)
    except ImportError:
        pass
for line in sys.stdin:
    port, path = line.split(" ", 1)
    pid = os.fork()
    if pid == 0:
        os.setsid()
        os.environ.update(MCP_HOST="127.0.0.1", MCP_PORT=port)
        os.chdir(os.path.dirname(path.strip()))
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1), os.dup2(devnull, 2)
        runpy.run_path(path.strip(), run_name="__main__")
        os._exit(0)
    print(pid, flush=True)
"""


class LocalFloor:
    """A warm helper process that forks env servers (started once; see FORKER)."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", FORKER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )

    def once(self, server: Path) -> float:
        port = free_port()
        t0 = time.perf_counter()
        self.proc.stdin.write(f"{port} {server}\n")
        self.proc.stdin.flush()
        pid = int(self.proc.stdout.readline())
        try:
            while not card_answers(f"http://127.0.0.1:{port}"):
                time.sleep(0.01)
            return time.perf_counter() - t0
        finally:
            os.killpg(pid, signal.SIGKILL)

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cold_local(server: Path) -> float:
    """`python server.py` started afresh (interpreter start and imports), then the card."""
    port = free_port()
    env = {**os.environ, "MCP_HOST": "127.0.0.1", "MCP_PORT": str(port)}
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, str(server)],
        env=env,
        cwd=server.parent,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        while not card_answers(f"http://127.0.0.1:{port}"):
            if proc.poll() is not None:
                raise SystemExit(f"the env exited with {proc.returncode}")
            time.sleep(0.01)
        return time.perf_counter() - t0
    finally:
        proc.kill()
        proc.wait()


def built_image(home: Path) -> str:
    out = subprocess.check_output(
        [
            "docker",
            "images",
            "--format",
            "{{.Repository}}:{{.Tag}} {{.CreatedAt}}",
            "agentenv/env-echo",
        ],
        text=True,
    ).splitlines()
    return sorted(out, key=lambda line: line.split(" ", 1)[1])[-1].split(" ", 1)[0]


def ms(values: list[float]) -> str:
    return f"median {statistics.median(values) * 1000:7.0f} ms  (min {min(values) * 1000:.0f}, max {max(values) * 1000:.0f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--providers", default="local,docker")
    args = parser.parse_args()
    providers = [p for p in args.providers.split(",") if p]
    work = Path(tempfile.mkdtemp(prefix="bench-deploy-env-"))
    os.environ["AGENT_ENV_HOME"] = str(work / "home")
    bundle = work / "bundle"
    shutil.copytree(EXAMPLE, bundle, ignore=shutil.ignore_patterns("__pycache__"))
    (bundle / "artifacts" / "call").mkdir(parents=True)
    (bundle / "artifacts" / "call" / "call.py").write_text(VERIFY)
    for provider in providers:
        (bundle / "tasks" / f"{provider}.json").write_text(TASK % provider)
    stamp = work / "stamp"
    os.environ["BENCH_STAMP"] = str(stamp)
    print(f"deploy-to-first-tool-call, {args.runs} runs each (after one warm-up run)", flush=True)
    server = bundle / "envs" / "echo" / "server.py"
    try:
        for provider in providers:
            first = anyio.run(framework_once, provider, bundle, work / "home", stamp)  # warm-up
            print(
                f"{provider:7s} first deploy in this process (builds, venvs, fork server): "
                f"{first * 1000:.0f} ms",
                flush=True,
            )
            ours: list[float] = []
            floor: list[float] = []
            cold: list[float] = []
            if provider == "docker":
                import docker

                client = docker.from_env()
                image = built_image(work / "home")
                take_floor = functools.partial(docker_floor, client, image)
                what = "Engine API run + card"
            else:
                forker = LocalFloor()
                forker.once(server)  # warm-up
                take_floor = functools.partial(forker.once, server)
                what = "warm fork + card"
            try:
                for _ in range(args.runs):
                    ours.append(anyio.run(framework_once, provider, bundle, work / "home", stamp))
                    floor.append(take_floor())
                    if provider == "local":
                        cold.append(cold_local(server))
            finally:
                if provider == "local":
                    forker.close()
            ratio = statistics.median(ours) / statistics.median(floor)
            print(f"{provider:7s} agent-env deploy_env -> tool call: {ms(ours)}")
            print(f"{provider:7s} floor ({what}):{' ' * (21 - len(what))}{ms(floor)}")
            if cold:
                print(f"{provider:7s} cold `python server.py` + card:  {ms(cold)}")
            print(f"{provider:7s} ratio {ratio:.2f}x", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
