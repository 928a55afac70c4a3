"""SIGKILL of the owner leaves containers behind; `reap` (and `sandbox prune`) removes them
by label, and `docker ps -a` shows nothing of ours afterwards."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import uuid

import pytest
from click.testing import CliRunner

from agent_env.sandbox import SandboxSpec
from agentenv_docker_sandbox.testing import BASE_IMAGE, ours

OWNER = textwrap.dedent(
    """
    import sys, time, anyio
    from agent_env.sandbox import SandboxSpec
    from agentenv_docker_sandbox.provider import DockerProvider

    async def main():
        provider = DockerProvider({}, home=sys.argv[1])
        boxes = [await provider.create(SandboxSpec(image=sys.argv[2], network=net, ports=[8080],
                                                   labels={"run_id": sys.argv[3]}))
                 for net in ("bridge", "run")]
        print(" ".join(b.id for b in boxes), flush=True)
        await anyio.sleep(600)

    anyio.run(main)
    """
)


def start_owner(tmp_path, run_id):
    proc = subprocess.Popen(
        [sys.executable, "-c", OWNER, str(tmp_path / "home"), BASE_IMAGE, run_id],
        stdout=subprocess.PIPE,
        text=True,
    )
    ids = proc.stdout.readline().split()
    assert len(ids) == 2, "the owner process did not create its sandboxes"
    return proc, ids


@pytest.mark.anyio
async def test_sigkill_of_the_owner_then_reap_removes_everything(provider, docker_client, tmp_path):
    run_id = f"killed-{uuid.uuid4().hex[:8]}"
    mine = await provider.create(SandboxSpec(image=BASE_IMAGE, labels={"run_id": run_id}))
    try:
        proc, ids = start_owner(tmp_path, run_id)
        assert all(ours(docker_client, i) for i in ids)
        assert not set(ids) & set(await provider.reap())  # owner alive: not reaped
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        assert set(ids) <= set(await provider.reap())
        assert ours(docker_client, run=run_id) == [mine.id]
        assert docker_client.networks.list(names=[f"agentenv-run-{run_id}"]) == []
        assert (await mine.exec("echo alive", timeout=30)).stdout == "alive\n"
    finally:
        await mine.teardown()
    assert ours(docker_client, run=run_id) == []


@pytest.mark.anyio
async def test_adopted_and_live_leased_sandboxes_are_kept(provider, docker_client, tmp_path):
    run_id = f"adopted-{uuid.uuid4().hex[:8]}"
    proc, ids = start_owner(tmp_path, run_id)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    try:
        assert not set(ids) & set(await provider.reap(adopt=ids))
        assert all(ours(docker_client, i) for i in ids)
    finally:
        assert set(ids) <= set(await provider.reap())
    assert ours(docker_client, run=run_id) == []


def test_sandbox_prune_command_reaps_every_provider(
    docker_client, tmp_path, monkeypatch, plugin_manager, register_plugin
):
    from agent_env.cli.commands.sandbox import sandbox
    from agentenv_docker_sandbox import hooks

    register_plugin(hooks, "docker-sandbox")
    monkeypatch.setenv("AGENT_ENV_HOME", str(tmp_path / "home"))
    run_id = f"pruned-{uuid.uuid4().hex[:8]}"
    proc, ids = start_owner(tmp_path, run_id)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    result = CliRunner().invoke(sandbox, ["prune"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert all(f"removed {i}" in result.output for i in ids)
    assert ours(docker_client, run=run_id) == []


MANAGED_OWNER = textwrap.dedent(
    """
    import sys, anyio
    from agent_env.plugins import get_plugin_manager
    from agent_env.sandbox import SandboxSpec
    from agent_env.sandboxes.manager import SandboxManager

    async def main():
        manager = SandboxManager(get_plugin_manager(), None, home=sys.argv[1])
        box = await manager.create("env", SandboxSpec(image=sys.argv[2], network="run",
                                                       labels={"run_id": sys.argv[3]}), provider="docker")
        print(box.id, flush=True)
        await anyio.sleep(600)

    anyio.run(main)
    """
)


def test_sigkill_of_a_runner_then_any_agent_env_command_leaves_nothing(docker_client, tmp_path):
    home = tmp_path / "home"
    run_id = f"cli-killed-{uuid.uuid4().hex[:8]}"
    proc = subprocess.Popen(
        [sys.executable, "-c", MANAGED_OWNER, str(home), BASE_IMAGE, run_id],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "AGENT_ENV_WATCHDOG": "0"},  # the next command reaps, not the watchdog
    )
    sandbox_id = proc.stdout.readline().strip()
    assert ours(docker_client, sandbox_id)
    assert (home / "leases" / f"{sandbox_id}.json").exists()
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    cli = os.path.join(os.path.dirname(sys.executable), "agent-env")
    result = subprocess.run(
        [cli, "plugin", "list"],
        env={**os.environ, "AGENT_ENV_HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert sandbox_id in result.stderr
    assert ours(docker_client, run=run_id) == []
    assert docker_client.networks.list(names=[f"agentenv-run-{run_id}"]) == []
