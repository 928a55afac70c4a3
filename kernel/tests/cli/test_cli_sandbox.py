"""`agent-env sandbox list|prune` against real local sandboxes owned by a SIGKILLed process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

OWNER = textwrap.dedent(
    """
    import sys, anyio
    from agent_env.plugins import PluginManager
    from agent_env.sandbox import SandboxSpec
    from agent_env.sandboxes.manager import SandboxManager

    async def main():
        manager = SandboxManager(PluginManager(autoload=False), None, home=sys.argv[1])
        box = await manager.create("box", SandboxSpec(labels={"run_id": "run-x"}), provider="local")
        await box.start_process("sleep 600")
        print(box.id, flush=True)
        await anyio.sleep(600)

    anyio.run(main)
    """
)


def start_owner(home):
    proc = subprocess.Popen(
        [sys.executable, "-c", OWNER, str(home)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "AGENT_ENV_WATCHDOG": "0"},  # `prune` reaps here, not the watchdog
    )
    sandbox_id = proc.stdout.readline().strip()
    assert sandbox_id, "the owner process did not create its sandbox"
    return proc, sandbox_id


def test_list_shows_owner_liveness_and_prune_removes_the_dead_owners_sandbox(
    cli_runner, agent_env_home
):
    proc, sandbox_id = start_owner(agent_env_home)
    try:
        listed = cli_runner.invoke(["sandbox", "list", "--json"])
        assert listed.exit_code == 0, listed.output
        [row] = json.loads(listed.output)
        assert row["id"] == sandbox_id and row["owner_alive"] and row["run_id"] == "run-x"
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    listed = cli_runner.invoke(["sandbox", "list"])
    assert f"{sandbox_id}  local  run run-x" in listed.output and "(dead)" in listed.output

    pruned = cli_runner.invoke(["sandbox", "prune", "--json"])
    assert pruned.exit_code == 0, pruned.output
    assert json.loads(pruned.output[pruned.output.index("{") :]) == {
        "removed": [sandbox_id],
        "problems": [],
    }
    assert not (agent_env_home / "sandboxes" / sandbox_id).exists()
    deadline = time.monotonic() + 10
    marker = f"AGENTENV_SANDBOX={sandbox_id}".encode()
    while time.monotonic() < deadline:
        left = [p for p in os.listdir("/proc") if p.isdigit() and _has_marker(p, marker)]
        if not left:
            break
        time.sleep(0.1)
    assert not left, f"processes of the pruned sandbox still run: {left}"
    assert cli_runner.invoke(["sandbox", "list"]).output.strip() == "no sandboxes"


def _has_marker(pid: str, marker: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return marker in f.read()
    except OSError:
        return False
