"""The default secret store: `AGENT_ENV_SECRET_<NAME>` environment variables first, then a
JSON file (`<home>/secrets.json`, mode 0600) that `set` writes under an exclusive file lock.

`<NAME>` is the secret name upper-cased with `-` turned into `_`, so `secret:openai-key` reads
`AGENT_ENV_SECRET_OPENAI_KEY`.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from agent_env.aio import to_thread
from agent_env.errors import StoreError
from agent_env.fsutil import atomic_write
from agent_env.stores.base import SecretStore
from agent_env.stores.names import SECRET_RE, check_secret_name
from agent_env.stores.support import home_path, reject_unknown_settings

ENV_PREFIX = "AGENT_ENV_SECRET_"


def env_var_name(name: str, prefix: str = ENV_PREFIX) -> str:
    """The environment variable that holds secret `name`."""
    return prefix + check_secret_name(name).upper().replace("-", "_")


class EnvSecretStore(SecretStore):
    """`[stores] secret = "env"`; settings: `path` (default `<home>/secrets.json`) and
    `env_prefix` (default `AGENT_ENV_SECRET_`)."""

    type = "env"

    def __init__(self, settings: Mapping[str, Any] | None = None, *, home: Path | None = None):
        super().__init__(settings, home=home)
        reject_unknown_settings("env", self.settings, ("path", "env_prefix"))
        self.path = home_path(self.settings, "path", home, "secrets.json")
        self.env_prefix = str(self.settings.get("env_prefix", ENV_PREFIX))

    def _read(self) -> dict[str, str]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise StoreError(f"cannot read the secrets file {self.path}: {exc}") from None
        try:
            data = json.loads(text) if text.strip() else {}
        except json.JSONDecodeError as exc:
            raise StoreError(f"the secrets file {self.path} is not valid JSON: {exc}") from None
        if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
            raise StoreError(f"the secrets file {self.path} must hold a JSON object of strings")
        return data

    @contextmanager
    def _locked(self) -> Iterator[None]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        lock_path = self.path.with_name(self.path.name + ".lock")
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def _write(self, data: dict[str, str]) -> None:
        text = json.dumps(data, indent=2, sort_keys=True)
        atomic_write(self.path, text, mode=0o600, prefix=".secrets-")

    def _update(self, name: str, value: str | None) -> None:
        with self._locked():
            data = self._read()
            if value is None:
                if name not in data:
                    return
                del data[name]
            else:
                data[name] = value
            self._write(data)

    def _get(self, name: str) -> str | None:
        from_env = os.environ.get(env_var_name(name, self.env_prefix))
        if from_env is not None:
            return from_env
        return self._read().get(name)

    def _list(self) -> list[str]:
        names = set(self._read())
        normalized = {n.upper().replace("-", "_") for n in names}
        for var in os.environ:
            if var.startswith(self.env_prefix):
                name = var[len(self.env_prefix) :]
                if SECRET_RE.fullmatch(name) and name not in normalized:
                    names.add(name)
        return sorted(names)

    def revision(self) -> object | None:
        """The secrets file's identity, size and modification time (an atomic rewrite makes a
        new inode) and the prefixed environment variables: what every value comes from."""
        try:
            st = os.stat(self.path)
            mark: tuple[int, int, int] | None = (st.st_ino, st.st_size, st.st_mtime_ns)
        except OSError:
            mark = None
        prefix = self.env_prefix
        return mark, tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith(prefix)))

    async def get(self, name: str) -> str | None:
        check_secret_name(name)
        return await to_thread(self._get, name)

    async def set(self, name: str, value: str) -> None:
        check_secret_name(name)
        if not isinstance(value, str):
            raise StoreError(f"secret {name!r}: the value must be a string")
        await to_thread(self._update, name, value)

    async def delete(self, name: str) -> None:
        """Remove the secret from the file; an environment variable still wins afterwards."""
        check_secret_name(name)
        await to_thread(self._update, name, None)

    async def list(self) -> list[str]:
        return await to_thread(self._list)
