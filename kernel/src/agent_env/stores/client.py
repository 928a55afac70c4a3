"""`LazyClient`: one cloud SDK client per backend instance, built on first use (never in the
constructor, so opening stores stays cheap), rebuilt in a forked child (SDK clients must not
cross a fork), and SDK errors turned into `StoreError`/`ConfigError` naming what failed."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import anyio.to_thread

from agent_env.errors import StoreError

T = TypeVar("T")


class LazyClient:
    """Subclass and override `build` (make the SDK client) and `translate` (map an SDK
    exception to ours, or None to let it through); `close_client` if `close()` is not enough.

        class MyClient(LazyClient):
            def build(self):
                import mysdk
                return mysdk.Client(endpoint=self.settings["endpoint_url"])

            def translate(self, exc, what):
                import mysdk
                if isinstance(exc, mysdk.Error):
                    return StoreError(f"{self.type_name} store: cannot {what}: {exc}")
                return None
    """

    def __init__(self, type_name: str, settings: Mapping[str, Any]):
        self.type_name = type_name
        self.settings = settings
        self._lock = threading.Lock()
        self._client: Any = None
        self._pid = 0
        self._closed = False

    def build(self) -> Any:
        raise NotImplementedError

    def translate(self, exc: Exception, what: str) -> Exception | None:
        return None

    def close_client(self, client: Any) -> None:
        client.close()

    def get(self) -> Any:
        """The client of this process, built now if needed; a closed store is a `StoreError`."""
        with self._lock:
            if self._closed:
                raise StoreError(f"the {self.type_name} store is closed")
            if self._client is None or self._pid != os.getpid():
                self._client = self.build()
                self._pid = os.getpid()
            return self._client

    def close(self) -> None:
        """Close the client (if this process built it); later calls fail as closed."""
        with self._lock:
            client, self._client, self._closed = self._client, None, True
        if client is not None and self._pid == os.getpid():
            self.close_client(client)

    async def call(self, fn: Callable[[Any], T], what: str) -> T:
        """Run `fn(client)` in a worker thread; SDK errors become ours, naming `what`."""
        return await anyio.to_thread.run_sync(self.sync, fn, what)

    def sync(self, fn: Callable[[Any], T], what: str) -> T:
        """`call` for code already in a worker thread."""
        try:
            return fn(self.get())
        except Exception as exc:
            ours = self.translate(exc, what)
            if ours is None:
                raise
            raise ours from None


class RefreshingCredentials:
    """Mixin for a store whose credentials expire (e.g. a registry token): before `push`,
    `pull` and `exists` it calls `_refresh_auth()` in a worker thread, unless the last refresh
    (`_auth_at`, a `time.monotonic()` the subclass sets) is younger than `token_refresh`
    seconds. List it before the store class it wraps."""

    token_refresh = 600.0
    _auth_at: float | None = None

    def _refresh_auth(self) -> None:
        raise NotImplementedError

    async def _ready(self) -> None:
        at = self._auth_at
        if at is None or time.monotonic() - at >= self.token_refresh:
            await anyio.to_thread.run_sync(self._refresh_auth)

    # super() is the store class listed after this mixin, which mypy cannot see (hence misc)
    async def push(self, local_ref: str, name: str) -> str:
        await self._ready()
        pushed: str = await super().push(local_ref, name)  # type: ignore[misc]
        return pushed

    async def pull(self, ref: str) -> str:
        await self._ready()
        pulled: str = await super().pull(ref)  # type: ignore[misc]
        return pulled

    async def exists(self, ref: str) -> bool:
        await self._ready()
        found: bool = await super().exists(ref)  # type: ignore[misc]
        return found
