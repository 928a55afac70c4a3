"""SandboxManager: leases, teardown, and reaping the sandboxes of dead owners."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from agent_env.errors import PluginError
from agent_env.sandbox import SandboxSpec
from agent_env.sandboxes import procs
from agent_env.sandboxes.manager import SandboxManager

#: Owner processes whose sandboxes must outlive them (the reaper under test, not the watchdog).
NO_WATCHDOG = {**os.environ, "AGENT_ENV_WATCHDOG": "0"}

pytestmark = pytest.mark.anyio


class Config:
    """The one method of agent_env.config.Config the manager reads."""

    def __init__(self, sandbox: dict):
        self.sandbox = sandbox

    def table(self, name):
        assert name == "sandbox"
        return self.sandbox


async def test_create_writes_a_lease_naming_this_process_and_teardown_removes_it(plugins, tmp_path):
    manager = SandboxManager(plugins, None, tmp_path)
    box = await manager.create(
        "box", SandboxSpec(), labels={"run_id": "r1", "task_instance_id": "t1"}
    )
    lease = json.loads((tmp_path / "leases" / f"{box.id}.json").read_text())
    assert lease["provider"] == "local"
    assert lease["owner_pid"] == os.getpid()
    assert lease["owner_start_time"] == procs.start_time(os.getpid())
    assert (lease["run_id"], lease["task_instance_id"], lease["name"]) == ("r1", "t1", "box")
    assert lease["describe"]["id"] == box.id
    assert box.labels["owner_pid"] == str(os.getpid())
    await manager.teardown(box)
    assert os.listdir(tmp_path / "leases") == []
    assert not box.folder.exists()


async def test_provider_comes_from_argument_then_config_then_local(plugins, tmp_path):
    manager = SandboxManager(plugins, Config({"default": "dokcer"}), tmp_path)
    with pytest.raises(PluginError, match="unknown sandbox provider 'dokcer'"):
        await manager.create("box", SandboxSpec())
    box = await manager.create("box", SandboxSpec(), provider="local")
    await manager.teardown_all()
    assert not box.folder.exists()
    assert SandboxManager(plugins, Config({}), tmp_path).default_provider() == "local"


async def test_provider_settings_come_from_the_sandbox_table(plugins, tmp_path):
    manager = SandboxManager(plugins, Config({"local": {"root": str(tmp_path / "r")}}), tmp_path)
    box = await manager.create("box", SandboxSpec())
    assert box.folder.parent == tmp_path / "r"
    await manager.teardown_all()


async def test_teardown_all_removes_every_sandbox_and_lease(plugins, tmp_path):
    manager = SandboxManager(plugins, None, tmp_path)
    boxes = [await manager.create(f"b{i}", SandboxSpec()) for i in range(3)]
    await manager.teardown_all()
    assert manager.live == {}
    assert os.listdir(tmp_path / "leases") == []
    assert not any(b.folder.exists() for b in boxes)


async def test_reap_orphans_without_leases_is_cheap_and_empty(plugins, tmp_path):
    manager = SandboxManager(plugins, None, tmp_path)
    started = time.perf_counter()
    for _ in range(100):
        assert await manager.reap_orphans() == []
    per_call = (time.perf_counter() - started) / 100
    assert per_call < 0.001, per_call


async def test_reap_orphans_leaves_live_owners_alone(plugins, tmp_path):
    mine = SandboxManager(plugins, None, tmp_path)
    box = await mine.create("box", SandboxSpec())
    assert await SandboxManager(plugins, None, tmp_path).reap_orphans() == []
    assert box.folder.exists()
    await mine.teardown_all()


async def test_connect_adopts_the_lease(plugins, tmp_path):
    first = SandboxManager(plugins, None, tmp_path)
    box = await first.create("box", SandboxSpec())
    lease_path = tmp_path / "leases" / f"{box.id}.json"
    lease = json.loads(lease_path.read_text())
    lease["owner_pid"] = 999_999_999
    lease_path.write_text(json.dumps(lease))
    second = SandboxManager(plugins, None, tmp_path)
    again = await second.connect(box.describe())
    assert json.loads(lease_path.read_text())["owner_pid"] == os.getpid()
    assert await second.reap_orphans() == []
    await second.teardown(again)
    assert not lease_path.exists()


OWNER = textwrap.dedent(
    """
    import json, sys, time, anyio
    sys.path.insert(0, {tests!r})
    from conftest import builtin_plugins
    from agent_env.sandbox import SandboxSpec
    from agent_env.sandboxes.manager import SandboxManager
    from agentenv_testing.contracts.sandbox import SERVER

    async def main():
        manager = SandboxManager(builtin_plugins(), None, {home!r})
        box = await manager.create("srv", SandboxSpec(env_vars={{"GREETING": "hi"}}))
        await box.write_file("/app/server.py", SERVER.encode())
        url = (await box.start_process(["python3", "/app/server.py"], port=0)).url
        adopted = await manager.create("adopted", SandboxSpec())
        async with anyio.create_task_group() as tg:
            tg.start_soon(box.exec, "echo running > /app/exec.txt; sleep 300")
            while not (box.folder / "exec.txt").exists():
                await anyio.sleep(0.01)
            print(json.dumps({{"url": url, "info": box.describe(), "adopted": adopted.id}}), flush=True)
            await anyio.sleep(600)

    anyio.run(main)
    """
)


async def test_sigkilled_owner_sandbox_is_reaped_by_the_next_manager(plugins, tmp_path):
    from agentenv_testing.contracts.sandbox import wait_http

    home = tmp_path / "home"
    script = OWNER.format(tests=str(Path(__file__).parent), home=str(home))
    owner = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, env=NO_WATCHDOG
    )
    try:
        line = owner.stdout.readline()
        assert line, "owner process printed nothing"
        started = json.loads(line)
        url, info = started["url"], started["info"]
        assert await wait_http(url) == "pong hi"
        server_pids = info["pids"]
        assert server_pids and all(procs.alive(p) for p in server_pids)
        running = procs.pids_with_env("AGENTENV_SANDBOX", info["id"])
        assert len(running) >= 3, running  # the server, the exec's shell and its sleep
    finally:
        owner.send_signal(signal.SIGKILL)
        owner.wait()
    assert Path(info["folder"]).exists()

    manager = SandboxManager(plugins, None, home)
    reaped = await manager.reap_orphans(adopt=[started["adopted"]])
    assert reaped == [info["id"]]
    assert manager.reap_errors == []
    assert not any(procs.alive(p) for p in server_pids)
    assert procs.pids_with_env("AGENTENV_SANDBOX", info["id"]) == []
    assert not Path(info["folder"]).exists()
    with pytest.raises((urllib.error.URLError, ConnectionError, OSError)):
        urllib.request.urlopen(url, timeout=2).read()
    assert sorted(os.listdir(home / "leases")) == [f"{started['adopted']}.json"]
    assert await manager.reap_orphans() == []
    adopted = json.loads((home / "leases" / f"{started['adopted']}.json").read_text())
    assert adopted["owner_pid"] == os.getpid()
    await manager.teardown(await manager.connect(adopted["describe"]))
    assert os.listdir(home / "leases") == []
    assert os.listdir(home / "sandboxes") == []


async def test_a_lease_of_an_uninstalled_provider_is_kept_and_reported(plugins, tmp_path):
    (tmp_path / "leases").mkdir()
    lease = {"sandbox_id": "x-1", "provider": "gone", "describe": {}, "owner_pid": 999_999_999}
    (tmp_path / "leases" / "x-1.json").write_text(json.dumps(lease))
    manager = SandboxManager(plugins, None, tmp_path)
    assert await manager.reap_orphans() == []
    assert "unknown sandbox provider 'gone'" in manager.reap_errors[0]
    assert os.listdir(tmp_path / "leases") == ["x-1.json"]


def test_reap_orphans_now_is_one_listdir_without_leases(tmp_path, monkeypatch):
    from agent_env.sandboxes import manager as manager_module

    def boom(*a, **k):
        raise AssertionError("plugins must not load when there is no lease")

    monkeypatch.setattr("agent_env.plugins.get_plugin_manager", boom)
    started = time.perf_counter()
    for _ in range(1000):
        assert manager_module.reap_orphans_now(tmp_path) == ([], [])
    assert (time.perf_counter() - started) / 1000 < 0.0005


def test_reap_orphans_now_reaps_a_dead_owners_sandbox(plugins, tmp_path):
    import anyio

    from agent_env.sandboxes.manager import reap_orphans_now
    from agentenv_testing.contracts.sandbox import dead_pid

    async def make():
        manager = SandboxManager(plugins, None, tmp_path)
        box = await manager.create("box", SandboxSpec())
        await box.exec("true", timeout=10)
        return box

    box = anyio.run(make)
    lease_path = tmp_path / "leases" / f"{box.id}.json"
    lease = json.loads(lease_path.read_text())
    lease.update(owner_pid=dead_pid(), owner_start_time=None)
    lease_path.write_text(json.dumps(lease))
    assert reap_orphans_now(tmp_path, plugins=plugins, config=Config({})) == ([box.id], [])
    assert not box.folder.exists() and not lease_path.exists()


KILLED_MID_CREATE = textwrap.dedent(
    """
    import json, sys, anyio
    from pathlib import Path
    from agent_env.sandbox import SandboxSpec
    from agent_env.sandboxes import leases
    from agent_env.sandboxes.local import LocalProvider

    async def main():
        home = Path(sys.argv[1])
        me = leases.me()
        # what SandboxManager.create does before the provider creates; then "die" before
        # the real lease is written
        leases.write_pending(home / "leases", {{"provider": "local", **me}})
        labels = {{"owner_pid": str(me["owner_pid"]), "owner_host": me["host"],
                   "owner_start_time": str(me["owner_start_time"])}}
        box = await LocalProvider(home=home).create(SandboxSpec(labels=labels))
        await box.start_process("sleep 600")
        print(json.dumps(box.describe()), flush=True)
        await anyio.sleep(600)

    anyio.run(main)
    """
)


async def test_a_creation_killed_before_its_lease_is_reaped_through_the_pending_lease(
    plugins, tmp_path
):
    home = tmp_path / "home"
    owner = subprocess.Popen(
        [sys.executable, "-c", KILLED_MID_CREATE.format(), str(home)],
        stdout=subprocess.PIPE,
        text=True,
        env=NO_WATCHDOG,
    )
    try:
        info = json.loads(owner.stdout.readline())
    finally:
        owner.send_signal(signal.SIGKILL)
        owner.wait()
    [pending] = os.listdir(home / "leases")
    assert pending.startswith("pending-")
    assert procs.pids_with_env("AGENTENV_SANDBOX", info["id"])

    manager = SandboxManager(plugins, None, home)
    assert manager.lease_rows() == []  # a creation under way is not a sandbox yet
    await manager.reap_orphans()
    assert manager.reap_errors == []
    assert os.listdir(home / "leases") == []
    assert procs.pids_with_env("AGENTENV_SANDBOX", info["id"]) == []
    assert not Path(info["folder"]).exists()


async def test_create_leaves_no_pending_lease_behind(plugins, tmp_path):
    manager = SandboxManager(plugins, None, tmp_path)
    box = await manager.create("box", SandboxSpec())
    assert [p.name for p in (tmp_path / "leases").iterdir()] == [f"{box.id}.json"]
    await manager.teardown(box)
    assert list((tmp_path / "leases").iterdir()) == []
