"""A computer driver for the env's X display: the SDK's base class serves the computer tools
(`computer_screenshot`, `computer_click`, `computer_type`, ...); each operation below is one
call of agentenv_protocol's Linux backend, `X11Desktop`, run off the event loop."""

from __future__ import annotations

from typing import Any

import anyio

from agentenv_protocol import tool
from agentenv_protocol.computer import (
    ComputerDriverEnvironment,
    Display,
    capture,
    click,
    computer_driver,
    display,
    drag,
    pointer_down,
    pointer_move,
    pointer_position,
    pointer_up,
    press,
    scroll,
    type_text,
)
from agentenv_protocol.computer.linux import X11Desktop


@computer_driver(name="desktop")
class Desktop(ComputerDriverEnvironment):
    buttons = ("left", "right", "middle")

    def __init__(self) -> None:
        super().__init__()
        self._x: X11Desktop | None = None

    async def _x11(self, method: str, *args: Any) -> Any:
        if self._x is None:
            self._x = await anyio.to_thread.run_sync(X11Desktop)
        return await anyio.to_thread.run_sync(getattr(self._x, method), *args)

    @display
    async def screen(self) -> Display:
        width, height = await self._x11("size")
        return Display(width, height, 1.0)

    @capture
    async def grab(self) -> Any:
        return await self._x11("screenshot")

    @click
    async def click_at(self, x, y, button, count, modifiers) -> None:
        await self._x11("click", x, y, button, count, modifiers)

    @drag
    async def drag_along(self, path, button, duration_ms, modifiers) -> None:
        await self._x11("drag", path, button, duration_ms / 1000, modifiers)

    @scroll
    async def scroll_at(self, x, y, direction, amount, modifiers) -> None:
        await self._x11("scroll", x, y, direction, amount, modifiers)

    @type_text
    async def type_in(self, text) -> None:
        await self._x11("type_text", text)

    @press
    async def chord(self, keys) -> None:
        await self._x11("press", keys)

    @pointer_move
    async def move_to(self, x, y) -> None:
        await self._x11("move", x, y)

    @pointer_down
    async def button_down(self, button) -> None:
        await self._x11("button", button, True)

    @pointer_up
    async def button_up(self, button) -> None:
        await self._x11("button", button, False)

    @pointer_position
    async def where(self) -> tuple[int, int]:
        return await self._x11("pointer")

    @tool()
    def read_file(self, path: str) -> str:
        """For graders: the text of a file on the computer ('' when there is none)."""
        try:
            with open(path, encoding="utf-8") as f:
                return f.read()
        except FileNotFoundError:
            return ""
