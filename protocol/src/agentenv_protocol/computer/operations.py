"""The operations a driver implements, each a method marked with one decorator (`@capture`,
`@click`, ...), optionally limited to platforms (`@capture(display="x11")`). The base class finds
them by mark, picks the one method per operation that matches its platform, validates every
argument before calling one, and serves the tools whose operations it has. A marked method may
be sync or async."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import attrs

from agentenv_protocol.computer.platform import Platform, matches, normalize, overlap

OP_ATTR = "_agentenv_computer_op"

#: Operations every driver implements (the seven minimum tools need them).
REQUIRED = ("display", "capture", "click", "drag", "scroll", "type_text", "press")
#: Groups: all of a group's operations, or none (computer-pointer/v1, computer-keyboard/v1).
GROUPS = {
    "pointer": ("pointer_move", "pointer_down", "pointer_up", "pointer_position"),
    "keyboard": ("key_down", "key_up"),
}
POINTER_GROUP = GROUPS["pointer"]
KEYBOARD_GROUP = GROUPS["keyboard"]
OPTIONAL = ("set_display", "run_in_session", *POINTER_GROUP, *KEYBOARD_GROUP)
ALL = (*REQUIRED, *OPTIONAL)
#: One marked method: (its name, the platform predicates it is limited to).
Marked = tuple[str, dict]


@attrs.frozen
class Display:
    """The screen as the OS sees it: its size in screen pixels and its scale (HiDPI: a frame has
    width*scale by height*scale image pixels)."""

    width: int
    height: int
    scale: float = 1.0

    def as_dict(self) -> dict:
        return {"width": self.width, "height": self.height, "scale": float(self.scale)}

    def describe(self) -> str:
        text = f"{self.width}×{self.height}"
        return text if self.scale == 1 else f"{text} at scale {self.scale:g}"

    def describe_with_scale(self) -> str:
        return f"{self.width}×{self.height} at scale {self.scale:g}"

    def valid(self) -> bool:
        return (
            all(
                isinstance(v, int) and not isinstance(v, bool) and v > 0
                for v in (self.width, self.height)
            )
            and isinstance(self.scale, int | float)
            and self.scale > 0
        )


def _marker(op: str) -> Callable:
    def mark(fn: Callable | None = None, /, **predicates: Any) -> Any:
        if fn is not None and not predicates:
            setattr(fn, OP_ATTR, (op, {}))
            return fn
        normalized = normalize(predicates)

        def limited(method: Callable) -> Callable:
            setattr(method, OP_ATTR, (op, normalized))
            return method

        return limited

    mark.__name__ = op
    mark.__doc__ = f"Mark the driver's `{op}` operation (keyword predicates limit its platforms)."
    return mark


display = _marker("display")
set_display = _marker("set_display")
capture = _marker("capture")
click = _marker("click")
drag = _marker("drag")
scroll = _marker("scroll")
type_text = _marker("type_text")
press = _marker("press")
pointer_move = _marker("pointer_move")
pointer_down = _marker("pointer_down")
pointer_up = _marker("pointer_up")
pointer_position = _marker("pointer_position")
key_down = _marker("key_down")
key_up = _marker("key_up")
run_in_session = _marker("run_in_session")


def declared(cls: type) -> dict[str, list[Marked]]:
    """{operation: [(method name, predicates)]} of a driver class: for each operation, the marks
    of the most derived class that marks it. Two methods of one class that one platform could
    both match are a TypeError naming both."""
    found: dict[str, list[Marked]] = {}
    for klass in reversed(cls.__mro__):
        mine: dict[str, list[Marked]] = {}
        for name, value in vars(klass).items():
            mark = getattr(value, OP_ATTR, None)
            if mark is None:
                continue
            op, predicates = mark
            for other, theirs in mine.get(op, []):
                if overlap(predicates, theirs):
                    raise TypeError(
                        f"{klass.__name__}: @{op} is marked on both {other} and {name}, and one "
                        "platform could match both; limit them with predicates"
                    )
            mine.setdefault(op, []).append((name, predicates))
        overridden = set(vars(klass))
        for op in list(found):
            found[op] = [m for m in found[op] if m[0] not in overridden]
            if not found[op]:
                del found[op]
        found.update(mine)
    return found


def resolve(cls: type, platform: Platform) -> dict[str, str]:
    """{operation: method name} of the methods that match `platform`."""
    return {
        op: name
        for op, marks in declared(cls).items()
        for name, predicates in marks
        if matches(predicates, platform)
    }


async def call(method: Callable, *args: Any) -> Any:
    """Run an operation, sync or async."""
    value = method(*args)
    if inspect.isawaitable(value):
        value = await value
    return value
