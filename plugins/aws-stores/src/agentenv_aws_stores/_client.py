"""One lazily built boto3 client per backend instance, and AWS errors turned into ours.

Credentials come from the settings when given (`access_key_id`, `secret_access_key`,
`session_token`, `profile`; `secret:`/`env:` references are resolved before we see them),
else from boto3's usual chain (environment, shared files, instance roles).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import anyio.to_thread

from agent_env.errors import ConfigError, StoreError

T = TypeVar("T")


class AwsClient:
    """A boto3 client for `service`, built on first use (never in the constructor) and rebuilt
    in a forked child, since botocore clients must not cross a fork."""

    def __init__(self, service: str, type_name: str, settings: dict[str, Any]):
        self.service = service
        self.type_name = type_name
        self.settings = settings
        self._lock = threading.Lock()
        self._client: Any = None
        self._pid = 0
        self._closed = False

    def get(self) -> Any:
        with self._lock:
            if self._closed:
                raise StoreError(f"the {self.type_name} store is closed")
            if self._client is None or self._pid != os.getpid():
                self._client = self._build()
                self._pid = os.getpid()
            return self._client

    def _build(self) -> Any:
        import boto3.session
        import botocore.config
        import botocore.exceptions

        s = self.settings
        try:
            session = boto3.session.Session(
                profile_name=s.get("profile") or None,
                region_name=s.get("region") or None,
                aws_access_key_id=s.get("access_key_id") or None,
                aws_secret_access_key=s.get("secret_access_key") or None,
                aws_session_token=s.get("session_token") or None,
            )
        except botocore.exceptions.ProfileNotFound as exc:
            raise ConfigError(f"[stores.{self.type_name}] profile: {exc}") from None
        timeout = float(s.get("timeout") or 60)
        config = botocore.config.Config(
            connect_timeout=min(timeout, 10.0),
            read_timeout=timeout,
            retries={"max_attempts": 5, "mode": "standard"},
            max_pool_connections=32,
        )
        try:
            return session.client(
                self.service, endpoint_url=s.get("endpoint_url") or None, config=config
            )
        except botocore.exceptions.NoRegionError:
            raise ConfigError(
                f"[stores.{self.type_name}]: no AWS region; set region in "
                f"[stores.{self.type_name}] or AWS_REGION / AWS_DEFAULT_REGION"
            ) from None

    def close(self) -> None:
        with self._lock:
            client, self._client, self._closed = self._client, None, True
        if client is not None and self._pid == os.getpid():
            client.close()

    async def call(self, fn: Callable[[Any], T], what: str) -> T:
        """Run `fn(client)` in a worker thread; SDK errors become `StoreError` naming `what`."""
        return await anyio.to_thread.run_sync(self.sync, fn, what)

    def sync(self, fn: Callable[[Any], T], what: str) -> T:
        import botocore.exceptions

        try:
            return fn(self.get())
        except botocore.exceptions.NoCredentialsError:
            raise ConfigError(
                f"{self.type_name} store: no AWS credentials found while trying to {what}; set "
                f"access_key_id/secret_access_key (or profile) in [stores.{self.type_name}], "
                "or configure the AWS SDK's usual chain"
            ) from None
        except botocore.exceptions.ClientError as exc:
            raise StoreError(f"{self.type_name} store: cannot {what}: {_describe(exc)}") from None
        except botocore.exceptions.BotoCoreError as exc:
            raise StoreError(f"{self.type_name} store: cannot {what}: {exc}") from None


def error_code(exc: BaseException) -> str:
    """The AWS error code of a botocore `ClientError` ('' for anything else)."""
    response = getattr(exc, "response", None) or {}
    return str(response.get("Error", {}).get("Code", ""))


def _describe(exc: Any) -> str:
    error = (getattr(exc, "response", None) or {}).get("Error", {})
    code, message = error.get("Code", ""), error.get("Message", "")
    return f"{code}: {message}" if message else str(code or exc)
