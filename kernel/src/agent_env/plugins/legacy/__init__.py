"""Plugins written for the existing product (`agentenv-framework`): distributions that declare
entry points in its groups (`groups.GROUPS`) instead of our `agent_env` group.

Each such distribution becomes one plugin row, `format` "legacy", named after the
distribution. Its entry points in a group with an adapter (`agent_env.task_steps`) are handed
to that adapter, a plugin object registered under the distribution's name through the same
hooks as any plugin (so attribution, isolation, disabling and `plugin list` apply unchanged);
its entry points in other groups are recorded as not supported, with the reason.

Why the adapter lives in the kernel and not in a plugin package: the existing product's
plugins import their base classes from `agent_env.task_step`, and only the kernel distribution
can provide a module under the `agent_env` import name (no namespace packages). The adapter
itself uses only the public plugin API (`hookimpl`, `Step`, `StepContext`, `StepFailed`).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from typing import Any

import attrs

from agent_env.entrypoints import InstalledEntryPoint
from agent_env.plugins.legacy.groups import GROUPS, Group
from agent_env.plugins.loader import LEGACY, PluginInfo, PluginLoader

__all__ = ["GROUPS", "Group", "LegacyEntryPoint", "discover", "load_distributions"]


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
            version = ep.version
            found.setdefault(dist, []).append(
                LegacyEntryPoint(
                    group=group,
                    name=ep.name,
                    value=ep.value,
                    dist=dist,
                    version=version,
                    load=ep.load,
                )
            )
    return found


def _adapter(group: Group) -> Callable[[list[LegacyEntryPoint]], Any]:
    assert group.adapter is not None
    module, _, name = group.adapter.partition(":")
    return getattr(importlib.import_module(module), name)  # type: ignore[no-any-return]


def load_distributions(loader: PluginLoader, installed: Iterable[InstalledEntryPoint]) -> None:
    """Add one plugin row per legacy distribution to `loader`; register its adapters."""
    for dist, entries in sorted(discover(installed).items()):
        modules = sorted({e.value.split(":")[0] for e in entries})
        info = PluginInfo(
            name=dist,
            module=", ".join(modules),
            dist=dist,
            version=entries[0].version,
            format=LEGACY,
        )
        if loader.claimed(info):
            continue
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
        if not adapted:
            loader.unsupported(info)
            continue
        # One group has an adapter today, so one plugin object per distribution; a second
        # adapter group would register one object per (distribution, group).
        for group_name, group_entries in adapted.items():
            loader.add(_adapter(GROUPS[group_name])(group_entries), info)
