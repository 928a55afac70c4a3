"""Lazily built Google Cloud clients, their credentials, and Google errors turned into ours.

Credentials: `anonymous = true` (emulators), a service-account key from `credentials_json`
(the JSON text, typically `"secret:gcp-key"`) or `credentials_file`, else Application
Default Credentials (the SDKs' usual chain).
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import anyio.to_thread

from agent_env.errors import ConfigError, StoreError

T = TypeVar("T")


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


class GcpClient:
    """One client per backend instance, built on first use by `build(settings)` and rebuilt
    in a forked child (gRPC and HTTP sessions must not cross a fork)."""

    def __init__(self, type_name: str, settings: dict[str, Any], build: Callable[[], Any]):
        self.type_name = type_name
        self.settings = settings
        self._build = build
        self._lock = threading.Lock()
        self._client: Any = None
        self._pid = 0
        self._closed = False

    def get(self) -> Any:
        with self._lock:
            if self._closed:
                raise StoreError(f"the {self.type_name} store is closed")
            if self._client is None or self._pid != os.getpid():
                self._client = self._build_checked()
                self._pid = os.getpid()
            return self._client

    def _build_checked(self) -> Any:
        import google.auth.exceptions

        try:
            return self._build()
        except google.auth.exceptions.DefaultCredentialsError as exc:
            raise ConfigError(
                f"{self.type_name} store: no Google Cloud credentials ({exc}); set "
                f"credentials_file or credentials_json in [stores.{self.type_name}], or "
                "configure Application Default Credentials"
            ) from None

    def close(self) -> None:
        with self._lock:
            client, self._client, self._closed = self._client, None, True
        if client is None or self._pid != os.getpid():
            return
        for closer in ("close",):
            fn = getattr(client, closer, None)
            if callable(fn):
                try:
                    fn()
                except Exception:  # noqa: BLE001 - closing is best effort
                    pass
        transport = getattr(client, "transport", None) or getattr(client, "_transport", None)
        if transport is not None and callable(getattr(transport, "close", None)):
            try:
                transport.close()
            except Exception:  # noqa: BLE001
                pass

    async def call(self, fn: Callable[[Any], T], what: str) -> T:
        """Run `fn(client)` in a worker thread; SDK errors become `StoreError` naming `what`."""
        return await anyio.to_thread.run_sync(self.sync, fn, what)

    def sync(self, fn: Callable[[Any], T], what: str) -> T:
        import google.api_core.exceptions as gexc
        import google.auth.exceptions

        try:
            return fn(self.get())
        except gexc.GoogleAPIError as exc:
            raise StoreError(f"{self.type_name} store: cannot {what}: {exc}") from None
        except google.auth.exceptions.GoogleAuthError as exc:
            raise StoreError(
                f"{self.type_name} store: cannot {what}: authentication failed ({exc})"
            ) from None
        except OSError as exc:
            raise StoreError(f"{self.type_name} store: cannot {what}: {exc}") from None
