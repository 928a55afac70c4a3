"""The gateway's hot path: `POST /mcp` answered by the HTTP protocol itself, without ASGI.

A trainer's rollouts are almost all tool calls. Through uvicorn each one costs a scope, a
request-response cycle with its receive/send messages and two writes; here the protocol keeps
the body it parsed, asks the gateway for the answer and writes the response in one send. What
it asks is what the ASGI route asks (`Gateway.authenticate` and `Gateway.admit` once the
headers are in, `McpEndpoint.answer` once the body is), so auth, roles, the per-role limit,
the call log and error shapes have one implementation.

Only the plain case takes it: `POST /mcp` (or `/mcp/`) with a Content-Length within the limit,
no `Expect: 100-continue`, no upgrade, a bearer token the gateway accepts and no request of the
connection still in flight. Everything else (a capability URL, a refused token, an oversize or
chunked body, a request pipelined behind another) goes to the ASGI app unchanged, and so gets
the answers it always got.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentenv_protocol.gateway.auth import Caller
from agentenv_protocol.types import MCP_PATH

if TYPE_CHECKING:
    from agentenv_protocol.gateway.app import Gateway

_HOT_URLS = (MCP_PATH.encode(), MCP_PATH.encode() + b"/")
_JSON_TYPE = b"content-type: application/json\r\ncontent-length: "
_SERVER_ERROR = (
    500,
    b"Internal Server Error",
    [(b"content-type", b"text/plain; charset=utf-8"), (b"connection", b"close")],
)


class _NoEvent:
    """What uvicorn's `connection_lost` sets on a request; the hot path waits on nothing."""

    __slots__ = ()

    def set(self) -> None:
        pass


_NO_EVENT = _NoEvent()


class HotRequest:
    """Stands where uvicorn keeps its request-response cycle while the hot path answers, so a
    request pipelined behind it waits in uvicorn's queue, and `shutdown` / `connection_lost`
    find what they look for."""

    __slots__ = ("keep_alive", "response_complete", "disconnected", "message_event")

    def __init__(self, keep_alive: bool) -> None:
        self.keep_alive = keep_alive
        self.response_complete = False
        self.disconnected = False
        self.message_event = _NO_EVENT


def response_bytes(status: int, body: bytes, headers: list, keep_alive: bool) -> bytes:
    """The whole HTTP/1.1 response as uvicorn writes it (no default headers: `serving` turns
    the server and date headers off): status line, the JSON content type unless `headers` set
    one, content-length, `headers`, `connection: close` when the connection ends."""
    from uvicorn.protocols.http.httptools_impl import STATUS_LINE

    parts = [STATUS_LINE[status]]
    if not any(name == b"content-type" for name, _ in headers):
        parts += [_JSON_TYPE, str(len(body)).encode(), b"\r\n"]
    else:
        parts += [b"content-length: ", str(len(body)).encode(), b"\r\n"]
    closing = False
    for name, value in headers:
        if name == b"connection" and b"close" in value.lower():
            closing = True
        parts += [name, b": ", value, b"\r\n"]
    if not keep_alive and not closing:
        parts.append(b"connection: close\r\n")
    parts += [b"\r\n", body]
    return b"".join(parts)


def hot_path_protocol(base: type, gateway: Gateway) -> type:
    """`base` (uvicorn's httptools protocol, as `serving.http_protocol` makes it) answering
    `POST /mcp` through `gateway` directly."""
    limit = gateway.max_request_bytes

    class HotPathProtocol(base):  # type: ignore[misc,valid-type]
        _hot_body: bytearray | None = None
        _hot_caller: Caller | None = None
        _hot_key: str | None = None
        _hot_headers: list | None = None
        _arm_after_feed: float | None = None

        # The header and body deadlines (`serving.http_protocol`) are set when a chunk of data
        # leaves a request incomplete, not at each step of parsing it: a request that arrives
        # whole (nearly every tool call) sets and cancels no timer. A deadline still runs from
        # the chunk its phase began in; later chunks do not move it.
        def _arm(self, seconds: float) -> None:
            self._arm_after_feed = seconds

        def _disarm(self) -> None:
            self._arm_after_feed = None
            super()._disarm()

        def _arm_pending(self) -> None:
            seconds, self._arm_after_feed = self._arm_after_feed, None
            if seconds is not None:
                super()._arm(seconds)

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._arm_pending()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            self._arm_pending()

        def on_headers_complete(self) -> None:
            caller = self._hot_caller_of()
            admitted = None if caller is None else gateway.admit(caller)
            if not isinstance(admitted, str):  # the ASGI app answers, or refuses it again
                super().on_headers_complete()
                return
            # counted in flight from here, as the ASGI app counts it while it reads the body
            self._arm(self.body_timeout)
            keep = self.parser.get_http_version() != "1.0" and self.parser.should_keep_alive()
            self._hot_caller, self._hot_key, self._hot_headers = caller, admitted, self.headers
            self._hot_body = bytearray()
            self.cycle = HotRequest(keep)

        def _hot_caller_of(self) -> Caller | None:
            """The caller when this request takes the hot path, else None."""
            if self.url not in _HOT_URLS or self.parser.get_method() != b"POST":
                return None
            if self.expect_100_continue or self.limit_concurrency is not None:
                return None
            if self.cycle is not None and not self.cycle.response_complete:
                return None  # pipelined behind a request in flight: uvicorn keeps the order
            if self.parser.should_upgrade() or gateway.control.http is None:
                return None
            length = None
            for name, value in self.headers:
                if name == b"content-length":
                    length = value
                elif name == b"transfer-encoding":
                    return None
            if length is None or not length.isdigit() or int(length) > limit:
                return None
            caller = gateway.authenticate(self.headers)
            return caller if isinstance(caller, Caller) else None

        def on_body(self, body: bytes) -> None:
            if self._hot_body is None:
                super().on_body(body)
            else:
                self._hot_body += body

        def on_message_complete(self) -> None:
            if self._hot_body is None:
                super().on_message_complete()
                return
            self._disarm()
            body, self._hot_body = bytes(self._hot_body), None
            caller, key, headers = self._hot_caller, self._hot_key, self._hot_headers
            self._hot_caller = self._hot_key = self._hot_headers = None
            # set together in on_headers_complete whenever the body is kept
            assert caller is not None and key is not None and headers is not None
            answer = self._hot_answer(self.cycle, caller, key, headers, body)
            task = self.loop.create_task(answer)
            task.add_done_callback(self.tasks.discard)
            self.tasks.add(task)

        def connection_lost(self, exc: Exception | None) -> None:
            if self._hot_key is not None:  # gone in the middle of the body: never answered
                gateway.release(self._hot_key)
                self._hot_key = self._hot_body = None
            super().connection_lost(exc)

        async def _hot_answer(
            self, request: HotRequest, caller: Caller, key: str, headers: list, body: bytes
        ) -> None:
            try:
                status, data, extra = await gateway.answer_mcp_post(caller, key, headers, body)
            except BaseException as e:  # as uvicorn answers an app that raised
                self.logger.error("Exception in ASGI application\n", exc_info=e)
                status, data, extra = _SERVER_ERROR
            self._hot_respond(request, status, data, extra)

        def _hot_respond(self, request: HotRequest, status: int, data: bytes, extra: list) -> None:
            transport: Any = self.transport
            request.response_complete = True
            if request.disconnected or transport.is_closing():
                return
            if any(n == b"connection" and b"close" in v.lower() for n, v in extra):
                request.keep_alive = False
            # the real transport: the coalescing wrapper (`serving`) would hold a body-less
            # answer a turn; whatever it still holds goes first
            held = getattr(transport, "_flush", None)
            if held is not None:
                held()
            real = getattr(transport, "_transport", transport)
            real.write(response_bytes(status, data, extra, request.keep_alive))
            if not request.keep_alive:
                transport.close()
            self.on_response_complete()

    return HotPathProtocol
