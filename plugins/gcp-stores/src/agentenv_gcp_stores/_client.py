"""Lazily built Google Cloud clients, their credentials, and Google errors turned into ours.

Credentials: `anonymous = true` (emulators), a service-account key from `credentials_json`
(the JSON text, typically `"secret:gcp-key"`) or `credentials_file`, else Application
Default Credentials (the SDKs' usual chain).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

from agent_env.errors import ConfigError, StoreError
from agent_env.stores.client import LazyClient


def credentials(type_name: str, settings: dict[str, Any]) -> Any:
    """The credentials object the settings ask for; None means Application Default."""
    if settings.get("anonymous"):
        from google.auth.credentials import AnonymousCredentials

        return AnonymousCredentials()
    info, path = settings.get("credentials_json"), settings.get("credentials_file")
    if not info and not path:
        return None
    from google.oauth2 import service_account

    scopes = ["https://www.googleapis.com/auth/cloud-platform"]
    try:
        if info:
            data = info if isinstance(info, dict) else json.loads(info)
            return service_account.Credentials.from_service_account_info(data, scopes=scopes)
        return service_account.Credentials.from_service_account_file(
            os.path.expanduser(str(path)), scopes=scopes
        )
    except (ValueError, OSError, KeyError) as exc:
        key = "credentials_json" if info else "credentials_file"
        raise ConfigError(
            f"[stores.{type_name}] {key}: not a usable service-account key ({exc})"
        ) from None


class GcpClient(LazyClient):
    """One client per backend instance, made by `factory()` on first use and rebuilt in a
    forked child (gRPC and HTTP sessions must not cross a fork); see `LazyClient`."""

    def __init__(self, type_name: str, settings: dict[str, Any], factory: Callable[[], Any]):
        super().__init__(type_name, settings)
        self._factory = factory

    def build(self) -> Any:
        import google.auth.exceptions

        try:
            return self._factory()
        except google.auth.exceptions.DefaultCredentialsError as exc:
            raise ConfigError(
                f"{self.type_name} store: no Google Cloud credentials ({exc}); set "
                f"credentials_file or credentials_json in [stores.{self.type_name}], or "
                "configure Application Default Credentials"
            ) from None

    def close_client(self, client: Any) -> None:
        """Best effort: the client, then its transport (gRPC channels hold threads)."""
        transport = getattr(client, "transport", None) or getattr(client, "_transport", None)
        for closable in (client, transport):
            if closable is not None and callable(getattr(closable, "close", None)):
                try:
                    closable.close()
                except Exception:  # noqa: BLE001 - closing is best effort
                    pass

    def translate(self, exc: Exception, what: str) -> Exception | None:
        import google.api_core.exceptions as gexc
        import google.auth.exceptions

        if isinstance(exc, gexc.GoogleAPIError):
            return StoreError(f"{self.type_name} store: cannot {what}: {exc}")
        if isinstance(exc, google.auth.exceptions.GoogleAuthError):
            return StoreError(
                f"{self.type_name} store: cannot {what}: authentication failed ({exc})"
            )
        if isinstance(exc, OSError):
            return StoreError(f"{self.type_name} store: cannot {what}: {exc}")
        return None
