"""A fresh virtualenv with wheels built from source folders of this checkout, installed as
files (offline: their dependencies come from the uv cache that `uv sync` filled, so the index
can never substitute another package of the same name). What a user's `pip install` of a
plugin does, in a few seconds."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path


def run_command(cmd: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=240, **kwargs)


def venv_from_wheels(base: Path, sources: Iterable[Path]) -> Path:
    """`base/venv` with a wheel of each of `sources` (built into `base/wheels`) installed."""
    uv = shutil.which("uv")
    assert uv, "uv is required (scripts/test installs it)"
    wheels = base / "wheels"
    for source in sources:
        built = run_command(
            [uv, "build", "--wheel", "--offline", "--quiet", str(source), "-o", str(wheels)]
        )
        assert built.returncode == 0, built.stderr
    venv = base / "venv"
    created = run_command([uv, "venv", "--quiet", "--python", sys.executable, str(venv)])
    assert created.returncode == 0, created.stderr
    python = str(venv / "bin" / "python")
    installed = run_command(
        [uv, "pip", "install", "--quiet", "--offline", "--python", python]
        + [str(w) for w in sorted(wheels.glob("*.whl"))]
    )
    assert installed.returncode == 0, installed.stderr
    return venv
