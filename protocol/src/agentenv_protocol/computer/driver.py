"""`ComputerDriverEnvironment`: the base class of a computer driver. A subclass implements the
operations (`@capture`, `@click`, ...) for its platform; the base class serves the tools, the
frames, the input queue, the extensions and the data plane over this SDK's environment server,
as an mcp FastMCP app (`create_app()`) or mounted on the author's own."""

from __future__ import annotations

import os
from typing import Any

import attrs

from agentenv_protocol.computer import card as names
from agentenv_protocol.computer import operations as ops
from agentenv_protocol.computer.dataplane import ComputerDataPlane
from agentenv_protocol.computer.errors import ComputerError, Internal, operation_failed
from agentenv_protocol.computer.extensions import ComputerExtensions
from agentenv_protocol.computer.frames import Frame, FrameStore, as_image
from agentenv_protocol.computer.group_tools import GroupTools
from agentenv_protocol.computer.platform import Platform, detect
from agentenv_protocol.computer.queue import InputQueue
from agentenv_protocol.computer.runtime import ExecRuns
from agentenv_protocol.computer.settings import ComputerSettings
from agentenv_protocol.computer.spaces import frame_box
from agentenv_protocol.computer.tools import ComputerTools
from agentenv_protocol.context import ToolContext
from agentenv_protocol.server import AgentEnvEnvironment
from agentenv_protocol.types import (
    DEFAULT_HOST,
    DEFAULT_PORT,
    EnvironmentExtension,
    EnvironmentTool,
)

#: Which operations each tool needs (a tool is served when its driver has them all).
TOOL_NEEDS = {
    **{name: ("display", "capture") for name in names.MINIMUM_TOOLS},
    "computer_pointer_move": ("pointer_move",),
    "computer_pointer_down": ("pointer_move", "pointer_down"),
    "computer_pointer_up": ("pointer_up",),
    "computer_pointer_position": ("pointer_position",),
    "computer_pointer_list": ops.POINTER_GROUP,
    "computer_keyboard_down": ops.KEYBOARD_GROUP,
    "computer_keyboard_up": ops.KEYBOARD_GROUP,
}


@attrs.define
class ComputerState:
    """A driver's run-time state: frames, the input queue, keys held per caller and their
    release timers, and remembered command results."""

    frames: FrameStore = attrs.field(factory=FrameStore)
    queue: InputQueue = attrs.field(factory=InputQueue)
    held: dict = attrs.field(factory=dict)
    release_timers: dict = attrs.field(factory=dict)
    runs: ExecRuns = attrs.field(factory=ExecRuns)


class ComputerDriverEnvironment(
    ComputerTools, GroupTools, ComputerExtensions, ComputerDataPlane, AgentEnvEnvironment
):
    """Subclass it, mark your operations, and serve: `Driver().serve()`."""

    #: The pointer's buttons, the most clicks of one click call, the most points of a drag.
    buttons: tuple[str, ...] = ("left", "right", "middle")
    max_click_count: int = 3
    max_drag_points: int = 100
    #: Display modes (width, height) `computer-display/set` accepts (empty: any size).
    display_modes: tuple[tuple[int, int], ...] = ()
    #: The keys this computer has (None: every W3C key value).
    keys: tuple[str, ...] | None = None

    def __init__(
        self, settings: ComputerSettings | None = None, platform: Platform | None = None
    ) -> None:
        missing = ops.missing_required(type(self))
        if missing:
            raise TypeError(
                f"{type(self).__name__} implements no {', '.join('@' + m for m in missing)}: a "
                f"computer driver implements {', '.join('@' + m for m in ops.REQUIRED)}"
            )
        self.settings = settings or ComputerSettings()
        self.platform = platform or detect()
        self._computer = ComputerState()

    # -- hooks a driver may override ----------------------------------------------------

    def caller_identity(self, context: ToolContext) -> str:
        """Whose frames and held keys a call uses: one shared identity unless overridden."""
        return "default"

    def served_tools(self, tools: list[EnvironmentTool]) -> list[EnvironmentTool]:
        """The tools whose operations this driver implements; point tools name the default space."""
        have = ops.declared(type(self))
        served = []
        for descriptor in tools:
            needs = TOOL_NEEDS.get(descriptor.name, ())
            if not all(op in have for op in needs):
                continue
            if descriptor.name in names.POINT_TOOLS:
                descriptor = descriptor.model_copy(
                    update={"description": self._point_description(descriptor.name)}
                )
            served.append(descriptor)
        return served

    def declared_extensions(self) -> list[EnvironmentExtension]:
        have = ops.declared(type(self))
        declared = [
            EnvironmentExtension(uri=names.COMPUTER, params=self._computer_params()),
            EnvironmentExtension(uri=names.COMPUTER_READY, params={"ready": True}),
        ]
        if all(op in have for op in ops.POINTER_GROUP):
            declared.append(EnvironmentExtension(uri=names.COMPUTER_POINTER, params={}))
        return declared

    # -- serving ---------------------------------------------------------------------------

    def create_app(self) -> Any:
        """mcp's FastMCP app serving this driver (built once; `self.mcp` afterwards)."""
        if self.mcp is None:
            from mcp.server.fastmcp import FastMCP

            app = FastMCP(self.card.name)
            app.settings.host = os.environ.get("MCP_HOST", DEFAULT_HOST)
            app.settings.port = int(os.environ.get("MCP_PORT", DEFAULT_PORT))
            if app.settings.transport_security is not None:
                app.settings.transport_security.enable_dns_rebinding_protection = False
            self.mount(app)
        return self.mcp

    def serve(self, transport: str = "streamable-http", **kwargs: Any) -> None:
        self.create_app()
        super().serve(transport, **kwargs)

    # -- operations --------------------------------------------------------------------------

    def _op(self, op: str) -> Any:
        return ops.resolve(self, op)

    async def _call(self, op: str, *args: Any, applied: str = "unknown") -> Any:
        method = self._op(op)
        if method is None:
            raise Internal(f"this computer implements no @{op}")
        try:
            return await ops.call(method, *args)
        except ComputerError:
            raise
        except Exception as e:
            raise operation_failed(op, e, applied=applied) from e  # type: ignore[arg-type]

    async def _input(self, op: str, *args: Any) -> Any:
        return await self._call(op, *args)

    async def _display(self) -> ops.Display:
        shown = await self._call("display", applied="no")
        if not isinstance(shown, ops.Display):
            raise Internal(f"@display answered {shown!r}, not a Display")
        return shown

    async def _capture(self, identity: str) -> Frame:
        mark = self._computer.queue.mark()
        shown = await self._display()
        grabbed = await self._call("capture", applied="no")
        try:
            image = as_image(grabbed)
        except Exception as e:
            raise operation_failed("capture", e, applied="no") from e
        return self._computer.frames.add(image, shown, mark, identity=identity)

    def _crop(
        self, identity: str, frame_id: str | None, region: Any, space: str, scale: int
    ) -> Frame:
        parent = self._computer.frames.get(frame_id, identity).result()
        left, top, right, bottom = frame_box(parent, region, space, scale)
        return self._computer.frames.add(
            parent.image.crop((left, top, right, bottom)),
            parent.display,
            parent.mark,
            identity=identity,
            parent=parent,
            origin=(parent.origin[0] + left, parent.origin[1] + top),
        )

    # -- card ------------------------------------------------------------------------------

    def _space_defaults(self) -> tuple[str, int]:
        return self.settings.default_space, self.settings.default_norm_scale

    def _point_description(self, name: str) -> str:
        base = type(self).__dict__.get(name) or getattr(type(self), name)
        text = (base.__doc__ or "").strip()
        space, scale = self._space_defaults()
        if space == "norm":
            sentence = (
                f"Points are in norm space by default: 0 to {scale} over the frame's width and "
                "height (space='frame' takes the frame's pixels)."
            )
        else:
            sentence = (
                "Points are in frame space by default: the frame's own pixels (space='norm' "
                f"takes 0 to {scale} over the frame)."
            )
        return f"{' '.join(text.split())} {sentence}"

    def _computer_params(self) -> dict:
        return {
            "platform": self.platform.as_dict(),
            "buttons": list(self.buttons),
            "max_click_count": self.max_click_count,
            "max_drag_points": self.max_drag_points,
            "spaces": ["frame", "norm"],
            "default_space": self.settings.default_space,
            "default_norm_scale": self.settings.default_norm_scale,
        }
