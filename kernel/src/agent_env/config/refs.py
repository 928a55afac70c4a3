"""`env:NAME` and `secret:KEY` references (each with an optional `?default`), and masking."""

from __future__ import annotations

import os
from typing import Any

from agent_env.errors import ConfigError

SCHEMES = ("env", "secret")
_SECRET_WORDS = ("key", "token", "password", "secret", "credential")


def parse_ref(value: Any) -> tuple[str, str, str | None] | None:
    """`"env:HOME?/tmp"` -> `("env", "HOME", "/tmp")`; None for anything that is not a reference."""
    if not isinstance(value, str):
        return None
    scheme, sep, rest = value.partition(":")
    if not sep or scheme not in SCHEMES or not rest:
        return None
    name, q, default = rest.partition("?")
    return scheme, name, default if q else None


async def resolve_value(value: Any, secrets: Any = None, *, where: str = "value") -> Any:
    """Resolve every reference inside `value` (recursing into tables and lists)."""
    if isinstance(value, dict):
        return {k: await resolve_value(v, secrets, where=f"{where}.{k}") for k, v in value.items()}
    if isinstance(value, list):
        return [await resolve_value(v, secrets, where=f"{where}[{i}]") for i, v in enumerate(value)]
    ref = parse_ref(value)
    if ref is None:
        return value
    scheme, name, default = ref
    if scheme == "env":
        found = os.environ.get(name)
        if found is not None:
            return found
        if default is not None:
            return default
        raise ConfigError(f"{where} = {value!r}: environment variable {name} is not set")
    if secrets is None:
        if default is not None:
            return default
        raise ConfigError(f"{where} = {value!r}: no secret store is open to resolve it")
    found = await secrets.get(name)
    if found is not None:
        return found
    if default is not None:
        return default
    raise ConfigError(
        f"{where} = {value!r}: secret {name!r} not found in the "
        f"{getattr(secrets, 'type', '') or 'configured'} secret store"
    )


def mask(key: str, value: Any) -> Any:
    """What `config show` prints: references as written, secret-looking literals as `****`."""
    if isinstance(value, dict):
        return {k: mask(k, v) for k, v in value.items()}
    if parse_ref(value) is not None or value is None:
        return value
    if any(word in key.lower() for word in _SECRET_WORDS) and isinstance(value, str):
        return "****"
    return value
