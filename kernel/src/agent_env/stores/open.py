"""Build the configured stores from the `[stores]` table and the store registry.

`[stores]` names a backend type per kind (`document`, `object`, `secret`, `image`); a
`[stores.<type>]` sub-table holds that backend's settings, e.g.::

    [stores]
    document = "sqlite"
    [stores.sqlite]
    path = "/data/agent-env.sqlite3"
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from agent_env.errors import ConfigError
from agent_env.stores.base import DocumentStore, ImageStore, ObjectStore, SecretStore
from agent_env.suggest import did_you_mean

DEFAULTS: dict[str, str | None] = {
    "document": "sqlite",
    "object": "filesystem",
    "secret": "env",
    "image": None,
}
KINDS = tuple(DEFAULTS)


@attrs.define
class Stores:
    """The open stores of one agent-env process; `images` is None when no image store is set."""

    documents: DocumentStore
    objects: ObjectStore
    secrets: SecretStore
    images: ImageStore | None = None
    _entities: Any = attrs.field(default=None, init=False, repr=False)

    @property
    def entities(self) -> Any:
        """The versioned-entity layer over `documents` (`agent_env.stores.versioned.Entities`)."""
        if self._entities is None:
            from agent_env.stores.versioned import Entities

            self._entities = Entities(self.documents)
        return self._entities

    async def close(self) -> None:
        """Close every store, even when one of them fails to close."""
        errors = []
        for store in (self.documents, self.objects, self.secrets, self.images):
            if store is None:
                continue
            try:
                await store.close()
            except Exception as exc:  # noqa: BLE001 - close the rest, then report
                errors.append(exc)
        if errors:
            raise errors[0]


def _resolve_env_refs(settings: dict[str, Any], where: str) -> dict[str, Any]:
    out = {}
    for key, value in settings.items():
        if isinstance(value, str) and value.startswith("env:"):
            var = value[4:]
            if var not in os.environ:
                raise ConfigError(f"{where} {key} = {value!r}: environment variable {var} is not set")
            value = os.environ[var]
        out[key] = value
    return out


def _known_types(plugins: Any, kind: str) -> list[str]:
    return list(plugins.stores.names(kind))


def _hint(name: str, kind: str = "") -> str | None:
    from agent_env.plugins.known import install_hint

    return install_hint(kind, name)


def _unknown_type(kind: str, name: str, known: list[str]) -> ConfigError:
    hint = _hint(name, kind)
    message = f"[stores] {kind} = {name!r}: no {kind} store of that type is installed"
    if hint:
        message += f"; it comes from a plugin: {hint}"
    else:
        message += did_you_mean(name, known)
    return ConfigError(message + f"; installed: {', '.join(known) or 'none'}")


def _split(table: Mapping[str, Any], known_types: set[str]) -> tuple[dict, dict]:
    choices: dict[str, str | None] = dict(DEFAULTS)
    settings: dict[str, dict[str, Any]] = {}
    for key, value in table.items():
        if key in KINDS:
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise ConfigError(
                    f"[stores] {key} = {value!r}: must be the name of a {key} store type"
                )
            choices[key] = value or None
        elif isinstance(value, Mapping):
            if key not in known_types and _hint(key) is None:
                raise ConfigError(
                    f"[stores.{key}]: no store type {key!r} is installed"
                    f"{did_you_mean(key, sorted(known_types))}; installed: "
                    f"{', '.join(sorted(known_types))}"
                )
            settings[key] = dict(value)
        else:
            raise ConfigError(
                f"[stores] has an unknown key {key!r}{did_you_mean(key, [*KINDS, *known_types])}; "
                f"keys are {', '.join(KINDS)} and [stores.<type>] tables of backend settings"
            )
    return choices, settings


def open_stores(
    config: Mapping[str, Any] | Any = None, plugins: Any = None, *, home: Path | None = None
) -> Stores:
    """Instantiate the configured backend of each kind (no I/O: backends connect lazily).

    `config` is the `Config` object (its `table("stores")` and `home` are used) or a plain
    dict of the `[stores]` table; `plugins` is the plugin manager (its `.stores` registry).
    """
    if plugins is None:
        from agent_env.plugins import get_plugin_manager

        plugins = get_plugin_manager()
    if config is None:
        table: Mapping[str, Any] = {}
    elif hasattr(config, "table"):
        table = config.table("stores")
        home = home if home is not None else getattr(config, "home", None)
    elif isinstance(config, Mapping):
        table = config
    else:
        raise ConfigError(f"open_stores: expected a Config or the [stores] table, got {config!r}")
    if home is None:
        from agent_env.paths import home as default_home

        home = default_home()
    all_types = {t for kind in KINDS for t in _known_types(plugins, kind)}
    choices, settings = _split(table, all_types)

    opened: dict[str, Any] = {}
    for kind in KINDS:
        name = choices[kind]
        if name is None:
            if kind != "image":
                raise ConfigError(f"[stores] {kind} must name a {kind} store type")
            opened[kind] = None
            continue
        known = _known_types(plugins, kind)
        if name not in known:
            raise _unknown_type(kind, name, known)
        cls = plugins.stores.get(kind, name)
        where = f"[stores.{name}]"
        opened[kind] = cls(_resolve_env_refs(settings.get(name, {}), where), home=Path(home))
    return Stores(
        documents=opened["document"],
        objects=opened["object"],
        secrets=opened["secret"],
        images=opened["image"],
    )
