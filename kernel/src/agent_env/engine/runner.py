"""The `Runner` contract and `LocalRunner`: task instances as asyncio tasks in this process.

The runner is the seam a distributed runner plugin replaces (`[run] runner = "<type>"`): a
class registered through `agentenv_register_runners` that satisfies `Runner`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, ClassVar, Protocol, runtime_checkable


@runtime_checkable
class Runner(Protocol):
    """Runs prepared task instances (records already written; `await instance.run()` does one)
    and returns their final records in input order. Constructed as `cls(concurrency=N,
    **settings)` with the `[run]` settings; cancellation must let every started instance tear
    down and write its record.

    Example::

        class InlineRunner:
            type = "inline"

            def __init__(self, concurrency: int = 1, **settings): ...

            async def run(self, instances):
                for instance in instances:
                    await instance.run()
                return [instance.record for instance in instances]
    """

    type: ClassVar[str]

    async def run(self, instances: Sequence[Any]) -> list[dict[str, Any]]: ...


class LocalRunner:
    """Runs instances concurrently in one event loop with a concurrency bound."""

    type: ClassVar[str] = "local"

    def __init__(self, concurrency: int = 8, **_settings: Any):
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {concurrency}")
        self.concurrency = concurrency

    async def run(self, instances: Sequence[Any]) -> list[dict[str, Any]]:
        """Run every instance (its `await instance.run()`); records in input order.

        Cancellation (Ctrl-C) propagates after every started instance has torn down and
        written its record; instances that never started keep their `pending` record.
        """
        pending = iter(instances)

        async def worker() -> None:
            for instance in pending:
                await instance.run()

        async with asyncio.TaskGroup() as tg:
            for _ in range(min(self.concurrency, len(instances))):
                tg.create_task(worker())
        return [instance.record for instance in instances]
