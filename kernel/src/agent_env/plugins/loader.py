"""Loading plugins in isolation: built-ins by module name, entry points of the `agent_env`
group, and objects registered by hand. Each one gets a `PluginInfo`; a plugin that is not
installed, broken, incompatible or disabled is recorded (and warned about once) and skipped,
unless strict mode makes it fatal.
"""

from __future__ import annotations

import functools
import importlib
import logging
import types
from collections.abc import Callable, Iterable
from typing import Any

import attrs
import pluggy

from agent_env import hookspecs
from agent_env._version import __version__ as KERNEL_VERSION
from agent_env.entrypoints import InstalledEntryPoint
from agent_env.errors import PluginError
from agent_env.plugins import api
from agent_env.registry import import_failure
from agent_env.suggest import did_you_mean

log = logging.getLogger("agent_env.plugins")

ENTRY_POINT_GROUP = "agent_env"
KERNEL_DIST = "agentenv-kernel"

OK, FAILED, DISABLED, INCOMPATIBLE, UNSUPPORTED = (
    "ok",
    "failed",
    "disabled",
    "incompatible",
    "unsupported",
)
STATUSES = (OK, FAILED, DISABLED, INCOMPATIBLE, UNSUPPORTED)

#: `PluginInfo.format`: a plugin of ours (pluggy hooks), or a distribution written for the
#: existing product's entry-point groups (brought in by agentenv-legacy).
NATIVE, LEGACY = "native", "legacy"


@attrs.define
class PluginInfo:
    """What `agent-env plugin list` shows about one plugin."""

    name: str
    module: str
    dist: str | None = None
    version: str | None = None
    builtin: bool = False
    status: str = OK
    api: str | None = None
    errors: list[str] = attrs.field(factory=list)
    hooks: list[str] = attrs.field(factory=list)
    config_sections: dict[str, dict[str, Any]] = attrs.field(factory=dict)
    registered: dict[str, list[str]] = attrs.field(factory=dict)
    format: str = NATIVE

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)


class HookManager(pluggy.PluginManager):
    """pluggy's manager with a cheap scan of a module plugin's names.

    `register` asks `parse_hookimpl_opts` about every name in the plugin's `dir()`, and pluggy
    answers each through `inspect.getattr_static`: for a plugin module that also imports
    agent-env's API, that was most of the cost of registering the in-tree plugins on every
    command. A plain module's names are its `__dict__`, so an entry that is not a function
    (a class, a constant, the `hookimpl` marker) is no hook, and a plain function is one
    exactly when it carries the marker: the answers pluggy gives, read directly. Anything
    else (a method wrapper, an object plugin) goes to pluggy's own lookup.
    """

    def parse_hookimpl_opts(self, plugin: Any, name: str) -> Any:
        if type(plugin) is types.ModuleType:
            value = plugin.__dict__.get(name, _ABSENT)
            if value is not _ABSENT and not isinstance(value, _BOUND_KINDS):
                if not isinstance(value, types.FunctionType):
                    return None
                opts = getattr(value, self.project_name + "_impl", None)
                return opts if isinstance(opts, dict) else None
        return super().parse_hookimpl_opts(plugin, name)


_ABSENT = object()
#: What pluggy binds specially; a module holding one is left to pluggy's own lookup.
_BOUND_KINDS = (staticmethod, classmethod, types.MethodType)


class PluginLoader:
    """Registers plugins with pluggy and keeps one `PluginInfo` per plugin name."""

    def __init__(self, *, disabled: Iterable[str], strict: bool):
        self.pm = HookManager(hookspecs.PROJECT)
        self.pm.add_hookspecs(hookspecs)
        self.disabled: set[str] = set(disabled)
        self.strict = strict
        self.plugins: dict[str, PluginInfo] = {}
        self._warned: set[str] = set()

    def is_disabled(self, name: str, dist: str | None) -> bool:
        return name in self.disabled or (dist is not None and dist in self.disabled)

    def load_builtins(self, builtins: Iterable[tuple[str, str]]) -> None:
        for name, module in builtins:
            info = PluginInfo(
                name=name, module=module, dist=KERNEL_DIST, version=KERNEL_VERSION, builtin=True
            )
            self.load_module(info, functools.partial(importlib.import_module, module))

    def load_entry_points(self, found: Iterable[InstalledEntryPoint]) -> None:
        """Load the `agent_env` group's entry points among `found`."""
        for ep in sorted(found, key=lambda e: e.name):
            if ep.group != ENTRY_POINT_GROUP:
                continue
            info = PluginInfo(name=ep.name, module=ep.value, dist=ep.dist, version=ep.version)
            if self.claimed(info):
                continue
            self.load_module(info, ep.load)

    def claimed(self, info: PluginInfo) -> bool:
        """True when `info.name` is taken: skipped silently for the same distribution seen
        twice on sys.path, recorded as a failure otherwise."""
        other = self.plugins.get(info.name)
        if other is None:
            return False
        if other.dist != info.dist or other.module != info.module:
            self.failed(
                info,
                f"entry point name {info.name!r} is also used by {other.dist or other.module!r}",
            )
        return True

    def load_module(self, info: PluginInfo, load: Callable[[], Any]) -> None:
        """Import a plugin module (`load()`) and register it, recording whatever goes wrong."""
        if self._skip_disabled(info):
            return
        try:
            obj = load()
        except Exception as exc:
            why = import_failure(info.module, exc)
            declared = None
            if not isinstance(exc, ModuleNotFoundError):
                declared = api.declared_api_of_module(info.module)
            if not self.incompatible(info, declared, why, exc):
                self.failed(info, why, exc)
            return
        self.add(obj, info)

    def add(self, obj: Any, info: PluginInfo) -> None:
        """`register`, recording a failure instead of raising it."""
        try:
            self.register(obj, info)
        except PluginError as exc:
            self.failed(info, str(exc), exc)

    def register(self, obj: Any, info: PluginInfo) -> None:
        """Register a loaded plugin object unless it is disabled or declares another API;
        `PluginError` when it cannot be registered."""
        if self._skip_disabled(info):
            return
        if self.incompatible(info, getattr(obj, api.API_ATTRIBUTE, None)):
            return
        self._register(obj, info)

    def unsupported(self, info: PluginInfo) -> None:
        """Record a plugin of which nothing can run here (`info.errors` say why)."""
        if self._skip_disabled(info):
            return
        info.status = UNSUPPORTED
        self.plugins[info.name] = info
        if info.name not in self._warned:
            self._warned.add(info.name)
            log.warning("plugin %r is not supported: %s", info.name, "; ".join(info.errors))

    def _skip_disabled(self, info: PluginInfo) -> bool:
        if not self.is_disabled(info.name, info.dist):
            return False
        info.status = DISABLED
        self.plugins[info.name] = info
        return True

    def incompatible(
        self, info: PluginInfo, declared: Any, why: str = "", exc: BaseException | None = None
    ) -> bool:
        """Record a plugin whose declared API range excludes ours (its hooks are never called)."""
        info.api = declared if isinstance(declared, str) else None
        problem = api.api_problem(declared)
        if problem is None:
            return False
        if why:
            problem += f" ({why})"
        if self.strict:
            raise PluginError(f"plugin {info.name!r} is incompatible: {problem}") from exc
        self._record(info, INCOMPATIBLE, problem, "is incompatible and is skipped")
        return True

    def failed(self, info: PluginInfo, why: str, exc: BaseException | None = None) -> None:
        """Record that a plugin failed to load; fatal when strict."""
        if self.strict:
            raise PluginError(f"plugin {info.name!r} failed to load: {why}") from exc
        self._record(info, FAILED, why, "failed to load and is skipped")

    def hook_failed(self, name: str, why: str, exc: BaseException) -> None:
        """A registered plugin's hook raised: it counts as failed from now on; fatal when strict."""
        if self.strict:
            raise PluginError(f"plugin {name!r}: {why}") from exc
        info = self.plugins.get(name) or PluginInfo(name=name, module="?")
        self._record(info, FAILED, why, "", once=False)

    def _record(
        self, info: PluginInfo, status: str, why: str, summary: str, *, once: bool = True
    ) -> None:
        """The one place a plugin's failure is kept and warned about (once per plugin)."""
        info.status = status
        info.errors.append(why)
        self.plugins.setdefault(info.name, info)
        if once and info.name in self._warned:
            return
        self._warned.add(info.name)
        log.warning("plugin %r%s: %s", info.name, f" {summary}" if summary else "", why)

    def _register(self, obj: Any, info: PluginInfo) -> None:
        sections = getattr(obj, "CONFIG_SECTIONS", None) or {}
        if not isinstance(sections, dict) or not all(
            isinstance(s, str) and isinstance(keys, dict) for s, keys in sections.items()
        ):
            raise PluginError(
                f"plugin {info.name!r}: CONFIG_SECTIONS must map section names to "
                f"{{key: default}} tables"
            )
        try:
            self.pm.register(obj, name=info.name)
        except ValueError as exc:
            raise PluginError(f"plugin {info.name!r} cannot be registered: {exc}") from None
        except pluggy.PluginValidationError as exc:
            raise PluginError(f"plugin {info.name!r} has an invalid hook: {exc}") from None
        callers = self.pm.get_hookcallers(obj) or []  # one walk over every hook, not two
        unknown = sorted(c.name for c in callers if not c.has_spec())
        if unknown:
            self.pm.unregister(name=info.name)
            known = [n for n in dir(hookspecs) if n.startswith("agentenv_")]
            raise PluginError(
                "; ".join(
                    f"plugin {info.name!r} implements unknown hook {h!r}{did_you_mean(h, known)}"
                    for h in unknown
                )
            )
        info.config_sections = {s: dict(k) for s, k in sections.items()}
        info.hooks = sorted(c.name for c in callers if c.has_spec())
        self.plugins[info.name] = info

    def unregister(self, name: str) -> None:
        """Unregister `name`'s hooks (if it has any registered); its `PluginInfo` stays."""
        if self.pm.get_plugin(name) is not None:
            self.pm.unregister(name=name)
