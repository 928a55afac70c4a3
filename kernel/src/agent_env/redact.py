"""The one redaction function: every context, journal entry and record passes through it
before it is persisted, so secrets never reach a store, a log or a trajectory."""

from __future__ import annotations

import bisect
import functools
import os
import re
import threading
import weakref
from collections.abc import Iterable, Mapping
from typing import Any, AnyStr

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


#: Secret values per compiled pattern: adding one recompiles at most this many (lazily, at the
#: next match), never everything a redactor knows.
CHUNK = 64


class _Values:
    """A growing set of secret values and the patterns that match them: sealed chunks of
    `CHUNK` values (compiled once) plus one open chunk, recompiled on its next use."""

    def __init__(self) -> None:
        self.values: set[str] = set()
        self._sealed: list[_Chunk] = []
        self._open: list[str] = []
        self._compiled: _Chunk | None = None

    def add(self, values: Iterable[str]) -> list[str]:
        """Learn `values`; the ones that were new."""
        new = []
        for value in values:
            if value not in self.values:
                self.values.add(value)
                new.append(value)
                self._open.append(value)
                self._compiled = None
                if len(self._open) == CHUNK:
                    self._sealed.append(_Chunk(self._open))
                    self._open = []
        return new

    def patterns(self) -> list[_Chunk]:
        if self._open and self._compiled is None:
            self._compiled = _Chunk(self._open)
        return self._sealed + ([self._compiled] if self._compiled is not None else [])


class _Chunk:
    """The patterns of some values, longest first (so the longest secret at a place wins):
    `text` for strings, `data` for bytes (process logs), each compiled on first use."""

    def __init__(self, values: Iterable[str]):
        self.values = sorted(values, key=len, reverse=True)

    @functools.cached_property
    def text(self) -> re.Pattern[str]:
        return re.compile("|".join(map(re.escape, self.values)))

    @functools.cached_property
    def data(self) -> re.Pattern[bytes]:
        return re.compile(b"|".join(re.escape(s.encode()) for s in self.values))


class Redactor:
    """Replaces known secret values (from the secret store and the config) and every value
    under a secret-looking key; callable on any JSON value, returns a redacted copy.

    Redactors layer: `child()` (one per task instance) knows its parent's secrets plus what is
    added to it, and is dropped with the instance, so a long-lived process does not pile up the
    secrets of every episode it ran. Adding a secret costs the same however many were known."""

    def __init__(self, secrets: Iterable[str] = (), *, parent: Redactor | None = None):
        self._parent = parent
        self._own = _Values()
        self._closed = False
        # what this redactor taught `process_redactor()` is forgotten when it is dropped
        self._finalizer = weakref.finalize(self, _forget, self._own.values)
        self.add(secrets)

    def child(self) -> Redactor:
        """A redactor that also knows this one's secrets (later ones too); what is added to it
        stays with it. `close()` it when its owner (a task instance) ends."""
        return Redactor(parent=self)

    def extend(self, other: Redactor) -> None:
        """Also know every secret `other` knows, now and later: a task instance that adopts a
        warm instance. When `other` layers on this one's parent, this one layers on `other`
        instead of copying its values (no pattern compiled again per episode)."""
        if self._parent is not None and other._parent is self._parent:
            self._parent = other
        else:
            self.add(other.secrets)

    def close(self) -> None:
        """The owner ended: process output no longer needs this redactor's own secrets (the
        redactor itself still redacts with them)."""
        self._finalizer()

    def add(self, secrets: Iterable[str], *, min_length: int = 1) -> None:
        """Learn more secret values (e.g. resolved `secret:` references); `min_length` only
        for values guessed to be secret. While this redactor lives, its values are also known
        to `process_redactor()`, which redacts process output as it is written to logs."""
        learned = self._own.add(
            value
            for value in secrets
            if isinstance(value, str)
            and value.strip()
            and len(value) >= min_length
            and not self._knows_above(value)
        )
        process = _PROCESS
        if learned and process is not None and self is not process and self._finalizer.alive:
            process._retain(learned)

    def _knows_above(self, value: str) -> bool:
        parent = self._parent
        while parent is not None:
            if value in parent._own.values:
                return True
            parent = parent._parent
        return False

    def _patterns(self) -> list[_Chunk]:
        own = self._own.patterns()
        return own if self._parent is None else self._parent._patterns() + own

    def data(self, value: bytes) -> bytes:
        """`value` (raw process output) with every known secret replaced."""
        return _sub(value, [c.data for c in self._patterns()], REDACTED.encode())

    def pending(self, tail: bytes) -> int:
        """How many bytes at the end of `tail` could be the start of a secret that more output
        completes (a writer holds them back until it knows)."""
        return _pending(tail, sorted(s.encode() for s in self.secrets))

    def __call__(self, value: Any) -> Any:
        patterns = [c.text for c in self._patterns()]
        return _walk(value, patterns[0] if len(patterns) == 1 else patterns or None)

    def text(self, value: str) -> str:
        """`value` with every known secret replaced (for log lines and other plain text)."""
        return _sub(value, [c.text for c in self._patterns()], REDACTED)

    @property
    def secrets(self) -> frozenset[str]:
        """The secret values this redactor replaces (for callers that scan files for leaks)."""
        own = frozenset(self._own.values)
        return own if self._parent is None else self._parent.secrets | own

    @classmethod
    async def from_stores(
        cls, stores: Any, config: Any = None, environ: Mapping[str, str] | None = None
    ) -> Redactor:
        """A redactor that knows every value in the configured secret store, the values of
        secret-looking environment variables (`OPENAI_API_KEY`, `HF_TOKEN`, ...) and the
        config's secret-looking settings and `env:` references."""
        values: list[str] = []
        secrets = getattr(stores, "secrets", None)
        if secrets is not None:
            for name in await secrets.list():
                value = await secrets.get(name)
                if value:
                    values.append(value)
        redactor = cls(values)
        guessed = _guessed(config, os.environ if environ is None else environ)
        redactor.add(guessed, min_length=MIN_SECRET_LENGTH)
        return redactor


def _guessed(config: Any, environ: Mapping[str, str]) -> list[str]:
    """Values only guessed to be secret: secret-looking environment variables and config
    settings (or the variables their `env:` references name)."""
    guessed = [v for k, v in environ.items() if is_secret_key(k)]
    for table in (getattr(config, "values", None) or {}).values():
        for key, value in table.items():
            if not isinstance(value, str):
                continue
            if value.startswith("env:") and value[4:] in environ:
                if is_secret_key(key):
                    guessed.append(environ[value[4:]])
            elif is_secret_key(key) and not value.startswith("secret:"):
                guessed.append(value)
    return guessed


class StoreRedactors:
    """`Redactor.from_stores` for a long-lived session, built again only when what it read
    changed: the secret store's `revision()` (a store that cannot tell is read every time),
    the guessed values of the environment and the config. A front end that starts a run per
    episode so skips reading every secret and compiling their pattern per episode, while a
    secret added meanwhile still reaches the next episode's redactor."""

    def __init__(self, stores: Any, config: Any = None) -> None:
        self.stores = stores
        self.config = config
        self._kept: tuple[Any, Redactor] | None = None

    def _mark(self) -> Any:
        secrets = getattr(self.stores, "secrets", None)
        revision = None if secrets is None else getattr(secrets, "revision", lambda: None)()
        if secrets is not None and revision is None:
            return None
        return revision, tuple(_guessed(self.config, os.environ))

    async def current(self) -> Redactor:
        mark = self._mark()
        kept = self._kept
        if mark is not None and kept is not None and kept[0] == mark:
            return kept[1]
        redactor = await Redactor.from_stores(self.stores, self.config)
        self._kept = None if mark is None else (mark, redactor)
        return redactor


class _ProcessRedactor(Redactor):
    """The union of the live redactors' secrets (counted, so a value two of them know stays
    until both are gone); rebuilt from the live values on the first use after a change.
    Thread-safe: log-copying threads use it while the event loop adds and drops values."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[str, int] = {}
        self._built: tuple[list[_Chunk], list[bytes]] = (
            [],
            [],
        )
        self._stale = False
        super().__init__()

    def _retain(self, values: Iterable[str]) -> None:
        with self._lock:
            for value in values:
                self._counts[value] = self._counts.get(value, 0) + 1
            self._stale = True

    def _release(self, values: Iterable[str]) -> None:
        with self._lock:
            for value in values:
                left = self._counts.get(value, 0) - 1
                if left > 0:
                    self._counts[value] = left
                else:
                    self._counts.pop(value, None)
            self._stale = True

    def _current(self) -> tuple[list[_Chunk], list[bytes]]:
        with self._lock:
            if self._stale:
                values = list(self._counts)
                chunks = [_Chunk(values[i : i + CHUNK]) for i in range(0, len(values), CHUNK)]
                self._built = (chunks, sorted(v.encode() for v in values))
                self._stale = False
            return self._built

    def _patterns(self) -> list[_Chunk]:
        return self._current()[0]

    def add(self, secrets: Iterable[str], *, min_length: int = 1) -> None:
        self._retain(
            v for v in secrets if isinstance(v, str) and v.strip() and len(v) >= min_length
        )

    def pending(self, tail: bytes) -> int:
        return _pending(tail, self._current()[1])

    @property
    def secrets(self) -> frozenset[str]:
        with self._lock:
            return frozenset(self._counts)


def _pending(tail: bytes, encoded: list[bytes]) -> int:
    """The longest end of `tail` that begins one of `encoded` (sorted), shorter than it."""
    longest = max(map(len, encoded), default=1)
    for size in range(min(len(tail), longest - 1), 0, -1):
        end = tail[-size:]
        at = bisect.bisect_left(encoded, end)  # the first value >= end starts with it, if any
        if at < len(encoded) and encoded[at].startswith(end):
            return size
    return 0


def _forget(values: set[str]) -> None:
    if _PROCESS is not None:
        _PROCESS._release(values)


_PROCESS: _ProcessRedactor | None = None
_PROCESS = _ProcessRedactor()


def process_redactor() -> Redactor:
    """The secrets of every live redactor of this process (what process logs are redacted
    with while they are written: over-masking another run's secret there is harmless)."""
    assert _PROCESS is not None
    return _PROCESS


def redact(value: Any, secrets: re.Pattern[str] | Iterable[str] | None = None) -> Any:
    """A copy of the JSON `value` with secret-keyed values and known secrets replaced."""
    if secrets is not None and not isinstance(secrets, re.Pattern):
        return Redactor(secrets)(value)
    return _walk(value, secrets)


def _sub(value: AnyStr, patterns: list[re.Pattern[AnyStr]], mask: AnyStr) -> AnyStr:
    """`value` with every match of `patterns` replaced by `mask`, exactly as one pattern over
    all their values would: the leftmost match first, the longest there."""
    if not patterns:
        return value
    if len(patterns) == 1:
        return patterns[0].sub(mask, value)
    found = [m for p in patterns if (m := p.search(value)) is not None]
    if not found:
        return value
    out = []
    pos = 0
    while found:
        first = min(found, key=lambda m: (m.start(), -m.end()))
        out.append(value[pos : first.start()])
        out.append(mask)
        pos = first.end()
        found = [
            n
            for m in found
            if (n := m if m.start() >= pos else m.re.search(value, pos)) is not None
        ]
    out.append(value[pos:])
    return mask[:0].join(out)


def _walk(value: Any, pattern: re.Pattern[str] | list[re.Pattern[str]] | None) -> Any:
    kind = type(value)
    if kind is str or isinstance(value, str):
        if pattern is None:
            return value
        if isinstance(pattern, list):
            return _sub(value, pattern, REDACTED)
        return pattern.sub(REDACTED, value)
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
