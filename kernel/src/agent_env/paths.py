"""Where agent-env keeps user state and caches (DESIGN.md §5)."""

from __future__ import annotations

import os
from pathlib import Path


def home() -> Path:
    """User state: `$AGENT_ENV_HOME`, else platformdirs' user state dir for `agent-env`."""
    override = os.environ.get("AGENT_ENV_HOME")
    if override:
        return Path(override).expanduser()
    import platformdirs

    return Path(platformdirs.user_state_dir("agent-env", appauthor=False))


def cache_dir() -> Path:
    """Caches: `$XDG_CACHE_HOME/agentenv` (`~/.cache/agentenv` when unset)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "agentenv"
