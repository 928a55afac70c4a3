"""`StoredRecord`: the base of the run record models (`records`), attrs classes whose JSON is
the stored document. `to_dict()` writes the keys the model has (those in `optional` left out
while None, as older versions did not write them) plus the keys of the document it was read
from that it does not know (`extra`: written by a newer version, or a run's extra metadata), so
a load and a save change nothing. The (un)structure functions are built per class on first
use (`convert.structure_fn` reads a document).
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, TypeVar

import attrs

R = TypeVar("R", bound="StoredRecord")
T = TypeVar("T")


@attrs.define(kw_only=True, on_setattr=attrs.setters.NO_OP)
class StoredRecord:
    """A record model whose JSON is its stored document: `from_dict` / `to_dict` through the
    kernel's strict structuring (`agent_env.convert`).

    Fields typed `dict[str, Any]`, `list[...]` or `Any` hold free-form JSON (step info, verifier
    results, outputs...): structuring checks their JSON kind and passes them through as they
    are, without a deep copy (the redactor copies what is stored; a record is written several
    times per instance, so a copy per write would cost as much as the redaction)."""

    #: What `from_dict` calls the document in errors (`task instance record 'ti-...'`).
    kind: ClassVar[str] = "record"
    #: Fields left out of `to_dict()` while None (older documents did not have them).
    optional: ClassVar[frozenset[str]] = frozenset()

    #: Keys of the stored document this model does not know, kept as they were.
    extra: dict[str, Any] = attrs.field(factory=dict, init=False, eq=False, repr=False)

    @classmethod
    def new(cls: type[R], **fields: Any) -> R:
        """A record built in code (no checks): fields the model does not have go to `extra`."""
        names = _field_names(cls)
        record = cls(**{k: v for k, v in fields.items() if k in names})
        record.extra = {k: v for k, v in fields.items() if k not in names}
        return record

    def replace(self: R, **changes: Any) -> R:
        """A copy with `changes` (`attrs.evolve`, which would drop `extra`)."""
        copy = attrs.evolve(self, **changes)
        copy.extra = dict(self.extra)
        return copy

    @classmethod
    def from_dict(cls: type[R], doc: Mapping[str, Any]) -> R:
        """The model of a stored document (nested JSON values are shared with `doc`);
        `StructureProblems` naming the document and field when a field has the wrong shape."""
        if not isinstance(doc, Mapping):
            from agent_env.convert import structure

            structure(doc, cls, where=cls.kind)  # raises the worded problem
        names = _field_names(cls)
        known = {k: v for k, v in doc.items() if k in names}
        try:
            record = _structure_fn(cls)(known)
        except Exception:  # noqa: BLE001 - the strict pass names the problem
            from agent_env.convert import structure

            structure(known, cls, where=f"{cls.kind} {doc.get('id')!r}")
            raise
        record.extra = {k: v for k, v in doc.items() if k not in names}
        return record

    def __getitem__(self, key: str) -> Any:
        """The stored document's value under `key` (hooks written when they got a dict)."""
        return self.to_dict()[key]

    def get(self, key: str, default: Any = None) -> Any:
        """The stored document's value under `key`, else `default` (as `dict.get`)."""
        return self.to_dict().get(key, default)

    def to_dict(self) -> dict[str, Any]:
        """The stored document (JSON types only; nested free-form values are the record's own,
        not copies)."""
        out = _unstructure_fn(type(self))(self)
        for key in self.optional:
            if out[key] is None:
                del out[key]
        if self.extra:
            out.update(self.extra)
        return out


def _per_class(fn: Callable[[type], T]) -> Callable[[type], T]:
    """`functools.cache` for a function of a model class (typed so: a `functools.cache`
    wrapper takes `Hashable` arguments, which mypy says a model class is not, as its instances
    are unhashable)."""
    return functools.cache(fn)


@_per_class
def _field_names(cls: type) -> frozenset[str]:
    return frozenset(a.name for a in attrs.fields(cls) if a.init)


def _members(tp: Any) -> tuple[Any, ...]:
    """The non-None members of a union (`tp` itself when it is not one)."""
    import types
    import typing

    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        return tuple(a for a in typing.get_args(tp) if a is not type(None))
    return (tp,)


def _free_form(tp: Any) -> bool:
    """A field whose value is free-form JSON (no model, no enum inside)."""
    import typing

    return all(a is Any or typing.get_origin(a) in (dict, list) for a in _members(tp))


def _plain(tp: Any) -> bool:
    """A field whose value is stored as it is: JSON scalars and free-form JSON."""
    return _free_form(tp) or all(a in (str, int, float, bool) for a in _members(tp))


def _pass_through(tp: Any) -> Any:
    """A structure hook that checks the JSON kind of a free-form value and keeps it as is."""
    import typing

    nullable = type(None) in typing.get_args(tp)
    kinds = tuple(typing.get_origin(a) or object for a in _members(tp))

    def hook(value: Any) -> Any:
        if (value is None and nullable) or isinstance(value, kinds):
            return value
        names = " or ".join("an object" if k is dict else "a list" for k in kinds)
        raise ValueError(f"expected {names}, got {value!r:.60}")

    return hook


def _fields(cls: type) -> dict[str, Any]:
    """Field name -> resolved type, `extra` left out."""
    attrs.resolve_types(cls)
    return {a.name: a.type for a in attrs.fields(cls) if a.name != "extra"}


@_per_class
def _structure_fn(cls: type) -> Callable[[Mapping[str, Any]], Any]:
    """The kernel's structuring function for `cls` (`convert.structure_fn`), free-form JSON
    fields checked for their JSON kind and passed through (built on first use: a command
    that only writes records never pays for it)."""
    from agent_env.convert import structure_fn

    hooks = {n: _pass_through(tp) for n, tp in _fields(cls).items() if _free_form(tp)}
    return structure_fn(cls, hooks)


@_per_class
def _unstructure_fn(cls: type) -> Callable[[Any], dict[str, Any]]:
    """The document of an instance of `cls`: scalars and free-form JSON read as they are,
    enums as their value, nested models through their own function."""
    plan: list[tuple[str, Callable[[Any], Any] | None]] = []
    for name, tp in _fields(cls).items():
        if isinstance(tp, type) and issubclass(tp, enum.Enum):
            plan.append((name, _enum_value))
        elif _plain(tp):
            plan.append((name, None))
        elif attrs.has(tp):
            plan.append((name, _unstructure_fn(tp)))
        else:
            plan.append((name, _json_value))

    def unstructure(instance: Any) -> dict[str, Any]:
        return {
            name: getattr(instance, name) if fn is None else fn(getattr(instance, name))
            for name, fn in plan
        }

    return unstructure


def _json_value(value: Any) -> Any:
    """A value of a field that is neither plain nor one model, as JSON types."""
    if isinstance(value, enum.Enum):
        return value.value
    if attrs.has(type(value)):
        return _unstructure_fn(type(value))(value)
    if isinstance(value, (list, tuple)):
        return [_json_value(v) for v in value]
    if isinstance(value, dict):
        return {k: _json_value(v) for k, v in value.items()}
    return value


def _enum_value(member: enum.Enum) -> Any:
    return member.value
