"""The issue's done-when: `agent-env run hello` on a fresh home passes twice in a row (the
second run finds the entities unchanged) and leaves no work folder, lease or process behind."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

AGENT_ENV = Path(sys.executable).with_name("agent-env")


def run_hello(home: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_ENV_")}
    env["AGENT_ENV_HOME"] = str(home)
    return subprocess.run(
        [str(AGENT_ENV), "run", "hello"],
        env=env,
        cwd=home.parent,
        capture_output=True,
        text=True,
        timeout=120,
    )


def sandbox_processes(home: Path) -> list[int]:
    """Host processes whose environment marks them as started by a sandbox under `home`."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            environ = (proc / "environ").read_bytes()
        except OSError:
            continue
        if b"AGENTENV_SANDBOX=" in environ and str(home).encode() in environ:
            found.append(int(proc.name))
    return found


def test_run_hello_twice_on_a_fresh_home(tmp_path):
    home = tmp_path / "home"
    first = run_hello(home)
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith("hello  passed (hello: 1)  ")
    assert "(new)" in first.stderr
    assert "[hello] verify: ok" in first.stderr

    second = run_hello(home)
    assert second.returncode == 0, second.stderr
    assert "passed (hello: 1)" in second.stdout
    assert "(new)" not in second.stderr and "unchanged" in second.stderr
    assert first.stdout.split()[-1] != second.stdout.split()[-1]  # two task instances

    work = home / "sandboxes"
    assert not work.exists() or not [p for p in work.iterdir() if not p.name.startswith(".")]
    leases = home / "leases"
    assert not leases.exists() or not list(leases.iterdir())
    assert sandbox_processes(home) == []
