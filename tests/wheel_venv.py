"""A fresh virtualenv with wheels built from source folders of this checkout, installed as
files. What a user's `pip install` of a plugin does, in a few seconds.

Our distribution names belong to another project on the package index, so nothing of ours may
ever come from there: the builds and installs run `--offline`. Their third-party dependencies
(hatchling to build; attrs, click, ... to install) come from uv's cache, which `warm_uv_cache`
fills first with one online install that names no distribution of ours, so the tests pass on a
machine whose caches are empty (`UV_CACHE_DIR=$(mktemp -d)`).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_command(cmd: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(c) for c in cmd], capture_output=True, text=True, timeout=300, **kwargs
    )


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _project(source: Path) -> dict:
    return tomllib.loads((source / "pyproject.toml").read_text()).get("project", {})


def workspace_names() -> set[str]:
    """The distribution names of this checkout (the meta-distribution, kernel, protocol and
    every in-tree plugin): names that must never be looked up on the index."""
    sources = [ROOT, ROOT / "kernel", ROOT / "protocol", *sorted(ROOT.glob("plugins/*"))]
    return {_canonical(_project(s)["name"]) for s in sources if (s / "pyproject.toml").is_file()}


def _requirement_name(requirement: str) -> str:
    return _canonical(re.split(r"[\s\[<>=!~;(@]", requirement.strip(), maxsplit=1)[0])


def warm_uv_cache(
    sources: Iterable[Path], base: Path, env: Mapping[str, str] | None = None
) -> None:
    """Fill uv's cache (the one `env` names) with what building `sources` and installing
    their wheels offline needs from the index: hatchling and the sources' own dependencies,
    less every name built here or in the workspace. One online `uv pip install` into a
    scratch venv; `AssertionError` with uv's message when it fails."""
    uv = shutil.which("uv")
    assert uv, "uv is required (scripts/test installs it)"
    sources = list(sources)
    ours = workspace_names() | {_canonical(_project(s)["name"]) for s in sources}
    wanted = {"hatchling"}
    for source in sources:
        wanted |= {
            r for r in _project(source).get("dependencies", []) if _requirement_name(r) not in ours
        }
    venv = base / "warm-venv"
    env = dict(env) if env is not None else None
    created = run_command([uv, "venv", "--quiet", "--python", sys.executable, venv], env=env)
    assert created.returncode == 0, created.stderr
    installed = run_command(
        [uv, "pip", "install", "--quiet", "--python", venv / "bin" / "python", *sorted(wanted)],
        env=env,
    )
    assert installed.returncode == 0, (
        "filling uv's cache from the package index failed (offline, the tests need hatchling "
        f"and {sorted(wanted - {'hatchling'})} in the cache): {installed.stderr}"
    )
    shutil.rmtree(venv, ignore_errors=True)


def venv_from_wheels(base: Path, sources: Iterable[Path]) -> Path:
    """`base/venv` with a wheel of each of `sources` (built into `base/wheels`) installed."""
    uv = shutil.which("uv")
    assert uv, "uv is required (scripts/test installs it)"
    sources = list(sources)
    warm_uv_cache(sources, base)
    wheels = base / "wheels"
    for source in sources:
        built = run_command([uv, "build", "--wheel", "--offline", "--quiet", source, "-o", wheels])
        assert built.returncode == 0, built.stderr
    venv = base / "venv"
    created = run_command([uv, "venv", "--quiet", "--python", sys.executable, venv])
    assert created.returncode == 0, created.stderr
    installed = run_command(
        [uv, "pip", "install", "--quiet", "--offline", "--python", venv / "bin" / "python"]
        + sorted(wheels.glob("*.whl"))
    )
    assert installed.returncode == 0, installed.stderr
    return venv
