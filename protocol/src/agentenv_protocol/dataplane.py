"""The JSON-RPC 2.0 data plane (`POST /agentenv`): `data/reset`, `data/add`, `data/get`.

Pure functions over bytes so the env server and the gateway share one implementation of the
error contract: -32700 parse, -32600 invalid request, -32601 unknown method, -32602 bad params,
-32000 handler failed (with `data.code`).
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from agentenv_protocol import errors as E
from agentenv_protocol.authoring import OP_ADD, OP_GET, OP_RESET
from agentenv_protocol.data_objects import takes_write_namespace
from agentenv_protocol.errors import AgentEnvError
from agentenv_protocol.jsonrpc import Dispatcher, Fault, error, parse_request
from agentenv_protocol.types import (
    METHOD_ADD,
    METHOD_GET,
    METHOD_RESET,
    AddDataRequest,
    GetDataResponse,
)

log = logging.getLogger(__name__)

OP_METHODS = {OP_RESET: METHOD_RESET, OP_ADD: METHOD_ADD, OP_GET: METHOD_GET}


rpc_error = error  # the name the server and gateway used before jsonrpc.py


async def _maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


def _log_failure(method: str, exc: Exception) -> None:
    if isinstance(exc, AgentEnvError):
        log.info("%s refused: %s", method, exc)
    else:
        log.exception("%s failed", method)


def _failed(code: str, exc: Exception) -> Fault:
    if isinstance(exc, AgentEnvError):
        data = {k: v for k, v in exc.fields().items() if k != "message"}
        if exc.data is not None:
            data["data"] = exc.data
        return Fault(E.SERVER_ERROR, exc.message, data)
    return Fault(E.SERVER_ERROR, f"{type(exc).__name__}: {exc}", {"code": code})


def _wrap(method: str, fn: Callable) -> Callable:
    async def reset(params: dict) -> dict:
        try:
            await _maybe_await(fn())
        except Exception as e:
            _log_failure(method, e)
            raise _failed("reset_failed", e) from None
        return {}

    async def add(params: dict) -> dict:
        try:
            parts = AddDataRequest.model_validate(params).parts
        except ValidationError as e:
            detail = "; ".join(
                f"{'.'.join(map(str, x['loc'])) or 'params'}: {x['msg']}" for x in e.errors()
            )
            raise Fault(
                E.INVALID_PARAMS, f"invalid params for data/add: {detail}", {"detail": detail}
            ) from None
        try:
            await _maybe_await(fn(parts))
        except Exception as e:
            _log_failure(method, e)
            raise _failed("add_failed", e) from None
        return {}

    async def get(params: dict) -> dict:
        kwargs = {}
        if takes_write_namespace(fn):
            grant = params.get("write_namespace")
            try:
                kwargs["write_namespace"] = None if grant is None else _grant(grant)
            except ValueError as e:
                raise Fault(
                    E.INVALID_PARAMS, f"invalid params for data/get: {e}", {"detail": str(e)}
                ) from None
        try:
            parts = await _maybe_await(fn(**kwargs))
            return GetDataResponse(parts=list(parts or [])).model_dump(exclude_none=True)
        except Exception as e:
            _log_failure(method, e)
            raise _failed("get_failed", e) from None

    return {METHOD_RESET: reset, METHOD_ADD: add}.get(method, get)


async def dispatch(body: bytes, handlers: dict[str, Callable]) -> dict:
    """Answer one data-plane request; `handlers` maps JSON-RPC method -> bound handler."""
    req, answer = parse_request(body)
    if answer is not None:
        return answer
    assert req is not None  # parse_request gives the request or the error answer
    known = ", ".join(sorted(handlers)) or "none"
    rpc = Dispatcher(
        {m: _wrap(m, fn) for m, fn in handlers.items()},
        not_found=lambda m: f"method not found: {m!r} (this environment serves: {known})",
    )
    return await rpc.dispatch(req)


def _grant(value: object) -> object:
    """The `write_namespace` param checked as a grant (pydantic and httpx load only here)."""
    from agentenv_protocol.transfers import write_namespace_grant

    return write_namespace_grant(value)
