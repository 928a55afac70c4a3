"""Where agent-env keeps user state and caches (DESIGN.md §5)."""

from __future__ import annotations

import os
import posixpath
import sys
from pathlib import Path


def home() -> Path:
    """User state: `$AGENT_ENV_HOME`, else platformdirs' user state dir for `agent-env`."""
    override = os.environ.get("AGENT_ENV_HOME")
    if override:
        return Path(override).expanduser()
    return Path(_xdg_state_dir() or _platformdirs_state_dir())


def _xdg_state_dir() -> str | None:
    """platformdirs' answer on Linux in the usual case, without importing it (a few ms of every
    command): `$XDG_STATE_HOME/agent-env` when that is absolute, else
    `$HOME/.local/state/agent-env` for an absolute `$HOME`. None elsewhere (another system, an
    Android app's environment, no usable home): platformdirs decides."""
    if sys.platform != "linux" or hasattr(sys, "getandroidapilevel"):
        return None
    if os.environ.get("ANDROID_DATA") == "/data" and os.environ.get("ANDROID_ROOT") == "/system":
        return None
    state = os.environ.get("XDG_STATE_HOME", "")
    if posixpath.isabs(state):
        return posixpath.join(state, "agent-env")
    user_home = os.environ.get("HOME", "")
    if posixpath.isabs(user_home):
        return posixpath.join(user_home, ".local", "state", "agent-env")
    return None


def _platformdirs_state_dir() -> str:
    import platformdirs

    return platformdirs.user_state_dir("agent-env", appauthor=False)


def cache_dir() -> Path:
    """Caches: `$XDG_CACHE_HOME/agentenv` (`~/.cache/agentenv` when unset)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "agentenv"
