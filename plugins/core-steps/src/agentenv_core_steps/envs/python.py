"""The interpreter a local env process runs with: this one when it already satisfies the
env's requirements, else a venv cached under `<cache>/venvs/<digest of the requirements>`.

`agentenv-framework-protocol` always comes from a wheel built from the installed package
(`wheels.protocol_wheel`), never from the index.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.metadata
import shutil
import subprocess
import sys
from pathlib import Path

from agentenv_core_steps.envs.wheels import DISTRIBUTION, protocol_wheel

COMPLETE = ".agentenv-complete"
INSTALL_TIMEOUT = 900


class RequirementsError(Exception):
    """A venv for the env's requirements could not be made (the message holds pip's tail)."""


def satisfied(requirements: list[str]) -> bool:
    """True when every requirement is installed here in a matching version."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    for line in requirements:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            return False
        if req.marker is not None and not req.marker.evaluate():
            continue
        if req.url:
            return False
        try:
            installed = importlib.metadata.version(canonicalize_name(req.name))
        except importlib.metadata.PackageNotFoundError:
            return False
        if not req.specifier.contains(installed, prereleases=True):
            return False
    return True


def _is_protocol(line: str) -> bool:
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    try:
        return canonicalize_name(Requirement(line).name) == DISTRIBUTION
    except InvalidRequirement:
        return False


def python_for(requirements: list[str], cache: Path) -> str:
    """The interpreter path for an env with `requirements` (blocking; may build a venv)."""
    if satisfied(requirements):
        return sys.executable
    wheel = protocol_wheel(cache / "wheels")
    key = hashlib.sha256(
        "\n".join([sys.version, wheel.parent.name, *sorted(requirements)]).encode()
    ).hexdigest()[:24]
    venv = cache / "venvs" / key
    python = venv / "bin" / "python"
    if (venv / COMPLETE).exists():
        return str(python)
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.parent / f"{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (venv / COMPLETE).exists():
            return str(python)
        shutil.rmtree(venv, ignore_errors=True)
        others = [r for r in requirements if not _is_protocol(r)]
        uv = shutil.which("uv")
        if uv:
            steps = [
                [uv, "venv", "--quiet", "--python", sys.executable, str(venv)],
                [uv, "pip", "install", "--quiet", "--python", str(python), str(wheel), *others],
            ]
        else:
            steps = [
                [sys.executable, "-m", "venv", str(venv)],
                [str(python), "-m", "pip", "install", "--quiet", str(wheel), *others],
            ]
        for argv in steps:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=INSTALL_TIMEOUT)
            if done.returncode != 0:
                shutil.rmtree(venv, ignore_errors=True)
                tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-20:])
                raise RequirementsError(
                    f"installing the env's requirements failed ({' '.join(argv[:3])} ...):\n{tail}"
                )
        (venv / COMPLETE).write_text("\n".join(requirements) + "\n")
    return str(python)
