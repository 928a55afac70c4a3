"""The operations a driver implements, each a method marked with one decorator (`@capture`,
`@click`, ...): the base class finds them by mark, validates every argument before calling one,
and serves the tools whose operations exist. A marked method may be sync or async."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import attrs

OP_ATTR = "_agentenv_computer_op"

#: Operations every driver implements (the seven minimum tools need them).
REQUIRED = ("display", "capture", "click", "drag", "scroll", "type_text", "press")
#: The pointer group (computer-pointer/v1) and keyboard group (computer-keyboard/v1).
POINTER_GROUP = ("pointer_move", "pointer_down", "pointer_up", "pointer_position")
KEYBOARD_GROUP = ("key_down", "key_up")
OPTIONAL = ("set_display", "run_in_session", *POINTER_GROUP, *KEYBOARD_GROUP)
ALL = (*REQUIRED, *OPTIONAL)


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


def _marker(op: str) -> Callable[[Callable], Callable]:
    def mark(fn: Callable) -> Callable:
        setattr(fn, OP_ATTR, op)
        return fn

    mark.__name__ = op
    mark.__doc__ = f"Mark the driver's `{op}` operation."
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


def declared(cls: type) -> dict[str, str]:
    """{operation: method name} of a driver class (a subclass's mark overrides its base's); two
    methods marked for one operation are a TypeError naming both."""
    found: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        mine: dict[str, str] = {}
        for name, value in vars(klass).items():
            op = getattr(value, OP_ATTR, None)
            if op is None:
                continue
            if op in mine:
                raise TypeError(f"{klass.__name__}: both {mine[op]} and {name} are marked @{op}")
            mine[op] = name
        for op, name in mine.items():
            found = {o: n for o, n in found.items() if o != op and n != name}
            found[op] = name
    return found


def resolve(driver: Any, op: str) -> Callable | None:
    """The bound method implementing `op` on `driver`, or None."""
    name = declared(type(driver)).get(op)
    return getattr(driver, name) if name else None


def missing_required(cls: type) -> list[str]:
    return [op for op in REQUIRED if op not in declared(cls)]


async def call(method: Callable, *args: Any) -> Any:
    """Run an operation, sync or async."""
    value = method(*args)
    if inspect.isawaitable(value):
        value = await value
    return value
