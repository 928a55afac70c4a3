"""The one place httpx clients are configured: a per-process TLS context and `client(...)`.

Building an SSL context loads the CA bundle (tens of ms), so every client shares one. Clients
ignore proxy/netrc environment variables (`trust_env=False`): env and gateway traffic is local.
httpx is imported inside `client()` so importing this module stays cheap.
"""

from __future__ import annotations

import functools
import ssl
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    import httpx


@functools.lru_cache(maxsize=1)
def tls_context() -> ssl.SSLContext:
    return ssl.create_default_context()


def client(
    timeout: float, *, connect: float = 5.0, headers: Mapping[str, str] | None = None, **kw: Any
) -> httpx.AsyncClient:
    """An `httpx.AsyncClient` with `Timeout(timeout, connect=connect)`, no env proxies and the shared
    TLS context; `kw` goes to httpx (e.g. `limits`)."""
    import httpx

    return httpx.AsyncClient(
        timeout=httpx.Timeout(timeout, connect=connect),
        headers=dict(headers or {}),
        trust_env=False,
        verify=tls_context(),
        **kw,
    )
