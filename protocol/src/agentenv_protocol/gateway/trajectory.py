"""The gateway's call log: one JSON line per tool call, with secrets redacted before writing."""

from __future__ import annotations

import collections
import functools
import json
import re
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from agentenv_protocol import jsonrpc

REDACTED = "***"
_SECRET_KEY = re.compile(
    r"pass(word|wd)?|secret|token|api[_-]?key|authorization|credential|private[_-]?key",
    re.IGNORECASE,
)

#: words every name `_SECRET_KEY` matches contains (a cheap, conservative pre-check)
_SECRET_KEY_WORDS = ("pass", "secret", "token", "key", "authorization", "credential")


def redact(value: Any, secrets: Iterable[str] = ()) -> Any:
    """A copy of `value` with secret-named keys and every occurrence of a known secret masked."""
    known = [s for s in secrets if s]
    return _redact(value, known)


def _secret_key(key: Any) -> bool:
    return isinstance(key, str) and _secret_key_name(key)


@functools.lru_cache(maxsize=4096)  # argument names repeat; a bounded cache, whatever the calls
def _secret_key_name(key: str) -> bool:
    return bool(_SECRET_KEY.search(key))


def _redact(value: Any, secrets: list[str]) -> Any:
    kind = type(value)
    if kind is str:
        if secrets:
            for secret in secrets:
                if secret in value:
                    value = value.replace(secret, REDACTED)
        return value
    if kind is dict:
        return {
            k: (REDACTED if _secret_key(k) and v not in (None, "") else _redact(v, secrets))
            for k, v in value.items()
        }
    if kind is list or kind is tuple:
        return [_redact(v, secrets) for v in value]
    if isinstance(value, dict):
        return _redact(dict(value), secrets)
    if isinstance(value, str):
        return _redact(str(value), secrets)
    return value


#: `json.dumps(entry, default=str, ensure_ascii=False)`
_line = jsonrpc.encoder(default=str, ensure_ascii=False)


class Trajectory:
    """Appends redacted records to a JSONL file (when given) and keeps the recent ones in memory."""

    def __init__(
        self, path: str | Path | None = None, *, secrets: Iterable[str] = (), keep: int = 100_000
    ) -> None:
        self.path = Path(path) if path else None
        self.secrets: set[str] = set()
        self._secret_list: list[str] = []
        self._probes: tuple[str, ...] = ()
        for secret in secrets:
            self.add_secret(secret)
        self._raw: collections.deque = collections.deque(maxlen=keep)
        self._lock = threading.Lock()
        self._file = None
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # unbuffered: each line is one write(2), on disk when `record` returns
            self._file = open(self.path, "ab", buffering=0)  # noqa: SIM115 (closed in close())

    def add_secret(self, value: str) -> None:
        if value:
            self.secrets.add(value)
            self._index()

    def forget_secrets(self, values: Iterable[str]) -> None:
        """Stop masking `values` (a warm pool's revoked tokens, once the calls that could hold
        them were cleared): the secrets do not pile up episode after episode."""
        self.secrets.difference_update(values)
        self._index()

    def _index(self) -> None:
        self._secret_list = sorted(self.secrets, key=len, reverse=True)
        # how a secret can appear in a JSON line: as is, or with JSON's escapes
        escaped = {json.dumps(s, ensure_ascii=False)[1:-1] for s in self.secrets}
        self._probes = tuple(sorted(self.secrets | escaped, key=len, reverse=True))

    def _plain(self, line: str) -> bool:
        """Whether a JSON line holds nothing to redact: no secret-looking key (nor any such word
        anywhere, which is conservative) and no known secret. Most calls are plain, and skip
        the copying walk of `_redact`."""
        lowered = line.lower()
        if any(word in lowered for word in _SECRET_KEY_WORDS):
            return False
        return not any(probe in line for probe in self._probes)

    def record(self, entry: dict) -> None:
        """Keep one call; with no file the redaction waits until the records are read."""
        if self._file is None:
            self._raw.append(entry)
            return
        line = _line(entry)
        if self._plain(line):
            clean = entry  # kept as given, like the records of a log with no file
        else:
            clean = _redact(entry, self._secret_list)
            line = _line(clean)
        with self._lock:
            self._raw.append(clean)
            if self._file is not None:
                self._append(line + "\n")

    def restore(self, records: Iterable[dict]) -> None:
        """Start the log over at a snapshot's position: the kept calls become `records`
        (already redacted, as `records` gave them), appended to the file when there is one."""
        restored = [dict(r) for r in records]
        with self._lock:
            self._raw.clear()
            self._raw.extend(restored)
            if self._file is not None:
                self._append("".join(_line(entry) + "\n" for entry in restored))

    def _append(self, text: str) -> None:
        """Write `text` to the file whole (a raw file may take part of a write). A lone
        surrogate (JSON allows `"\\ud800"`, UTF-8 cannot encode it) is written as its JSON escape,
        so the line still reads back as the string it was."""
        assert self._file is not None
        data = memoryview(text.encode("utf-8", "backslashreplace"))
        while data:
            data = data[self._file.write(data) :]

    @property
    def records(self) -> list[dict]:
        """The recent calls, redacted."""
        return [_redact(entry, self._secret_list) for entry in list(self._raw)]

    def clear(self) -> None:
        """Forget the calls kept in memory (the file keeps them): a warm pool's next episode."""
        with self._lock:
            self._raw.clear()

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None
