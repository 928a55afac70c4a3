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


_TOOL_OPTIONS = (
    "name",
    "description",
    "hidden_by_default",
    "annotations",
    "structured_output",
    "meta",
)
_EXTENSION_OPTIONS = ("op", "description", "params", "required", "method", "path")


def _refuse_unknown(what: str, unknown: dict, known: tuple) -> None:
    if unknown:
        key = next(iter(unknown))
        raise TypeError(f"{what}: unknown option {key!r}{did_you_mean(key, known)}")


def tool(
    name: str | Callable | None = None,
    *,
    description: str | None = None,
    hidden_by_default: bool = False,
    annotations: dict | None = None,
    structured_output: bool | None = None,
    meta: dict | None = None,
    **unknown: Any,
) -> Callable:
    """Mark a method as an MCP tool: `name` defaults to the method name (`{environment_name}` is
    replaced by the card name), `description` to the docstring; the schema comes from the signature.

    `hidden_by_default` lists it with `_meta` `{HIDDEN_BY_DEFAULT_META_KEY: true}`, so a gateway (or
    the env itself with `tool_access = True`) hides it from every role until a rule names it;
    `annotations` (MCP ToolAnnotations fields) and `meta` are listed with the tool;
    `structured_output` as mcp's FastMCP: None derives an output schema from the return annotation
    where it can, True requires one, False lists none."""
    _refuse_unknown("@tool", unknown, _TOOL_OPTIONS)
    if callable(name):
        return tool()(name)
    if annotations is not None and not isinstance(annotations, dict):
        raise TypeError(f"@tool annotations= must be a dict, got {type(annotations).__name__}")
    if meta is not None and not isinstance(meta, dict):
        raise TypeError(f"@tool meta= must be a dict, got {type(meta).__name__}")
    if structured_output not in (None, True, False):
        raise TypeError(
            f"@tool structured_output= must be None, True or False, got {structured_output!r}"
        )

    def deco(fn: Callable) -> Callable:
        setattr(
            fn,
            TOOL_ATTR,
            {
                "name": name or fn.__name__,
                "description": description or inspect.getdoc(fn),
                "hidden_by_default": bool(hidden_by_default),
                "annotations": annotations,
                "structured_output": structured_output,
                "meta": meta,
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
    op: str | None = None,
    description: str | None = None,
    params: dict | None = None,
    required: bool | None = None,
    method: str = "POST",
    path: str | None = None,
    **unknown: Any,
) -> Callable:
    """Mark a method as a REST extension advertised on the card under `uri`; the JSON body (POST)
    or query (GET) binds to its parameters, and an unknown argument is a 400 `invalid_params`.

    Without `op` it is served at `path` (default `/agentenv/ext/<method name>`). With `op` it is
    one method of an extension with several: the handlers sharing `uri` merge into one card entry,
    each under `params.methods.<op>` with its own verb and endpoint (default
    `/agentenv/ext/<extension>/<op>`, `<extension>` being the URN's name without `urn:agentenv:`
    and the version); extension-level params come from the env's `extension_params(uri)`."""
    _refuse_unknown("@extension", unknown, _EXTENSION_OPTIONS)
    if op is not None and params is not None:
        raise TypeError(
            f"@extension({uri!r}, op={op!r}): a method's advertisement comes from the env's "
            "extension_params(uri), not params="
        )
    verb = method.upper()

    def deco(fn: Callable) -> Callable:
        if op is None:
            route = path or f"{EXT_PREFIX}/{fn.__name__}"
        else:
            route = path or f"{EXT_PREFIX}/{extension_slug(uri)}/{op}"
        setattr(
            fn,
            EXT_ATTR,
            {
                "uri": uri,
                "op": op,
                "description": description,
                "params": params,
                "required": required,
                "method": verb,
                "path": route,
            },
        )
        return fn

    return deco


def extension_slug(uri: str) -> str:
    """`urn:agentenv:computer-display/v1` -> `computer-display`; another namespace keeps its
    name, as a path."""
    name = uri.removeprefix("urn:").removeprefix("agentenv:")
    head, _, version = name.rpartition("/")
    if head and version[:1] == "v" and version[1:].isdigit():
        name = head
    return name.replace(":", "/")


def environment_card(_cls: type | None = None, **config: Any) -> Callable:
    """Configure the class's card (keyword arguments are card fields, e.g. `name=`).
    `ENVIRONMENT_NAME` in the environment overrides the name at serve time."""
    if _cls is not None:
        raise TypeError("use @environment_card(...) with parentheses")
    fields = list(EnvironmentCard.model_fields)
    for key in config:
        if key not in fields:
            raise TypeError(
                f"environment_card: unknown card field {key!r}{did_you_mean(key, fields)}; "
                f"the card fields are {', '.join(fields)} (tools describe themselves with "
                "their docstrings)"
            )

    def deco(cls: type) -> type:
        setattr(cls, CARD_ATTR, dict(config))
        return cls

    return deco
