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
    """The open stores of one agent-env process; `images` is None when no image store is set.
    `async with` closes them at the end of the block."""

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

    async def __aenter__(self) -> Stores:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

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


def _resolve_sync(value: Any, where: str) -> Any:
    """Resolve `env:` references now; a `secret:` reference needs `open_stores_async`."""
    from agent_env.config.refs import parse_ref

    if isinstance(value, Mapping):
        return {k: _resolve_sync(v, f"{where} {k}") for k, v in value.items()}
    if isinstance(value, list):
        return [_resolve_sync(v, f"{where}[{i}]") for i, v in enumerate(value)]
    ref = parse_ref(value)
    if ref is None:
        return value
    scheme, name, default = ref
    found = os.environ.get(name) if scheme == "env" else None
    if found is not None:
        return found
    if default is not None:
        return default
    if scheme == "env":
        raise ConfigError(f"{where} = {value!r}: environment variable {name} is not set")
    raise ConfigError(
        f"{where} = {value!r}: secret references in store settings are resolved only when the "
        "stores are opened with open_stores_async (the secret store itself cannot use them)"
    )


def _known_types(plugins: Any, kind: str) -> list[str]:
    return list(plugins.stores.names(kind))


def _hint(name: str, kind: str = "") -> str | None:
    from agent_env.plugins.known import install_hint

    return install_hint(kind, name)


def _unknown_type(kind: str, name: str, plugins: Any) -> ConfigError:
    from agent_env.plugins.known import KNOWN_BACKENDS

    known = _known_types(plugins, kind)
    message = f"[stores] {kind} = {name!r}: no {kind} store of that type is installed"
    other = [k for k in KINDS if k != kind and name in _known_types(plugins, k)]
    other += [k for (k, n) in KNOWN_BACKENDS if n == name and k in KINDS and k != kind]
    if (kind, name) in KNOWN_BACKENDS:
        message += f"; it comes from a plugin: {KNOWN_BACKENDS[(kind, name)]}"
    elif other:
        message += f" ({name!r} is {'an' if other[0][0] in 'aeiou' else 'a'} {other[0]} store)"
    else:
        message += did_you_mean(name, known)
    return ConfigError(message + f"; installed: {', '.join(known) or 'none'}")


@attrs.frozen(kw_only=True)
class StoreChoices:
    """The scalar keys of `[stores]`: the backend type of each kind (None: the default)."""

    document: str | None = None
    object: str | None = None
    secret: str | None = None
    image: str | None = None


def _a(kind: str) -> str:
    return f"{'an' if kind[0] in 'aeiou' else 'a'} {kind}"


def _split(table: Mapping[str, Any], known_types: set[str]) -> tuple[dict, dict]:
    """(backend type per kind, `[stores.<type>]` settings per type) of the `[stores]` table:
    its scalar keys structured into `StoreChoices` by the kernel converter, its sub-tables
    each naming an installed store type."""
    from agent_env.convert import StructureProblems, structure

    settings: dict[str, dict[str, Any]] = {}
    scalars: dict[str, Any] = {}
    for key, value in table.items():
        if key in KINDS or not isinstance(value, Mapping):
            scalars[key] = value
        elif key not in known_types and _hint(key) is None:
            raise ConfigError(
                f"[stores.{key}]: no store type {key!r} is installed"
                f"{did_you_mean(key, sorted(known_types))}; installed: "
                f"{', '.join(sorted(known_types))}"
            )
        else:
            settings[key] = dict(value)
    if scalars.get("image") in ("", "none"):
        scalars["image"] = None
    try:
        if all(k in KINDS and (v is None or isinstance(v, str)) for k, v in scalars.items()):
            parsed = StoreChoices(**scalars)  # what structuring gives, without building it
        else:
            parsed = structure(scalars, StoreChoices, noun="key")
    except StructureProblems as e:
        problem = e.problems[0]
        if problem.startswith("unknown key"):
            raise ConfigError(
                f"[stores] has an {problem}; keys are {', '.join(KINDS)} and "
                "[stores.<type>] tables of backend settings"
            ) from None
        key = problem.split(":", 1)[0]
        raise ConfigError(
            f"[stores] {key} = {scalars.get(key)!r}: must be the name of {_a(key)} store type "
            f"({problem.split(': ', 1)[1]})"
        ) from None
    choices: dict[str, str | None] = dict(DEFAULTS)
    for kind in KINDS:
        if kind not in scalars:
            continue
        value = getattr(parsed, kind)
        if value is not None and not value.strip():
            raise ConfigError(
                f"[stores] {kind} = {value!r}: must be the name of {_a(kind)} store type"
            )
        choices[kind] = value or None
    return choices, settings


def _plan(
    config: Any, plugins: Any, home: Path | None
) -> tuple[Path, dict[str, tuple[type, dict[str, Any], str] | None]]:
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
    plan: dict[str, tuple[type, dict[str, Any], str] | None] = {}
    for kind in KINDS:
        name = choices[kind]
        if name is None:
            if kind != "image":
                raise ConfigError(f"[stores] {kind} must name a {kind} store type")
            plan[kind] = None
            continue
        if name not in _known_types(plugins, kind):
            raise _unknown_type(kind, name, plugins)
        plan[kind] = (plugins.stores.get(kind, name), settings.get(name, {}), f"[stores.{name}]")
    return Path(home), plan


def _stores(opened: dict[str, Any]) -> Stores:
    return Stores(
        documents=opened["document"],
        objects=opened["object"],
        secrets=opened["secret"],
        images=opened["image"],
    )


def open_stores(
    config: Mapping[str, Any] | Any = None, plugins: Any = None, *, home: Path | None = None
) -> Stores:
    """Instantiate the configured backend of each kind (no I/O: backends connect lazily).

    `config` is the `Config` object (its `table("stores")` and `home` are used) or a plain
    dict of the `[stores]` table; `plugins` is the plugin manager (its `.stores` registry).
    `env:` references in backend settings are resolved; `secret:` ones need `open_stores_async`.
    """
    home, plan = _plan(config, plugins, home)
    opened = {
        kind: None if entry is None else entry[0](_resolve_sync(entry[1], entry[2]), home=home)
        for kind, entry in plan.items()
    }
    return _stores(opened)


async def open_stores_async(
    config: Mapping[str, Any] | Any = None, plugins: Any = None, *, home: Path | None = None
) -> Stores:
    """Like `open_stores`, and `secret:` references in the document, object and image store
    settings are read from the configured secret store (e.g. cloud credentials)."""
    from agent_env.config.refs import resolve_value

    home, plan = _plan(config, plugins, home)
    secret = plan["secret"]
    assert secret is not None  # _plan leaves only the image store unset
    cls, settings, where = secret
    opened: dict[str, Any] = {"secret": cls(_resolve_sync(settings, where), home=home)}
    for kind, entry in plan.items():
        if kind == "secret":
            continue
        if entry is None:
            opened[kind] = None
            continue
        cls, settings, where = entry
        resolved = await resolve_value(settings, opened["secret"], where=where)
        opened[kind] = cls(resolved, home=home)
    return _stores(opened)
