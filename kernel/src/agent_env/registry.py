"""Typed registries filled by `agentenv_register_*` hooks, keyed by a class-level name."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Generic, TypeVar

from agent_env.errors import PluginError
from agent_env.suggest import did_you_mean

T = TypeVar("T")


class PluginAttribution:
    """Remembers which plugin is registering right now, so what it adds can name its owner.

    The plugin manager calls each plugin's hook inside `registering(plugin_name)`.
    """

    _current_plugin: str | None = None

    @contextmanager
    def registering(self, plugin: str) -> Iterator[None]:
        """Attribute everything added inside the block to `plugin`."""
        previous, self._current_plugin = self._current_plugin, plugin
        try:
            yield
        finally:
            self._current_plugin = previous


class Registry(PluginAttribution, Generic[T]):
    """Maps a name (the class attribute `key`, `type` by default) to a registered class.

    A duplicate name is an error naming both plugins; an unknown name lists the known ones.
    """

    def __init__(self, kind: str, *, key: str = "type"):
        self.kind = kind
        self.key = key
        self._entries: dict[str, T] = {}
        self._owners: dict[str, str] = {}
        self._current_plugin = "<direct>"

    def add(self, cls: T) -> T:
        name = getattr(cls, self.key, None)
        if not isinstance(name, str) or not name:
            raise PluginError(
                f"plugin {self._current_plugin!r} registered {cls!r} as a {self.kind} "
                f"without a string {self.key!r} attribute"
            )
        if name in self._entries:
            raise PluginError(
                f"{self.kind} {name!r} is registered twice: by plugin "
                f"{self._owners[name]!r} and by plugin {self._current_plugin!r}"
            )
        self._entries[name] = cls
        self._owners[name] = self._current_plugin or "<direct>"
        return cls

    def discard_plugin(self, plugin: str) -> list[str]:
        """Drop every name `plugin` added (its hook failed half-way); the names dropped."""
        dropped = [name for name, owner in self._owners.items() if owner == plugin]
        for name in dropped:
            del self._entries[name], self._owners[name]
        return dropped

    def get(self, name: str) -> T:
        try:
            return self._entries[name]
        except KeyError:
            known = ", ".join(sorted(self._entries)) or "none"
            raise PluginError(
                f"unknown {self.kind} {name!r}{did_you_mean(name, self._entries)}; known: {known}"
            ) from None

    def owner(self, name: str) -> str:
        return self._owners[name]

    def names(self) -> list[str]:
        return sorted(self._entries)

    def by_plugin(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for name, plugin in self._owners.items():
            out.setdefault(plugin, []).append(name)
        return {p: sorted(n) for p, n in out.items()}

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._entries)
