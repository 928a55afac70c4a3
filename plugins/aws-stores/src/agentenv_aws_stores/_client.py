"""One lazily built boto3 client per backend instance, and AWS errors turned into ours.

Credentials come from the settings when given (`access_key_id`, `secret_access_key`,
`session_token`, `profile`; `secret:`/`env:` references are resolved before we see them),
else from boto3's usual chain (environment, shared files, instance roles).
"""

from __future__ import annotations

from typing import Any

from agent_env.errors import ConfigError, StoreError
from agent_env.stores.client import LazyClient


class AwsClient(LazyClient):
    """A boto3 client for `service` (see `LazyClient`: built on first use, rebuilt after a
    fork)."""

    def __init__(self, service: str, type_name: str, settings: dict[str, Any]):
        super().__init__(type_name, settings)
        self.service = service

    def build(self) -> Any:
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

    def translate(self, exc: Exception, what: str) -> Exception | None:
        import botocore.exceptions

        if isinstance(exc, botocore.exceptions.NoCredentialsError):
            return ConfigError(
                f"{self.type_name} store: no AWS credentials found while trying to {what}; set "
                f"access_key_id/secret_access_key (or profile) in [stores.{self.type_name}], "
                "or configure the AWS SDK's usual chain"
            )
        if isinstance(exc, botocore.exceptions.ClientError):
            return StoreError(f"{self.type_name} store: cannot {what}: {_describe(exc)}")
        if isinstance(exc, botocore.exceptions.BotoCoreError):
            return StoreError(f"{self.type_name} store: cannot {what}: {exc}")
        return None


def error_code(exc: BaseException) -> str:
    """The AWS error code of a botocore `ClientError` ('' for anything else)."""
    response = getattr(exc, "response", None) or {}
    return str(response.get("Error", {}).get("Code", ""))


def _describe(exc: Any) -> str:
    error = (getattr(exc, "response", None) or {}).get("Error", {})
    code, message = error.get("Code", ""), error.get("Message", "")
    return f"{code}: {message}" if message else str(code or exc)
