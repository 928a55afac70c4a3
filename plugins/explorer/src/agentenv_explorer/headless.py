"""Headless Chromium for the explorer's browser tests and `bench/explorer.py`: Debian's
/usr/bin/chromium driven by Python playwright, with the flags this machine needs (no sandbox
as root, no GPU, no background networking: the closed network refuses those connections)."""

from __future__ import annotations

from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-extensions",
    "--no-first-run",
]


def problem() -> str | None:
    """Why headless Chromium cannot run here, or None."""
    if not CHROMIUM.exists():
        return f"{CHROMIUM} is missing (scripts/services.d/chromium.sh installs it)"
    try:
        import playwright.sync_api  # noqa: F401 - only whether it imports
    except ImportError:
        return "python playwright is not installed (the root dev dependency group has it)"
    return None
