"""Warnings a loader reports once per process (once per command: the CLI resets it at the
start of each, which matters where several run in one process, as under a test runner): logged on the `agent_env` logger, which the
CLI prints to stderr as `agent-env: warning: ...` (a library user sees normal logging)."""

from __future__ import annotations

import logging
from collections.abc import Iterable

_log = logging.getLogger("agent_env")
_shown: set[str] = set()


def warn_once(messages: Iterable[str]) -> None:
    """Log each message that this process has not logged before."""
    for message in messages:
        if message not in _shown:
            _shown.add(message)
            _log.warning("%s", message)


def reset() -> None:
    """Forget what was shown (the CLI calls it as each command starts)."""
    _shown.clear()
