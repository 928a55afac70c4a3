"""The plugin manager: the typed facade over pluggy and the only caller of hooks.

Loading and failure bookkeeping live in `loader`, the questions `plugin list|show|check` ask
in `introspection`. Plugins declared other than by an `agent_env` entry point come from plugins
(`agentenv_discover_plugins`: agentenv-legacy brings the existing product's).
Registries are built lazily, one hook call per plugin, so every name is attributed.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable
from typing import Any

import pluggy

from agent_env.errors import PluginError
from agent_env.plugins import introspection
from agent_env.plugins.loader import (
    DISABLED,
    ENTRY_POINT_GROUP,
    FAILED,
    INCOMPATIBLE,
    KERNEL_DIST,
    OK,
    UNSUPPORTED,
    PluginInfo,
    PluginLoader,
)
from agent_env.plugins.registries import HintedRegistry, StoreRegistry
from agent_env.registry import Registry

__all__ = [
    "BUILTIN_PLUGINS",
    "DISABLED",
    "ENTRY_POINT_GROUP",
    "FAILED",
    "INCOMPATIBLE",
    "KERNEL_DIST",
    "OK",
    "REGISTRIES",
    "UNSUPPORTED",
    "PluginInfo",
    "PluginManager",
]

log = logging.getLogger("agent_env.plugins")

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
    # issue 19: what `agent-env cache list|prune` covers
    "cache_kinds": ("agentenv_register_cache_kinds", lambda: HintedRegistry("cache kind")),
    "entity_kinds": ("agentenv_register_entity_kinds", lambda: _entity_kinds()),
    # issue 32: what `agent-env runs export --format` writes
    "export_formats": ("agentenv_register_export_formats", lambda: _export_formats()),
}


def _export_formats() -> Any:
    """The export-format registry, holding the kernel's own `rows` format."""
    registry = HintedRegistry("export format")
    with registry.registering("agent-env"):
        registry.add_lazy("rows", "agent_env.reporting.export:RowsFormat", binary=False)
    return registry


def _entity_kinds() -> Any:
    from agent_env.entities.kinds import EntityKindRegistry

    return EntityKindRegistry()


def _env_list(value: str | None) -> list[str]:
    return [p.strip() for p in (value or "").split(",") if p.strip()]


def _call_impl(impl: pluggy.HookImpl, **kwargs: Any) -> Any:
    """Call one plugin's implementation of a hook with the arguments it asks for.

    The facade calls implementations one by one instead of through pluggy's hook caller, so
    that each call can be attributed to its plugin and a failing plugin isolated from the
    others. The price: `tryfirst`/`trylast`, `wrapper=True` impls and pluggy's call tracing
    do not apply to these hooks (order between plugins must not matter anyway).
    """
    return impl.function(*[kwargs[name] for name in impl.argnames])


class PluginManager:
    """Typed facade over pluggy: one method or lazily built registry per hook.

    `autoload=False` skips entry points (the `agent_env` group and the existing product's
    groups; tests register plugins by hand); `disabled` defaults to `AGENT_ENV_DISABLE_PLUGINS`,
    `strict` to `AGENT_ENV_STRICT_PLUGINS=1`.
    """

    def __init__(
        self,
        *,
        autoload: bool = True,
        builtins: Iterable[tuple[str, str]] = BUILTIN_PLUGINS,
        disabled: Iterable[str] | None = None,
        strict: bool | None = None,
    ):
        env_disabled = _env_list(os.environ.get("AGENT_ENV_DISABLE_PLUGINS"))
        self._loader = PluginLoader(
            disabled=env_disabled if disabled is None else disabled,
            strict=os.environ.get("AGENT_ENV_STRICT_PLUGINS") == "1" if strict is None else strict,
        )
        self._pm = self._loader.pm
        self.autoload = autoload
        self.builtins = tuple(builtins)
        self._loaded = False
        self._registries: dict[str, Any] = {}
        self._registry_errors: dict[str, PluginError] = {}
        #: (plugin, parent group or "") -> the commands it added there
        self._commands: dict[tuple[str, str], list[str]] = {}

    @property
    def plugins(self) -> dict[str, PluginInfo]:
        """Every plugin seen, by name (loaded, failed, disabled, incompatible, unsupported)."""
        return self._loader.plugins

    @property
    def disabled(self) -> set[str]:
        return self._loader.disabled

    @property
    def strict(self) -> bool:
        """Whether a broken plugin is fatal instead of a warning (`AGENT_ENV_STRICT_PLUGINS`)."""
        return self._loader.strict

    @strict.setter
    def strict(self, value: bool) -> None:
        self._loader.strict = value

    # -- loading -------------------------------------------------------------------------

    def load(self) -> None:
        """Register the built-ins and (with autoload) every entry point; idempotent."""
        if self._loaded:
            return
        self._loaded = True
        self._loader.load_builtins(self.builtins)
        if self.autoload:
            from agent_env.entrypoints import installed

            found = installed()  # one read of the index for every group of ours
            self._loader.load_entry_points(found)
            self._discover_plugins(found)
        self._invalidate()

    def _discover_plugins(self, found: list[Any]) -> None:
        """Register the plugins that loaded plugins bring in (`agentenv_discover_plugins`)."""
        for impl in self._impls("agentenv_discover_plugins"):
            try:
                discovered = _call_impl(impl, entry_points=found) or []
            except Exception as exc:
                why = f"agentenv_discover_plugins raised {type(exc).__name__}: {exc}"
                self._loader.hook_failed(impl.plugin_name, why, exc)
                continue
            for info, objects in discovered:
                if self._loader.claimed(info):
                    continue
                if not objects:
                    self._loader.unsupported(info)
                for obj in objects:
                    self._loader.add(obj, info)

    def check_pending(self) -> None:
        """Fail loudly if any registered plugin implements a hook no spec declares."""
        self.load()
        self._pm.check_pending()

    # -- registration by hand (tests, embedding) --------------------------------------------

    def register(self, plugin: Any, name: str | None = None, *, dist: str | None = None) -> str:
        """Register a module or object with `@hookimpl` functions; returns its plugin name."""
        self.load()
        name = name or getattr(plugin, "__name__", None) or f"plugin-{id(plugin):x}"
        if name in self.plugins and self.plugins[name].status != DISABLED:
            raise PluginError(f"a plugin named {name!r} is already registered")
        module = getattr(plugin, "__name__", type(plugin).__qualname__)
        self._loader.register(plugin, PluginInfo(name=name, module=module, dist=dist))
        self._invalidate()
        return name

    def unregister(self, name: str) -> None:
        self._loader.unregister(name)
        self.plugins.pop(name, None)
        self._invalidate()

    def disable(self, name: str) -> None:
        """Disable a plugin (by plugin or distribution name) like `--disable-plugin`."""
        self.disabled.add(name)
        for info in list(self.plugins.values()):
            if info.name == name or info.dist == name:
                self._loader.unregister(info.name)
                info.status = DISABLED
        self._invalidate()

    def disable_entry_points(self) -> None:
        """`--no-plugins`: keep only the built-ins."""
        self.autoload = False
        for info in list(self.plugins.values()):
            if not info.builtin:
                was_registered = self._pm.get_plugin(info.name) is not None
                self._loader.unregister(info.name)
                if was_registered or info.status == UNSUPPORTED:
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
            with target.registering(impl.plugin_name):
                try:
                    _call_impl(impl, **kwargs)
                except PluginError:
                    raise
                except Exception as exc:
                    # a failed plugin contributes nothing, not whatever it added before raising
                    discard = getattr(target, "discard_plugin", None)
                    if discard is not None:
                        discard(impl.plugin_name)
                    why = f"{hook} raised {type(exc).__name__}: {exc}"
                    self._loader.hook_failed(impl.plugin_name, why, exc)

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
    def cache_kinds(self) -> Registry:
        return self.registry("cache_kinds")

    @property
    def stores(self) -> StoreRegistry:
        return self.registry("stores")

    # -- the other hooks -------------------------------------------------------------------

    def resolve_bundle_source(self, spec: str) -> Any:
        """The first plugin's `ResolvedSource` for `spec`, or None when no plugin claims it."""
        self.load()
        return self._pm.hook.agentenv_resolve_bundle_source(spec=spec)

    def push_bundle(self, folder: Any, destination: str, message: str | None = None) -> Any:
        """The first plugin's answer to pushing `folder` to `destination`, or None when no
        plugin handles that destination."""
        self.load()
        return self._pm.hook.agentenv_push_bundle(
            folder=folder, destination=destination, message=message
        )

    @property
    def export_formats(self) -> Registry:
        return self.registry("export_formats")

    def push_dataset(self, folder: Any, destination: str, message: str | None = None) -> Any:
        """The first plugin's answer to pushing the dataset `folder` to `destination`, or None
        when no plugin handles that destination."""
        self.load()
        return self._pm.hook.agentenv_push_dataset(
            folder=folder, destination=destination, message=message
        )

    def step_wrappers(self, step: Any, ctx: Any) -> list[Any]:
        """Async context managers the plugins want entered around `step.execute(ctx)`."""
        self.load()
        return [
            cm for cm in self._pm.hook.agentenv_step_wrapper(step=step, ctx=ctx) if cm is not None
        ]

    def score_call(self, call: Any, index: int, task: str) -> list[tuple[str, float]]:
        """Every plugin's `(verifier, score)` rewards for one gateway call (per-step rewards);
        a plugin that raises is reported and its scores left out."""
        self.load()
        out: list[tuple[str, float]] = []
        for impl in self._impls("agentenv_score_call"):
            try:
                scores = _call_impl(impl, call=call, index=index, task=task)
            except Exception as exc:
                log.warning(
                    "plugin %r: agentenv_score_call raised %s: %s",
                    impl.plugin_name,
                    type(exc).__name__,
                    exc,
                )
                continue
            for name, score in (scores or {}).items():
                out.append((str(name), float(score)))
        return out

    def sample_task(self, sampler: str, tasks: Any, task_version: Any) -> int | None:
        """The first plugin's index into `tasks` for the split sampler `sampler`, or None when
        no plugin knows it."""
        self.load()
        picked: int | None = self._pm.hook.agentenv_sample_task(
            sampler=sampler, tasks=list(tasks), task_version=dict(task_version)
        )
        return picked

    def run_finished(self, record: Any) -> list[str]:
        """Tell every plugin a task instance finished; returns (and logs) the errors raised."""
        self.load()
        errors = []
        for impl in self._impls("agentenv_run_finished"):
            try:
                _call_impl(impl, record=record)
            except Exception as exc:
                msg = f"plugin {impl.plugin_name!r}: agentenv_run_finished raised {type(exc).__name__}: {exc}"
                log.warning("%s", msg)
                errors.append(msg)
        return errors

    def register_commands(self, group: Any) -> None:
        """Let each plugin add CLI commands; a broken plugin is reported and its commands skipped."""
        self._add_commands("agentenv_register_commands", "", group=group)

    def register_subcommands(self, parent: str, group: Any) -> None:
        """Let each plugin add subcommands to the kernel's group `parent` (`plugin`, `runs`), likewise."""
        self._add_commands("agentenv_register_subcommands", parent, group=group, parent=parent)

    def _add_commands(self, hook: str, where: str, **kwargs: Any) -> None:
        group = kwargs["group"]
        self.load()
        for impl in self._impls(hook):
            before = set(getattr(group, "commands", {})) | set(getattr(group, "lazy_commands", {}))
            registering = getattr(group, "registering", None)
            try:
                if registering is not None:
                    with registering(impl.plugin_name):
                        _call_impl(impl, **kwargs)
                else:
                    _call_impl(impl, **kwargs)
            except Exception as exc:
                why = f"{hook} raised {type(exc).__name__}: {exc}"
                self._loader.hook_failed(impl.plugin_name, why, exc)
            after = set(getattr(group, "commands", {})) | set(getattr(group, "lazy_commands", {}))
            added = sorted(f"{where} {name}".lstrip() for name in after - before)
            self._commands[impl.plugin_name, where] = added

    # -- introspection (see `introspection`) -------------------------------------------------

    def config_sections(self) -> dict[str, tuple[str, dict[str, Any]]]:
        """Config sections declared by loaded plugins: section -> (plugin name, {key: default})."""
        self.load()
        return introspection.config_sections(self.plugins.values())

    def distributions(self) -> set[str]:
        """Every distribution that ships a plugin here, loaded or not (for `[plugins.<dist>]`)."""
        self.load()
        return introspection.distributions(self.plugins.values())

    def not_loaded(self) -> list[str]:
        """`name (status)` for every plugin that is disabled or failed, for error messages."""
        self.load()
        return introspection.not_loaded(self.plugins.values())

    def describe(self, *, import_classes: bool = False) -> tuple[list[PluginInfo], dict[str, str]]:
        """Every plugin with the names it registered per registry, plus registry build errors.
        With `import_classes` (`plugin check`), every lazily registered class is imported too,
        and a plugin whose class cannot be loaded counts as failed."""
        self.load()
        commands: dict[str, list[str]] = {}
        for (plugin, _), names in sorted(self._commands.items()):
            commands.setdefault(plugin, []).extend(names)
        problems = introspection.describe(self.plugins, REGISTRIES, self.registry, commands)
        if import_classes:
            for attr in REGISTRIES:
                if attr not in problems:
                    for plugin, why in self.registry(attr).load_all():
                        self._loader.hook_failed(plugin, why, PluginError(why))
        return list(self.plugins.values()), problems

    def get(self, name: str) -> PluginInfo:
        self.load()
        return introspection.get(self.plugins, name)
