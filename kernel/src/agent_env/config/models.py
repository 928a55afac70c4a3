"""Config sections as attrs models, structured by the kernel's one converter.

A section's model is made from its schema (key -> default, the default's type is the key's
type) plus the keys the existing product's `.agentenv/config.toml` may set that we accept and
ignore (`COMPAT_KEYS`, declared with `models.compat_ignored`). Whole sections of that file we
do not use are `COMPAT_SECTIONS`; its `[stores.<kind>]` tables with `impl`/`config` are
translated by `reference_store`, and its `[stores] <kind> = "local"` choices by `local_stores`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any

import attrs

from agent_env.config.refs import parse_ref
from agent_env.convert import Ignored, StructureProblems, structure
from agent_env.models import compat_ignored

#: Keys of our sections that the existing product's config sets and we do not use.
COMPAT_KEYS: dict[str, dict[str, str]] = {
    "model": {
        "headers": "no extra headers are sent to the model endpoint yet",
        "roles": "per-role models are not supported; use --model or [model] default",
        "params": "default model parameters are not supported; set model_params on the step",
    },
    "sandbox": {
        "agent_default": "agents run in the task's sandbox provider",
        "attribution": "sandboxes carry no attribution labels",
        "providers": "provider settings live in [sandbox.<provider>] tables",
    },
    # the explorer plugin declares [explorer]; these two keys of the existing one have no use
    "explorer": {
        "cors_origins": "the explorer answers its own origin only",
        "static_dir": "the explorer serves its built-in pages",
    },
}

#: Keys of the existing product's config that we support under another name:
#: (section, its key) -> our key (used when the section declares it).
RENAMED_KEYS: dict[tuple[str, str], str] = {("agents", "default_a2a_agent_id"): "default"}

#: Sections of the existing product's config that have no counterpart here.
COMPAT_SECTIONS: dict[str, str] = {
    "agents": "no default A2A agent setting; name the agent in the task or with --agent",
    "conversations": "no human A2A conversations",
    "state": "no env state providers",
    "envs": "env types come from plugins (agentenv_register_env_types)",
    "artifacts": "artifact types are built in",
    "task_steps": "step types come from plugins (agentenv_register_step_types)",
    "explorer": "no explorer app yet",
    "runner": "the runner is [run] runner",
}

#: The existing product's local store classes (`impl = "module:Class"`) -> our store type and
#: how its `config` keys are named here.
REFERENCE_STORES: dict[str, tuple[str, dict[str, str]]] = {
    "LocalSqliteDocumentStore": ("sqlite", {"path": "path"}),
    "LocalFilesystemObjectStore": ("filesystem", {"root": "root"}),
    "LocalSecretStore": ("env", {}),
}

#: The existing product's `[stores] <kind> = "local"` -> our local store type for that kind.
#: Its local image store is a registry at localhost:5000; ours by default sets none (images
#: stay with the sandbox provider), so `image = "local"` keeps that default and is warned.
LOCAL_STORE_TYPES: dict[str, str | None] = {
    "document": "sqlite",
    "object": "filesystem",
    "secret": "env",
    "image": None,
}
LOCAL_STORE_NAME = "local"


def local_stores(table: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """`[stores]` with the existing product's `"local"` choices turned into our local store
    types, and a note for the one that keeps our default instead (`image`)."""
    out = dict(table)
    notes: list[str] = []
    for kind, ours in LOCAL_STORE_TYPES.items():
        if table.get(kind) != LOCAL_STORE_NAME:
            continue
        if ours is not None:
            out[kind] = ours
            continue
        del out[kind]
        notes.append(
            f'[stores] {kind} = "local" (images stay with the sandbox provider; '
            'set image = "registry" and [stores.registry] to push to an OCI registry)'
        )
    return out, notes


def _type_of(default: Any) -> Any:
    if default is None:
        return Any
    if isinstance(default, dict):
        return dict[str, Any]
    if isinstance(default, list):
        return list[Any]
    return type(default) | None


@functools.cache
def _model(section: str, keys: tuple[tuple[str, Any], ...], compat: tuple[tuple[str, str], ...]):
    fields: dict[str, Any] = {k: attrs.field(default=None, type=t) for k, t in keys}
    for key, reason in compat:
        fields.setdefault(key, compat_ignored(reason))
    name = "Section_" + re.sub(r"\W", "_", section)
    return attrs.make_class(name, fields, frozen=True, kw_only=True)


def section_model(section: str, schema: Mapping[str, Any]) -> type:
    """The attrs model of `section` for its schema (cached per schema)."""
    keys = tuple(sorted((k, _type_of(v)) for k, v in schema.items()))
    compat = tuple(sorted(COMPAT_KEYS.get(section, {}).items()))
    return _model(section, keys, compat)


def check_section(
    section: str, schema: Mapping[str, Any], table: Mapping[str, Any], *, noun: str = "key"
) -> tuple[list[str], list[str]]:
    """(problems, ignored keys) of one table: unknown keys with a did-you-mean, values of the
    wrong type (an `env:`/`secret:` reference fits any type), compat-ignored keys set."""
    data = {k: v for k, v in table.items() if parse_ref(v) is None}
    if not data:  # every key of a section model has a default: nothing set, nothing wrong
        return [], []  # (and no model is made: most store backends are given no settings)
    ignored: list[Ignored] = []
    try:
        structure(data, section_model(section, schema), ignored=ignored, noun=noun)
    except StructureProblems as exc:
        return list(exc.problems), []
    return [], [f"{item.path} ({item.reason})" for item in ignored]


def renamed(section: str, schema: Mapping[str, Any], table: Mapping[str, Any]) -> dict[str, Any]:
    """`table` with the existing product's key names (`RENAMED_KEYS`) turned into ours."""
    out: dict[str, Any] = {}
    for key, value in table.items():
        ours = RENAMED_KEYS.get((section, key))
        out[ours if ours is not None and ours in schema and ours not in table else key] = value
    return out


def is_compat_key(section: str, key: str) -> bool:
    return key in COMPAT_KEYS.get(section, {})


def reference_store(kind: str, table: Mapping[str, Any]) -> tuple[str | None, dict[str, Any], str]:
    """A `[stores.<kind>]` table of the existing product (`impl` + `config`): (our store type or
    None, its settings, a note for the warning when something is not carried over)."""
    impl = table.get("impl")
    config = table.get("config") or {}
    extra = sorted(set(table) - {"impl", "config"})
    name = impl.rpartition(":")[2] if isinstance(impl, str) else ""
    if name not in REFERENCE_STORES or not isinstance(config, dict):
        return (
            None,
            {},
            f"[stores.{kind}] impl = {impl!r} (no such store here; the default is used)",
        )
    store_type, renames = REFERENCE_STORES[name]
    settings = {renames[k]: v for k, v in config.items() if k in renames}
    dropped = sorted(set(config) - set(renames)) + extra
    note = f"[stores.{kind}] {', '.join(dropped)}" if dropped else ""
    return store_type, settings, note
