"""The config schema: built-in sections and keys with their defaults, plus what plugins declare.

A plugin declares its own sections in its hooks module, with no hook call::

    CONFIG_SECTIONS = {"sandbox.docker": {"network": "bridge", "cpus": None}}

Section names are `name` or `parent.name` (`stores.<backend>`, `sandbox.<provider>`,
`plugins.<distribution>`); each key maps to its default (its type is the default's type).
"""

from __future__ import annotations

from typing import Any

from agent_env.config.refs import parse_ref
from agent_env.errors import ConfigError

BUILTIN_SECTIONS: dict[str, dict[str, Any]] = {
    "stores": {"document": "sqlite", "object": "filesystem", "secret": "env", "image": None},
    "sandbox": {"default": "local"},
    "sandbox.local": {"root": None, "bwrap": "bwrap", "allow_unisolated": False},
    "run": {
        "concurrency": 8,
        "runner": "local",
        "sandbox_concurrency": 8,
        "retry_infra": 0,
        "progress_interval": 10.0,
        # issue 32: stop starting trials once this many US dollars are spent (agent_env.costs)
        "budget_usd": None,
        "pool": 0,
        "pool_min_free_mb": 512,
    },
    # issue 32: `[prices.models."<model>"] input/output` (US dollars per 1M tokens) and
    # `[prices.sandboxes] <provider>` (per sandbox-hour); checked by agent_env.costs
    "prices": {},
    "prices.models": {},
    "prices.sandboxes": {},
    "model": {"base_url": None, "api_key": None, "default": None},
}

#: Sections whose keys are names the user chooses (models, providers), not settings: their
#: values are checked by the feature that reads them (`agent_env.costs` for `[prices]`).
FREE_FORM_SECTIONS = frozenset({"prices.models", "prices.sandboxes"})

#: Config keys that select a backend from a registry: section, key -> (registry, store kind).
BACKEND_KEYS: dict[tuple[str, str], tuple[str, str | None]] = {
    ("stores", "document"): ("stores", "document"),
    ("stores", "object"): ("stores", "object"),
    ("stores", "secret"): ("stores", "secret"),
    ("stores", "image"): ("stores", "image"),
    ("sandbox", "default"): ("sandbox_providers", None),
    ("run", "runner"): ("runners", None),
}

#: Sections whose sub-tables hold the settings of one backend, and the registry naming them.
BACKEND_PARENTS = {"stores": "stores", "sandbox": "sandbox_providers"}

#: `AGENT_ENV_*` variables that are not config settings.
RESERVED_ENV = {
    "AGENT_ENV_HOME",
    "AGENT_ENV_CONFIG",
    "AGENT_ENV_DISABLE_PLUGINS",
    "AGENT_ENV_STRICT_PLUGINS",
}

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def env_var_name(section: str, key: str) -> str:
    """`("sandbox.docker", "network")` -> `AGENT_ENV_SANDBOX_DOCKER_NETWORK`."""
    raw = f"{section}_{key}".upper().replace(".", "_").replace("-", "_")
    return f"AGENT_ENV_{raw}"


def _type_name(default: Any) -> str:
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string"}.get(
        type(default), type(default).__name__
    )


def coerce_env(where: str, default: Any, raw: str) -> Any:
    """Turn an environment variable's text into the type of the key's default."""
    if parse_ref(raw) is not None or default is None or isinstance(default, str):
        return raw
    if isinstance(default, bool):
        if raw.lower() in _TRUE | _FALSE:
            return raw.lower() in _TRUE
    else:
        try:
            return type(default)(raw)
        except ValueError:
            pass
    raise ConfigError(f"{where}: expected {_type_name(default)}, got {raw!r}")
