"""`ComputerDriverEnvironment`: the base class of a computer driver. A subclass implements the
operations (`@capture`, `@click`, ...) for its platforms; the base class serves the tools, the
frames, the input queue, the extensions and the data plane over this SDK's environment server,
as an mcp FastMCP app (`create_app()`) or mounted on the author's own. Tools answer
`device_unavailable` until the ready checks (display, capture, the driver's own) pass once."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio
import attrs

from agentenv_protocol.authoring import CARD_ATTR, environment_card
from agentenv_protocol.computer import card as names
from agentenv_protocol.computer import checks, linux
from agentenv_protocol.computer import operations as ops
from agentenv_protocol.computer.dataplane import ComputerDataPlane
from agentenv_protocol.computer.errors import (
    ComputerError,
    DeliveryFailed,
    DeviceUnavailable,
    Internal,
    InvalidArgument,
)
from agentenv_protocol.computer.extensions import MAX_TIMEOUT_S, ComputerExtensions
from agentenv_protocol.computer.frames import Frame, FrameStore, as_image
from agentenv_protocol.computer.group_tools import GroupTools
from agentenv_protocol.computer.platform import Platform, detect
from agentenv_protocol.computer.queue import InputQueue
from agentenv_protocol.computer.results import ExecResult, ReadyCheck
from agentenv_protocol.computer.runtime import ExecRuns
from agentenv_protocol.computer.settings import ComputerSettings, load_settings
from agentenv_protocol.computer.spaces import frame_box
from agentenv_protocol.computer.tools import ComputerTools, _delivered
from agentenv_protocol.context import ToolContext
from agentenv_protocol.server import AgentEnvEnvironment
from agentenv_protocol.types import (
    DEFAULT_HOST,
    DEFAULT_PORT,
    EnvironmentCard,
    EnvironmentExtension,
    EnvironmentTool,
)

#: Which operations each tool needs (a tool is served when its driver has them all).
TOOL_NEEDS = {
    **{name: () for name in names.MINIMUM_TOOLS},
    **{name: ops.POINTER_GROUP for name in names.GROUP_TOOLS["pointer"]},
    **{name: ops.KEYBOARD_GROUP for name in names.GROUP_TOOLS["keyboard"]},
}


@attrs.define
class ComputerState:
    """A driver's run-time state: the operations chosen for its platform, frames, the input
    queue, keys held per caller and their release timers, command results, readiness."""

    operations: dict = attrs.field(factory=dict)
    frames: FrameStore = attrs.field(factory=FrameStore)
    queue: InputQueue = attrs.field(factory=InputQueue)
    held: dict = attrs.field(factory=dict)
    release_timers: dict = attrs.field(factory=dict)
    runs: ExecRuns = attrs.field(factory=ExecRuns)
    ready: bool = False
    ready_lock: anyio.Lock = attrs.field(factory=anyio.Lock)


def _operations_for(cls: type, platform: Platform) -> dict[str, str]:
    """The operations `cls` has on `platform`: a required one missing is a RuntimeError; a group
    with a member missing is left out whole."""
    found = ops.resolve(cls, platform)
    for op in ops.REQUIRED:
        if op not in found:
            raise RuntimeError(
                f"{cls.__name__} has no method for @{op} on this platform ({platform.as_dict()})"
            )
    for members in ops.GROUPS.values():
        if not all(op in found for op in members):
            for op in members:
                found.pop(op, None)
    return found


class ComputerDriverEnvironment(
    ComputerTools, GroupTools, ComputerExtensions, ComputerDataPlane, AgentEnvEnvironment
):
    """Subclass it, mark your operations, and serve: `Driver().serve()`."""

    #: The pointer's buttons, the most clicks of one click call, the most points of a drag,
    #: the longest `computer_wait`.
    buttons: tuple[str, ...] = ("left", "right", "middle")
    max_click_count: int = 3
    max_drag_points: int = 100
    max_wait_ms: int = 60_000
    #: Display modes (width, height) `computer-display/set` accepts (with `@set_display`).
    display_modes: tuple[tuple[int, int], ...] = ()
    #: The keys this computer has (None: every W3C key value).
    keys: tuple[str, ...] | None = None
    #: The platforms the driver supports (see `computer_driver`).
    supports: tuple = ()
    #: Per-role tool rules: agents may reach a computer with no gateway in front.
    tool_access = True

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        checks.check_members(cls, ComputerDriverEnvironment)
        checks.check_operations(cls)
        checks.check_features(cls)

    def __init__(
        self, settings: ComputerSettings | None = None, platform: Platform | None = None
    ) -> None:
        self.settings = settings or load_settings()
        self.platform = platform or detect()
        self._computer = ComputerState(operations=_operations_for(type(self), self.platform))

    # -- hooks a driver may override ----------------------------------------------------

    def caller_identity(self, context: ToolContext) -> str:
        """Whose frames and held keys a call uses: one shared identity unless overridden."""
        return "default"

    async def ready_checks(self) -> list[ReadyCheck]:
        """The driver's own readiness checks, beside the display and a capture."""
        return []

    def has(self, group: str) -> bool:
        """Whether this driver serves a group (`pointer`, `keyboard`) on its platform."""
        return all(op in self._computer.operations for op in ops.GROUPS[group])

    # -- what is served ------------------------------------------------------------------

    def served_tools(self, tools: list[EnvironmentTool]) -> list[EnvironmentTool]:
        """The tools whose operations this driver has; point tools name the default space."""
        have = self._computer.operations
        served = []
        for descriptor in tools:
            if not all(op in have for op in TOOL_NEEDS.get(descriptor.name, ())):
                continue
            if descriptor.name in names.POINT_TOOLS:
                descriptor = descriptor.model_copy(
                    update={"description": self._computer_point_description(descriptor.name)}
                )
            served.append(descriptor)
        return served

    def served_extensions(
        self, extensions: list[EnvironmentExtension]
    ) -> list[EnvironmentExtension]:
        have = self._computer.operations
        served = []
        for ext in extensions:
            if ext.uri == names.COMPUTER_EXEC and "run_in_session" not in have:
                continue
            if ext.uri == names.COMPUTER_KEYBOARD and not self.has("keyboard"):
                continue
            if ext.uri == names.COMPUTER_DISPLAY and "set_display" not in have:
                params = dict(ext.params or {})
                params["methods"] = {
                    k: v for k, v in (params.get("methods") or {}).items() if k != "set"
                }
                ext = ext.model_copy(update={"params": params})
            served.append(ext)
        return served

    def served_operations(self, operations: list[str]) -> list[str]:
        """data/add writes under a POSIX home: served on Linux."""
        return [op for op in operations if op != "data/add" or self.platform.os == "linux"]

    def extension_params(self, uri: str) -> dict:
        if uri == names.COMPUTER_EXEC:
            return {
                "max_timeout_s": MAX_TIMEOUT_S,
                "max_output_bytes": self.settings.exec_output_bytes,
            }
        if uri == names.COMPUTER_KEYBOARD:
            return {"layouts": ["us"]}
        return {}

    def declared_extensions(self) -> list[EnvironmentExtension]:
        from agentenv_protocol.intake import IntakeDeclaration, IntakeFormat, intake_extension

        tree = [IntakeFormat(part="file", format="file-tree")]
        adds = "data/add" in self.served_operations(["data/add"])
        declared = [
            EnvironmentExtension(uri=names.COMPUTER, params=self._computer_params()),
            intake_extension(IntakeDeclaration(add=tree if adds else None, get=tree)),
        ]
        if self.has("pointer"):
            declared.append(
                EnvironmentExtension(
                    uri=names.COMPUTER_POINTER, params={"buttons": list(self.buttons)}
                )
            )
        return declared

    # -- readiness -------------------------------------------------------------------------

    async def on_tool_call(self, context: ToolContext) -> None:
        """Tools refuse `device_unavailable` until the ready checks passed once."""
        state = self._computer
        if state.ready:
            return
        async with state.ready_lock:
            if state.ready:
                return
            status = await self._computer_ready_status()
        if not status["ready"]:
            failed = "; ".join(
                f"{c['name']}: {c['detail']}" for c in status["checks"] if not c["ok"]
            )
            raise DeviceUnavailable(f"the computer isn't ready: {failed}")

    async def _computer_ready_status(self) -> dict:
        results: list[ReadyCheck] = []
        shown = None
        try:
            shown = await self._computer_display()
            results.append(ReadyCheck("display", True, shown.describe()))
        except ComputerError as e:
            results.append(ReadyCheck("display", False, e.message))
        if shown is None:
            results.append(ReadyCheck("capture", False, "the display didn't answer"))
        else:
            try:
                image = await self._computer_grab(shown)
                results.append(ReadyCheck("capture", True, f"{image.size[0]}×{image.size[1]}"))
            except ComputerError as e:
                results.append(ReadyCheck("capture", False, e.message))
        try:
            own = list(await ops.call(self.ready_checks))
            if not all(isinstance(c, ReadyCheck) for c in own):
                raise TypeError(f"ready_checks returned {own!r}, not ReadyCheck values")
            results += own
        except Exception as e:
            results.append(ReadyCheck("driver", False, f"{type(e).__name__}: {e}"))
        ready = all(c.ok for c in results)
        if ready:
            self._computer.ready = True
        return {"ready": ready, "checks": [c.as_dict() for c in results]}

    # -- serving ---------------------------------------------------------------------------

    def _computer_initialized(self) -> None:
        if "_computer" not in vars(self):
            raise TypeError(f"{type(self).__name__}.__init__ must call super().__init__()")

    def create_app(self) -> Any:
        """mcp's FastMCP app serving this driver (built once; `self.mcp` afterwards)."""
        self._computer_initialized()
        if self.mcp is None:
            from mcp.server.fastmcp import FastMCP

            app = FastMCP(self.card.name)
            app.settings.host = os.environ.get("MCP_HOST", DEFAULT_HOST)
            app.settings.port = int(os.environ.get("MCP_PORT", DEFAULT_PORT))
            if app.settings.transport_security is not None:
                app.settings.transport_security.enable_dns_rebinding_protection = False
            self.mount(app)
        return self.mcp

    def mount(self, app: Any) -> Any:
        self._computer_initialized()
        return super().mount(app)

    def serve(self, transport: str = "streamable-http", **kwargs: Any) -> None:
        self.create_app()
        super().serve(transport, **kwargs)

    def _build_card(self) -> EnvironmentCard:
        """The card this driver serves."""
        return self.environment_app().card

    @classmethod
    def declaration(cls, platform: Platform) -> EnvironmentCard:
        """The card a driver class serves on `platform`, built without running its __init__
        (so without its backend's packages)."""
        driver = cls.__new__(cls)
        ComputerDriverEnvironment.__init__(driver, ComputerSettings(), platform)
        card = driver._build_card()
        configured = (getattr(cls, CARD_ATTR, None) or {}).get("name")
        return card.model_copy(update={"name": configured or cls.__name__})

    # -- operations --------------------------------------------------------------------------

    def _computer_op(self, op: str) -> Any:
        name = self._computer.operations.get(op)
        return getattr(self, name) if name else None

    async def _computer_call(self, op: str, *args: Any) -> Any:
        method = self._computer_op(op)
        if method is None:
            raise Internal(f"this computer has no @{op}")
        try:
            return await ops.call(method, *args)
        except ComputerError:
            raise
        except Exception as e:
            raise Internal(f"@{op} failed: {type(e).__name__}: {e}", applied="unknown") from e

    async def _computer_input(self, op: str, *args: Any) -> Any:
        """An input operation: a failure is `delivery_failed` (it may have reached the screen);
        a refusal after earlier input of the same call is `applied: unknown`."""
        delivered = _delivered.get()
        method = self._computer_op(op)
        if method is None:
            raise Internal(f"this computer has no @{op}")
        try:
            value = await ops.call(method, *args)
        except ComputerError as e:
            if delivered and delivered[0]:
                e.applied = "unknown"
            raise
        except Exception as e:
            raise DeliveryFailed(f"@{op} failed: {type(e).__name__}: {e}") from e
        if delivered is not None:
            delivered[0] += 1
        return value

    async def _computer_display(self) -> ops.Display:
        shown = await self._computer_call("display")
        if not isinstance(shown, ops.Display) or not shown.valid():
            raise Internal(f"@display returned {shown!r}, not a Display of positive size and scale")
        return shown

    async def _computer_grab(self, shown: ops.Display) -> Any:
        grabbed = await self._computer_call("capture")
        try:
            return as_image(grabbed, shown)
        except (TypeError, ValueError, OSError) as e:
            raise Internal(str(e), applied="no") from e

    async def _computer_capture(self, identity: str) -> Frame:
        mark = self._computer.queue.mark()
        shown = await self._computer_display()
        image = await self._computer_grab(shown)
        return self._computer.frames.add(image, shown, mark, identity=identity)

    def _computer_crop(
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

    @ops.run_in_session(os="linux")
    async def _computer_linux_run_in_session(
        self, argv: list[str], cwd: Path, env: dict, timeout_s: float
    ) -> ExecResult:
        """The Linux default: the command in its own process group under the session user."""
        try:
            return await linux.run(argv, cwd, env, timeout_s, self.settings.exec_output_bytes)
        except OSError as e:
            raise InvalidArgument(f"can't run {argv[0]!r}: {e.strerror or e}") from None

    # -- card ------------------------------------------------------------------------------

    def _computer_space_defaults(self) -> tuple[str, int]:
        return self.settings.default_space, self.settings.default_norm_scale

    def _computer_point_description(self, name: str) -> str:
        text = (getattr(type(self), name).__doc__ or "").strip()
        space, scale = self._computer_space_defaults()
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
            "max_wait_ms": self.max_wait_ms,
            "keys": "all" if self.keys is None else list(self.keys),
            "delivery": "foreground",
            "spaces": ["frame", "norm"],
            "default_space": self.settings.default_space,
            "default_norm_scale": self.settings.default_norm_scale,
        }


def computer_driver(name: str | None = None, *, supports: list[dict] | None = None) -> Any:
    """Name a driver class's card and declare the platforms it supports (entries of
    `{"os": {"type", "distribution", "version", "display"}, "arch": [...]}`)."""

    def deco(cls: Any) -> Any:
        if not (isinstance(cls, type) and issubclass(cls, ComputerDriverEnvironment)):
            raise TypeError(
                f"computer_driver decorates a ComputerDriverEnvironment subclass, got {cls!r}"
            )
        if name is not None:
            environment_card(name=name)(cls)
        if supports is not None:
            from agentenv_protocol.computer.platform import supported

            for entry in supports:
                supported(entry)
            type.__setattr__(cls, "supports", list(supports))
        return cls

    return deco
