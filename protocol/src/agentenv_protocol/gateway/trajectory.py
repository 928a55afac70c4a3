"""The gateway's call log: one JSON line per tool call, with secrets redacted before writing."""

from __future__ import annotations

import collections
import json
import re
import threading
from pathlib import Path
from typing import Any, Iterable

REDACTED = "***"
_SECRET_KEY = re.compile(r"pass(word|wd)?|secret|token|api[_-]?key|authorization|credential|private[_-]?key",
                         re.IGNORECASE)


def redact(value: Any, secrets: Iterable[str] = ()) -> Any:
    """A copy of `value` with secret-named keys and every occurrence of a known secret masked."""
    known = [s for s in secrets if s]
    return _redact(value, known)


def _redact(value: Any, secrets: list[str]) -> Any:
    if isinstance(value, dict):
        return {k: (REDACTED if isinstance(k, str) and _SECRET_KEY.search(k) and v not in (None, "")
                    else _redact(v, secrets)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_redact(v, secrets) for v in value]
    if isinstance(value, str) and secrets:
        for secret in secrets:
            if secret in value:
                value = value.replace(secret, REDACTED)
    return value


class Trajectory:
    """Appends redacted records to a JSONL file (when given) and keeps the recent ones in memory."""

    def __init__(self, path: str | Path | None = None, *, secrets: Iterable[str] = (), keep: int = 100_000) -> None:
        self.path = Path(path) if path else None
        self.secrets = set(secrets)
        self.records: collections.deque = collections.deque(maxlen=keep)
        self._lock = threading.Lock()
        self._file = None
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = open(self.path, "a", encoding="utf-8")

    def add_secret(self, value: str) -> None:
        if value:
            self.secrets.add(value)

    def record(self, entry: dict) -> dict:
        clean = _redact(entry, list(self.secrets))
        line = json.dumps(clean, default=str, ensure_ascii=False)
        with self._lock:
            self.records.append(clean)
            if self._file is not None:
                self._file.write(line + "\n")
                self._file.flush()
        return clean

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None
