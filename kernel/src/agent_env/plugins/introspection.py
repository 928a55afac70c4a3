"""What the plugin commands and error messages ask about the loaded plugins: which plugin
registered what, which did not load, the config sections and distributions they bring.

Pure functions over the loader's `PluginInfo`s and the built registries; `PluginManager`
exposes each as a method.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from agent_env.errors import PluginError
from agent_env.plugins.loader import ENTRY_POINT_GROUP, KERNEL_DIST, OK, PluginInfo
from agent_env.suggest import did_you_mean


def config_sections(plugins: Iterable[PluginInfo]) -> dict[str, tuple[str, dict[str, Any]]]:
    """Config sections declared by loaded plugins: section -> (plugin name, {key: default})."""
    out: dict[str, tuple[str, dict[str, Any]]] = {}
    for info in plugins:
        if info.status == OK:
            for section, keys in info.config_sections.items():
                out[section] = (info.name, keys)
    return out


def distributions(plugins: Iterable[PluginInfo]) -> set[str]:
    """Every distribution that ships a plugin here, loaded or not (for `[plugins.<dist>]`)."""
    from importlib.metadata import entry_points

    dists = {KERNEL_DIST} | {i.dist for i in plugins if i.dist}
    dists |= {ep.dist.name for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.dist}
    return dists


def not_loaded(plugins: Iterable[PluginInfo]) -> list[str]:
    """`name (status)` for every plugin that is disabled or failed, for error messages."""
    return [f"{i.name} ({i.status})" for i in plugins if i.status != OK]


def describe(
    plugins: Mapping[str, PluginInfo],
    registries: Iterable[str],
    registry: Callable[[str], Any],
    commands: Mapping[str, list[str]],
) -> dict[str, str]:
    """Fill each plugin's `registered` (registry -> names) by building every registry; returns
    the registries that failed to build, with why."""
    problems: dict[str, str] = {}
    for info in plugins.values():
        info.registered = {}
    for attr in registries:
        try:
            built = registry(attr)
        except PluginError as exc:
            problems[attr] = str(exc)
            continue
        for plugin, names in built.by_plugin().items():
            if plugin in plugins:
                plugins[plugin].registered[attr] = names
    for plugin, names in commands.items():
        if plugin in plugins and names:
            plugins[plugin].registered["commands"] = names
    return problems


def get(plugins: Mapping[str, PluginInfo], name: str) -> PluginInfo:
    """The plugin named `name`, or the only plugin of distribution `name`."""
    if name in plugins:
        return plugins[name]
    by_dist = [i for i in plugins.values() if i.dist == name]
    if len(by_dist) == 1:
        return by_dist[0]
    if by_dist:
        raise PluginError(
            f"distribution {name!r} carries {len(by_dist)} plugins: "
            f"{', '.join(sorted(i.name for i in by_dist))}; name one of them"
        )
    starting = [p for p in plugins if p.startswith(name)]
    hint = did_you_mean(name, plugins) or (
        f" (did you mean {starting[0]!r}?)" if len(starting) == 1 else ""
    )
    raise PluginError(
        f"no plugin named {name!r}{hint}; known: {', '.join(sorted(plugins)) or 'none'}"
    )
