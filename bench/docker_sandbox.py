"""The `docker` sandbox provider against the floor of the same work done by hand (figures,
not pass/fail).

Run: .venv/bin/python bench/docker_sandbox.py [--runs 10] [--image agentenv/base:py3.11]
Deploy-to-first-response of a small Python HTTP server, median and p90 in ms:
- floor: `docker run -d -p 127.0.0.1::8080 IMAGE python3 -c SERVER` (SDK, one call) + GETs
  until it answers 200, then removal;
- provider, server in the image (an env built from its Dockerfile): `create(ports=[8080])` +
  `start_process(python3 -c SERVER)` + GETs until 200, then teardown;
- provider, server copied in first: the same plus a `write_file` of the server before it
  starts (an env folder without its own image).
Also per-operation costs: create, exec of `true`, write_file, read_file, teardown.
Issue 5's target: the provider within 1.3x of the floor.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import urllib.error
import urllib.request

import anyio
from _pong import SERVER  # bench/ is the script's folder: on the path when run

from agent_env.sandbox import SandboxSpec
from agentenv_docker_sandbox.provider import DockerProvider


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1) as response:
            return response.status == 200
    except (urllib.error.URLError, ConnectionError, OSError):
        return False


def wait(url: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not answers(url):
        if time.monotonic() > deadline:
            raise TimeoutError(url)
        time.sleep(0.005)


def floor_once(client, image: str) -> tuple[float, float]:
    started = time.perf_counter()
    container = client.containers.run(
        image,
        ["python3", "-c", SERVER],
        detach=True,
        ports={"8080/tcp": ("127.0.0.1", None)},
        environment={"PORT": "8080"},
    )
    container.reload()
    port = container.attrs["NetworkSettings"]["Ports"]["8080/tcp"][0]["HostPort"]
    wait(f"http://127.0.0.1:{port}")
    deployed = time.perf_counter() - started
    t = time.perf_counter()
    container.remove(force=True)
    return deployed, time.perf_counter() - t


async def provider_once(provider: DockerProvider, image: str, copy: bool) -> dict[str, float]:
    out: dict[str, float] = {}
    started = time.perf_counter()
    box = await provider.create(SandboxSpec(image=image, ports=[8080]))
    out["create"] = time.perf_counter() - started
    try:
        return await _use(box, out, started, copy)
    finally:
        await box.teardown()


async def _use(box, out: dict[str, float], started: float, copy: bool) -> dict[str, float]:
    if copy:
        t = time.perf_counter()
        await box.write_file("/app/server.py", SERVER.encode())
        out["write_file"] = time.perf_counter() - t
        url = (await box.start_process(["python3", "/app/server.py"], port=8080)).url
    else:
        url = (await box.start_process(["python3", "-c", SERVER], port=8080)).url
    await anyio.to_thread.run_sync(wait, url)
    out["deploy"] = time.perf_counter() - started
    t = time.perf_counter()
    await box.exec(["true"])
    out["exec"] = time.perf_counter() - t
    t = time.perf_counter()
    await box.read_file("/etc/os-release")
    out["read_file"] = time.perf_counter() - t
    t = time.perf_counter()
    await box.teardown()
    out["teardown"] = time.perf_counter() - t
    return out


def fmt(values: list[float]) -> str:
    ms = sorted(v * 1000 for v in values)
    p90 = ms[min(len(ms) - 1, int(round(0.9 * (len(ms) - 1))))]
    return f"median {statistics.median(ms):7.1f} ms   p90 {p90:7.1f} ms"


async def main(runs: int, image: str) -> None:
    import docker

    client = docker.from_env()
    with tempfile.TemporaryDirectory() as home:
        provider = DockerProvider({"image": image}, home=home)
        floor_once(client, image)  # warm-up
        await provider_once(provider, image, False)
        floors, floor_rm, ours, copied = [], [], [], []
        for _ in range(runs):  # interleaved so both see the same machine load
            deployed, removed = await anyio.to_thread.run_sync(floor_once, client, image)
            floors.append(deployed)
            floor_rm.append(removed)
            ours.append(await provider_once(provider, image, False))
            copied.append(await provider_once(provider, image, True))
    print(f"docker sandbox, {runs} runs, image {image}")
    print(f"  floor  docker run .. until 200     {fmt(floors)}")
    floor = statistics.median(floors)
    for label, rows in (("server in image", ours), ("server copied in", copied)):
        ratio = statistics.median(o["deploy"] for o in rows) / floor
        print(
            f"  provider, {label:<17} until 200 {fmt([o['deploy'] for o in rows])}   {ratio:.2f}x floor"
        )
    print("  (target: provider within 1.3x of the floor)")
    for key in ("create", "write_file", "exec", "read_file", "teardown"):
        rows = copied if key == "write_file" else ours
        print(f"  {key:<34} {fmt([o[key] for o in rows])}")
    print(f"  floor removal                      {fmt(floor_rm)}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--image", default="agentenv/base:py3.11")
    args = parser.parse_args()
    anyio.run(main, args.runs, args.image)
