"""One TLS context per process: building one loads the CA bundle, which costs tens of ms, and
every httpx client would otherwise build its own (per prompt, per tool listing)."""

from __future__ import annotations

import functools
import ssl


@functools.lru_cache(maxsize=1)
def tls_context() -> ssl.SSLContext:
    return ssl.create_default_context()
