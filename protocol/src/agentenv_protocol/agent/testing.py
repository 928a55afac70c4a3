"""`ScriptedModelServer`: an OpenAI-compatible chat-completions server that plays back a script,
so tests (and benchmarks) of LLM agents assert exact behaviour without a real model.

A script is a list of replies, one per request, in order::

    [{"tool_calls": [{"name": "add_note", "arguments": {"title": "t", "body": "b"}}]},
     {"content": "Done: the note is saved."}]

A reply may also be `{"status": 503}` (an HTTP error; `"times": n` repeats it n times),
`{"raw": "..."}` (a body that is not a chat completion), `{"delay": seconds, ...}`, and
`"repeat": true` (keep answering with it once the script reaches it: a model that never stops).
Past the end of the script the server answers 500 "script exhausted".

With `per_conversation=True` every conversation plays the script from its start, so concurrent
trials of a tool-loop task (`--trials 20 --concurrency 8`) each get their own replies. A
conversation is named by the `X-Conversation-Id` header when a client sends one, else by its
first user message (the task's prompt: give concurrent trials distinct prompts, e.g. with
`{trial}` in them); later turns of a multi-prompt conversation keep its first message, so they
continue its script.

It answers chat completions (`/v1/chat/completions`), the Anthropic Messages API
(`/v1/messages`), the OpenAI Responses API (`/v1/responses`) and Gemini's `generateContent`
(`/v1beta/models/M:generateContent` and `:streamGenerateContent`; give a Gemini client the
server's `url`, not `base_url`), streamed when asked, so CLI coding agents run against it too. A scripted tool name is matched against the request's tools
(`add_note` is Claude Code's `mcp__gateway__add_note`). With `side_requests=True` a request
that offers no tools (a CLI agent's title or summary call) gets a short text and does not use
up a scripted reply.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from typing import Any

import anyio

from agentenv_protocol.agent import scripted_apis
from agentenv_protocol.serving import RunningServer, serve_in_thread

APIS = ("/chat/completions", "/messages", "/responses")
GEMINI = ("generateContent", "streamGenerateContent")
SSE = b"text/event-stream"


class ScriptedModelServer:
    """The ASGI app and its script; `requests` keeps every request body received, in order."""

    def __init__(
        self,
        script: Sequence[dict[str, Any]],
        *,
        model: str = "scripted-model",
        side_requests: bool = False,
        per_conversation: bool = False,
    ) -> None:
        self.side_requests = side_requests
        self.per_conversation = per_conversation
        self.script: list[dict[str, Any]] = []
        for reply in script:
            self.script.extend([reply] * int(reply.get("times", 1)))
        self.model = model
        self.requests: list[dict[str, Any]] = []
        #: The `Authorization` header of each request ("" when absent), in order.
        self.authorizations: list[str] = []
        self.position = 0
        #: Each conversation's position in the script (`per_conversation`), by its key.
        self.positions: dict[str, int] = {}
        self._lock = threading.Lock()
        self._running: RunningServer | None = None

    # --- serving ------------------------------------------------------------------------
    def start(self, *, host: str = "127.0.0.1", port: int = 0) -> str:
        """Serve in a background thread; returns the base URL to give agents (`.../v1`)."""
        self._running = serve_in_thread(self, host=host, port=port)
        return self.base_url

    @property
    def url(self) -> str:
        assert self._running is not None, "start() the server first"
        return self._running.url

    @property
    def base_url(self) -> str:
        return self.url + "/v1"

    def stop(self) -> None:
        if self._running is not None:
            self._running.stop()
            self._running = None

    def __enter__(self) -> ScriptedModelServer:
        if self._running is None:
            self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # --- the app ------------------------------------------------------------------------
    def _next(self, conversation: str | None = None) -> dict[str, Any] | None:
        """The next reply of the shared script, or of `conversation`'s own copy of it."""
        with self._lock:
            at = self.position if conversation is None else self.positions.get(conversation, 0)
            if at >= len(self.script):
                return None
            reply = self.script[at]
            if not reply.get("repeat"):
                at += 1
            if conversation is None:
                self.position = at
            else:
                self.positions[conversation] = at
            return reply

    def _conversation(self, request: dict[str, Any], headers: dict[bytes, bytes]) -> str | None:
        if not self.per_conversation:
            return None
        given = headers.get(b"x-conversation-id", b"").decode("latin-1")
        return given or scripted_apis.first_user_text(request)

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        path = scope["path"].rstrip("/")
        if scope["method"] == "GET" and path.endswith("/models"):
            await _respond(
                send, 200, {"object": "list", "data": [{"id": self.model, "object": "model"}]}
            )
            return
        api = next((a for a in APIS if path.endswith(a)), None)
        model, _, method = path.rpartition("/")[2].partition(":")
        if method == "countTokens":
            await _respond(send, 200, {"totalTokens": scripted_apis.USAGE_IN})
            return
        if method in GEMINI:
            api = method
        if scope["method"] != "POST" or api is None:
            await _respond(
                send, 404, {"error": {"message": f"no route {scope['method']} {scope['path']}"}}
            )
            return
        try:
            request = json.loads(body or b"{}")
        except ValueError:
            await _respond(send, 400, {"error": {"message": "request body is not JSON"}})
            return
        headers = dict(scope.get("headers") or [])
        with self._lock:
            self.requests.append(request)
            self.authorizations.append(headers.get(b"authorization", b"").decode("latin-1"))
        if self.side_requests and not scripted_apis.tool_names(request):
            reply: dict[str, Any] | None = {"content": "ok"}
        else:
            reply = self._next(self._conversation(request, headers))
        if reply is None:
            await _respond(send, 500, {"error": {"message": "script exhausted"}})
            return
        if reply.get("delay"):
            await anyio.sleep(float(reply["delay"]))
        if "status" in reply:
            await _respond(
                send,
                int(reply["status"]),
                {"error": {"message": reply.get("message", "scripted error")}},
            )
            return
        if "raw" in reply:
            await _respond(send, 200, reply["raw"])
            return
        serial = len(self.requests)
        if api in GEMINI:
            answer = scripted_apis.gemini_response(reply, request, model)
            if api == "streamGenerateContent":
                await _respond(send, 200, scripted_apis.gemini_stream(answer), SSE)
            else:
                await _respond(send, 200, answer)
        elif api == "/messages":
            message = scripted_apis.anthropic_message(reply, request, serial)
            if request.get("stream"):
                await _respond(send, 200, scripted_apis.anthropic_stream(message), SSE)
            else:
                await _respond(send, 200, message)
        elif api == "/responses":
            answer = scripted_apis.response_object(reply, request, serial)
            if request.get("stream"):
                await _respond(send, 200, scripted_apis.responses_stream(answer), SSE)
            else:
                await _respond(send, 200, answer)
        else:
            completion = scripted_apis.chat_completion(
                reply,
                dict(request, model=request.get("model") or self.model),
                serial,
                int(time.time()),
            )
            if request.get("stream"):
                await _respond(send, 200, scripted_apis.chat_stream(completion), SSE)
            else:
                await _respond(send, 200, completion)


async def _respond(
    send: Any, status: int, body: Any, content_type: bytes = b"application/json"
) -> None:
    if isinstance(body, bytes):
        data = body
    else:
        data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", content_type),
                (b"content-length", str(len(data)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": data})


def main(argv: list[str] | None = None) -> int:
    """`python -m agentenv_protocol.agent.testing SCRIPT.json [--host H] [--port P]`."""
    import argparse
    from pathlib import Path

    parser = argparse.ArgumentParser(prog="python -m agentenv_protocol.agent.testing")
    parser.add_argument("script", help="a JSON file with the list of replies")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--side-requests", action="store_true")
    args = parser.parse_args(argv)
    server = ScriptedModelServer(
        json.loads(Path(args.script).read_text()), side_requests=args.side_requests
    )
    print(server.start(host=args.host, port=args.port), flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
