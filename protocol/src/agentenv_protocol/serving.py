"""Run an ASGI app with uvicorn in a background thread or in the current event loop, on a
free port when asked for port 0; returns the URL and a way to stop it."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import AsyncIterator
from typing import Any, cast

import attrs


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(1024)
    sock.setblocking(False)
    return sock


def _url(host: str, sock: socket.socket) -> str:
    port = sock.getsockname()[1]
    shown = "127.0.0.1" if host in ("0.0.0.0", "") else (f"[{host}]" if ":" in host else host)
    return f"http://{shown}:{port}"


class _CoalescingTransport:
    """Holds a response head until its body is written, so a small answer leaves in one send
    instead of two (uvicorn writes them separately; each loopback send is a costly syscall)."""

    __slots__ = ("_transport", "_held", "_loop")
    _held: bytes | None

    def __init__(self, transport: Any, loop: Any) -> None:
        self._transport, self._held, self._loop = transport, None, loop

    def write(self, data: Any) -> None:
        if self._held is not None:
            held, self._held = self._held, None
            self._transport.write(held + bytes(data))
        elif data[:9] == b"HTTP/1.1 " and data[-4:] == b"\r\n\r\n":
            self._held = bytes(data)
            self._loop.call_soon(self._flush)
        else:
            self._transport.write(data)

    def _flush(self) -> None:
        if self._held is not None:
            held, self._held = self._held, None
            if not self._transport.is_closing():
                self._transport.write(held)

    def close(self) -> None:
        self._flush()
        self._transport.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


#: A request's headers must be complete this long after its first byte (or after the
#: connection opened), and its body this long after its headers; a client that trickles bytes
#: (slowloris) is disconnected instead of holding a connection for ever.
HEADER_TIMEOUT = 10.0
BODY_TIMEOUT = 30.0


def http_protocol(
    *, header_timeout: float = HEADER_TIMEOUT, body_timeout: float = BODY_TIMEOUT
) -> Any:
    """uvicorn's httptools protocol with coalesced response writes and the header and body
    deadlines above ("auto" without httptools)."""
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    except ImportError:
        return "auto"
    import asyncio

    class GuardedHttpToolsProtocol(HttpToolsProtocol):
        _deadline: asyncio.TimerHandle | None = None
        header_timeout: float
        body_timeout: float

        def connection_made(self, transport: Any) -> None:  # type: ignore[override]
            # the wrapper is a proxy: what it does not define it forwards to the real transport
            proxy = cast(
                asyncio.Transport, _CoalescingTransport(transport, asyncio.get_running_loop())
            )
            super().connection_made(proxy)
            self._arm(header_timeout)

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self._arm(header_timeout)

        def on_headers_complete(self) -> None:
            self._arm(body_timeout)
            super().on_headers_complete()

        def on_message_complete(self) -> None:
            self._disarm()
            super().on_message_complete()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def _arm(self, seconds: float) -> None:
            self._disarm()
            self._deadline = self.loop.call_later(seconds, self._too_slow)

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _too_slow(self) -> None:
            self._deadline = None
            if not self.transport.is_closing():
                self.transport.close()

    GuardedHttpToolsProtocol.header_timeout = header_timeout
    GuardedHttpToolsProtocol.body_timeout = body_timeout
    return GuardedHttpToolsProtocol


def uvicorn_options(
    *, header_timeout: float = HEADER_TIMEOUT, body_timeout: float = BODY_TIMEOUT, app: Any = None
) -> dict:
    """The uvicorn settings every server here uses: lean headers, no proxy rewriting, quiet,
    and slow clients cut off (`http_protocol`). An `app` with an `http_protocol(base)` method
    (the gateway: its hot path for tool calls) gets the protocol class that method makes."""
    http = http_protocol(header_timeout=header_timeout, body_timeout=body_timeout)
    specialise = getattr(app, "http_protocol", None)
    if specialise is not None and isinstance(http, type):
        http = specialise(http)
    return {
        "access_log": False,
        "proxy_headers": False,
        "server_header": False,
        "date_header": False,
        "http": http,
    }


def _server(app: Any, log_level: str, timeouts: dict[str, float]):
    import uvicorn

    # log_config=None: uvicorn would otherwise re-apply its logging dictConfig (its loggers
    # at INFO, then lowered to `log_level`) each time a server is made; servers made at once in
    # one process (a run's gateways, relays) raced, and one's "Started server process" INFO
    # lines reached the run's stderr. Only the level is set, which is atomic.
    config = uvicorn.Config(
        app,
        log_level=log_level,
        log_config=None,
        lifespan="on",
        timeout_graceful_shutdown=2,
        **uvicorn_options(**timeouts, app=app),
    )
    return uvicorn.Server(config)


@attrs.define
class RunningServer:
    """A server running in a background thread; `stop()` shuts it down and joins the thread."""

    url: str
    _server: Any
    _thread: threading.Thread

    def stop(self, timeout: float = 10.0) -> None:
        self._server.should_exit = True
        self._thread.join(timeout)

    def __enter__(self) -> RunningServer:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def serve_in_thread(
    app: Any,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    log_level: str = "warning",
    startup_timeout: float = 15.0,
    header_timeout: float = HEADER_TIMEOUT,
    body_timeout: float = BODY_TIMEOUT,
) -> RunningServer:
    """Start `app` in a daemon thread with its own event loop; returns once it accepts connections."""
    sock = _bind(host, port)
    server = _server(
        app, log_level, {"header_timeout": header_timeout, "body_timeout": body_timeout}
    )
    errors: list[BaseException] = []

    def run() -> None:
        try:
            server.run(sockets=[sock])
        except BaseException as e:  # reported to the starter below
            errors.append(e)

    thread = threading.Thread(
        target=run, name=f"agentenv-server-{sock.getsockname()[1]}", daemon=True
    )
    thread.start()
    deadline = time.monotonic() + startup_timeout
    while not server.started:
        if errors or not thread.is_alive():
            raise RuntimeError(
                f"server failed to start: {errors[0] if errors else 'thread exited'}"
            )
        if time.monotonic() > deadline:
            server.should_exit = True
            raise TimeoutError(f"server did not start within {startup_timeout}s")
        time.sleep(0.005)
    return RunningServer(url=_url(host, sock), server=server, thread=thread)


@attrs.define
class LoopServer:
    """A server running on the event loop that started it (`start_on_loop`); `await stop()`
    shuts it down (its app's lifespan shutdown included) and is idempotent."""

    url: str
    _server: Any
    _sock: socket.socket
    _stopped: bool = False

    async def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        self._server.should_exit = True
        await self._server.shutdown(sockets=[self._sock])


async def start_on_loop(
    app: Any,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    log_level: str = "warning",
    header_timeout: float = HEADER_TIMEOUT,
    body_timeout: float = BODY_TIMEOUT,
) -> LoopServer:
    """Start `app` on the running event loop, with no thread, signal handlers or 0.1 s tick of
    its own (uvicorn's startup without its main loop): for a process that serves many small
    servers next to the code that calls them (a warm pool's gateways). Returns once it
    accepts connections; `RuntimeError` when its lifespan startup failed."""
    sock = _bind(host, port)
    server = _server(
        app, log_level, {"header_timeout": header_timeout, "body_timeout": body_timeout}
    )
    config = server.config
    if not config.loaded:
        config.load()
    server.lifespan = config.lifespan_class(config)
    try:
        await server.startup(sockets=[sock])
    except SystemExit:  # uvicorn's answer to a failed lifespan startup
        sock.close()
        error = getattr(app, "startup_error", None) or "its lifespan startup failed"
        raise RuntimeError(f"server failed to start: {error}") from None
    return LoopServer(url=_url(host, sock), server=server, sock=sock)


@contextlib.asynccontextmanager
async def serving(
    app: Any,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    log_level: str = "warning",
    startup_timeout: float = 15.0,
    header_timeout: float = HEADER_TIMEOUT,
    body_timeout: float = BODY_TIMEOUT,
) -> AsyncIterator[str]:
    """Serve `app` inside the current event loop for the duration of the block; yields its URL."""
    import anyio

    sock = _bind(host, port)
    server = _server(
        app, log_level, {"header_timeout": header_timeout, "body_timeout": body_timeout}
    )
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve, [sock])
        with anyio.fail_after(startup_timeout):
            while not server.started:
                await anyio.sleep(0.005)
        try:
            yield _url(host, sock)
        finally:
            server.should_exit = True
