"""The settings each Google Cloud backend accepts (its `[stores.<type>]` table).

`hooks.py` declares these to the config loader, and each backend checks its settings again
when built directly, so a typo fails the same way either way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agent_env.stores.support import check_settings, require_setting

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
    return check_settings(type_name, settings, SECTIONS[type_name])


need = require_setting
