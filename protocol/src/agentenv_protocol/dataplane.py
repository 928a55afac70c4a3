"""The JSON-RPC 2.0 data plane (`POST /agentenv`): `data/reset`, `data/add`, `data/get`.

Pure functions over bytes so the env server and the gateway share one implementation of the
error contract: -32700 parse, -32600 invalid request, -32601 unknown method, -32602 bad params,
-32000 handler failed (with `data.code`).
"""

from __future__ import annotations

import inspect
import json
import logging
from typing import Any, Callable

from pydantic import ValidationError

from . import errors as E
from .authoring import OP_ADD, OP_GET, OP_RESET
from .errors import AgentEnvError
from .types import METHOD_ADD, METHOD_GET, METHOD_RESET, AddDataRequest, GetDataResponse

log = logging.getLogger(__name__)

OP_METHODS = {OP_RESET: METHOD_RESET, OP_ADD: METHOD_ADD, OP_GET: METHOD_GET}


def rpc_error(rid: Any, code: int, message: str, data: Any = None) -> dict:
    error: dict = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": rid, "error": error}


def parse_request(body: bytes) -> tuple[dict | None, dict | None]:
    """(request, None) for a well-formed JSON-RPC request, else (None, error answer)."""
    try:
        req = json.loads(body) if body else None
    except (ValueError, UnicodeDecodeError) as e:
        return None, rpc_error(None, E.PARSE_ERROR, f"parse error: {e}")
    if isinstance(req, list):
        return None, rpc_error(None, E.INVALID_REQUEST, "invalid request: batch requests are not supported")
    if not isinstance(req, dict):
        return None, rpc_error(None, E.INVALID_REQUEST, "invalid request: expected a JSON-RPC 2.0 request object")
    rid = req.get("id")
    if req.get("jsonrpc") != "2.0":
        return None, rpc_error(rid, E.INVALID_REQUEST, "invalid request: 'jsonrpc' must be \"2.0\"")
    if not isinstance(req.get("method"), str):
        return None, rpc_error(rid, E.INVALID_REQUEST, "invalid request: 'method' must be a string")
    if "params" in req and req["params"] is not None and not isinstance(req["params"], (dict, list)):
        return None, rpc_error(rid, E.INVALID_REQUEST, "invalid request: 'params' must be an object or array")
    return req, None


async def _maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


def _log_failure(method: str, exc: Exception) -> None:
    if isinstance(exc, AgentEnvError):
        log.info("%s refused: %s", method, exc)
    else:
        log.exception("%s failed", method)


def _failed(rid: Any, code: str, exc: Exception) -> dict:
    if isinstance(exc, AgentEnvError):
        data = {"code": exc.code}
        if exc.data is not None:
            data["data"] = exc.data
        return rpc_error(rid, E.SERVER_ERROR, exc.message, data)
    return rpc_error(rid, E.SERVER_ERROR, f"{type(exc).__name__}: {exc}", {"code": code})


async def dispatch(body: bytes, handlers: dict[str, Callable]) -> dict:
    """Answer one data-plane request; `handlers` maps JSON-RPC method -> bound handler."""
    req, error = parse_request(body)
    if error is not None:
        return error
    rid, method = req.get("id"), req["method"]
    fn = handlers.get(method)
    if fn is None:
        known = ", ".join(sorted(handlers)) or "none"
        return rpc_error(rid, E.METHOD_NOT_FOUND, f"method not found: {method!r} (this environment serves: {known})")
    params = req.get("params") or {}
    if not isinstance(params, dict):
        return rpc_error(rid, E.INVALID_PARAMS, f"invalid params for {method}: expected an object")
    if method == METHOD_RESET:
        try:
            await _maybe_await(fn())
        except Exception as e:
            _log_failure("data/reset", e)
            return _failed(rid, "reset_failed", e)
        return {"jsonrpc": "2.0", "id": rid, "result": {}}
    if method == METHOD_ADD:
        try:
            parts = AddDataRequest.model_validate(params).parts
        except ValidationError as e:
            detail = "; ".join(f"{'.'.join(map(str, x['loc'])) or 'params'}: {x['msg']}" for x in e.errors())
            return rpc_error(rid, E.INVALID_PARAMS, f"invalid params for data/add: {detail}", {"detail": detail})
        try:
            await _maybe_await(fn(parts))
        except Exception as e:
            _log_failure("data/add", e)
            return _failed(rid, "add_failed", e)
        return {"jsonrpc": "2.0", "id": rid, "result": {}}
    kwargs = {}
    if "write_namespace" in inspect.signature(fn).parameters:
        kwargs["write_namespace"] = params.get("write_namespace")
    try:
        parts = await _maybe_await(fn(**kwargs))
        result = GetDataResponse(parts=list(parts or [])).model_dump(exclude_none=True)
    except Exception as e:
        _log_failure("data/get", e)
        return _failed(rid, "get_failed", e)
    return {"jsonrpc": "2.0", "id": rid, "result": result}
