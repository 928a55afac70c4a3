"""`TrialActor`: the Ray actor behind `RayRunner`, one worker process running trials of one
run on its asyncio loop through `agent_env.runners.TrialWorker`."""

from __future__ import annotations

from typing import Any

import anyio


class TrialActor:
    """Methods are Ray actor calls; `run` may be called concurrently (`max_concurrency`)."""

    def __init__(self, context: dict[str, Any]):
        from agent_env.runners import RunContext, TrialWorker

        self.worker = TrialWorker(RunContext.from_dict(context))
        self.scopes: dict[str, anyio.CancelScope] = {}

    async def ready(self) -> bool:
        return True

    async def run(self, ticket: dict[str, Any]) -> dict[str, Any]:
        """Run one trial; its final record. `cancel(slot)` ends it as Ctrl-C ends a local
        trial: the instance tears down and records `cancelled`."""
        from agent_env.runners import TrialTicket

        parsed = TrialTicket.from_dict(ticket)
        scope = self.scopes[parsed.slot] = anyio.CancelScope()
        try:
            with scope:
                return await self.worker.run(parsed)
            # cancelled here: the trial recorded `cancelled` (or never started)
            raise RuntimeError(f"trial {parsed.slot} was cancelled")
        finally:
            self.scopes.pop(parsed.slot, None)

    async def cancel(self, slot: str) -> bool:
        scope = self.scopes.get(slot)
        if scope is not None:
            scope.cancel()
        return scope is not None

    async def close(self) -> None:
        for scope in list(self.scopes.values()):
            scope.cancel()
        await self.worker.close()
