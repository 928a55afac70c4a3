"""Finding the existing product's plugins among the installed entry points: one plugin row per
distribution that declares entry points in its groups (`groups.GROUPS`), named after the
distribution, `format` "legacy".

Its entry points in a group with an adapter (`agent_env.task_steps`) are handed to that
adapter, a plugin object the kernel registers under the distribution's name through the same
hooks as any plugin (so attribution, isolation, disabling and `plugin list` apply unchanged);
its entry points in other groups are recorded as not supported, with the reason.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from typing import Any

import attrs

from agent_env.entrypoints import InstalledEntryPoint
from agent_env.plugins import PluginInfo
from agentenv_legacy.groups import GROUPS, Group

#: `PluginInfo.format` of a distribution written for the existing product.
LEGACY = "legacy"


@attrs.frozen(kw_only=True)
class LegacyEntryPoint:
    """One entry point of a legacy group; `load()` imports the object it names."""

    group: str
    name: str
    value: str
    dist: str
    version: str | None
    load: Callable[[], Any] = attrs.field(eq=False, repr=False)

    @property
    def label(self) -> str:
        return f"{self.group} entry point {self.name!r} ({self.value})"


def discover(installed: Iterable[InstalledEntryPoint]) -> dict[str, list[LegacyEntryPoint]]:
    """Distribution name -> its entry points (among `installed`) in the existing product's
    groups."""
    found: dict[str, list[LegacyEntryPoint]] = {}
    seen: set[tuple[str, str, str, str]] = set()
    installed = list(installed)
    for group in GROUPS:
        for ep in sorted((e for e in installed if e.group == group), key=lambda e: e.name):
            dist = ep.dist if ep.dist is not None else ep.value.split(":")[0]
            key = (dist, group, ep.name, ep.value)
            if key in seen:  # the same distribution seen twice on sys.path
                continue
            seen.add(key)
            found.setdefault(dist, []).append(
                LegacyEntryPoint(
                    group=group,
                    name=ep.name,
                    value=ep.value,
                    dist=dist,
                    version=ep.version,
                    load=ep.load,
                )
            )
    return found


def _adapter(group: Group) -> Callable[[list[LegacyEntryPoint]], Any]:
    assert group.adapter is not None
    module, _, name = group.adapter.partition(":")
    return getattr(importlib.import_module(module), name)  # type: ignore[no-any-return]


def legacy_plugins(installed: Iterable[InstalledEntryPoint]) -> list[tuple[PluginInfo, list[Any]]]:
    """One (plugin row, adapter plugin objects) per legacy distribution; no objects when none of
    its groups is supported (the row's errors say why)."""
    plugins = []
    for dist, entries in sorted(discover(installed).items()):
        modules = sorted({e.value.split(":")[0] for e in entries})
        info = PluginInfo(
            name=dist,
            module=", ".join(modules),
            dist=dist,
            version=entries[0].version,
            format=LEGACY,
        )
        adapted: dict[str, list[LegacyEntryPoint]] = {}
        for entry in entries:
            group = GROUPS[entry.group]
            if group.adapter is None:
                info.errors.append(
                    f"{entry.label}: not supported ({group.holds} of the existing product): "
                    f"{group.reason}"
                )
            else:
                adapted.setdefault(group.name, []).append(entry)
        # One group has an adapter today, so one plugin object per distribution; a second
        # adapter group would add one object per (distribution, group).
        objects = [_adapter(GROUPS[name])(group_entries) for name, group_entries in adapted.items()]
        plugins.append((info, objects))
    return plugins
