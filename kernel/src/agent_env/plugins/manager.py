"""The plugin manager: loads built-in and entry-point plugins in isolation, builds the registries
lazily (one hook call per plugin, so every name is attributed), and is the only caller of hooks.
"""

from __future__ import annotations

import importlib
import logging
import os
from collections.abc import Callable, Iterable
from typing import Any

import attrs
import pluggy

from agent_env import hookspecs
from agent_env._version import __version__ as KERNEL_VERSION
from agent_env.errors import PluginError
from agent_env.plugins import api
from agent_env.plugins.registries import HintedRegistry, StoreRegistry
from agent_env.registry import Registry
from agent_env.suggest import did_you_mean

log = logging.getLogger("agent_env.plugins")

ENTRY_POINT_GROUP = "agent_env"
KERNEL_DIST = "agentenv-kernel"

#: Built-in plugins, registered by module name through the same hooks as external ones.
BUILTIN_PLUGINS: tuple[tuple[str, str], ...] = (
    ("local-stores", "agent_env.stores.hooks"),
    ("local-sandbox", "agent_env.sandboxes.hooks"),
    ("local-runner", "agent_env.engine.hooks"),
)

#: Registry attribute -> (registration hook, factory).
REGISTRIES: dict[str, tuple[str, Callable[[], Any]]] = {
    "step_types": ("agentenv_register_step_types", lambda: HintedRegistry("step type")),
    "env_types": ("agentenv_register_env_types", lambda: HintedRegistry("env type")),
    "sandbox_providers": (
        "agentenv_register_sandbox_providers",
        lambda: HintedRegistry("sandbox provider"),
    ),
    "stores": ("agentenv_register_stores", StoreRegistry),
    "runners": ("agentenv_register_runners", lambda: HintedRegistry("runner")),
    "agents": ("agentenv_register_agents", lambda: HintedRegistry("agent")),
}

OK, FAILED, DISABLED, INCOMPATIBLE = "ok", "failed", "disabled", "incompatible"


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

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)


def _env_list(value: str | None) -> list[str]:
    return [p.strip() for p in (value or "").split(",") if p.strip()]


class PluginManager:
    """Typed facade over pluggy: one method or lazily built registry per hook.

    `autoload=False` skips the `agent_env` entry-point group (tests register plugins by hand);
    `disabled` defaults to `AGENT_ENV_DISABLE_PLUGINS`, `strict` to `AGENT_ENV_STRICT_PLUGINS=1`.
    """

    def __init__(
        self,
        *,
        autoload: bool = True,
        builtins: Iterable[tuple[str, str]] = BUILTIN_PLUGINS,
        disabled: Iterable[str] | None = None,
        strict: bool | None = None,
    ):
        self._pm = pluggy.PluginManager(hookspecs.PROJECT)
        self._pm.add_hookspecs(hookspecs)
        self.autoload = autoload
        self.builtins = tuple(builtins)
        env_disabled = _env_list(os.environ.get("AGENT_ENV_DISABLE_PLUGINS"))
        self.disabled: set[str] = set(env_disabled if disabled is None else disabled)
        self.strict = (
            os.environ.get("AGENT_ENV_STRICT_PLUGINS") == "1" if strict is None else strict
        )
        self.plugins: dict[str, PluginInfo] = {}
        self._loaded = False
        self._registries: dict[str, Any] = {}
        self._registry_errors: dict[str, PluginError] = {}
        self._commands: dict[str, list[str]] = {}
        self._warned: set[str] = set()

    # -- loading -------------------------------------------------------------------------

    def load(self) -> None:
        """Register the built-ins and (with autoload) every entry point; idempotent."""
        if self._loaded:
            return
        self._loaded = True
        for name, module in self.builtins:
            self._load_module(name, module, dist=KERNEL_DIST, version=KERNEL_VERSION, builtin=True)
        if self.autoload:
            self._load_entry_points()

    def _load_entry_points(self) -> None:
        from importlib.metadata import entry_points

        for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
            dist = ep.dist.name if ep.dist is not None else None
            version = ep.dist.version if ep.dist is not None else None
            if ep.name in self.plugins:
                other = self.plugins[ep.name]
                if other.dist == dist and other.module == ep.value:
                    continue  # the same distribution seen twice on sys.path
                self._record_failure(
                    PluginInfo(name=ep.name, module=ep.value, dist=dist, version=version),
                    f"entry point name {ep.name!r} is also used by {other.dist or other.module!r}",
                )
                continue
            self._load_module(ep.name, ep.value, dist=dist, version=version, loader=ep.load)

    def _is_disabled(self, name: str, dist: str | None) -> bool:
        return name in self.disabled or (dist is not None and dist in self.disabled)

    def _load_module(
        self,
        name: str,
        module: str,
        *,
        dist: str | None,
        version: str | None,
        builtin: bool = False,
        loader: Callable[[], Any] | None = None,
    ) -> None:
        info = PluginInfo(name=name, module=module, dist=dist, version=version, builtin=builtin)
        if self._is_disabled(name, dist):
            info.status = DISABLED
            self.plugins[name] = info
            return
        try:
            obj = loader() if loader is not None else importlib.import_module(module)
        except ModuleNotFoundError as exc:
            own = module.split(":")[0]
            if exc.name and (own == exc.name or own.startswith(exc.name + ".")):
                why = f"not installed: module {own!r} does not exist"
            else:
                why = f"installed but broken: importing {module!r} failed: {exc}"
            self._record_failure(info, why, exc)
            return
        except Exception as exc:
            why = f"installed but broken: importing {module!r} raised {type(exc).__name__}: {exc}"
            if not self._incompatible(info, api.declared_api_of_module(module), why, exc):
                self._record_failure(info, why, exc)
            return
        if self._incompatible(info, getattr(obj, api.API_ATTRIBUTE, None)):
            return
        try:
            self._register(obj, info)
        except PluginError as exc:
            self._record_failure(info, str(exc), exc)

    def _incompatible(
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
        info.status = INCOMPATIBLE
        info.errors.append(problem)
        self.plugins.setdefault(info.name, info)
        if info.name not in self._warned:
            self._warned.add(info.name)
            log.warning("plugin %r is incompatible and is skipped: %s", info.name, problem)
        return True

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
            self._pm.register(obj, name=info.name)
        except ValueError as exc:
            raise PluginError(f"plugin {info.name!r} cannot be registered: {exc}") from None
        except pluggy.PluginValidationError as exc:
            raise PluginError(f"plugin {info.name!r} has an invalid hook: {exc}") from None
        unknown = self._unknown_hooks(info.name)
        if unknown:
            self._pm.unregister(name=info.name)
            known = [n for n in dir(hookspecs) if n.startswith("agentenv_")]
            raise PluginError(
                "; ".join(
                    f"plugin {info.name!r} implements unknown hook {h!r}{did_you_mean(h, known)}"
                    for h in unknown
                )
            )
        info.config_sections = {s: dict(k) for s, k in sections.items()}
        info.hooks = sorted(
            caller.name for caller in self._pm.get_hookcallers(obj) or () if caller.has_spec()
        )
        self.plugins[info.name] = info
        self._invalidate()

    def _unknown_hooks(self, name: str) -> list[str]:
        plugin = self._pm.get_plugin(name)
        return sorted(c.name for c in self._pm.get_hookcallers(plugin) or () if not c.has_spec())

    def check_pending(self) -> None:
        """Fail loudly if any registered plugin implements a hook no spec declares."""
        self.load()
        self._pm.check_pending()

    def _record_failure(self, info: PluginInfo, why: str, exc: BaseException | None = None) -> None:
        if self.strict:
            raise PluginError(f"plugin {info.name!r} failed to load: {why}") from exc
        info.status = FAILED
        info.errors.append(why)
        self.plugins.setdefault(info.name, info)
        if info.name not in self._warned:
            self._warned.add(info.name)
            log.warning("plugin %r failed to load and is skipped: %s", info.name, why)

    def _plugin_failed(self, name: str, why: str, exc: BaseException) -> None:
        if self.strict:
            raise PluginError(f"plugin {name!r}: {why}") from exc
        info = self.plugins.setdefault(name, PluginInfo(name=name, module="?"))
        info.status = FAILED
        info.errors.append(why)
        log.warning("plugin %r: %s", name, why)

    # -- registration by hand (tests, embedding) --------------------------------------------

    def register(self, plugin: Any, name: str | None = None, *, dist: str | None = None) -> str:
        """Register a module or object with `@hookimpl` functions; returns its plugin name."""
        self.load()
        name = name or getattr(plugin, "__name__", None) or f"plugin-{id(plugin):x}"
        if name in self.plugins and self.plugins[name].status != DISABLED:
            raise PluginError(f"a plugin named {name!r} is already registered")
        module = getattr(plugin, "__name__", type(plugin).__qualname__)
        info = PluginInfo(name=name, module=module, dist=dist)
        if self._is_disabled(name, dist):
            info.status = DISABLED
            self.plugins[name] = info
            return name
        if self._incompatible(info, getattr(plugin, api.API_ATTRIBUTE, None)):
            return name
        self._register(plugin, info)
        return name

    def unregister(self, name: str) -> None:
        if self._pm.get_plugin(name) is not None:
            self._pm.unregister(name=name)
        self.plugins.pop(name, None)
        self._invalidate()

    def disable(self, name: str) -> None:
        """Disable a plugin (by plugin or distribution name) like `--disable-plugin`."""
        self.disabled.add(name)
        for info in list(self.plugins.values()):
            if info.name == name or info.dist == name:
                if self._pm.get_plugin(info.name) is not None:
                    self._pm.unregister(name=info.name)
                info.status = DISABLED
        self._invalidate()

    def disable_entry_points(self) -> None:
        """`--no-plugins`: keep only the built-ins."""
        self.autoload = False
        for info in list(self.plugins.values()):
            if not info.builtin and self._pm.get_plugin(info.name) is not None:
                self._pm.unregister(name=info.name)
                del self.plugins[info.name]
        self._invalidate()

    def _invalidate(self) -> None:
        self._registries.clear()
        self._registry_errors.clear()

    # -- registries ----------------------------------------------------------------------

    def _impls(self, hook: str) -> list[pluggy.HookImpl]:
        order = list(self.plugins)
        impls = getattr(self._pm.hook, hook).get_hookimpls()
        return sorted(
            impls, key=lambda i: order.index(i.plugin_name) if i.plugin_name in order else 0
        )

    def _call_each(self, hook: str, target: Any, **kwargs: Any) -> None:
        """Call each plugin's implementation separately, inside `target.registering(plugin)`."""
        for impl in self._impls(hook):
            args = [kwargs[a] for a in impl.argnames]
            with target.registering(impl.plugin_name):
                try:
                    impl.function(*args)
                except PluginError:
                    raise
                except Exception as exc:
                    # a failed plugin contributes nothing, not whatever it added before raising
                    discard = getattr(target, "discard_plugin", None)
                    if discard is not None:
                        discard(impl.plugin_name)
                    why = f"{hook} raised {type(exc).__name__}: {exc}"
                    self._plugin_failed(impl.plugin_name, why, exc)

    def registry(self, attr: str) -> Any:
        """The registry `attr` (see `REGISTRIES`), built on first access."""
        if attr in self._registries:
            return self._registries[attr]
        if attr in self._registry_errors:
            raise self._registry_errors[attr]
        hook, factory = REGISTRIES[attr]
        self.load()
        registry = factory()
        try:
            self._call_each(hook, registry, registry=registry)
        except PluginError as exc:
            error = PluginError(f"the {attr.replace('_', ' ')} registry failed to build: {exc}")
            self._registry_errors[attr] = error
            raise error from None
        self._registries[attr] = registry
        return registry

    @property
    def step_types(self) -> Registry:
        return self.registry("step_types")

    @property
    def env_types(self) -> Registry:
        return self.registry("env_types")

    @property
    def sandbox_providers(self) -> Registry:
        return self.registry("sandbox_providers")

    @property
    def runners(self) -> Registry:
        return self.registry("runners")

    @property
    def agents(self) -> Registry:
        return self.registry("agents")

    @property
    def stores(self) -> StoreRegistry:
        return self.registry("stores")

    # -- the other hooks -------------------------------------------------------------------

    def resolve_bundle_source(self, spec: str) -> Any:
        """The first plugin's `ResolvedSource` for `spec`, or None when no plugin claims it."""
        self.load()
        return self._pm.hook.agentenv_resolve_bundle_source(spec=spec)

    def step_wrappers(self, step: Any, ctx: Any) -> list[Any]:
        """Async context managers the plugins want entered around `step.execute(ctx)`."""
        self.load()
        return [
            cm for cm in self._pm.hook.agentenv_step_wrapper(step=step, ctx=ctx) if cm is not None
        ]

    def run_finished(self, record: Any) -> list[str]:
        """Tell every plugin a task instance finished; returns (and logs) the errors raised."""
        self.load()
        errors = []
        for impl in self._impls("agentenv_run_finished"):
            try:
                impl.function(*[{"record": record}[a] for a in impl.argnames])
            except Exception as exc:
                msg = f"plugin {impl.plugin_name!r}: agentenv_run_finished raised {type(exc).__name__}: {exc}"
                log.warning("%s", msg)
                errors.append(msg)
        return errors

    def register_commands(self, group: Any) -> None:
        """Let each plugin add CLI commands; a broken plugin is reported and its commands skipped."""
        self.load()
        for impl in self._impls("agentenv_register_commands"):
            before = set(getattr(group, "commands", {})) | set(getattr(group, "lazy_commands", {}))
            registering = getattr(group, "registering", None)
            try:
                if registering is not None:
                    with registering(impl.plugin_name):
                        impl.function(*[{"group": group}[a] for a in impl.argnames])
                else:
                    impl.function(*[{"group": group}[a] for a in impl.argnames])
            except Exception as exc:
                why = f"agentenv_register_commands raised {type(exc).__name__}: {exc}"
                self._plugin_failed(impl.plugin_name, why, exc)
            after = set(getattr(group, "commands", {})) | set(getattr(group, "lazy_commands", {}))
            self._commands[impl.plugin_name] = sorted(after - before)

    # -- introspection ---------------------------------------------------------------------

    def config_sections(self) -> dict[str, tuple[str, dict[str, Any]]]:
        """Config sections declared by loaded plugins: section -> (plugin name, {key: default})."""
        self.load()
        out: dict[str, tuple[str, dict[str, Any]]] = {}
        for info in self.plugins.values():
            if info.status == OK:
                for section, keys in info.config_sections.items():
                    out[section] = (info.name, keys)
        return out

    def distributions(self) -> set[str]:
        """Every distribution that ships a plugin here, loaded or not (for `[plugins.<dist>]`)."""
        self.load()
        from importlib.metadata import entry_points

        dists = {KERNEL_DIST} | {i.dist for i in self.plugins.values() if i.dist}
        dists |= {ep.dist.name for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.dist}
        return dists

    def not_loaded(self) -> list[str]:
        """`name (status)` for every plugin that is disabled or failed, for error messages."""
        self.load()
        return [f"{i.name} ({i.status})" for i in self.plugins.values() if i.status != OK]

    def describe(self) -> tuple[list[PluginInfo], dict[str, str]]:
        """Every plugin with the names it registered per registry, plus registry build errors."""
        self.load()
        problems: dict[str, str] = {}
        for info in self.plugins.values():
            info.registered = {}
        for attr in REGISTRIES:
            try:
                registry = self.registry(attr)
            except PluginError as exc:
                problems[attr] = str(exc)
                continue
            for plugin, names in registry.by_plugin().items():
                if plugin in self.plugins:
                    self.plugins[plugin].registered[attr] = names
        for plugin, names in self._commands.items():
            if plugin in self.plugins and names:
                self.plugins[plugin].registered["commands"] = names
        return list(self.plugins.values()), problems

    def get(self, name: str) -> PluginInfo:
        self.load()
        if name not in self.plugins:
            by_dist = [i for i in self.plugins.values() if i.dist == name]
            if len(by_dist) == 1:
                return by_dist[0]
            raise PluginError(
                f"no plugin named {name!r}{did_you_mean(name, self.plugins)}; "
                f"known: {', '.join(sorted(self.plugins)) or 'none'}"
            )
        return self.plugins[name]
