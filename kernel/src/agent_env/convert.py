"""The kernel's strict structuring of JSON/TOML data into attrs models (`structure`).

Strict means: unknown keys are errors (with a did-you-mean over the class's fields), missing
required fields are errors, and values are never coerced (`"5"` is not an int, `"false"` is
not a bool, a string is not a list). Every problem comes back as one message with its field
path, e.g. `step 'box': sandbox_mode: required`, all of them at once.

The types a model's fields may have: `str`, `int`, `float`, `bool`, `None`, `Any`, enums,
`Literal[...]`, unions (a member is picked by the value's JSON kind, never by trying),
`list`/`tuple`/`set`/`frozenset`/`Sequence` of one item type, `dict`/`Mapping` of one value
type, paths (from a string) and attrs classes. One structuring function per type is built on
first use and kept (`_hook`). This was a cattrs converter whose every hook the kernel had
replaced with a strict one; importing cattrs and generating its functions was about a twelfth
of `agent-env run hello`'s CPU, for the class walk and the error tree that remain here.
"""

from __future__ import annotations

import enum
import functools
import math
import pathlib
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import attrs

from agent_env.errors import BundleError
from agent_env.models import Step, ignored_reason
from agent_env.suggest import did_you_mean

__all__ = [
    "Ignored",
    "StructureProblems",
    "ignored_fields",
    "structure",
    "structure_fn",
    "structure_step",
    "unknown_name",
]


class StructureProblems(BundleError):
    """Data that does not fit its model; `problems` holds one `<path>: <message>` per problem."""


def _type_name(tp: Any) -> str:
    names = {str: "a string", int: "an integer", float: "a number", bool: "true or false"}
    if tp in names:
        return names[tp]
    origin = typing.get_origin(tp)
    if origin in (list, Sequence, tuple, set, frozenset) or tp in (list, tuple):
        return "a list"
    if origin in (dict, Mapping) or tp is dict:
        return "an object"
    if attrs.has(tp):
        return "an object"
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return "one of " + ", ".join(repr(m.value) for m in tp)
    return getattr(tp, "__name__", str(tp))


class _WrongType(ValueError):
    """A value of the wrong JSON type; the message names what was expected."""

    def __init__(self, expected: str, value: Any, hint: str = ""):
        shown = repr(value)
        if len(shown) > 60:
            shown = shown[:57] + "..."
        super().__init__(f"expected {expected}, got {shown}{hint}")


def _strict_enum(value: Any, tp: Any) -> Any:
    for member in tp:
        if value == member.value and type(value) is type(member.value):
            return member
    hint = did_you_mean(value, [str(m.value) for m in tp]) if isinstance(value, str) else ""
    raise _WrongType(_type_name(tp), value, hint)


def _enum_subclass(tp: Any) -> bool:
    """An enum (a `StrEnum` / `IntEnum` too: it is structured by its members' values)."""
    return isinstance(tp, type) and issubclass(tp, enum.Enum)


def _strict_str(value: Any) -> str:
    if not isinstance(value, str):
        raise _WrongType("a string", value)
    return value


def _strict_int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _WrongType("an integer", value)
    return value


def _strict_float(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _WrongType("a number", value)
    try:
        number = float(value)
    except OverflowError:  # an integer beyond float's range
        number = math.inf
    if not math.isfinite(number):  # inf / nan: no document, score or timeout can hold one
        raise _WrongType("a finite number", value)
    return number


def _strict_bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise _WrongType("true or false", value)
    return value


def _is_list_type(tp: Any) -> bool:
    origin = typing.get_origin(tp)
    return tp in (list, tuple) or origin in (list, tuple, Sequence, set, frozenset)


def _is_dict_type(tp: Any) -> bool:
    return tp is dict or typing.get_origin(tp) in (dict, Mapping)


def _non_none_members(tp: Any) -> list[Any]:
    return [a for a in typing.get_args(tp) if a is not type(None)]


def _is_union(tp: Any) -> bool:
    return typing.get_origin(tp) in (typing.Union, types.UnionType)


def _json_kind_matches(tp: Any, value: Any) -> bool:
    """Whether `value` has the JSON shape `tp` wants, to pick a union member without guessing."""
    if tp is Any:
        return True
    if tp is str:
        return isinstance(value, str)
    if tp is bool:
        return isinstance(value, bool)
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if tp is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if _is_list_type(tp):
        return isinstance(value, list)
    if _is_dict_type(tp) or attrs.has(tp):
        return isinstance(value, dict)
    if typing.get_origin(tp) is typing.Literal:
        return value in typing.get_args(tp)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return any(value == m.value for m in tp)
    return True


#: A structuring function: the value given, structured; `_Invalid` (or any exception, one
#: problem) when it does not fit.
Hook = Callable[[Any], Any]


class _Unknown(NamedTuple):
    """A key its model does not have (worded by `structure`, which knows the noun)."""

    key: str
    known: tuple[str, ...]


#: (field path relative to the value, message or unknown key): `retry_config.max_retries`,
#: `artifacts[0].id`, `env_vars.A`; "" is the value itself.
Problem = tuple[str, "str | _Unknown"]


class _Invalid(Exception):
    """Every problem found in one value (`problems`, paths relative to it)."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__(problems)
        self.problems = problems


def _describe(exc: BaseException) -> str:
    """The message of one exception raised while structuring a value (a wrong JSON type,
    a validator's `ValueError`, a class that refused its arguments)."""
    if isinstance(exc, _WrongType):
        return str(exc)
    if isinstance(exc, ValueError):
        return str(exc) or type(exc).__name__
    if isinstance(exc, TypeError) and "missing" in str(exc) and "argument" in str(exc):
        return "required"
    return f"{type(exc).__name__}: {exc}"


def _problems(exc: Exception) -> list[Problem]:
    return exc.problems if isinstance(exc, _Invalid) else [("", _describe(exc))]


def _under(parent: str, problems: list[Problem]) -> list[Problem]:
    """`problems` of a part of a value, their paths put under `parent` (a name or `[i]`)."""
    return [
        (parent if not path else f"{parent}{path}" if path[0] == "[" else f"{parent}.{path}", what)
        for path, what in problems
    ]


@functools.cache
def _hook(tp: Any) -> Hook:
    """The structuring function of type `tp` (built once per type)."""
    if tp is Any or tp is object:
        return _identity
    if _enum_subclass(tp):
        return functools.partial(_strict_enum, tp=tp)
    scalar = _SCALARS.get(tp)
    if scalar is not None:
        return scalar
    if tp is type(None) or tp is None:
        return _null
    origin = typing.get_origin(tp)
    if origin is typing.Literal:
        return _literal_hook(tp)
    if _is_union(tp):
        return _union_hook(tp)
    if _is_list_type(tp) or tp in (set, frozenset, Sequence):
        return _list_hook(tp)
    if _is_dict_type(tp) or tp is Mapping:
        return _dict_hook(tp)
    if attrs.has(tp):
        return _attrs_hook(tp)
    if isinstance(tp, type) and issubclass(tp, pathlib.PurePath):
        return functools.partial(_path, tp=tp)
    raise TypeError(f"cannot structure into {tp!r}: not a type a model's field may have")


def _identity(value: Any) -> Any:
    return value


def _null(value: Any) -> None:
    if value is not None:
        raise _WrongType("null", value)


def _path(value: Any, tp: type[pathlib.PurePath]) -> pathlib.PurePath:
    if not isinstance(value, str):
        raise _WrongType("a string", value)
    return tp(value)


_SCALARS: dict[Any, Hook] = {
    str: _strict_str,
    int: _strict_int,
    float: _strict_float,
    bool: _strict_bool,
}


def _literal_hook(tp: Any) -> Hook:
    allowed = typing.get_args(tp)

    def strict_literal(value: Any) -> Any:
        if not any(value == a and type(value) is type(a) for a in allowed):
            raise _WrongType("one of " + ", ".join(repr(a) for a in allowed), value)
        return value

    return strict_literal


def _union_hook(tp: Any) -> Hook:
    members = _non_none_members(tp)
    optional = len(members) < len(typing.get_args(tp))
    if len(members) == 1:  # `X | None`: null, else an X
        only = members[0]

        def optional_one(value: Any) -> Any:
            return None if value is None else _hook(only)(value)

        return optional_one

    def strict_union(value: Any) -> Any:
        if value is None and optional:
            return None
        for member in members:
            if _json_kind_matches(member, value):
                return _hook(member)(value)
        expected = " or ".join(_type_name(m) for m in members)
        raise _WrongType(expected + (" or null" if optional else ""), value)

    return strict_union


def _list_hook(tp: Any) -> Hook:
    args = typing.get_args(tp)
    origin = typing.get_origin(tp) or tp
    build: Callable[[list[Any]], Any] = origin if origin in (tuple, set, frozenset) else list
    if not args:

        def plain(value: Any) -> Any:
            if not isinstance(value, list):
                raise _WrongType("a list", value)
            return build(value)

        return plain
    item_type = args[0]  # `tuple[X, ...]` and, as before, the first of a fixed tuple's

    def strict_list(value: Any) -> Any:
        if not isinstance(value, list):
            raise _WrongType("a list", value)
        hook = _hook(item_type)
        out, problems = [], []
        for index, item in enumerate(value):
            try:
                out.append(hook(item))
            except Exception as e:  # noqa: BLE001 - every item's problems are collected
                problems += _under(f"[{index}]", _problems(e))
        if problems:
            raise _Invalid(problems)
        return build(out)

    return strict_list


def _dict_hook(tp: Any) -> Hook:
    args = typing.get_args(tp)
    value_type = args[1] if len(args) == 2 else Any

    def strict_dict(value: Any) -> Any:
        if not isinstance(value, dict):
            raise _WrongType("an object", value)
        if value_type is Any:
            return dict(value)
        hook = _hook(value_type)
        out, problems = {}, []
        for key, item in value.items():
            try:
                out[key] = hook(item)
            except Exception as e:  # noqa: BLE001 - every value's problems are collected
                problems += _under(str(key), _problems(e))
        if problems:
            raise _Invalid(problems)
        return out

    return strict_dict


class _Field(NamedTuple):
    """How one `__init__` field of a model is read: from `key` (the attribute's name), into
    `__init__`'s argument `arg` (its alias), unless absent (then `required` is a problem)."""

    key: str
    arg: str
    required: bool


def structure_fn(cls: type, hooks: Mapping[str, Hook] | None = None) -> Hook:
    """The structuring function of attrs class `cls` (a mapping in, an instance out), with
    `hooks` in place of some fields' own (by field name). It raises `_Invalid` naming every
    problem (a missing field, a wrong value, a key `cls` does not have), or what `cls`
    raised when it refused the values. `structure` words them; record models use this for
    documents they read (`engine.record_model`). The fields' own functions are looked up on
    first use (a model may hold itself)."""
    attrs.resolve_types(cls)
    given = hooks or {}
    init = [a for a in attrs.fields(cls) if a.init]
    fields = tuple(_Field(a.name, a.alias or a.name, a.default is attrs.NOTHING) for a in init)
    known = tuple(f.key for f in fields)  # the keys it takes
    allowed = frozenset(known)

    @functools.cache
    def field_hooks() -> tuple[Hook, ...]:
        return tuple(given.get(a.name) or _field_hook(a.type) for a in init)

    def structure_attrs(value: Any) -> Any:
        if not isinstance(value, Mapping):
            raise _WrongType("an object", value)
        kwargs: dict[str, Any] = {}
        problems: list[Problem] = []
        for field, hook in zip(fields, field_hooks(), strict=True):
            if field.key not in value:
                if field.required:
                    problems.append((field.key, "required"))
                continue
            try:
                kwargs[field.arg] = hook(value[field.key])
            except Exception as e:  # noqa: BLE001 - every field's problems are collected
                problems += _under(field.key, _problems(e))
        if len(value) > len(kwargs):
            unknown = sorted(str(key) for key in value if key not in allowed)
            problems += [("", _Unknown(key, known)) for key in unknown]
        if problems:
            raise _Invalid(problems)
        try:
            return cls(**kwargs)
        except Exception as e:  # noqa: BLE001 - a validator or converter refused a value
            raise _Invalid([("", _describe(e))]) from e

    return structure_attrs


def _field_hook(tp: Any) -> Hook:
    """The function of a field typed `tp` (untyped: its value as it is); a type no field may
    have is a problem of that field whenever it is given."""
    if tp is None:
        return _identity
    try:
        return _hook(tp)
    except TypeError as e:
        message = str(e)

        def unsupported(value: Any) -> Any:
            raise TypeError(message)

        return unsupported


def _attrs_hook(cls: Any) -> Hook:
    return structure_fn(cls)


def _field_names(cls: Any) -> list[str]:
    if attrs.has(cls):
        return [f.alias or f.name for f in attrs.fields(cls)]
    return []


def unknown_name(noun: str, name: str, known: Any) -> str:
    """The one wording of a name that is not one of `known`: `unknown key 'prot' (did you
    mean 'port'?)`; also for names no model can list as fields (config sections, backends)."""
    return f"unknown {noun} {name!r}{did_you_mean(name, known)}"


def _worded(problems: list[Problem], noun: str) -> list[tuple[str, str]]:
    return [
        (path, unknown_name(noun, what.key, what.known) if isinstance(what, _Unknown) else what)
        for path, what in problems
    ]


@attrs.frozen(kw_only=True)
class Ignored:
    """A field that was set but is accepted only for compatibility (`models.compat_ignored`)."""

    where: str
    path: str
    reason: str

    def message(self) -> str:
        return f"{self.path}: accepted for compatibility and ignored ({self.reason})"


def ignored_fields(data: Any, cls: Any, path: str = "") -> list[tuple[str, str]]:
    """(field path, reason) for each compat-ignored field that `data` sets, in `cls` and the
    attrs classes nested in it (directly, in a list, or as a dict's values)."""
    if not attrs.has(cls) or not isinstance(data, dict):
        return []
    out: list[tuple[str, str]] = []
    for field in attrs.fields(cls):
        key = field.alias or field.name
        if key not in data:
            continue
        where = f"{path}.{key}" if path else key
        reason = ignored_reason(field)
        if reason is not None:
            out.append((where, reason))
            continue
        out.extend(_nested_ignored(data[key], field.type, where))
    return out


def _nested_ignored(value: Any, tp: Any, path: str) -> list[tuple[str, str]]:
    if isinstance(tp, str) or tp is None:
        return []
    if _is_union(tp):
        members = [m for m in _non_none_members(tp) if _json_kind_matches(m, value)]
        return _nested_ignored(value, members[0], path) if members else []
    if attrs.has(tp):
        return ignored_fields(value, tp, path)
    args = typing.get_args(tp)
    if _is_list_type(tp) and args and isinstance(value, list):
        return [x for i, v in enumerate(value) for x in _nested_ignored(v, args[0], f"{path}[{i}]")]
    if _is_dict_type(tp) and len(args) == 2 and isinstance(value, dict):
        return [x for k, v in value.items() for x in _nested_ignored(v, args[1], f"{path}.{k}")]
    return []


def structure(
    data: Any,
    cls: type,
    *,
    where: str = "",
    ignored: list[Ignored] | None = None,
    noun: str = "field",
) -> Any:
    """Structure `data` into `cls`; `StructureProblems` listing every problem, each prefixed
    with `where` (e.g. "step 'box'") and the field path (`noun` names an unknown one: "key"
    in TOML files). Compat-ignored fields that `data` sets are appended to `ignored` (when
    given) for the caller to warn about once."""
    if attrs.has(cls) and not isinstance(data, dict):
        raise StructureProblems(
            "invalid data", [_prefix(where, f"expected an object, got {data!r}")]
        )
    if data == {} and _all_defaulted(cls):
        return cls()  # what structuring would build, without building its function
    try:
        value: Any = _hook(cls)(data)  # `cls` is any type: so is its value
    except Exception as e:  # noqa: BLE001 - every problem is worded, with its path
        worded = _worded(_problems(e), noun)
        problems = [_prefix(where, f"{p}: {m}" if p else m) for p, m in worded]
        raise StructureProblems("invalid data", problems) from None
    if ignored is not None:
        ignored.extend(Ignored(where=where, path=p, reason=r) for p, r in ignored_fields(data, cls))
    return value


@functools.cache
def _all_defaulted(cls: type) -> bool:
    """`cls` is an attrs class whose every `__init__` field has a default (so `cls()` is
    what structuring `{}` gives)."""
    return attrs.has(cls) and all(
        f.default is not attrs.NOTHING for f in attrs.fields(cls) if f.init
    )


def _prefix(where: str, message: str) -> str:
    return f"{where}: {message}" if where else message


def normalize_step_dict(data: Mapping[str, Any], cls: type) -> dict[str, Any]:
    """The older spellings existing bundles use, rewritten to the model's: `depends_on`
    entries as `{"task_step_id": id}`, `retry_config.go_to_step_id`, and a store `version`."""
    out = dict(data)
    out.pop("type", None)
    fields = set(_field_names(cls))
    if (
        "version" in out
        and "version" not in fields
        and (
            out["version"] is None
            or (isinstance(out["version"], int) and not isinstance(out["version"], bool))
        )
    ):
        out.pop("version")
    deps = out.get("depends_on")
    if isinstance(deps, list):
        out["depends_on"] = [
            d["task_step_id"] if isinstance(d, dict) and set(d) == {"task_step_id"} else d
            for d in deps
        ]
    retry = out.get("retry_config")
    if isinstance(retry, dict) and "go_to_step_id" in retry and "retry_from_step_id" not in retry:
        retry = dict(retry)
        retry["retry_from_step_id"] = retry.pop("go_to_step_id")
        out["retry_config"] = retry
    return out


def structure_step(
    data: Any, step_types: Any, *, index: int | None = None, ignored: list[Ignored] | None = None
) -> Step:
    """Structure one task step object into the class `step_types` (a `Registry`) holds for its
    `"type"`; `StructureProblems` naming the step and each bad field."""
    label = _step_label(data, index)
    if not isinstance(data, dict):
        raise StructureProblems(
            "invalid step", [f"{label}: a step must be a JSON object, got {data!r}"]
        )
    step_type = data.get("type")
    if step_type is None:
        raise StructureProblems("invalid step", [f"{label}: type: required"])
    if not isinstance(step_type, str):
        raise StructureProblems(
            "invalid step", [f"{label}: type: expected a string, got {step_type!r}"]
        )
    if step_type not in step_types:
        known = list(step_types.names())
        raise StructureProblems(
            "invalid step",
            [
                f"{label}: unknown step type {step_type!r}{did_you_mean(step_type, known)}"
                f"; known: {', '.join(known) or 'none'}{_core_hint(step_type)}"
            ],
        )
    cls = step_types.get(step_type)
    return structure(normalize_step_dict(data, cls), cls, where=label, ignored=ignored)


def _core_hint(step_type: str) -> str:
    """Where a known step type comes from (`plugins.known`), when its plugin is missing."""
    from agent_env.plugins.known import REFERENCE_ONLY_STEP_TYPES, distribution, install_command

    dist = distribution("step type", step_type)
    if dist is None:
        if step_type in REFERENCE_ONLY_STEP_TYPES:
            return (
                " (a step type of the existing agent-env 0.9 that this version does not "
                "provide: see docs/compatibility.md)"
            )
        return ""
    from importlib.metadata import PackageNotFoundError, version

    try:
        installed = version(dist)
    except PackageNotFoundError:
        return f" (a step type of {dist}: {install_command(dist)})"
    return f" (a step type that {dist} {installed} does not provide yet, or it is disabled)"


def _step_label(data: Any, index: int | None) -> str:
    step_id = data.get("id") if isinstance(data, dict) else None
    if isinstance(step_id, str) and step_id:
        return f"step {step_id!r}"
    return f"step #{index + 1}" if index is not None else "step"
