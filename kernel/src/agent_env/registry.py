"""Typed registries filled by `agentenv_register_*` hooks, keyed by a class-level name.

An entry is a class (`registry.add(cls)`) or a lazy reference (`registry.add_lazy(name,
"pkg.module:Class", **attributes)`): the import path plus the class attributes lookups need
without importing it. A lazy entry is imported on its first `get`, so building a registry
imports no plugin's classes and a command imports only the classes it uses.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Generic, TypeVar

from agent_env.errors import PluginError
from agent_env.suggest import did_you_mean

T = TypeVar("T")

#: `package.module:Class` (or `:Outer.Inner`), the form of a lazy entry's target.
TARGET_RE = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")


def import_failure(module: str, exc: BaseException) -> str:
    """Why importing `module` (`pkg.mod` or `pkg.mod:obj`) failed: not installed, or broken."""
    if isinstance(exc, ModuleNotFoundError):
        own = module.split(":")[0]
        if exc.name and (own == exc.name or own.startswith(exc.name + ".")):
            return f"not installed: module {own!r} does not exist"
        return f"installed but broken: importing {module!r} failed: {exc}"
    return f"installed but broken: importing {module!r} raised {type(exc).__name__}: {exc}"


def import_target(target: str) -> Any:
    """The object `pkg.module:Outer.Inner` names (exceptions of the import propagate)."""
    module, _, qualname = target.partition(":")
    obj: Any = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


class LazyClass:
    """A registered class that is not imported yet: where it lives, and the class attributes
    declared with it (answered without importing; checked against the class once it is)."""

    __slots__ = ("attributes", "target")

    def __init__(self, target: str, attributes: dict[str, Any]):
        self.target = target
        self.attributes = attributes

    def __repr__(self) -> str:
        return f"<lazy {self.target}>"


class PluginAttribution:
    """Remembers which plugin is registering right now, so what it adds can name its owner.

    The plugin manager calls each plugin's hook inside `registering(plugin_name)`.
    """

    _current_plugin: str | None = None

    @contextmanager
    def registering(self, plugin: str | None) -> Iterator[None]:
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
        self._entries: dict[str, T | LazyClass] = {}
        self._owners: dict[str, str] = {}
        self._current_plugin = "<direct>"

    def add(self, cls: T) -> T:
        """Register an imported class under its `key` attribute."""
        name = getattr(cls, self.key, None)
        if not isinstance(name, str) or not name:
            raise PluginError(
                f"plugin {self._current_plugin!r} registered {cls!r} as a {self.kind} "
                f"without a string {self.key!r} attribute"
            )
        self._put(name, cls)
        return cls

    def add_lazy(self, name: str, target: str, **attributes: Any) -> None:
        """Register the class at `target` (`pkg.module:Class`) under `name` without importing
        it. `attributes` are class attributes lookups may ask for before it is imported (see
        `attribute`); on import the class must have `key == name` and each of them."""
        where = f"plugin {self._current_plugin!r} registered {self.kind} {name!r}"
        if not isinstance(name, str) or not name:
            raise PluginError(
                f"plugin {self._current_plugin!r} registered a {self.kind} "
                f"without a name (target {target!r})"
            )
        if not isinstance(target, str) or not TARGET_RE.match(target):
            raise PluginError(f"{where} as {target!r}: expected 'package.module:Class'")
        if self.key in attributes:
            raise PluginError(f"{where}: {self.key!r} is the name, not an attribute")
        self._put(name, LazyClass(target, dict(attributes)))

    def _put(self, name: str, entry: T | LazyClass) -> None:
        if name in self._entries:
            raise PluginError(
                f"{self.kind} {name!r} is registered twice: by plugin "
                f"{self._owners[name]!r} and by plugin {self._current_plugin!r}"
            )
        self._entries[name] = entry
        self._owners[name] = self._current_plugin or "<direct>"

    def discard_plugin(self, plugin: str) -> list[str]:
        """Drop every name `plugin` added (its hook failed half-way); the names dropped."""
        dropped = [name for name, owner in self._owners.items() if owner == plugin]
        for name in dropped:
            del self._entries[name], self._owners[name]
        return dropped

    def get(self, name: str) -> T:
        """The class registered as `name`, imported now if it was registered lazily."""
        try:
            entry = self._entries[name]
        except KeyError:
            known = ", ".join(sorted(self._entries)) or "none"
            raise PluginError(
                f"unknown {self.kind} {name!r}{did_you_mean(name, self._entries)}; known: {known}"
            ) from None
        if isinstance(entry, LazyClass):
            entry = self._entries[name] = self._load(name, entry)
        return entry

    def _load(self, name: str, lazy: LazyClass) -> Any:
        where = f"{self.kind} {name!r} of plugin {self._owners[name]!r}"
        try:
            cls = import_target(lazy.target)
        except Exception as exc:
            raise PluginError(
                f"{where} cannot be loaded: {import_failure(lazy.target, exc)}"
            ) from exc
        expected = {self.key: name, **lazy.attributes}
        for attribute, value in expected.items():
            actual = getattr(cls, attribute, None)
            if actual != value:
                raise PluginError(
                    f"{where}: {lazy.target} has {attribute} = {actual!r}, but the plugin "
                    f"registered it with {attribute} = {value!r}"
                )
        return cls

    def attribute(self, name: str, attribute: str, default: Any = None) -> Any:
        """A class attribute of `name`'s class: the declared value of a lazy entry (no
        import), else the class's own (importing it if needed)."""
        entry = self._entries.get(name)
        if isinstance(entry, LazyClass) and attribute in entry.attributes:
            return entry.attributes[attribute]
        return getattr(self.get(name), attribute, default)

    def is_loaded(self, name: str) -> bool:
        """Whether `name`'s class has been imported (always, for classes added as such)."""
        return not isinstance(self._entries.get(name), LazyClass)

    def load_all(self) -> list[tuple[str, str]]:
        """Import every lazy entry (`agent-env plugin check`): (plugin, why) for each failure."""
        problems = []
        for name in list(self._entries):
            try:
                self.get(name)
            except PluginError as exc:
                problems.append((self._owners[name], str(exc)))
        return problems

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
