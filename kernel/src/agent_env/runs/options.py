"""`RunOptions`: the name the run options had before `RunRequest` (kept for the code and the
plugins that import it; the same class)."""

from __future__ import annotations

from agent_env.runs.request import RunRequest as RunOptions
from agent_env.runs.request import StoredRef

__all__ = ["RunOptions", "StoredRef"]
