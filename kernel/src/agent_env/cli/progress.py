"""The live progress display of a run with trials, on stderr: done / running / not passed,
elapsed, ETA. On a terminal one line is rewritten in place (5 times a second); otherwise a
plain line is printed every `interval` seconds (`[run] progress_interval`, default 10), and
always a last one at the end."""

from __future__ import annotations

import asyncio
import sys
import time
from typing import IO


def _duration(seconds: float) -> str:
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


class Progress:
    """Counts trials as they start and finish; `ticker()` draws them until cancelled."""

    def __init__(
        self,
        total: int,
        *,
        kept: int = 0,
        stream: IO[str] | None = None,
        tty: bool | None = None,
        interval: float | None = None,
    ):
        self.stream = stream if stream is not None else sys.stderr
        self.tty = self.stream.isatty() if tty is None else tty
        self.interval = 0.2 if self.tty else float(interval or 10.0)
        self.total = total
        self.kept = kept
        self.done = 0
        self.running = 0
        self.not_passed = 0
        self.retried = 0
        self.t0 = time.monotonic()
        self._drawn = False

    def started(self) -> None:
        self.running += 1

    def finished(self, passed: bool) -> None:
        self.running -= 1
        self.done += 1
        if not passed:
            self.not_passed += 1

    def abandoned(self) -> None:
        """A started trial ended without a result (cancelled)."""
        self.running -= 1

    def line(self) -> str:
        elapsed = time.monotonic() - self.t0
        done = self.kept + self.done
        parts = [
            f"trials {done}/{self.total} done",
            f"{self.running} running",
            f"{self.not_passed} not passed",
        ]
        if self.retried:
            parts.append(f"{self.retried} infra retries")
        parts.append(f"{_duration(elapsed)} elapsed")
        remaining = self.total - done
        if remaining and self.done:
            parts.append(f"ETA {_duration(elapsed / self.done * remaining)}")
        if self.done and elapsed > 0:
            parts.append(f"{self.done / elapsed:.1f}/s")
        return ", ".join(parts)

    def draw(self) -> None:
        if self.tty:
            self.stream.write("\r" + self.line() + "\x1b[K")
            self._drawn = True
        else:
            self.stream.write(self.line() + "\n")
        self.stream.flush()

    async def ticker(self) -> None:
        """Draw every `interval` seconds until cancelled."""
        while True:
            await asyncio.sleep(self.interval)
            self.draw()

    def close(self) -> None:
        """The last line (ends the rewritten line on a terminal)."""
        self.draw()
        if self.tty and self._drawn:
            self.stream.write("\n")
            self.stream.flush()
