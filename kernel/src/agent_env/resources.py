"""Instance-scoped resources: something a step starts once per task instance (a gateway, a
relay) and the engine closes when the instance ends, in the same shielded teardown as its
sandboxes, instead of a process global keyed by instance id::

    GATEWAY = InstanceKey[RunGateway]("core-steps.gateway")

    gateway = await ctx.instance_resource(GATEWAY, start=start_gateway, close=RunGateway.stop)
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeVar, cast

T = TypeVar("T")


class InstanceKey(Generic[T]):
    """A typed key for one kind of instance resource (compared by identity, like pytest's
    `StashKey`); `name` is only for messages."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"InstanceKey({self.name!r})"


async def _maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


class InstanceResources:
    """The resources of one task instance: started once per key, closed in reverse order."""

    def __init__(self) -> None:
        self._values: dict[InstanceKey[Any], Any] = {}
        self._closers: list[tuple[InstanceKey[Any], Callable[[Any], Any]]] = []
        self._locks: dict[InstanceKey[Any], asyncio.Lock] = {}

    def get(self, key: InstanceKey[T]) -> T | None:
        """The live resource under `key`, None when none was started."""
        return self._values.get(key)

    def values(self) -> list[Any]:
        """The live resources, first started first."""
        return list(self._values.values())

    def share(self, other: InstanceResources) -> None:
        """Reach `other`'s live resources under their keys too, without ever closing them (a
        warm pool's instance lends its gateway to the episode that adopted it)."""
        for key, value in other._values.items():
            self._values.setdefault(key, value)

    async def get_or_start(
        self,
        key: InstanceKey[T],
        start: Callable[[], T | Awaitable[T]],
        close: Callable[[T], Any] | None = None,
    ) -> T:
        """The resource under `key`, started by `start()` on first use (concurrent first
        uses wait for one start); `close(resource)` (sync or async) runs at teardown."""
        if key in self._values:
            return cast(T, self._values[key])  # a key's value has the key's type
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            if key not in self._values:
                value = await _maybe_await(start())
                self._values[key] = value
                if close is not None:
                    self._closers.append((key, close))
            return cast(T, self._values[key])

    async def aclose(self, log: Callable[[str], None] | None = None) -> None:
        """Close every resource, last started first; a failing close is logged, not raised."""
        while self._closers:
            key, close = self._closers.pop()
            value = self._values.pop(key, None)
            try:
                await _maybe_await(close(value))
            except Exception as exc:  # noqa: BLE001 - one bad close must not skip the others
                if log is not None:
                    log(f"closing instance resource {key.name} failed: {exc}")
        self._values.clear()
