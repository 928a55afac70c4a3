"""Docker-specific sandbox behaviour beyond the shared contract: labels, how ports are reached,
limits enforced by cgroups (or refused), network modes, and bad input refused up front."""

from __future__ import annotations

import os

import pytest

from agent_env.errors import SandboxError
from agent_env.sandbox import SandboxSpec
from agentenv_docker_sandbox.testing import BASE_IMAGE, ours
from agentenv_testing.contracts.sandbox import SERVER, wait_http

pytestmark = pytest.mark.anyio


def spec(**kw) -> SandboxSpec:
    return SandboxSpec(image=BASE_IMAGE, **kw)


async def test_containers_carry_our_labels_and_are_reached_at_their_address(
    provider, docker_client
):
    """On this machine (Docker Engine on Linux) the bridge is local: a declared port is not
    published (no docker-proxy per port); the server is reached at the container's address."""
    assert provider.reaches_containers()
    box = await provider.create(
        spec(ports=[8080], labels={"run_id": "r1", "task_instance_id": "t1", "sandbox_name": "env"})
    )
    try:
        container = docker_client.containers.get(box.id)
        labels = container.labels
        assert labels["io.agentenv.run"] == "r1"
        assert labels["io.agentenv.task_instance"] == "t1"
        assert labels["io.agentenv.owner"].startswith(f"{os.getpid()}:")
        assert labels["io.agentenv.lease"].endswith(f"leases/{box.id}.json")
        assert not container.attrs["NetworkSettings"]["Ports"].get("8080/tcp")
        await box.write_file("/app/server.py", SERVER.encode())
        url = (await box.start_process(["python3", "server.py"], port=8080)).url
        address = container.attrs["NetworkSettings"]["Networks"]["bridge"]["IPAddress"]
        assert url == f"http://{address}:8080"
        assert await wait_http(url) == "pong "
    finally:
        await box.teardown()
    assert ours(docker_client, box.id) == []


async def test_with_direct_off_ports_are_published_on_loopback_only(docker_client, tmp_path):
    from agentenv_docker_sandbox.provider import DockerProvider

    provider = DockerProvider({"image": BASE_IMAGE, "direct": False}, home=tmp_path / "home")
    assert not provider.reaches_containers()
    box = await provider.create(spec(ports=[8080]))
    try:
        container = docker_client.containers.get(box.id)
        bindings = container.attrs["NetworkSettings"]["Ports"]["8080/tcp"]
        assert {b["HostIp"] for b in bindings} == {"127.0.0.1"}
        await box.write_file("/app/server.py", SERVER.encode())
        url = (await box.start_process(["python3", "server.py"], port=8080)).url
        assert url == f"http://127.0.0.1:{bindings[0]['HostPort']}"
        assert await wait_http(url) == "pong "
    finally:
        await box.teardown()
    assert ours(docker_client, box.id) == []


def test_an_address_of_another_machine_is_not_reached_directly():
    from agentenv_docker_sandbox.provider import _is_local_address

    assert _is_local_address("127.0.0.1")
    # TEST-NET-1 (RFC 5737): never one of this machine's addresses
    assert not _is_local_address("192.0.2.1")
    assert not _is_local_address("0.0.0.0")
    assert not _is_local_address(None)


async def test_process_logs_show_a_crashed_server(provider):
    box = await provider.create(spec())
    try:
        await box.start_process("echo starting; echo boom >&2; exit 3", port=9000)
        for _ in range(50):
            logs = await box.process_logs()
            if "boom" in logs:
                break
        assert "starting" in logs and "boom" in logs
    finally:
        await box.teardown()


async def test_limits_are_enforced_by_the_cgroups(provider):
    box = await provider.create(spec(cpus=0.5, memory="64m", pids=32))
    try:
        cg = await box.exec(
            "cat /sys/fs/cgroup/pids/pids.max /sys/fs/cgroup/memory/memory.limit_in_bytes"
            " /sys/fs/cgroup/cpu/cpu.cfs_quota_us /sys/fs/cgroup/cpu/cpu.cfs_period_us"
            " 2>/dev/null || cat /sys/fs/cgroup/pids.max /sys/fs/cgroup/memory.max /sys/fs/cgroup/cpu.max",
            timeout=30,
        )
        values = cg.stdout.split()
        assert values[0] == "32"
        assert values[1] == str(64 * 1024 * 1024)
        assert int(values[2]) * 2 == int(values[3])  # quota = half the period
        # A fork bomb hits the pids limit instead of the host.
        bomb = await box.exec(
            "i=0; while [ $i -lt 100 ]; do sleep 30 & i=$((i+1)); done; wait", timeout=20
        )
        assert bomb.exit_code != 0 or "fork" in bomb.stderr.lower()
        assert (
            "fork" in bomb.stderr.lower()
            or "resource temporarily unavailable" in bomb.stderr.lower()
        )
        # Allocating past the memory limit kills the process.
        hog = await box.exec(
            ["python3", "-c", "b = bytearray(256 * 1024 * 1024); print('survived')"], timeout=60
        )
        assert hog.exit_code != 0 and "survived" not in hog.stdout
    finally:
        await box.teardown()


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"memory": "lots"}, "expected a size like '512m'"),
        ({"cpus": 0}, "cpus must be > 0"),
        ({"pids": 0}, "pids must be >= 1"),
        ({"network": "bridg"}, "did you mean 'bridge'"),
        ({"network": "none", "ports": [80]}, "cannot publish ports"),
    ],
)
async def test_bad_specs_are_refused_and_create_nothing(provider, docker_client, kw, match):
    with pytest.raises(SandboxError, match=match):
        await provider.create(spec(**kw))
    assert ours(docker_client, home=provider.home) == []


async def test_limits_the_daemon_cannot_enforce_are_refused(provider, docker_client, monkeypatch):
    from agentenv_docker_sandbox import provider as module

    monkeypatch.setattr(
        module, "enforceable", lambda client: {"cpus": True, "memory": False, "pids": True}
    )
    with pytest.raises(SandboxError, match="cannot enforce the memory limit"):
        await provider.create(spec(memory="64m"))
    assert ours(docker_client, home=provider.home) == []


async def test_missing_image_is_a_sandbox_error(docker_client, tmp_path):
    from agentenv_docker_sandbox.provider import DockerProvider

    provider = DockerProvider({"pull": False}, home=tmp_path)
    with pytest.raises(SandboxError, match="not in the local Docker daemon"):
        await provider.create(SandboxSpec(image="agentenv-test/absent:nope"))


PROBE = (
    "import socket\n"
    "print(sorted(n for _, n in socket.if_nameindex()))\n"
    "s = socket.socket(); s.settimeout(2)\n"
    "try:\n"
    "    s.connect(('172.17.0.1', 9)); print('connected')\n"
    "except OSError as e:\n"
    "    print('error', e.errno)\n"
)


async def test_network_none_has_no_network(provider):
    box = await provider.create(spec(network="none"))
    try:
        result = await box.exec(["python3", "-c", PROBE], timeout=30)
        assert result.stdout.splitlines()[0] == "['lo']"
        assert "error" in result.stdout
        with pytest.raises(SandboxError, match="cannot be reached from this machine"):
            await box.start_process(["python3", "-c", "pass"], port=8080)
    finally:
        await box.teardown()


async def test_per_run_network_gives_dns_names_and_is_removed_with_the_last_sandbox(
    provider, docker_client
):
    labels = {"run_id": "run-net-test"}
    server = await provider.create(
        spec(network="run", labels={**labels, "sandbox_name": "envserver"})
    )
    client = await provider.create(spec(network="run", labels={**labels, "sandbox_name": "agent"}))
    try:
        assert server.network == client.network == "agentenv-run-run-net-test"
        await server.write_file("/app/server.py", SERVER.encode())
        await server.start_process(["python3", "server.py"], env={"PORT": "8000"}, port=8000)
        fetch = (
            "import time, urllib.request\n"
            "for _ in range(100):\n"
            "    try:\n"
            "        print(urllib.request.urlopen('http://envserver:8000', timeout=2).read().decode()); break\n"
            "    except OSError:\n"
            "        time.sleep(0.1)\n"
        )
        result = await client.exec(["python3", "-c", fetch], timeout=30)
        assert result.stdout.strip() == "pong"
        await server.teardown()
        assert docker_client.networks.list(names=["agentenv-run-run-net-test"])  # still in use
    finally:
        await server.teardown()
        await client.teardown()
    assert docker_client.networks.list(names=["agentenv-run-run-net-test"]) == []
    assert ours(docker_client, run="run-net-test") == []


async def test_connect_by_id_and_describe_round_trip(provider):
    box = await provider.create(spec(ports=[8080]))
    try:
        again = await provider.connect({"id": box.id})
        assert again.describe()["ports"] == box.describe()["ports"]
        assert again.container_id == box.container_id
    finally:
        await box.teardown()
    with pytest.raises(SandboxError, match="no longer exists"):
        await provider.connect({"id": box.id})


async def test_an_image_running_its_own_server_is_reached_on_its_published_port(
    provider, docker_client, tmp_path
):
    from agentenv_docker_sandbox.images import build_image

    folder = tmp_path / "env"
    folder.mkdir()
    (folder / "server.py").write_text(SERVER)
    (folder / "Dockerfile").write_text(
        f'FROM {BASE_IMAGE}\nCOPY server.py /srv/server.py\nENV PORT=8080\nCMD ["python3", "/srv/server.py"]\n'
    )
    tag = await build_image(folder, "own-server")
    try:
        box = await provider.create(
            SandboxSpec(
                image=tag, ports=[8080], settings={"command": "image"}, env_vars={"GREETING": "img"}
            )
        )
        try:
            assert await wait_http(box.url(8080)) == "pong img"
        finally:
            await box.teardown()
    finally:
        docker_client.images.remove(tag, force=True)


async def test_connect_restarts_a_stopped_sandbox_and_keeps_its_files(provider, docker_client):
    box = await provider.create(spec())
    try:
        await box.write_file("/app/kept.txt", b"kept")
        docker_client.containers.get(box.id).stop(timeout=0)
        again = await provider.connect(box.describe())
        assert await again.read_file("/app/kept.txt") == b"kept"
        assert (await again.exec("echo up", timeout=30)).stdout == "up\n"
    finally:
        await box.teardown()


async def test_concurrent_sandboxes_of_one_run_share_a_network_and_leave_nothing(
    provider, docker_client
):
    import uuid

    import anyio

    run_id = f"conc-{uuid.uuid4().hex[:8]}"
    boxes = []

    async def one(i: int) -> None:
        box = await provider.create(
            spec(network="run", labels={"run_id": run_id, "sandbox_name": f"s{i}"})
        )
        boxes.append(box)
        assert (await box.exec("echo hi", timeout=30)).stdout == "hi\n"

    try:
        async with anyio.create_task_group() as tg:
            for i in range(4):
                tg.start_soon(one, i)
        assert {b.network for b in boxes} == {f"agentenv-run-{run_id}"}
    finally:
        async with anyio.create_task_group() as tg:
            for box in boxes:
                tg.start_soon(box.teardown)
    assert ours(docker_client, run=run_id) == []
