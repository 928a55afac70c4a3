"""JSON-RPC 2.0 for every server in this package: parse a body, build answers, dispatch methods.

Used by the env data plane, the A2A agent server and the gateway's MCP endpoint, so the error
contract is written once: -32700 parse, -32600 invalid request, -32601 unknown method, -32602 bad
params, -32000 handler failed.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Awaitable, Callable
from typing import Any

from agentenv_protocol.errors import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    SERVER_ERROR,
)

__all__ = [
    "PARSE_ERROR",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "INVALID_PARAMS",
    "SERVER_ERROR",
    "error",
    "result",
    "parse_request",
    "valid_id",
    "MAX_JSON_DEPTH",
    "decode",
    "dumps",
    "encoder",
    "loads",
    "too_deep",
    "Fault",
    "Dispatcher",
]


def error(rid: Any, code: int, message: str, data: Any = None) -> dict:
    """An error answer; `data` is left out when None."""
    body: dict = {"code": code, "message": message}
    if data is not None:
        body["data"] = data
    return {"jsonrpc": "2.0", "id": rid, "error": body}


def result(rid: Any, value: Any) -> dict:
    return {"jsonrpc": "2.0", "id": rid, "result": value}


def valid_id(rid: Any) -> bool:
    """JSON-RPC 2.0 ids are a string, a number or null (never a bool, object, array, NaN/inf)."""
    if rid is None or isinstance(rid, str):
        return True
    if isinstance(rid, bool):
        return False
    if isinstance(rid, int):
        return True
    return isinstance(rid, float) and math.isfinite(rid)


#: The deepest nesting of arrays and objects a body may have; deeper bodies are refused before
#: parsing (a parser, validator or redactor that recurses would fail on them with a traceback).
MAX_JSON_DEPTH = 128
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKET = re.compile(rb"[\[\]{}]")


def too_deep(data: bytes, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether `data` nests arrays/objects deeper than `limit` (brackets inside strings do not
    count); costs two `bytes.count` calls unless the body holds more than `limit` brackets."""
    if data.count(b"[") + data.count(b"{") <= limit:  # the common case: no scan at all
        return False
    depth = 0
    for match in _BRACKET.finditer(_STRING.sub(b'""', data)):
        if match.group() in (b"[", b"{"):
            depth += 1
            if depth > limit:
                return True
        else:
            depth -= 1
    return False


def encoder(
    *, ensure_ascii: bool = True, default: Callable[[Any], Any] | None = None
) -> Callable[[Any], str]:
    """A function giving what `json.dumps(value, ensure_ascii=..., default=...)` gives, without
    the per-call set-up of `json.dumps` (a `JSONEncoder` and its `iterencode`): the C encoder
    is made directly, with fresh circular-reference markers per call as `json.dumps` makes them."""
    make = getattr(json.encoder, "c_make_encoder", None)  # the C encoder (typeshed omits it)
    if make is None:  # pragma: no cover - CPython has the C encoder
        return json.JSONEncoder(ensure_ascii=ensure_ascii, default=default).encode
    escape = (
        json.encoder.encode_basestring_ascii if ensure_ascii else json.encoder.encode_basestring
    )
    fallback = default or json.JSONEncoder().default

    def encode(value: Any) -> str:
        return "".join(make({}, fallback, escape, None, ": ", ", ", False, False, True)(value, 0))

    return encode


#: `json.dumps(value)`, see `encoder`
dumps = encoder()


def decode(data: bytes) -> Any:
    """`json.loads(data)` for bytes, without its encoding detection when `data` opens an object
    (`{` then a non-NUL byte: what `json.detect_encoding` calls UTF-8), which is every JSON-RPC
    message; the same value and the same errors either way."""
    if data[:1] == b"{" and data[1:2] != b"\x00":
        return json.loads(data.decode("utf-8", "surrogatepass"))
    return json.loads(data)


def loads(body: bytes | str, *, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """`json.loads` that refuses nesting deeper than `max_depth` before parsing; every failure
    (syntax, encoding, depth) is a ValueError whose message says what is wrong."""
    data = body.encode() if isinstance(body, str) else body
    if type(data) is not bytes:
        data = bytes(data)
    if too_deep(data, max_depth):
        raise ValueError(f"the JSON nests deeper than {max_depth} levels")
    try:
        return decode(data)
    except RecursionError:  # pragma: no cover - the depth check comes first
        raise ValueError(f"the JSON nests deeper than {max_depth} levels") from None


def parse_request(body: bytes | str) -> tuple[dict | None, dict | None]:
    """(request, None) for a well-formed JSON-RPC request, else (None, error answer)."""
    try:
        req = loads(body) if body else None
    except (ValueError, UnicodeDecodeError) as e:
        return None, error(None, PARSE_ERROR, f"parse error: {e}")
    if isinstance(req, list):
        return None, error(
            None, INVALID_REQUEST, "invalid request: batch requests are not supported"
        )
    if not isinstance(req, dict):
        return None, error(
            None, INVALID_REQUEST, "invalid request: expected a JSON-RPC 2.0 request object"
        )
    rid = req.get("id")
    if not valid_id(rid):
        return None, error(
            None, INVALID_REQUEST, "invalid request: 'id' must be a string, a number or null"
        )
    if req.get("jsonrpc") != "2.0":
        return None, error(rid, INVALID_REQUEST, "invalid request: 'jsonrpc' must be \"2.0\"")
    if not isinstance(req.get("method"), str):
        return None, error(rid, INVALID_REQUEST, "invalid request: 'method' must be a string")
    if (
        "params" in req
        and req["params"] is not None
        and not isinstance(req["params"], (dict, list))
    ):
        return None, error(
            rid, INVALID_REQUEST, "invalid request: 'params' must be an object or array"
        )
    return req, None


class Fault(Exception):
    """Raised by a handler to answer with a JSON-RPC error; `error` is the error object as sent."""

    def __init__(
        self, code: int, message: str, data: Any = None, *, error_object: dict | None = None
    ) -> None:
        super().__init__(message)
        self.error = (
            error_object if error_object is not None else error(None, code, message, data)["error"]
        )

    @classmethod
    def of(cls, error_object: dict) -> Fault:
        """Pass an error object (e.g. one an upstream answered) through unchanged."""
        return cls(
            error_object.get("code", SERVER_ERROR),
            str(error_object.get("message", "")),
            error_object=error_object,
        )


Handler = Callable[..., Awaitable[Any]]


class Dispatcher:
    """Method name -> async handler `(params, *context) -> result`; a handler raises `Fault` to
    answer with an error. Params that are not an object get -32602, unless `lenient_params`
    (then the handler sees `{}`)."""

    def __init__(
        self,
        handlers: dict[str, Handler] | None = None,
        *,
        not_found: Callable[[str], str] | None = None,
        lenient_params: bool = False,
    ) -> None:
        self.handlers: dict[str, Handler] = dict(handlers or {})
        self._not_found = not_found or (lambda method: f"method not found: {method!r}")
        self.lenient_params = lenient_params

    def add(self, method: str, handler: Handler) -> None:
        self.handlers[method] = handler

    async def dispatch(self, req: dict, *context: Any) -> dict:
        """The answer to a parsed request (see `parse_request`)."""
        rid, method = req.get("id"), req["method"]
        fn = self.handlers.get(method)
        if fn is None:
            return error(rid, METHOD_NOT_FOUND, self._not_found(method))
        params = req.get("params")
        if not isinstance(params, dict):
            if params and not self.lenient_params:
                return error(
                    rid, INVALID_PARAMS, f"invalid params for {method}: expected an object"
                )
            params = {}
        try:
            value = await fn(params, *context)
        except Fault as f:
            return {"jsonrpc": "2.0", "id": rid, "error": f.error}
        return result(rid, value)
