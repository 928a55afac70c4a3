"""The watchdog (`agent_env.sandboxes.watchdog`): one supervisor per controller process, told
every home it uses, reaping each home's leased sandboxes once the controller dies (SIGKILL),
and exiting after that; `AGENT_ENV_WATCHDOG=0` starts none."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from agent_env.sandboxes import procs
from agent_env.sandboxes.watchdog import supervisor_pids

OWNER = textwrap.dedent(
    """
    import sys, anyio
    from agent_env.plugins import PluginManager
    from agent_env.sandbox import SandboxSpec
    from agent_env.sandboxes.manager import SandboxManager

    async def main():
        ids = []
        for home in sys.argv[1:]:
            manager = SandboxManager(PluginManager(autoload=False), None, home=home)
            box = await manager.create("box", SandboxSpec())
            await box.start_process(["sleep", "300"])
            ids.append(box.id)
        print(" ".join(ids), flush=True)
        await anyio.sleep(600)

    anyio.run(main)
    """
)


def wait_until(predicate, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def start(homes: list[Path], **env: str) -> tuple[subprocess.Popen, list[str]]:
    owner = subprocess.Popen(
        [sys.executable, "-c", OWNER, *map(str, homes)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, **env},
    )
    ids = owner.stdout.readline().split()
    assert len(ids) == len(homes), "the owner did not create its sandboxes"
    return owner, ids


def running(sandbox_id: str) -> list[int]:
    return procs.pids_with_env("AGENTENV_SANDBOX", sandbox_id)


def test_one_supervisor_reaps_every_home_after_a_sigkill(tmp_path):
    homes = [tmp_path / "a", tmp_path / "b", tmp_path / "a"]
    owner, ids = start(homes)
    try:
        assert all(running(i) for i in ids)
        assert len(supervisor_pids(owner.pid)) == 1  # one per process, however many homes
    finally:
        owner.send_signal(signal.SIGKILL)
        owner.wait()
        owner.stdout.close()

    def gone() -> bool:
        return not any(running(i) for i in ids) and not any(
            os.listdir(home / "leases") for home in homes
        )

    assert wait_until(gone, 5), "sandboxes (or their leases) outlived the owner by 5 s"
    assert wait_until(lambda: not supervisor_pids(owner.pid), 5), "the supervisor did not exit"


def test_switched_off_no_supervisor_and_the_sandbox_outlives_its_owner(tmp_path):
    owner, [sandbox_id] = start([tmp_path / "home"], AGENT_ENV_WATCHDOG="0")
    try:
        assert supervisor_pids(owner.pid) == []
    finally:
        owner.send_signal(signal.SIGKILL)
        owner.wait()
        owner.stdout.close()
    time.sleep(1)
    try:
        assert running(sandbox_id), "without a watchdog the next command reaps, not the kill"
    finally:
        from agent_env.plugins import PluginManager
        from agent_env.sandboxes.manager import reap_orphans_now

        reaped, problems = reap_orphans_now(tmp_path / "home", PluginManager(autoload=False))
        assert reaped == [sandbox_id] and problems == []
