"""A small computer driver: the agent sees the screen and drives the pointer and keyboard of the
env's X display through agentenv_protocol's Linux backend."""

import base64
from typing import Annotated

import anyio
from mcp.types import ImageContent
from pydantic import Field

from agentenv_protocol import AgentEnvEnvironment, environment_card, tool
from agentenv_protocol.computer.linux import X11Desktop


@environment_card(name="desktop")
class Desktop(AgentEnvEnvironment):
    def __init__(self) -> None:
        super().__init__()
        self._x: X11Desktop | None = None

    async def _call(self, method: str, *args):
        if self._x is None:
            self._x = await anyio.to_thread.run_sync(X11Desktop)
        return await anyio.to_thread.run_sync(getattr(self._x, method), *args)

    @tool()
    async def screenshot(self) -> ImageContent:
        """A PNG of the whole screen."""
        png = await self._call("screenshot_png")
        return ImageContent(type="image", data=base64.b64encode(png).decode(), mimeType="image/png")

    @tool()
    async def screen_size(self) -> dict:
        """The screen's width and height in pixels."""
        width, height = await self._call("size")
        return {"width": width, "height": height}

    @tool()
    async def click(
        self,
        x: Annotated[int, Field(description="Pixels from the left edge.")],
        y: Annotated[int, Field(description="Pixels from the top edge.")],
        button: Annotated[str, Field(description="left, middle or right.")] = "left",
    ) -> dict:
        """Move the pointer to (x, y) and click; answers where the pointer is."""
        await self._call("click", x, y, button)
        x2, y2 = await self._call("pointer")
        return {"x": x2, "y": y2}

    @tool()
    async def type_text(
        self, text: Annotated[str, Field(description="What to type; \\n is Enter.")]
    ) -> str:
        """Type text into the window under the pointer."""
        await self._call("type_text", text)
        return f"typed {len(text)} characters"

    @tool()
    async def press_keys(
        self, keys: Annotated[list[str], Field(description="A chord, e.g. ['ctrl', 'c'].")]
    ) -> str:
        """Press keys together, then release them."""
        await self._call("press", keys)
        return "pressed " + "+".join(keys)

    @tool()
    async def read_file(self, path: str) -> str:
        """For graders: the text of a file on the computer ('' when there is none)."""
        try:
            with open(path, encoding="utf-8") as f:
                return f.read()
        except FileNotFoundError:
            return ""
