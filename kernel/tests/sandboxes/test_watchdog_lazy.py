"""The watchdog starts only when something can outlive its controller, and after a clean exit
it costs a shell: its first stage (`STAGE_ONE`, run by the real /bin/sh here) execs the Python
stage only when a home still holds a lease."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from agent_env.sandboxes import procs
from agent_env.sandboxes.local import isolation
from agent_env.sandboxes.watchdog import STAGE_ONE, SUPERVISOR, supervisor_pids

OWNER = textwrap.dedent(
    """
    import sys, anyio
    from agent_env.plugins import PluginManager
    from agent_env.sandbox import SandboxSpec
    from agent_env.sandboxes.manager import SandboxManager

    async def main():
        manager = SandboxManager(PluginManager(autoload=False), None, home=sys.argv[1])
        box = await manager.create("box", SandboxSpec())
        print(box.id, flush=True)
        sys.stdin.readline()  # created: the test looks for a supervisor
        result = await box.exec(["test", "-d", "."])  # answered by a stat: no process
        print(result.exit_code, flush=True)
        sys.stdin.readline()
        result = await box.exec("echo hi")
        print(result.stdout.strip(), flush=True)
        sys.stdin.readline()
        await box.start_process(["sleep", "600"])
        print("server", flush=True)
        if sys.stdin.readline().strip() == "teardown":
            await manager.teardown_all()
            return
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


def start_owner(home: Path) -> tuple[subprocess.Popen, str]:
    owner = subprocess.Popen(
        [sys.executable, "-c", OWNER, str(home)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={k: v for k, v in os.environ.items() if k != "AGENT_ENV_WATCHDOG"},
    )
    return owner, owner.stdout.readline().strip()


def step(owner: subprocess.Popen, say: str = "") -> str:
    owner.stdin.write(say + "\n")
    owner.stdin.flush()
    return owner.stdout.readline().strip()


def test_a_local_sandbox_starts_the_watchdog_with_its_first_server(tmp_path):
    owner, sandbox_id = start_owner(tmp_path / "home")
    try:
        assert sandbox_id.startswith("local-")
        assert supervisor_pids(owner.pid) == [], "a folder alone needs no watchdog"
        assert step(owner) == "0"
        assert supervisor_pids(owner.pid) == [], "a probe answered by a stat starts nothing"
        assert step(owner) == "hi"
        # a command under bwrap dies with its owner (`--die-with-parent`); unwrapped it may not
        assert len(supervisor_pids(owner.pid)) == (0 if isolation.probe().available else 1)
        assert step(owner) == "server"
        [supervisor] = supervisor_pids(owner.pid)
        assert os.readlink(f"/proc/{supervisor}/exe") == os.path.realpath("/bin/sh")
        step(owner, "teardown")
        assert owner.wait(timeout=30) == 0
    finally:
        if owner.poll() is None:
            owner.kill()
    assert wait_until(lambda: not procs.alive(supervisor), 5), "the watchdog outlived a clean exit"


def test_a_crash_before_any_process_leaves_the_folder_to_the_next_reaper(tmp_path):
    home = tmp_path / "home"
    owner, sandbox_id = start_owner(home)
    owner.send_signal(signal.SIGKILL)
    owner.wait()
    assert (home / "sandboxes" / sandbox_id).is_dir()
    from agent_env.plugins import PluginManager
    from agent_env.sandboxes.manager import reap_orphans_now

    assert reap_orphans_now(home, PluginManager(autoload=False)) == ([sandbox_id], [])
    assert not (home / "sandboxes" / sandbox_id).exists()


def stage_one(tmp_path: Path, homes: list[Path]) -> list[str] | None:
    """Run the shell stage with a stand-in Python that records its arguments; those
    arguments, or None when the stage did not exec it."""
    record = tmp_path / "exec-args"
    python = tmp_path / "python"
    python.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {record}\n')
    python.chmod(0o755)
    done = subprocess.run(
        ["/bin/sh", "-c", STAGE_ONE, SUPERVISOR, str(python), "4242", "99"],
        input="".join(f"{h}\n" for h in homes),
        text=True,
        timeout=10,
    )
    assert done.returncode == 0
    return record.read_text().splitlines() if record.exists() else None


def test_stage_one_exits_without_python_when_no_home_holds_a_lease(tmp_path):
    empty = tmp_path / "empty"
    (empty / "leases").mkdir(parents=True)
    hidden = tmp_path / "hidden"
    (hidden / "leases").mkdir(parents=True)
    (hidden / "leases" / ".tmp-lease").write_text("{}")
    assert stage_one(tmp_path, [empty, hidden, tmp_path / "never made"]) is None


def test_stage_one_hands_every_home_to_the_python_stage_when_a_lease_is_left(tmp_path):
    clean = tmp_path / "clean home"
    (clean / "leases").mkdir(parents=True)
    left = tmp_path / "left"
    (left / "leases").mkdir(parents=True)
    (left / "leases" / "local-abc.json").write_text("{}")
    args = stage_one(tmp_path, [clean, left])
    assert args == ["-m", SUPERVISOR, "4242", "99", str(clean), str(left)]
