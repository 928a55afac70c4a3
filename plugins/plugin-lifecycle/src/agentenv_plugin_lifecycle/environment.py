"""Which installer owns the Python environment agent-env runs in, and whether it may be changed.

`detect()` looks at the running interpreter: a `uv tool` environment (its `uv-receipt.toml`),
a pipx one (`pipx_metadata.json`), the `.venv` of a uv project (`pyproject.toml` + `uv.lock`
next to it), or a plain virtualenv (its own pip, else `uv pip`). A system Python marked
`EXTERNALLY-MANAGED` (PEP 668), a read-only one, or the throwaway environment `uvx` runs in
(a folder of uv's cache: a change would not persist, or would leak into later `uvx` runs) is
refused with the command to run instead.

The cheap, file-only view of the same question (for install hints) is `plugins.installer`.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import attrs

from agent_env.errors import PluginError
from agent_env.plugins.installer import PIPX, SYSTEM, UV_PROJECT, UV_TOOL, VENV, ephemeral_uvx


class Refused(PluginError):
    """agent-env will not change this environment; the message says what to run instead."""


@attrs.frozen(kw_only=True)
class Environment:
    """The environment to change: its interpreter, prefix and owning installer (`kind`)."""

    kind: str
    python: Path
    prefix: Path
    site_packages: Path
    #: uv project folder, or the uv tool / pipx environment's main package name.
    owner: str | None = None
    project: Path | None = None
    #: Files the owning installer keeps about the environment; restored on rollback.
    state_files: tuple[Path, ...] = ()
    #: How single distributions are installed/uninstalled here: ("uv", path) or ("pip", None).
    low_level: tuple[str, str | None] = ("pip", None)

    def describe(self) -> str:
        where = {
            UV_PROJECT: f"the uv project {self.project}",
            UV_TOOL: f"the uv tool {self.owner!r}",
            PIPX: f"the pipx environment {self.owner!r}",
        }.get(self.kind)
        return where or f"the {self.kind} environment {self.prefix}"

    @property
    def installer(self) -> str:
        """The tool that changes this environment (`pip`, `uv pip`, `uv tool`, `pipx`, ...)."""
        if self.kind in (VENV, SYSTEM):
            return "uv pip" if self.low_level[0] == "uv" else "pip"
        return self.kind


def _uv() -> str | None:
    found = shutil.which("uv")
    if found:
        return found
    beside = Path(sys.executable).parent / "uv"
    return str(beside) if beside.exists() else None


def _has_pip(python: Path) -> bool:
    if Path(python) == Path(sys.executable):
        import importlib.util

        return importlib.util.find_spec("pip") is not None
    try:
        probe = subprocess.run([str(python), "-c", "import pip"], capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return probe.returncode == 0


def _receipt_owner(receipt: Path) -> str:
    import tomllib

    try:
        data = tomllib.loads(receipt.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise PluginError(f"{receipt}: cannot read the uv tool receipt: {exc}") from None
    for entry in data.get("tool", {}).get("entrypoints", []):
        if entry.get("from"):
            return str(entry["from"])
    return receipt.parent.name


def _pipx_owner(metadata: Path) -> str:
    import json

    try:
        data = json.loads(metadata.read_text(encoding="utf-8"))
        return str(data["main_package"]["package"])
    except (OSError, ValueError, KeyError, TypeError):
        return metadata.parent.name


def externally_managed(prefix: Path, base_prefix: Path, stdlib: Path) -> Path | None:
    """The PEP 668 marker that forbids installing into this interpreter, or None."""
    if prefix != base_prefix:
        return None
    marker = stdlib / "EXTERNALLY-MANAGED"
    return marker if marker.is_file() else None


def detect(
    python: Path | None = None,
    prefix: Path | None = None,
    base_prefix: Path | None = None,
) -> Environment:
    """The environment of the running interpreter (or the one given), refusing what we may not
    change."""
    python = Path(python or sys.executable)
    prefix = Path(prefix or sys.prefix)
    base_prefix = Path(base_prefix or sys.base_prefix)
    site = Path(sysconfig.get_path("purelib", vars={"base": str(prefix), "platbase": str(prefix)}))
    if ephemeral_uvx(prefix):
        raise Refused(
            f"agent-env runs in {prefix}, a throwaway environment of uv's cache (uvx): a plugin "
            "added there would not be kept (or would leak into later uvx runs). Instead:\n"
            "  uv tool install agentenv-framework --with SPEC   (keeps it)\n"
            "  uvx --from agentenv-framework --with SPEC agent-env ...   (for one command)"
        )
    marker = externally_managed(prefix, base_prefix, Path(sysconfig.get_path("stdlib")))
    if marker is not None:
        raise Refused(
            f"{python} is an externally managed Python ({marker}, PEP 668): agent-env will not "
            "install into it. Install agent-env with the plugin in an environment of its own:\n"
            "  pipx install agentenv-kernel && pipx inject agentenv-kernel SPEC\n"
            "  uv tool install agentenv-kernel --with SPEC\n"
            "  python3 -m venv .venv && .venv/bin/pip install agentenv-kernel SPEC"
        )
    if not os.access(site, os.W_OK) or not os.access(prefix, os.W_OK):
        raise Refused(
            f"the environment {prefix} is read-only for this user ({site} is not writable): "
            "ask its owner to install the plugin, or use an environment of your own:\n"
            "  python3 -m venv .venv && .venv/bin/pip install agentenv-kernel SPEC"
        )
    uv = _uv()
    has_pip = _has_pip(python)
    low = ("pip", None) if has_pip or not uv else ("uv", uv)
    found = functools.partial(Environment, python=python, prefix=prefix, site_packages=site)
    if prefix == base_prefix:
        return found(kind=SYSTEM, low_level=low)
    receipt = prefix / "uv-receipt.toml"
    if receipt.is_file():
        if uv is None:
            raise Refused(f"{prefix} is a uv tool environment but `uv` is not on PATH")
        return found(
            kind=UV_TOOL,
            owner=_receipt_owner(receipt),
            state_files=(receipt,),
            low_level=("uv", uv),
        )
    pipx_meta = prefix / "pipx_metadata.json"
    if pipx_meta.is_file():
        return found(
            kind=PIPX,
            owner=_pipx_owner(pipx_meta),
            state_files=(pipx_meta,),
            low_level=low,
        )
    project = prefix.parent
    if (project / "pyproject.toml").is_file() and (project / "uv.lock").is_file() and uv:
        return found(
            kind=UV_PROJECT,
            project=project,
            owner=str(project),
            state_files=(project / "pyproject.toml", project / "uv.lock"),
            low_level=("uv", uv),
        )
    if not has_pip and not uv:
        raise Refused(
            f"the virtualenv {prefix} has no pip and `uv` is not on PATH: "
            f"run `{python} -m ensurepip` first"
        )
    return found(kind=VENV, low_level=low)
