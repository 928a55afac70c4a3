"""Trial logs: the stdout/stderr of the servers and agents a task instance started in its
sandboxes, kept in the object store when each sandbox is torn down (its processes' output is
gone afterwards). One object per sandbox, `trial-logs/<instance id>/<sandbox name>.log`, the
last `MAX_LINES` lines and at most `MAX_BYTES` bytes (the tail: where a crash shows)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from typing import Any

PREFIX = "trial-logs"
MAX_LINES = 2000
MAX_BYTES = 256 * 1024
#: How long reading one sandbox's logs may take at teardown.
READ_TIMEOUT = 10.0
_UNSAFE = r"[^A-Za-z0-9_.-]+"


def log_key(instance_id: str, sandbox_name: str) -> str:
    """The object key of one sandbox's log (names reduced to safe characters)."""
    name = re.sub(_UNSAFE, "_", sandbox_name).strip(".") or "sandbox"
    return f"{PREFIX}/{re.sub(_UNSAFE, '_', instance_id)}/{name}.log"


def bounded(text: str, limit: int = MAX_BYTES) -> str:
    """`text` cut to its last `limit` bytes, with a first line saying how much was dropped."""
    data = text.encode("utf-8", errors="replace")
    if len(data) <= limit:
        return text
    tail = data[-limit:].decode("utf-8", errors="ignore")
    return f"[... {len(data) - limit} earlier bytes dropped ...]\n{tail}"


async def save(
    objects: Any,
    instance_id: str,
    sandbox_name: str,
    sandbox: Any,
    redact: Callable[[str], str] = str,
) -> str | None:
    """Store `sandbox`'s process output (when it has any, secrets redacted); the key, or None.
    Never raises: losing a log must not fail the teardown."""
    try:
        try:
            async with asyncio.timeout(READ_TIMEOUT):
                text = await sandbox.process_logs(tail=MAX_LINES)
        except TimeoutError:
            text = ""
        if not text or not text.strip():
            return None
        key = log_key(instance_id, sandbox_name)
        await objects.put(key, bounded(redact(text)).encode("utf-8"))
        return key
    except Exception:
        return None


async def load(objects: Any, instance_id: str) -> dict[str, str]:
    """The kept logs of one task instance, by sandbox name (empty when none were kept)."""
    prefix = f"{PREFIX}/{re.sub(_UNSAFE, '_', instance_id)}/"
    out: dict[str, str] = {}
    for key in await objects.list(prefix):
        try:
            data = await objects.get(key)
        except KeyError:
            continue
        out[key[len(prefix) :].removesuffix(".log")] = data.decode("utf-8", errors="replace")
    return out
