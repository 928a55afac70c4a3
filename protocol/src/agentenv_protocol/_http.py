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


def tls_verify(verify: bool | str | ssl.SSLContext = True) -> bool | str | ssl.SSLContext:
    """What to pass as httpx's `verify=`: the shared context for the default (verify with the
    system's CAs), anything else (off, a CA bundle path, a caller's context) as given."""
    return tls_context() if verify is True else verify


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


def why(e: BaseException) -> str:
    """What an HTTP failure says, never empty. httpx's errors often carry no message (a
    connection reset under load is a `ReadError('')` wrapping anyio's `BrokenResourceError`),
    so the answer always holds the exception's kind, what that kind means, and the message or
    the underlying cause when there is one."""
    import httpx

    kind = type(e).__name__
    text = str(e).strip()
    cause = e.__cause__ or e.__context__
    if not text and cause is not None:
        text = f"{type(cause).__name__}: {cause}".rstrip(": ")
    meaning = next((m for cls, m in _meanings(httpx) if isinstance(e, cls)), "")
    said = "; ".join(part for part in (meaning, text) if part)
    return f"{kind}: {said}" if said else f"{kind} (no detail given)"


def _meanings(httpx: Any) -> tuple[tuple[type, str], ...]:
    return (
        (httpx.ConnectTimeout, "could not connect in time"),
        (httpx.PoolTimeout, "no free connection in the client's pool in time"),
        (httpx.WriteTimeout, "could not send the request in time"),
        (httpx.TimeoutException, "no answer in time"),
        (httpx.ConnectError, "could not connect"),
        (httpx.ReadError, "the connection was closed or reset while waiting for the answer"),
        (httpx.WriteError, "the connection was closed or reset while sending the request"),
        (httpx.RemoteProtocolError, "the server broke off the HTTP exchange"),
    )
