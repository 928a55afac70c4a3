"""The settings each AWS backend accepts (its `[stores.<type>]` table) and their defaults.

`hooks.py` declares these to the config loader, and each backend checks its settings again
when built directly, so a typo fails the same way either way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agent_env.stores.support import check_settings, require_setting

#: Connection settings every AWS backend takes; unset means the SDK's usual chain decides.
CLIENT: dict[str, Any] = {
    "region": None,
    "endpoint_url": None,
    "profile": None,
    "access_key_id": None,
    "secret_access_key": None,
    "session_token": None,
    "timeout": 60.0,
}

SECTIONS: dict[str, dict[str, Any]] = {
    "s3": {**CLIENT, "bucket": None, "prefix": "", "create_bucket": False},
    "dynamodb": {**CLIENT, "table": "agentenv-documents", "create_table": True},
    "secretsmanager": {**CLIENT, "prefix": "agentenv/", "kms_key_id": None},
    "ecr": {
        **CLIENT,
        "registry": None,
        "repository_prefix": "agentenv",
        "create_repositories": True,
        "insecure_registry": False,
    },
}


def check(type_name: str, settings: Mapping[str, Any]) -> dict[str, Any]:
    """The backend's settings with defaults filled in; unknown keys are a `ConfigError`."""
    return check_settings(type_name, settings, SECTIONS[type_name])


need = require_setting
