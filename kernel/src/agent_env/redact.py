"""The one redaction function: every context, journal entry and record passes through it
before it is persisted, so secrets never reach a store, a log or a trajectory."""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

REDACTED = "[redacted]"

#: Key endings (letters only, lower case) whose values are always secret.
SECRET_KEY_ENDINGS = (
    "apikey",
    "token",
    "password",
    "passwd",
    "passphrase",
    "secret",
    "authorization",
    "credentials",
    "privatekey",
    "accesskey",
    "secretkey",
    "sessionkey",
    "cookie",
)
#: Values only guessed to be secret (under a secret-looking key of the host environment or
#: the config) are
#: matched from this length on; secrets known to be secrets (the secret store, the config,
#: tokens a step adds) are matched by exact value whatever their length.
MIN_SECRET_LENGTH = 6

_NON_ALNUM = re.compile(r"[^a-z0-9]")


def is_secret_key(key: str) -> bool:
    """True for keys such as `api_key`, `OPENAI_API_KEY`, `access-token`, `password`."""
    return _secret_key(key if isinstance(key, str) else str(key))


@functools.lru_cache(maxsize=8192)
def _secret_key(key: str) -> bool:
    return _NON_ALNUM.sub("", key.lower()).endswith(SECRET_KEY_ENDINGS)


class Redactor:
    """Replaces known secret values (from the secret store and the config) and every value
    under a secret-looking key; callable on any JSON value, returns a redacted copy."""

    def __init__(self, secrets: Iterable[str] = ()):
        self._secrets: set[str] = set()
        self._pattern: re.Pattern[str] | None = None
        self._bytes: re.Pattern[bytes] | None = None
        self._encoded: tuple[bytes, ...] = ()
        self.add(secrets)

    def add(self, secrets: Iterable[str], *, min_length: int = 1) -> None:
        """Learn more secret values (e.g. resolved `secret:` references); `min_length` only
        for values guessed to be secret. Every value is also learned by `process_redactor()`,
        which redacts process output as it is written to logs."""
        learned = [
            value
            for value in secrets
            if isinstance(value, str)
            and value.strip()
            and len(value) >= min_length
            and value not in self._secrets
        ]
        if not learned:
            return
        self._secrets.update(learned)
        ordered = sorted(self._secrets, key=len, reverse=True)
        self._pattern = re.compile("|".join(re.escape(s) for s in ordered))
        self._encoded = tuple(s.encode() for s in ordered)
        self._bytes = re.compile(b"|".join(re.escape(s) for s in self._encoded))
        if _PROCESS is not None and self is not _PROCESS:
            _PROCESS.add(learned)

    def data(self, value: bytes) -> bytes:
        """`value` (raw process output) with every known secret replaced."""
        pattern = self._bytes
        return pattern.sub(REDACTED.encode(), value) if pattern is not None else value

    def pending(self, tail: bytes) -> int:
        """How many bytes at the end of `tail` could be the start of a secret that more output
        completes (a writer holds them back until it knows)."""
        for size in range(min(len(tail), max(map(len, self._encoded), default=1) - 1), 0, -1):
            end = tail[-size:]
            if any(s.startswith(end) for s in self._encoded):
                return size
        return 0

    def __call__(self, value: Any) -> Any:
        return redact(value, self._pattern)

    def text(self, value: str) -> str:
        """`value` with every known secret replaced (for log lines and other plain text)."""
        return self._pattern.sub(REDACTED, value) if self._pattern is not None else value

    @property
    def secrets(self) -> frozenset[str]:
        """The secret values this redactor replaces (for callers that scan files for leaks)."""
        return frozenset(self._secrets)

    @classmethod
    async def from_stores(
        cls, stores: Any, config: Any = None, environ: Mapping[str, str] | None = None
    ) -> Redactor:
        """A redactor that knows every value in the configured secret store, the values of
        secret-looking environment variables (`OPENAI_API_KEY`, `HF_TOKEN`, ...) and the
        config's secret-looking settings and `env:` references."""
        environ = os.environ if environ is None else environ
        guessed = [v for k, v in environ.items() if is_secret_key(k)]
        values: list[str] = []
        secrets = getattr(stores, "secrets", None)
        if secrets is not None:
            for name in await secrets.list():
                value = await secrets.get(name)
                if value:
                    values.append(value)
        for table in (getattr(config, "values", None) or {}).values():
            for key, value in table.items():
                if not isinstance(value, str):
                    continue
                if value.startswith("env:") and value[4:] in environ:
                    if is_secret_key(key):
                        guessed.append(environ[value[4:]])
                elif is_secret_key(key) and not value.startswith("secret:"):
                    guessed.append(value)
        redactor = cls(values)
        redactor.add(guessed, min_length=MIN_SECRET_LENGTH)
        return redactor


_PROCESS: Redactor | None = None
_PROCESS = Redactor()


def process_redactor() -> Redactor:
    """Every secret any redactor in this process learned (what process logs are redacted
    with while they are written: over-masking another run's secret there is harmless)."""
    assert _PROCESS is not None
    return _PROCESS


def redact(value: Any, secrets: re.Pattern[str] | Iterable[str] | None = None) -> Any:
    """A copy of the JSON `value` with secret-keyed values and known secrets replaced."""
    if secrets is not None and not isinstance(secrets, re.Pattern):
        return Redactor(secrets)(value)
    return _walk(value, secrets)


def _walk(value: Any, pattern: re.Pattern[str] | None) -> Any:
    kind = type(value)
    if kind is str or isinstance(value, str):
        return pattern.sub(REDACTED, value) if pattern is not None else value
    if kind is int or kind is float or kind is bool or value is None:
        return value
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if (
                v is not None
                and v != ""
                and v is not True
                and v is not False
                and (_secret_key(k) if type(k) is str else is_secret_key(k))
            ):
                out[k] = REDACTED
            else:
                out[k] = _walk(v, pattern)
        return out
    if isinstance(value, (list, tuple)):
        return [_walk(v, pattern) for v in value]
    return value
