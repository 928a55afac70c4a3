"""Skip a test locally, fail it on CI, when something it needs (a daemon, an emulator) is
missing: a CI run that silently skipped every such test proves nothing."""

from __future__ import annotations

import os


def on_ci() -> bool:
    """True when the `CI` environment variable says so (`1`, `true`, `yes`)."""
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def require(problem: str | None) -> None:
    """Do nothing when `problem` is None; else skip the current test (fail it on CI) with it."""
    if problem is None:
        return
    import pytest

    if on_ci():
        pytest.fail(f"CI=true and {problem}", pytrace=False)
    pytest.skip(problem)
