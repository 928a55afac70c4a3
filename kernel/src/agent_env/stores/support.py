"""Helpers every store backend needs, in-tree or third-party: checking a `[stores.<type>]`
table (unknown keys get a did-you-mean), required settings, documents as compact JSON text
(so every backend stores exactly what SQLite does) and object-store argument checks."""

from __future__ import annotations

import json
import zlib
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from agent_env.errors import ConfigError, StoreError
from agent_env.stores.names import check_object_prefix


def reject_unknown_settings(
    type_name: str, settings: Mapping[str, Any], known: Collection[str]
) -> None:
    """A `ConfigError` naming the first unknown key of `[stores.<type_name>]`, with a
    did-you-mean and the known keys."""
    _check(type_name, dict.fromkeys(known), settings)


def check_settings(
    type_name: str, settings: Mapping[str, Any], defaults: Mapping[str, Any]
) -> dict[str, Any]:
    """The backend's settings with `defaults` filled in (a None value counts as unset);
    keys not in `defaults`, or values not of the default's type, are a `ConfigError`."""
    given = {k: v for k, v in settings.items() if v is not None}
    _check(type_name, defaults, given)
    return {**defaults, **given}


def _check(type_name: str, schema: Mapping[str, Any], settings: Mapping[str, Any]) -> None:
    """Structure the settings with the kernel's converter (`config.models.check_section`)."""
    from agent_env.config.models import check_section

    problems, _ = check_section(f"stores.{type_name}", schema, settings, noun="setting")
    if not problems:
        return
    if problems[0].startswith("unknown setting"):
        raise ConfigError(
            f"[stores.{type_name}] has {problems[0]}; known: {', '.join(sorted(schema))}"
        )
    raise ConfigError(f"[stores.{type_name}] {problems[0]}")


def require_setting(type_name: str, settings: Mapping[str, Any], key: str) -> Any:
    """The value of a setting the backend cannot work without; unset or empty is a
    `ConfigError` saying where to set it."""
    value = settings.get(key)
    if value in (None, ""):
        raise ConfigError(
            f"[stores.{type_name}] {key} is not set; set it in .agentenv/config.toml or "
            f"with AGENT_ENV_STORES_{type_name.upper()}_{key.upper()}"
        )
    return value


def home_path(settings: Mapping[str, Any], key: str, home: Path | None, default: str) -> Path:
    """The path in setting `key`, else `default` under the agent-env home (local backends)."""
    if key in settings:
        return Path(settings[key]).expanduser()
    if home is None:
        from agent_env.paths import home as default_home

        home = default_home()
    return Path(home) / default


def encode_document(doc: Mapping[str, Any]) -> str:
    """A document as compact JSON text; not a mapping or not JSON-serializable is a
    `StoreError`."""
    if not isinstance(doc, Mapping):
        raise StoreError(f"a document must be a mapping, got {type(doc).__name__}")
    try:
        return json.dumps(doc, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise StoreError(f"document is not JSON-serializable: {exc}") from None


def decode_document(text: str | bytes, where: str) -> dict[str, Any]:
    """A stored document back from its JSON text; `where` names it in the error."""
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise StoreError(f"{where}: stored document is not valid JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise StoreError(f"{where}: stored document is not a JSON object")
    return doc


def pack_document(
    doc: Mapping[str, Any], where: str, *, compress_over: int, limit: int, limit_name: str
) -> str | bytes:
    """A document for a backend with a size limit: its JSON text, or the text zlib-compressed
    (bytes) when longer than `compress_over`; compressed bytes over `limit` are a `StoreError`
    naming `limit_name` (e.g. "DynamoDB's item limit")."""
    text = encode_document(doc)
    if len(text) <= compress_over:
        return text
    packed = zlib.compress(text.encode(), 6)
    if len(packed) > limit:
        raise StoreError(
            f"document {where}: {len(packed)} bytes compressed, over {limit_name} of {limit} bytes"
        )
    return packed


def unpack_document(stored: str | bytes, where: str) -> dict[str, Any]:
    """A document back from `pack_document`'s text or compressed bytes."""
    if isinstance(stored, (bytes, bytearray, memoryview)):
        try:
            stored = zlib.decompress(stored)
        except zlib.error as exc:
            raise StoreError(f"{where}: stored document is corrupt: {exc}") from None
    return decode_document(stored, where)


def object_bytes(key: str, data: object) -> bytes:
    """The bytes to store under `key`; anything but bytes-like is a `StoreError`."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise StoreError(f"object {key!r}: data must be bytes, got {type(data).__name__}")
    return bytes(data)


def object_root(prefix: object) -> str:
    """A backend's key prefix (e.g. "team-a" inside a bucket) as "team-a/"; "" for none."""
    root = str(prefix or "")
    if root:
        check_object_prefix(root)
        if not root.endswith("/"):
            root += "/"
    return root


def existing_file(key: str, path: Path | str) -> Path:
    """The source file of `put_file`; a missing one is a `StoreError` naming the object."""
    source = Path(path)
    if not source.is_file():
        raise StoreError(f"object {key!r}: {source} is not a file")
    return source
