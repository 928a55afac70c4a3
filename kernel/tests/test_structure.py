"""The kernel's strict structuring (`agent_env.convert.structure`) over every kind of type a
model's field may have: what comes out, and every problem at once with its path."""

from __future__ import annotations

import enum
import pathlib
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Literal

import attrs
import pytest

from agent_env.convert import StructureProblems, structure, structure_fn


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


@attrs.frozen(kw_only=True)
class Leaf:
    name: str
    weight: float = 1.0


@attrs.frozen(kw_only=True)
class Node:
    """A model that holds itself (built on first use, not when the class is first seen)."""

    label: str
    children: list[Node] = attrs.field(factory=list)


@attrs.define(kw_only=True)
class Everything:
    text: str
    count: int = 0
    ratio: float = 0.0
    flag: bool = False
    anything: Any = None
    color: Color = Color.RED
    mode: Literal["a", "b"] = "a"
    either: int | str = 0
    maybe: str | None = None
    items: tuple[str, ...] = ()
    tags: frozenset[str] = frozenset()
    names: Sequence[str] = ()
    scores: Mapping[str, float] = attrs.field(factory=dict)
    leaves: list[Leaf] = attrs.field(factory=list)
    by_name: dict[str, Leaf] = attrs.field(factory=dict)
    where: pathlib.Path = pathlib.Path(".")
    tree: Node | None = None


def problems(data: Any, cls: type, **kwargs: Any) -> list[str]:
    with pytest.raises(StructureProblems) as info:
        structure(data, cls, **kwargs)
    return info.value.problems


def test_every_kind_of_field_is_structured() -> None:
    got = structure(
        {
            "text": "t",
            "count": 2,
            "ratio": 3,
            "flag": True,
            "anything": {"x": [1]},
            "color": "blue",
            "mode": "b",
            "either": "s",
            "maybe": None,
            "items": ["a", "b"],
            "tags": ["x", "x"],
            "names": ["n"],
            "scores": {"a": 1},
            "leaves": [{"name": "l"}],
            "by_name": {"k": {"name": "m", "weight": 2}},
            "where": "sub/dir",
            "tree": {"label": "root", "children": [{"label": "kid"}]},
        },
        Everything,
    )
    assert got.ratio == 3.0 and isinstance(got.ratio, float)
    assert got.color is Color.BLUE and got.mode == "b" and got.either == "s"
    assert got.items == ("a", "b") and got.tags == frozenset({"x"}) and got.names == ["n"]
    assert got.scores == {"a": 1.0} and got.leaves == [Leaf(name="l")]
    assert got.by_name == {"k": Leaf(name="m", weight=2.0)}
    assert got.where == pathlib.Path("sub/dir")
    assert got.tree == Node(label="root", children=[Node(label="kid")])


def test_every_problem_comes_back_at_once_with_its_path() -> None:
    found = problems(
        {
            "count": True,
            "color": "green",
            "mode": "c",
            "either": 1.5,
            "items": "ab",
            "leaves": [{"name": "ok"}, {"nme": "x"}],
            "by_name": {"k": {"name": 1}},
            "where": 5,
            "tree": {"label": "r", "children": [{"label": 2}]},
            "extra": 1,
            "colour": "red",
        },
        Everything,
        where="thing",
        noun="key",
    )
    assert found == [
        "thing: text: required",
        "thing: count: expected an integer, got True",
        "thing: color: expected one of 'red', 'blue', got 'green'",
        "thing: mode: expected one of 'a', 'b', got 'c'",
        "thing: either: expected an integer or a string, got 1.5",
        "thing: items: expected a list, got 'ab'",
        "thing: leaves[1].name: required",
        "thing: leaves[1]: unknown key 'nme' (did you mean 'name'?)",
        "thing: by_name.k.name: expected a string, got 1",
        "thing: where: expected a string, got 5",
        "thing: tree.children[0].label: expected a string, got 2",
        "thing: unknown key 'colour' (did you mean 'color'?)",
        "thing: unknown key 'extra' (did you mean 'text'?)",
    ]


@attrs.frozen
class Checked:
    port: int = attrs.field(validator=attrs.validators.gt(0))
    _secret: str = ""
    derived: str = attrs.field(init=False, default="d")


def test_the_class_itself_may_refuse_values() -> None:
    assert problems({"port": 0}, Checked) == ["'port' must be > 0: 0"]


def test_fields_are_read_by_attribute_name_and_init_false_ones_are_unknown() -> None:
    assert structure({"port": 1, "_secret": "s"}, Checked) == Checked(1, "s")
    assert problems({"port": 1, "derived": "x", "secret": "s"}, Checked) == [
        "unknown field 'derived'",
        "unknown field 'secret' (did you mean '_secret'?)",
    ]


@attrs.frozen
class Odd:
    when: datetime


def test_a_type_no_field_may_have_is_named_where_it_is_used() -> None:
    found = problems({"when": "2020-01-01"}, Odd)
    assert len(found) == 1 and found[0].startswith("when: TypeError: cannot structure into")


def test_a_models_function_raises_every_problem_for_its_caller_to_word() -> None:
    """What record models use: the same checks, with some fields' functions replaced."""
    loose = structure_fn(Leaf, {"name": lambda value: str(value)})
    assert loose({"name": 5}) == Leaf(name="5")
    with pytest.raises(Exception) as info:
        loose({"name": "n", "weight": "heavy"})
    assert info.value.problems == [("weight", "expected a number, got 'heavy'")]
