"""Errors of the protocol: what an env author raises, and what a client sees.

`AgentEnvError` is the author-facing error (a tool or data handler raises it); the
`ProtocolError` family is what `agentenv_protocol.client` raises, one class per JSON-RPC code.
"""

from __future__ import annotations

from typing import Any, Literal

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
SERVER_ERROR = -32000


#: Who is to blame for a failed tool call: the `_meta` key an env server's error answer carries
#: (`surface.env_fault`) and its values; the gateway logs it (`gateway.errors.call_fault`).
FAULT_META_KEY = "io.agentenv/fault"
FAULTS = ("agent", "env", "infrastructure")

#: Whether a failed call's effect happened: `unknown` when it may have been delivered first.
Applied = Literal["yes", "no", "unknown"]
_APPLIED = ("yes", "no", "unknown")


class AgentEnvError(Exception):
    """Raised by an environment handler to answer with a code rather than a crash: a tool answers
    `isError` with `"<code>: <message>"` and `fields()` as structured content, an extension answers
    `status` with `fields()` as the error body, a data-plane handler JSON-RPC -32000 with them as
    `data`. Callers retry on their own only when `retryable` and `applied == "no"`."""

    def __init__(
        self,
        code: str,
        message: str,
        *,
        retryable: bool = False,
        applied: Applied = "no",
        hint: str | None = None,
        status: int = 400,
        data: Any = None,
    ) -> None:
        if applied not in _APPLIED:
            raise ValueError(f"AgentEnvError: applied must be one of {_APPLIED}, got {applied!r}")
        if not isinstance(status, int) or not 400 <= status <= 599:
            raise ValueError(f"AgentEnvError: status must be an HTTP error status, got {status!r}")
        super().__init__(message)
        self.code = code
        self.message = message
        self.retryable = retryable
        self.applied: Applied = applied
        self.hint = hint
        self.status = status
        self.data = data

    def fields(self) -> dict:
        """The wire fields: code, message, retryable, applied, and hint when given."""
        fields: dict = {
            "code": self.code,
            "message": self.message,
            "retryable": self.retryable,
            "applied": self.applied,
        }
        if self.hint is not None:
            fields["hint"] = self.hint
        return fields


class ProtocolError(RuntimeError):
    """Base class of everything the protocol client raises (a RuntimeError, as the existing
    SDK's client helpers raise)."""


class EnvUnavailable(ProtocolError):
    """The environment could not be reached, or did not answer within the timeout."""


class RpcError(ProtocolError):
    """A JSON-RPC error answer; subclasses name the code."""

    code: int = SERVER_ERROR

    def __init__(
        self, message: str, *, code: int | None = None, data: Any = None, method: str = ""
    ) -> None:
        self.code = code if code is not None else type(self).code
        self.rpc_message = message
        self.data = data
        self.method = method
        where = f"{method}: " if method else ""
        detail = f" ({data})" if data not in (None, {}) else ""
        super().__init__(f"{where}{message} [JSON-RPC {self.code}]{detail}")


class ParseError(RpcError):
    code = PARSE_ERROR


class InvalidRequest(RpcError):
    code = INVALID_REQUEST


class MethodNotFound(RpcError):
    code = METHOD_NOT_FOUND


class InvalidParams(RpcError):
    code = INVALID_PARAMS


class HandlerFailed(RpcError):
    """-32000: the env's handler raised; `data["code"]` names the failure."""

    code = SERVER_ERROR

    @property
    def error_code(self) -> str | None:
        return self.data.get("code") if isinstance(self.data, dict) else None


_BY_CODE: dict[int, type[RpcError]] = {
    c.code: c for c in (ParseError, InvalidRequest, MethodNotFound, InvalidParams, HandlerFailed)
}


def rpc_error_from(error: dict, *, method: str = "") -> RpcError:
    """The `RpcError` subclass for a JSON-RPC `error` object."""
    code = error.get("code") if isinstance(error, dict) else None
    message = str(error.get("message", "")) if isinstance(error, dict) else str(error)
    data = error.get("data") if isinstance(error, dict) else None
    cls = _BY_CODE.get(code, RpcError) if isinstance(code, int) else RpcError
    return cls(
        message, code=code if isinstance(code, int) else SERVER_ERROR, data=data, method=method
    )


class ToolCallError(ProtocolError):
    """A tool answered with an error result (`isError: true`)."""

    def __init__(self, tool: str, text: str) -> None:
        super().__init__(f"tool {tool!r} failed: {text}")
        self.tool = tool
        self.text = text
