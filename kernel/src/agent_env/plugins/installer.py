"""Which installer agent-env runs under, from files only (no subprocess, cheap enough for an
error message): `uvx` (an environment in uv's cache), `uv tool` (`uv-receipt.toml`), `pipx`
(`pipx_metadata.json`), `uv project` (`pyproject.toml` + `uv.lock` beside the `.venv`), else a
`virtualenv` or the `system` Python. `install_hint` words an install command for it.
agentenv-plugin-lifecycle decides, with more care, whether `plugin add` may change it.
"""

from __future__ import annotations

import sys
from importlib.util import find_spec
from pathlib import Path

#: The plugin package that provides `agent-env plugin add|remove`.
LIFECYCLE = "agentenv-plugin-lifecycle"
#: agent-env itself: no plugin tool installs, replaces, removes or takes the name of these.
OWN_DISTRIBUTIONS = frozenset(
    {"agentenv-kernel", "agentenv-framework", "agentenv-framework-protocol"}
)

VENV, UV_TOOL, PIPX, UV_PROJECT, SYSTEM = "virtualenv", "uv tool", "pipx", "uv project", "system"
UVX = "uvx"

#: Folders of uv's cache that hold the environments `uvx` (and `uv run --with`) creates.
_UV_CACHE_ENV_FOLDERS = ("archive-v0", "builds-v0")


def ephemeral_uvx(prefix: Path) -> bool:
    """Whether `prefix` is an environment of uv's cache (what `uvx --from ...` runs in)."""
    return any(part in _UV_CACHE_ENV_FOLDERS for part in Path(prefix).parts)


def installer_kind(prefix: Path | None = None) -> str:
    """`uvx`, `uv tool`, `pipx`, `uv project`, `virtualenv` or `system` for the running
    interpreter (or `prefix`), from files only."""
    prefix = Path(prefix or sys.prefix)
    if ephemeral_uvx(prefix):
        return UVX
    if (prefix / "uv-receipt.toml").is_file():
        return UV_TOOL
    if (prefix / "pipx_metadata.json").is_file():
        return PIPX
    if (prefix.parent / "pyproject.toml").is_file() and (prefix.parent / "uv.lock").is_file():
        return UV_PROJECT
    return SYSTEM if prefix == Path(sys.base_prefix) else VENV


def install_hint(dist: str, pip_command: str, prefix: Path | None = None) -> str:
    """The command that installs distribution `dist` with the installer in use; `pip_command`
    (such as `pip install 'agentenv-framework[aws]'`) for pip environments."""
    kind = installer_kind(prefix)
    if kind == UVX:
        return f"uvx --from agentenv-framework --with {dist} agent-env ... (uvx cannot keep it)"
    if kind in (UV_TOOL, PIPX):
        if dist != LIFECYCLE and find_spec(LIFECYCLE.replace("-", "_")) is not None:
            return f"agent-env plugin add {dist}"
        # `plugin add` comes with agentenv-plugin-lifecycle: without it, the installer's own
        # command (the environment is named after the tool or app it was installed as)
        name = Path(prefix or sys.prefix).name
        if kind == PIPX:
            return f"pipx inject {name} {dist}"
        return f"uv tool install {name} --with {dist} (and the --with requirements it has)"
    # a uv project (this workspace's own .venv too) and plain environments: the pip command
    return pip_command
