"""A tool's output as MCP lists and sends it, in the shapes mcp's FastMCP gives: an
`outputSchema` derived from the return annotation, `structuredContent` that fits it, and the
content blocks FastMCP makes of a typed return value (text as is, each list item a block,
anything else as indented JSON).

Kept free of the mcp package: results are wire dicts, which the server turns into its mcp
version's types.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable
from typing import Annotated, Any, Union, get_args, get_origin, get_type_hints, is_typeddict

import attrs
import pydantic_core
from pydantic import BaseModel, ConfigDict, RootModel, ValidationError, create_model

_LOCAL_DEFS = "#/$defs/"
_WRAPPED_PRIMITIVES = (str, int, float, bool, bytes, type(None))
_BLOCK_TYPES = ("text", "image", "audio", "resource", "resource_link")


def _is_call_tool_result(annotation: Any) -> bool:
    return isinstance(annotation, type) and annotation.__name__ == "CallToolResult"


@attrs.frozen
class OutputSpec:
    """How one tool's return value is listed (`schema`) and sent: `model` validates it, wrapped
    under `result` when `wrap`; `passthrough` sends a returned CallToolResult as is; `untyped`
    (no schema derived, structured output not turned off) keeps this SDK's one-block JSON."""

    schema: dict | None = None
    model: Any = None
    wrap: bool = False
    passthrough: bool = False
    untyped: bool = True


NO_OUTPUT = OutputSpec()


def _inline_root(schema: dict) -> dict:
    """A root that is a bare `$ref` (a self-referencing model) gets the definition inlined, since
    `outputSchema` must have `type: object` at its root; `$defs` stay for nested references."""
    ref = schema.get("$ref")
    if not isinstance(ref, str) or not ref.startswith(_LOCAL_DEFS):
        return schema
    definition = schema["$defs"][ref.removeprefix(_LOCAL_DEFS)]
    return {**definition, **{k: v for k, v in schema.items() if k != "$ref"}}


def _wrapped(fn_name: str, annotation: Any) -> Any:
    return create_model(f"{fn_name}Output", result=(annotation, ...))


def _model_for(fn_name: str, annotation: Any, bare: Any) -> tuple[Any, bool]:
    """(pydantic model, wrap) for a return type, or (None, False) when it has no schema."""
    if bare is None:
        return _wrapped(fn_name, annotation), True
    if isinstance(bare, types.GenericAlias) or get_origin(bare) is not None:
        origin = get_origin(bare)
        args = get_args(bare)
        if origin is dict and len(args) == 2 and args[0] is str:
            model = type(f"{fn_name}DictOutput", (RootModel[bare],), {})  # type: ignore[misc]
            return model, False
        return _wrapped(fn_name, annotation), True
    if isinstance(bare, type):
        if issubclass(bare, BaseModel):
            return bare, False
        if is_typeddict(bare):
            hints = get_type_hints(bare)
            required = getattr(bare, "__required_keys__", set(hints))
            fields: dict = {k: (t, ...) if k in required else (t, None) for k, t in hints.items()}
            model = create_model(bare.__name__, **fields)
            model.__agentenv_typeddict__ = True  # type: ignore[attr-defined]
            return model, False
        if bare in _WRAPPED_PRIMITIVES:
            return _wrapped(fn_name, annotation), True
        hints = get_type_hints(bare)
        if not hints:
            return None, False
        fields = {
            k: (t, getattr(bare, k)) if hasattr(bare, k) else (t, ...)
            for k, t in hints.items()
            if not k.startswith("_")
        }
        return create_model(
            bare.__name__, __config__=ConfigDict(from_attributes=True), **fields
        ), False
    return _wrapped(fn_name, annotation), True


def output_spec(fn: Callable, structured_output: bool | None, *, label: str) -> OutputSpec:
    """The output of a tool method, derived as FastMCP derives it; `structured_output=True` on a
    return type without a schema is a ValueError naming the tool."""
    if structured_output is False:
        return OutputSpec(untyped=False)
    try:
        hints = get_type_hints(fn, include_extras=True)
    except Exception:
        hints = {}
    if "return" not in hints:
        returns = inspect.signature(fn).return_annotation
        if returns is inspect.Parameter.empty:
            if structured_output:
                raise ValueError(f"{label}: structured_output=True needs a return annotation")
            return NO_OUTPUT
        hints["return"] = returns
    annotation = hints["return"]
    bare, extras = annotation, ()
    if get_origin(annotation) is Annotated:
        bare, *rest = get_args(annotation)
        extras = tuple(rest)
    if get_origin(bare) in (Union, types.UnionType) and any(
        _is_call_tool_result(a) for a in get_args(bare)
    ):
        raise ValueError(f"{label}: CallToolResult can't be part of a Union or Optional return")
    passthrough = False
    if _is_call_tool_result(bare):
        if not extras:
            return OutputSpec(passthrough=True)
        bare = annotation = extras[0]
        passthrough = True
    model, wrap = _model_for(fn.__name__, annotation, bare)
    schema = None
    if model is not None:
        try:
            schema = _inline_root(model.model_json_schema())
        except Exception:
            model = None
    if model is None:
        if structured_output:
            raise ValueError(
                f"{label}: return type {bare!r} has no JSON schema for structured output"
            )
        return OutputSpec(passthrough=passthrough)
    return OutputSpec(schema=schema, model=model, wrap=wrap, passthrough=passthrough)


def _block(value: Any) -> dict | None:
    """A content block given as an mcp type or a wire dict, else None."""
    if isinstance(value, BaseModel) and getattr(value, "type", None) in _BLOCK_TYPES:
        return value.model_dump(mode="json", by_alias=True, exclude_none=True)
    return None


def content_blocks(value: Any) -> list[dict]:
    """The content blocks FastMCP makes of a return value."""
    if value is None:
        return []
    block = _block(value)
    if block is not None:
        return [block]
    if isinstance(value, (list, tuple)):
        return [b for item in value for b in content_blocks(item)]
    text = (
        value
        if isinstance(value, str)
        else pydantic_core.to_json(value, fallback=str, indent=2).decode()
    )
    return [{"type": "text", "text": text}]


class OutputError(ValueError):
    """A return value that does not fit the tool's output schema."""


def tool_result(value: Any, spec: OutputSpec) -> dict:
    """The wire `CallToolResult` of a tool's return value."""
    if spec.passthrough or (hasattr(value, "content") and _is_call_tool_result(type(value))):
        if hasattr(value, "model_dump"):
            return value.model_dump(mode="json", by_alias=True, exclude_none=True)
        return dict(value)
    if spec.model is None and spec.untyped:
        return _untyped_result(value)
    result: dict = {"content": content_blocks(value), "isError": False}
    if spec.model is not None:
        try:
            if spec.wrap:
                structured = spec.model.model_validate({"result": value})
            else:
                structured = spec.model.model_validate(value)
        except ValidationError as e:
            raise OutputError(f"the value does not fit the output schema: {e}") from None
        # a TypedDict's absent keys stay absent (FastMCP sends them as null, off its own schema)
        unset = getattr(spec.model, "__agentenv_typeddict__", False)
        result["structuredContent"] = structured.model_dump(
            mode="json", by_alias=True, exclude_unset=unset
        )
    return result


def _untyped_result(value: Any) -> dict:
    """A return value without an output schema: text as text, content blocks as they are, any
    other value as one compact JSON text block (structured too when it is an object). FastMCP
    would split a list into one block per item; this SDK's envs and verifiers read one block."""
    block = _block(value)
    if value is None or block is not None or isinstance(value, str):
        return {"content": content_blocks(value), "isError": False}
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    text = pydantic_core.to_json(value, fallback=str).decode()
    result: dict = {"content": [{"type": "text", "text": text}], "isError": False}
    if isinstance(value, dict):
        result["structuredContent"] = pydantic_core.to_jsonable_python(value, fallback=str)
    return result
