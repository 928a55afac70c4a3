"""The registries the plugin manager builds: typed `Registry` subclasses that know install hints."""

from __future__ import annotations

from typing import Any

from agent_env.errors import PluginError
from agent_env.registry import PluginAttribution, Registry
from agent_env.suggest import did_you_mean

STORE_KIND_NAMES = ("document", "object", "image", "secret")


class HintedRegistry(Registry):
    """A `Registry` whose unknown-name error names the pip install for in-tree backends."""

    def get(self, name: str) -> Any:
        if name not in self:
            from agent_env.plugins.known import install_hint

            hint = install_hint(self.kind, name)
            if hint:
                raise PluginError(
                    f"{self.kind} {name!r} is provided by a plugin that is not installed "
                    f"(or is disabled); install it with: {hint}"
                )
        return super().get(name)


class StoreRegistry(PluginAttribution):
    """Store backends keyed by `(cls.kind, cls.type)`; one `Registry` per kind underneath."""

    def __init__(self) -> None:
        self._kinds = {k: HintedRegistry(f"{k} store") for k in STORE_KIND_NAMES}
        self._current_plugin = "<direct>"

    def _kind(self, kind: Any, what: str) -> Registry:
        if kind not in self._kinds:
            raise PluginError(
                f"{what} has store kind {kind!r}{did_you_mean(str(kind), self._kinds)}; "
                f"known kinds: {', '.join(STORE_KIND_NAMES)}"
            )
        return self._kinds[kind]

    def add(self, cls: Any) -> Any:
        registry = self._kind(
            getattr(cls, "kind", None), f"plugin {self._current_plugin!r} registered {cls!r} which"
        )
        with registry.registering(self._current_plugin):
            return registry.add(cls)

    def add_lazy(self, name: str, target: str, *, kind: str, **attributes: Any) -> None:
        """Register the `kind` store class at `target` (`pkg.module:Class`) as `name` without
        importing it (see `Registry.add_lazy`); `kind` is checked against the class on import."""
        registry = self._kind(
            kind, f"plugin {self._current_plugin!r} registered {kind} store {name!r} which"
        )
        with registry.registering(self._current_plugin):
            registry.add_lazy(name, target, kind=kind, **attributes)

    def get(self, kind: str, type: str) -> Any:
        registry = self._kind(kind, "the lookup")
        if type not in registry:
            from agent_env.plugins.known import install_hint

            hint = install_hint(kind, type)
            if hint:
                raise PluginError(
                    f"{kind} store {type!r} is provided by a plugin that is not installed "
                    f"(or is disabled); install it with: {hint}"
                )
        return registry.get(type)

    def attribute(self, kind: str, type: str, attribute: str, default: Any = None) -> Any:
        """A class attribute of a backend, without importing it when it was declared."""
        return self._kind(kind, "the lookup").attribute(type, attribute, default)

    def is_loaded(self, kind: str, type: str) -> bool:
        return self._kind(kind, "the lookup").is_loaded(type)

    def load_all(self) -> list[tuple[str, str]]:
        """Import every lazily registered backend: (plugin, why) for each failure."""
        return [problem for registry in self._kinds.values() for problem in registry.load_all()]

    def names(self, kind: str) -> list[str]:
        return self._kind(kind, "the lookup").names()

    def discard_plugin(self, plugin: str) -> list[str]:
        """Drop every backend `plugin` added, of every kind (its hook failed half-way)."""
        return [n for registry in self._kinds.values() for n in registry.discard_plugin(plugin)]

    def owner(self, kind: str, type: str) -> str:
        return self._kinds[kind].owner(type)

    def __contains__(self, key: object) -> bool:
        return (
            isinstance(key, tuple)
            and len(key) == 2
            and key[0] in self._kinds
            and key[1] in self._kinds[key[0]]
        )

    def __len__(self) -> int:
        return sum(len(r) for r in self._kinds.values())

    def by_plugin(self) -> dict[str, list[str]]:
        """Plugin name -> ["document:sqlite", ...] for `agent-env plugin list`."""
        out: dict[str, list[str]] = {}
        for kind, registry in self._kinds.items():
            for plugin, names in registry.by_plugin().items():
                out.setdefault(plugin, []).extend(f"{kind}:{n}" for n in names)
        return {p: sorted(n) for p, n in out.items()}
