"""The per-env secret that makes an env server answer only the run's gateway.

`deploy_env` passes each env it starts a secret (`AGENTENV_ENV_SECRET`); the env's server
(`agentenv_protocol.gateway_only`) then refuses every request without it but the card and
`/healthz`, and the gateway adds it to every request it forwards. The secret is derived, not
stored: an HMAC of the task instance and env name under a random key kept in the agent-env home
(`env-secret.key`, 0600). The journal and records never hold it, yet a resumed run that adopts
the env re-registers it with a fresh gateway. It is added to the run's redactor wherever it is
derived, so it is masked in every record, log and output.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets
import threading
from pathlib import Path
from typing import Any

from agentenv_protocol.constants import ENV_SECRET_ENV, ENV_SECRET_HEADER

KEY_FILE = "env-secret.key"
#: `envs.<name>.gateway_only`: the env's server checks the secret (a task did not opt out).
RECORD_KEY = "gateway_only"

__all__ = ["ENV_SECRET_ENV", "ENV_SECRET_HEADER", "RECORD_KEY", "derive", "for_env", "headers"]


_KEYS: dict[str, bytes] = {}
_KEYS_LOCK = threading.Lock()


def _key(home: Path) -> bytes:
    """The home's key (made on first use, 0600; the first of concurrent makers wins, in this
    process's threads as across processes: each maker writes its own temp file whole and
    links it into place, and whoever loses the link reads the winner's)."""
    path = Path(home) / KEY_FILE
    with _KEYS_LOCK:
        cached = _KEYS.get(str(path))
        if cached is not None:
            return cached
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{KEY_FILE}.{os.getpid()}.{secrets.token_hex(8)}.tmp")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(secrets.token_bytes(32))
                os.link(tmp, path)
            except FileExistsError:
                pass
            finally:
                tmp.unlink(missing_ok=True)
        key = _KEYS[str(path)] = path.read_bytes()
        return key


def derive(task_instance_id: str, env: str, home: Path | None = None) -> str:
    """The secret of env `env` in task instance `task_instance_id` (43 URL-safe characters)."""
    from agent_env.paths import home as default_home

    key = _key(home if home is not None else default_home())
    digest = hmac.new(key, f"{task_instance_id}\0{env}".encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")


def for_env(ctx: Any, env: str) -> str | None:
    """The secret of the deployed env `env` (added to the run's redactor), None when its
    server does not check one (the task opted out, or an env recorded before secrets)."""
    record = ctx.get("envs", env, default=None)
    if not isinstance(record, dict) or not record.get(RECORD_KEY):
        return None
    return new(ctx, env)


def new(ctx: Any, env: str) -> str:
    """Derive env `env`'s secret for this task instance (or the warm pool's instance whose
    env it reuses: `origin_instance_id`) and register it with the redactor."""
    secret = derive(getattr(ctx, "origin_instance_id", None) or ctx.task_instance_id, env)
    ctx.add_secret(secret)
    return secret


def headers(ctx: Any, env: str) -> dict[str, str]:
    """The headers a step calling env `env` directly (not through the gateway) must send."""
    secret = for_env(ctx, env)
    return {ENV_SECRET_HEADER: secret} if secret else {}
