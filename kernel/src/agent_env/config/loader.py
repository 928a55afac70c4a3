"""Finding, parsing, validating and merging the config: default < file < env < `configure()`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from agent_env.config.core import Config
from agent_env.config.models import (
    COMPAT_SECTIONS,
    check_section,
    is_compat_key,
    local_stores,
    reference_store,
    renamed,
)
from agent_env.config.refs import parse_ref
from agent_env.config.schema import (
    BACKEND_KEYS,
    BACKEND_PARENTS,
    BUILTIN_SECTIONS,
    FREE_FORM_SECTIONS,
    RESERVED_ENV,
    coerce_env,
    env_var_name,
)
from agent_env.convert import unknown_name
from agent_env.errors import ConfigError, PluginError
from agent_env.notices import warn_once
from agent_env.suggest import did_you_mean

CONFIG_RELPATH = Path(".agentenv") / "config.toml"
STORE_KINDS = ("document", "object", "image", "secret")
CONFIGURE = "configure()"

_overrides: dict[str, dict[str, Any]] = {}


def configure(sections: dict[str, dict[str, Any]] | None = None, **more: dict[str, Any]) -> None:
    """Override settings in code (highest precedence), e.g. `configure(run={"concurrency": 2})`.

    Applies to every later `load_config()` in this process; `reset_configuration()` undoes it.
    """
    for section, table in {**(sections or {}), **more}.items():
        if not isinstance(table, dict):
            raise ConfigError(f"configure(): {section} must be a dict of settings, got {table!r}")
        _overrides.setdefault(section, {}).update(table)


def reset_configuration() -> None:
    """Forget everything `configure()` set."""
    _overrides.clear()


def find_config_file(cwd: Path | None = None) -> Path | None:
    """`$AGENT_ENV_CONFIG` (which must exist), else `.agentenv/config.toml` walking up from cwd."""
    named = os.environ.get("AGENT_ENV_CONFIG")
    if named:
        path = Path(named).expanduser()
        if not path.is_file():
            raise ConfigError(f"AGENT_ENV_CONFIG names {str(path)!r}, which does not exist")
        return path.resolve()
    here = Path(cwd or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        candidate = folder / CONFIG_RELPATH
        if candidate.is_file():
            return candidate
    return None


def _read(path: Path) -> dict[str, Any]:
    import tomllib  # only a config file pays for its regexes (no file: `run hello`)

    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read: {exc.strerror}") from None


class _Loader:
    """One load: the schema (built-ins + plugin declarations) and the merge state."""

    def __init__(self, plugins: Any):
        self.plugins = plugins
        self.schema = {s: dict(k) for s, k in BUILTIN_SECTIONS.items()}
        self.declared_by: dict[str, str] = {}
        for section, (plugin, keys) in plugins.config_sections().items():
            self.schema.setdefault(section, {}).update(keys)
            self.declared_by[section] = plugin
        self.values: dict[str, dict[str, Any]] = {s: dict(k) for s, k in self.schema.items()}
        self.origins: dict[str, dict[str, str]] = {}
        #: Every value each source set, in the order applied: section -> key -> [(origin, value)].
        self.layers: dict[str, dict[str, list[tuple[str, Any]]]] = {}
        self.ignored: list[str] = []

    def _registry(self, name: str) -> Any:
        try:
            return self.plugins.registry(name)
        except PluginError as exc:
            raise ConfigError(str(exc)) from None

    def _backend_names(self, parent: str) -> set[str]:
        registry = self._registry(BACKEND_PARENTS[parent])
        if parent == "stores":
            return {
                n
                for kind in ("document", "object", "image", "secret")
                for n in registry.names(kind)
            }
        return set(registry.names())

    def _section_ok(self, section: str, source: str) -> None:
        """Raise unless `section` (maybe dotted) may appear in a config; an unknown one is
        worded by the converter's `unknown_name` (a did-you-mean over the known names)."""
        if section in self.schema:
            return
        parent, dot, child = section.partition(".")
        if dot and parent == "plugins":
            known = self.plugins.distributions()
            if child in known:
                return
            raise ConfigError(
                f"{source}: [{section}]: {unknown_name('plugin distribution', child, known)}; "
                f"installed: {', '.join(sorted(known))}"
            )
        if dot and parent in BACKEND_PARENTS:
            names = self._backend_names(parent)
            if child in names:
                return
            from agent_env.plugins.known import install_hint

            hint = install_hint("sandbox provider" if parent == "sandbox" else "", child)
            if hint:
                raise ConfigError(
                    f"{source}: [{section}] configures {child!r}, whose plugin is not "
                    f"installed (or is disabled); install it with: {hint}"
                )
            raise ConfigError(
                f"{source}: [{section}]: {unknown_name(f'{parent} backend', child, names)}; "
                f"known {parent} backends: {', '.join(sorted(names)) or 'none'}"
                f"{self._not_loaded_note()}"
            )
        known = [s for s in self.schema if "." not in s] + ["plugins"]
        raise ConfigError(
            f"{source}: {unknown_name('section', section, [*known, *COMPAT_SECTIONS])}; "
            f"known sections: {', '.join(sorted(known))}{self._not_loaded_note()}"
        )

    def _not_loaded_note(self) -> str:
        missing = self.plugins.not_loaded()
        return f" (plugins that failed or are disabled: {', '.join(missing)})" if missing else ""

    def merge(self, data: dict[str, Any], source: str, origin: str) -> None:
        """Validate `data` (a TOML document or `configure()` dict) and merge it over the values;
        what is accepted only for compatibility is noted in `ignored`."""
        for top, table in data.items():
            if top in COMPAT_SECTIONS and top not in self.schema:
                self.ignored.append(f"[{top}] ({COMPAT_SECTIONS[top]})")
                continue
            if not isinstance(table, dict):
                raise ConfigError(f"{source}: {top} must be a table ([{top}]), got {table!r}")
            if top == "plugins":
                for dist, sub in table.items():
                    self._merge_table(f"plugins.{dist}", sub, source, origin)
                continue
            self._section_ok(top, source)
            subs = {
                k: v for k, v in table.items() if isinstance(v, dict) and not is_compat_key(top, k)
            }
            scalars = {k: v for k, v in table.items() if k not in subs}
            if top == "stores":
                scalars, notes = local_stores(scalars)
                self.ignored.extend(notes)
            self._merge_table(top, scalars, source, origin)
            if top == "stores":
                subs = self._reference_stores(subs, source, origin)
            for key, sub in subs.items():
                if f"{top}.{key}" not in self.schema and top not in BACKEND_PARENTS:
                    self._raise(top, [f"unknown key {key!r}"], source)
                self._merge_table(f"{top}.{key}", sub, source, origin)

    def _reference_stores(self, subs: dict[str, Any], source: str, origin: str) -> dict[str, Any]:
        """Translate the existing product's `[stores.<kind>]` tables (`impl` + `config`) into
        our store choice and settings; the rest of `subs` is returned."""
        rest = {}
        for key, sub in subs.items():
            if key not in STORE_KINDS or not ({"impl", "config"} & set(sub)):
                rest[key] = sub
                continue
            store_type, settings, note = reference_store(key, sub)
            if note:
                self.ignored.append(note)
            if store_type is not None:
                self._merge_table("stores", {key: store_type}, source, origin)
                if settings:
                    self._merge_table(f"stores.{store_type}", settings, source, origin)
        return rest

    def _merge_table(self, section: str, table: Any, source: str, origin: str) -> None:
        if not isinstance(table, dict):
            raise ConfigError(f"{source}: [{section}] must be a table, got {table!r}")
        self._section_ok(section, source)
        keys = None if section in FREE_FORM_SECTIONS else self.schema.get(section)
        if keys is not None:
            table = renamed(section, keys, table)
            problems, ignored = check_section(section, keys, table)
            if problems:
                self._raise(section, problems, source)
            self.ignored.extend(f"[{section}] {key}" for key in ignored)
        target = self.values.setdefault(section, {})
        for key, value in table.items():
            if is_compat_key(section, key):
                continue
            target[key] = value
            self._set_origin(section, key, origin, value)

    def _raise(self, section: str, problems: list[str], source: str) -> None:
        """One `ConfigError` for the first problem of `[section]` (unknown keys list the
        known ones)."""
        problem = problems[0]
        if problem.startswith("unknown key"):
            keys = self.schema.get(section, {})
            owner = self.declared_by.get(section)
            whose = f" (declared by plugin {owner!r})" if owner else ""
            if "did you mean" not in problem:
                key = problem.split("'")[1]
                problem += did_you_mean(key, keys)
            raise ConfigError(
                f"{source}: [{section}] has {problem}; "
                f"known keys{whose}: {', '.join(sorted(keys)) or 'none'}"
            )
        raise ConfigError(f"{source}: [{section}] {problem}")

    def merge_env(self, environ: dict[str, str]) -> None:
        names = {
            env_var_name(section, key): (section, key, default)
            for section, keys in self.schema.items()
            for key, default in keys.items()
        }
        for var, raw in sorted(environ.items()):
            if not var.startswith("AGENT_ENV_") or var in RESERVED_ENV:
                continue
            if var in names:
                section, key, default = names[var]
                value = coerce_env(f"environment variable {var}", default, raw)
                self.values.setdefault(section, {})[key] = value
                self._set_origin(section, key, f"env {var}", value)
                continue
            for section in self.schema:
                prefix = env_var_name(section, "")
                if var.startswith(prefix):
                    keys = {
                        env_var_name(section, k)[len(prefix) :]: k for k in self.schema[section]
                    }
                    hint = did_you_mean(var[len(prefix) :], keys)
                    if hint:
                        raise ConfigError(
                            f"environment variable {var} is not a config setting{hint}"
                        )

    def model_fallbacks(self, environ: dict[str, str]) -> None:
        """`LITELLM_BASE_URL` / `LITELLM_API_KEY` fill `[model]` keys nothing else set."""
        for key, var in (("base_url", "LITELLM_BASE_URL"), ("api_key", "LITELLM_API_KEY")):
            if key not in self.origins.get("model", {}) and environ.get(var):
                self.values["model"][key] = environ[var]
                self._set_origin("model", key, f"env {var}", environ[var])

    def check_backends(self) -> None:
        """Every non-default backend choice must name a registered backend."""
        for (section, key), (registry_name, kind) in BACKEND_KEYS.items():
            value = self.values.get(section, {}).get(key)
            default = BUILTIN_SECTIONS[section][key]
            if value is None or value == default or parse_ref(value) is not None:
                continue
            registry = self._registry(registry_name)
            where = f"{self.origin_label(section, key)}: [{section}] {key} = {value!r}"
            try:
                if kind is not None:
                    registry.get(kind, value)
                else:
                    registry.get(value)
            except PluginError as exc:
                raise ConfigError(f"{where}: {exc}{self._not_loaded_note()}") from None

    def default_image_store(self) -> None:
        """No image store by default; the docker plugin's store when it is installed."""
        if self.values["stores"].get("image") is None and "image" not in self.origins.get(
            "stores", {}
        ):
            try:
                stores = self.plugins.stores
            except PluginError:
                return
            if ("image", "docker") in stores:
                self.values["stores"]["image"] = "docker"
                self._set_origin("stores", "image", "default (docker plugin)", "docker")

    def _set_origin(self, section: str, key: str, origin: str, value: Any) -> None:
        self.origins.setdefault(section, {})[key] = origin
        self.layers.setdefault(section, {}).setdefault(key, []).append((origin, value))

    def origin_label(self, section: str, key: str) -> str:
        return self.origins.get(section, {}).get(key, "default")


def load_config(cwd: Path | str | None = None, *, plugins: Any = None) -> Config:
    """Load the config in effect for `cwd`; `plugins` defaults to the process-wide manager."""
    if plugins is None:
        from agent_env.plugins import get_plugin_manager

        plugins = get_plugin_manager()
    from agent_env.paths import home

    path = find_config_file(Path(cwd) if cwd is not None else None)
    loader = _Loader(plugins)
    if path is not None:
        loader.merge(_read(path), str(path), str(path))
    loader.merge_env(dict(os.environ))
    if _overrides:
        loader.merge(_overrides, CONFIGURE, CONFIGURE)
    loader.model_fallbacks(dict(os.environ))
    loader.check_backends()
    loader.default_image_store()
    warnings = []
    if loader.ignored:
        where = path or CONFIGURE
        warnings.append(
            f"{where}: accepted for compatibility and ignored: " + "; ".join(loader.ignored)
        )
    warn_once(warnings)
    return Config(
        path=path,
        home=home(),
        values=loader.values,
        origins=loader.origins,
        warnings=warnings,
        layers=loader.layers,
        defaults={s: dict(k) for s, k in loader.schema.items()},
    )
