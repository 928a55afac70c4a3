"""The settings each Google Cloud backend accepts (its `[stores.<type>]` table).

`hooks.py` declares these to the config loader, and each backend checks its settings again
when built directly, so a typo fails the same way either way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agent_env.errors import ConfigError
from agent_env.suggest import did_you_mean

#: Connection settings every backend takes. `credentials_file` / `credentials_json` hold a
#: service-account key (a path, or the JSON itself, e.g. "secret:gcp-key"); `anonymous`
#: sends no credentials (emulators); unset means Application Default Credentials.
CLIENT: dict[str, Any] = {
    "project": None,
    "endpoint_url": None,
    "credentials_file": None,
    "credentials_json": None,
    "anonymous": False,
    "timeout": 60.0,
}

SECTIONS: dict[str, dict[str, Any]] = {
    "gcs": {**CLIENT, "bucket": None, "prefix": "", "create_bucket": False, "location": None},
    "firestore": {**CLIENT, "database": "(default)", "collection_prefix": "agentenv"},
    "secretmanager": {**CLIENT, "prefix": "agentenv-"},
    "artifactregistry": {
        **CLIENT,
        "registry": None,
        "location": "us",
        "repository": "agentenv",
        "insecure_registry": False,
    },
}


def check(type_name: str, settings: Mapping[str, Any]) -> dict[str, Any]:
    """The backend's settings with defaults filled in; unknown keys are a `ConfigError`."""
    known = SECTIONS[type_name]
    unknown = sorted(set(settings) - set(known))
    if unknown:
        raise ConfigError(
            f"[stores.{type_name}] has unknown setting {unknown[0]!r}"
            f"{did_you_mean(unknown[0], known)}; known: {', '.join(sorted(known))}"
        )
    out = dict(known)
    out.update({k: v for k, v in settings.items() if v is not None})
    return out


def need(type_name: str, settings: Mapping[str, Any], key: str) -> Any:
    value = settings.get(key)
    if value in (None, ""):
        raise ConfigError(
            f"[stores.{type_name}] {key} is not set; set it in .agentenv/config.toml or "
            f"with AGENT_ENV_STORES_{type_name.upper()}_{key.upper()}"
        )
    return value
