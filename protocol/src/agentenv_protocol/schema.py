"""Tool and extension schemas from Python signatures, and argument validation against them.

The JSON schema is what the card and `tools/list` advertise; validation goes through a pydantic
model built from the same signature, so the two cannot drift.
"""

from __future__ import annotations

import datetime
import decimal
import difflib
import enum
import inspect
import types
import uuid
from collections.abc import Callable
from typing import Annotated, Any, Literal, Union, get_args, get_origin, get_type_hints

from pydantic import ConfigDict, ValidationError, create_model
from pydantic.fields import FieldInfo

from agentenv_protocol.context import ToolContext

_SCALARS = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    list: "array",
    dict: "object",
}
_FORMATS = {
    datetime.datetime: "date-time",
    datetime.date: "date",
    datetime.time: "time",
    uuid.UUID: "uuid",
}


def did_you_mean(word: str, options) -> str:
    """` (did you mean 'x'?)` when a close match exists, else ''."""
    match = difflib.get_close_matches(word, list(options), n=1, cutoff=0.6)
    return f" (did you mean {match[0]!r}?)" if match else ""


def _enum_schema(values: list) -> dict:
    schema: dict = {"enum": values}
    kinds = {_SCALARS.get(type(v)) for v in values}
    if len(kinds) == 1 and None not in kinds:
        schema["type"] = kinds.pop()
    return schema


def schema_for(annotation: Any) -> dict:
    """A JSON-schema fragment for one annotation; `{}` means unconstrained."""
    if annotation is inspect.Parameter.empty or annotation is Any:
        return {}
    origin = get_origin(annotation)
    if origin is Annotated:
        base, *meta = get_args(annotation)
        schema = schema_for(base)
        for item in meta:
            if isinstance(item, FieldInfo) and item.description:
                schema["description"] = item.description
        return schema
    if origin is Union or origin is types.UnionType:
        rest = [a for a in get_args(annotation) if a is not type(None)]
        return schema_for(rest[0]) if len(rest) == 1 else {}
    if origin is Literal:
        return _enum_schema(list(get_args(annotation)))
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return _enum_schema([m.value for m in annotation])
    if annotation in _FORMATS:
        return {"type": "string", "format": _FORMATS[annotation]}
    if annotation is decimal.Decimal:
        return {"type": "string"}
    if origin in (list, tuple, set, frozenset) or annotation in (tuple, set, frozenset):
        schema = {"type": "array"}
        args = [a for a in get_args(annotation) if a is not Ellipsis]
        if origin is list and len(args) == 1 and schema_for(args[0]):
            schema["items"] = schema_for(args[0])
        return schema
    kind = _SCALARS.get(origin or annotation)
    return {"type": kind} if kind else {}


def _is_context(annotation: Any) -> bool:
    if annotation is ToolContext:
        return True
    origin = get_origin(annotation)
    if origin is Annotated:
        return _is_context(get_args(annotation)[0])
    if origin is Union or origin is types.UnionType:
        return any(a is ToolContext for a in get_args(annotation))
    return False


def _is_fastmcp_context(annotation: Any) -> bool:
    """A FastMCP `Context` (mcp 1.x's, mcp 2.x's MCPServer's, or the fastmcp package's)."""
    if get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    if get_origin(annotation) in (Union, types.UnionType):
        return any(_is_fastmcp_context(a) for a in get_args(annotation))
    module = getattr(annotation, "__module__", "") or ""
    return (
        isinstance(annotation, type)
        and annotation.__name__ == "Context"
        and module.startswith(("mcp.server.fastmcp", "mcp.server.mcpserver", "fastmcp"))
    )


class Signature:
    """The wire view of a handler: its JSON schema, the injected context parameter, a validator."""

    def __init__(self, fn: Callable, *, label: str) -> None:
        self.label = label
        sig = inspect.signature(fn)
        try:
            hints = get_type_hints(fn, include_extras=True)
        except Exception:
            hints = {}
        self.context_param: str | None = None
        #: a FastMCP `Context` parameter: not an argument; filled when a FastMCP app runs the tool
        self.fastmcp_context_param: str | None = None
        self.var_kwargs = False
        properties: dict = {}
        required: list = []
        fields: dict = {}
        for name, param in sig.parameters.items():
            if name in ("self", "cls") or param.kind is inspect.Parameter.VAR_POSITIONAL:
                continue
            if param.kind is inspect.Parameter.VAR_KEYWORD:
                self.var_kwargs = True
                continue
            annotation = hints.get(name, param.annotation)
            if _is_context(annotation):
                self.context_param = name
                continue
            if _is_fastmcp_context(annotation):
                self.fastmcp_context_param = name
                continue
            prop = schema_for(annotation)
            if param.default is inspect.Parameter.empty:
                required.append(name)
            else:
                default = param.default
                prop["default"] = default.value if isinstance(default, enum.Enum) else default
            properties[name] = prop
            typ = Any if annotation is inspect.Parameter.empty else annotation
            fields[name] = (typ, ... if param.default is inspect.Parameter.empty else param.default)
        self.schema: dict = {"type": "object", "properties": properties}
        if required:
            self.schema["required"] = required
        self.params = list(properties)
        self._model = create_model(
            f"{getattr(fn, '__name__', 'handler')}Arguments",
            __config__=ConfigDict(arbitrary_types_allowed=True),
            **fields,
        )
        self._model_schema: dict | None = None

    def model_schema(self) -> dict:
        """The arguments' JSON schema as pydantic (and so mcp's FastMCP) writes it, with titles;
        the plain `schema` when pydantic can't describe a parameter type."""
        if self._model_schema is None:
            try:
                self._model_schema = self._model.model_json_schema()
            except Exception:
                self._model_schema = self.schema
        return self._model_schema

    def bind(self, arguments: Any, *, allow_unknown: bool = True) -> dict:
        """Validated keyword arguments, or ValueError naming every bad field (with did-you-mean).
        An unknown argument is dropped, or with `allow_unknown=False` a bad field too."""
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            raise ValueError(
                f"invalid arguments for {self.label}: expected an object, got {type(arguments).__name__}"
            )
        unknown = [k for k in arguments if k not in self.params]
        if unknown and not allow_unknown and not self.var_kwargs:
            problems = [f"{k}: unknown argument{did_you_mean(k, self.params)}" for k in unknown]
            raise ValueError(f"invalid arguments for {self.label}: " + "; ".join(problems))
        try:
            model = self._model.model_validate(
                {k: v for k, v in arguments.items() if k in self.params}
            )
        except ValidationError as e:
            problems = []
            for err in e.errors():
                field = ".".join(str(p) for p in err["loc"]) or "(arguments)"
                if err["type"] == "missing":
                    problems.append(f"{field}: required")
                else:
                    problems.append(f"{field}: {err['msg']}")
            for key in unknown:
                problems.append(f"{key}: unknown argument{did_you_mean(key, self.params)}")
            raise ValueError(
                f"invalid arguments for {self.label}: " + "; ".join(problems)
            ) from None
        values = {name: getattr(model, name) for name in self.params}
        if self.var_kwargs:
            values.update({k: arguments[k] for k in unknown})
        return values
