"""The plugin system: `loader` (loading in isolation, failure bookkeeping), `manager` (the
typed hook facade), `introspection` (what `plugin list|show|check` report), `registries`
(typed registries incl. `StoreRegistry`), `known` (install hints for in-tree backends),
`installer` (which installer owns the running Python).

`get_plugin_manager()` is the process-wide manager every part of agent-env asks; tests bind a
fresh one with `set_plugin_manager` (the `plugin_manager` fixture does it for you).
"""

from __future__ import annotations

from agent_env.plugins.loader import ENTRY_POINT_GROUP, PluginInfo
from agent_env.plugins.manager import BUILTIN_PLUGINS, PluginManager
from agent_env.plugins.registries import HintedRegistry, StoreRegistry

__all__ = [
    "BUILTIN_PLUGINS",
    "ENTRY_POINT_GROUP",
    "HintedRegistry",
    "PluginInfo",
    "PluginManager",
    "StoreRegistry",
    "get_plugin_manager",
    "set_plugin_manager",
]

_manager: PluginManager | None = None


def get_plugin_manager() -> PluginManager:
    """The process-wide plugin manager (created on first use; plugins load on first need)."""
    global _manager
    if _manager is None:
        _manager = PluginManager()
    return _manager


def set_plugin_manager(manager: PluginManager | None) -> PluginManager | None:
    """Bind `manager` as the process-wide one (None: a fresh default next time); returns the old."""
    global _manager
    previous, _manager = _manager, manager
    return previous
