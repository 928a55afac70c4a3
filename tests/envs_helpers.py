"""Shared helpers of the `test_envs_*` suites: run `agent-env` as a real process on a fresh
home, write small env bundles, and check what a run left behind."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"
AGENT_ENV = str(Path(sys.executable).parent / "agent-env")
#: "up on PROVIDER at URL": loopback for local sandboxes, the container's address for docker
URL = re.compile(r"up on (\w+) at (http://[\d.]+:\d+)")


def cli_env(home: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("AGENT_ENV_")
        or k in ("AGENT_ENV_WATCHDOG", "AGENT_ENV_SANDBOX_LOCAL_BWRAP")  # a test's choice
    }
    env["AGENT_ENV_HOME"] = str(home)
    return env


def agent_env(
    home: Path, *args: str, timeout: float = 600, cwd: Path | None = None
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [AGENT_ENV, *args],
        env=cli_env(home),
        cwd=cwd or home.parent,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def start(home: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [AGENT_ENV, *args],
        env=cli_env(home),
        cwd=home.parent,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def copy_example(name: str, dest: Path) -> Path:
    shutil.copytree(EXAMPLES / name, dest, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def write(root: Path, files: dict[str, Any]) -> Path:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content if isinstance(content, str) else json.dumps(content))
    return root


def env_bundle(
    root: Path,
    env_toml: str,
    extra: dict[str, Any] | None = None,
    steps: list | None = None,
    server: str | None = None,
) -> Path:
    """A bundle with env `e` (the notes example's server unless `server` is given)."""
    files = {
        "envs/e/env.toml": env_toml,
        "envs/e/server.py": server or (EXAMPLES / "notes-local/envs/notes/server.py").read_text(),
        "tasks/t.json": steps or [{"id": "deploy", "type": "deploy_env", "env_id": "e"}],
    }
    return write(root, {**files, **(extra or {})})


def answers(url: str) -> bool:
    host, port = url.rsplit("/", 1)[-1].split(":")
    try:
        with socket.create_connection((host, int(port)), timeout=1):
            return True
    except OSError:
        return False


def nothing_left(home: Path) -> None:
    """No sandbox folder and no lease of ours remain under `home`."""
    for sub in ("sandboxes", "leases"):
        folder = home / sub
        left = (
            [p.name for p in folder.iterdir() if not p.name.startswith(".")]
            if folder.exists()
            else []
        )
        assert left == [], f"{sub} left behind: {left}"


def wait_for(predicate, timeout: float = 60.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)
