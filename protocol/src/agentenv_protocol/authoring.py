"""The decorators an environment author uses; they only mark methods, the server reads the marks.

Kept free of the server stack so an env module can be imported (and its tools listed) cheaply.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from agentenv_protocol.schema import did_you_mean
from agentenv_protocol.types import EXT_PREFIX, EnvironmentCard

TOOL_ATTR = "_agentenv_tool"
OP_ATTR = "_agentenv_op"
EXT_ATTR = "_agentenv_ext"
CARD_ATTR = "_agentenv_card"

OP_RESET = "reset_data"
OP_ADD = "add_data"
OP_GET = "get_data"


def tool(
    name: str | Callable | None = None, *, description: str | None = None, **extra: Any
) -> Callable:
    """Mark a method as an MCP tool: `name` defaults to the method name (`{environment_name}` is
    replaced by the card name), `description` to the docstring; the schema comes from the signature."""
    if callable(name):
        return tool()(name)

    def deco(fn: Callable) -> Callable:
        setattr(
            fn,
            TOOL_ATTR,
            {
                "name": name or fn.__name__,
                "description": description or inspect.getdoc(fn),
                "extra": extra,
            },
        )
        return fn

    return deco


def _op(kind: str) -> Callable:
    def mark(fn: Callable) -> Callable:
        setattr(fn, OP_ATTR, kind)
        return fn

    mark.__name__ = kind
    mark.__doc__ = (
        f"Mark the `{kind.replace('_data', '')}` data-plane handler (JSON-RPC `data/{kind[:-5]}`)."
    )
    return mark


reset_data = _op(OP_RESET)
add_data = _op(OP_ADD)
get_data = _op(OP_GET)


def extension(
    uri: str,
    *,
    description: str | None = None,
    params: dict | None = None,
    required: bool | None = None,
    method: str = "POST",
    path: str | None = None,
) -> Callable:
    """Mark a method as a REST extension, served at `path` (default `/agentenv/ext/<method name>`)
    and advertised on the card under `uri`; the JSON body (POST) or query (GET) binds to its parameters."""
    verb = method.upper()

    def deco(fn: Callable) -> Callable:
        setattr(
            fn,
            EXT_ATTR,
            {
                "uri": uri,
                "description": description,
                "params": params,
                "required": required,
                "method": verb,
                "path": path or f"{EXT_PREFIX}/{fn.__name__}",
            },
        )
        return fn

    return deco


def environment_card(_cls: type | None = None, **config: Any) -> Callable:
    """Configure the class's card (keyword arguments are card fields, e.g. `name=`).
    `ENVIRONMENT_NAME` in the environment overrides the name at serve time."""
    if _cls is not None:
        raise TypeError("use @environment_card(...) with parentheses")
    fields = set(EnvironmentCard.model_fields)
    for key in config:
        if key not in fields:
            raise TypeError(
                f"environment_card: unknown card field {key!r}{did_you_mean(key, fields)}"
            )

    def deco(cls: type) -> type:
        setattr(cls, CARD_ATTR, dict(config))
        return cls

    return deco
