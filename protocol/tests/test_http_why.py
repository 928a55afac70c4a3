"""`why(e)`: an HTTP failure as a reason that is never empty (issue 31: under load the gateway
said `did not list its tools at .../mcp: ` with nothing after the colon)."""

from __future__ import annotations

import anyio
import httpx
import pytest

from agentenv_protocol._http import why


def raised(outer: type[Exception], cause: BaseException | None) -> Exception:
    try:
        if cause is None:
            raise outer("")
        try:
            raise cause
        except BaseException as inner:
            raise outer("") from inner
    except Exception as e:
        return e


@pytest.mark.parametrize(
    ("error", "said"),
    [
        # httpcore maps anyio's BrokenResourceError (a reset connection) to a ReadError('')
        (
            raised(httpx.ReadError, anyio.BrokenResourceError()),
            "ReadError: the connection was closed or reset while waiting for the answer; "
            "BrokenResourceError",
        ),
        (
            raised(httpx.ReadTimeout, None),
            "ReadTimeout: no answer in time",
        ),
        (
            raised(httpx.WriteError, ConnectionResetError(104, "Connection reset by peer")),
            "WriteError: the connection was closed or reset while sending the request; "
            "ConnectionResetError: [Errno 104] Connection reset by peer",
        ),
        (
            httpx.ConnectError("[Errno 111] Connection refused"),
            "ConnectError: could not connect; [Errno 111] Connection refused",
        ),
        (ValueError(""), "ValueError (no detail given)"),
    ],
)
def test_why_is_never_empty_and_says_what_happened(error: Exception, said: str) -> None:
    assert why(error) == said


def test_why_of_a_real_dropped_exchange() -> None:
    """A server that accepts and closes without answering: the reason names it."""
    import socket
    import threading

    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]

        def drop() -> None:
            conn, _ = listener.accept()
            conn.recv(65536)
            conn.close()

        threading.Thread(target=drop, daemon=True).start()
        with pytest.raises(httpx.HTTPError) as caught:
            httpx.post(f"http://127.0.0.1:{port}/mcp", json={}, timeout=5)
    assert why(caught.value).startswith(
        "RemoteProtocolError: the server broke off the HTTP exchange; Server disconnected"
    )
