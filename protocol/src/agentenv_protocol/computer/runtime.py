"""Commands a driver runs for `computer-exec`: one run per `request_id` (a repeated id gets the
first result, a running one is joined), the latest `KEEP_EXEC_RESULTS` results remembered; a
run that failed to start is not remembered."""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Awaitable, Callable

import attrs

KEEP_EXEC_RESULTS = 256


@attrs.define
class ExecRuns:
    """The running and finished commands of one driver, by request id."""

    _running: dict = attrs.field(factory=dict)
    _done: OrderedDict = attrs.field(factory=OrderedDict)

    async def once(self, request_id: str, start: Callable[[], Awaitable[dict]]) -> dict:
        if request_id in self._done:
            return self._done[request_id]
        running = self._running.get(request_id)
        if running is None:
            running = asyncio.ensure_future(start())
            self._running[request_id] = running
            running.add_done_callback(lambda task: self._finished(request_id, task))
        return await asyncio.shield(running)

    def _finished(self, request_id: str, task: asyncio.Future) -> None:
        self._running.pop(request_id, None)
        if task.cancelled() or task.exception() is not None:
            return
        self._done[request_id] = task.result()
        while len(self._done) > KEEP_EXEC_RESULTS:
            self._done.popitem(last=False)
