"""The input queue: input reaches the screen one call at a time, in arrival order; a call that
waits past its limit is refused `input_busy` with nothing sent. It also counts each caller's
input, so a frame knows how much input others sent since it was taken."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import anyio
import attrs

from agentenv_protocol.computer.errors import InputBusy


@attrs.define
class InputQueue:
    """A fair (FIFO) lock over the screen's input plus the input counters."""

    _lock: anyio.Lock = attrs.field(factory=anyio.Lock)
    total: int = 0
    by_identity: dict = attrs.field(factory=dict)

    @contextlib.asynccontextmanager
    async def turn(self, wait_s: float | None) -> AsyncIterator[None]:
        """Hold the queue; `wait_s` None waits as long as it takes. A caller cancelled while
        waiting leaves the queue as it found it."""
        try:
            with anyio.fail_after(wait_s):
                await self._lock.acquire()
        except TimeoutError:
            raise InputBusy(f"waited {wait_s:g} s for earlier input to finish") from None
        try:
            yield
        finally:
            self._lock.release()

    def mark(self) -> tuple[int, dict]:
        """The counters now (a frame keeps them)."""
        return self.total, dict(self.by_identity)

    def count(self, identity: str) -> None:
        """One input call of `identity` reached the screen."""
        self.total += 1
        self.by_identity[identity] = self.by_identity.get(identity, 0) + 1

    def others_since(self, mark: tuple[int, dict], identity: str) -> int:
        total, mine = mark
        own = self.by_identity.get(identity, 0) - mine.get(identity, 0)
        return (self.total - total) - own
