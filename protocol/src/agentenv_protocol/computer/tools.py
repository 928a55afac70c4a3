"""The computer's MCP tools, as `@tool` methods of the driver base class: each checks every
argument before anything reaches the screen, runs input through the queue one call at a time,
and answers a summary an agent can read plus structured fields (and the frame when asked)."""

# No `from __future__ import annotations`: FastMCP reads these tools' parameter annotations
# as objects when they are mounted on it.
import contextvars
from typing import Any

import anyio
from mcp.types import CallToolResult

from agentenv_protocol.authoring import tool
from agentenv_protocol.computer import keys as key_names
from agentenv_protocol.computer.errors import ComputerError, Internal, InvalidArgument, Unsupported
from agentenv_protocol.computer.frames import Frame, check_encoding
from agentenv_protocol.computer.spaces import check_space, frame_point
from agentenv_protocol.context import ToolContext

Number = int | float
#: How many input operations the current call has delivered (a refusal after some is then
#: `applied: unknown`).
_delivered: contextvars.ContextVar[list[int] | None] = contextvars.ContextVar(
    "agentenv_computer_delivered", default=None
)
DIRECTIONS = ("up", "down", "left", "right")
MAX_TEXT = 10_000
MAX_REPEAT = 100
MAX_SCROLL = 100
MAX_DRAG_MS = 10_000
MAX_TIMED_HOLD_MS = 10_000
_ALLOWED_CONTROLS = "\n\t"


def num(value: Any) -> str:
    """A coordinate as the summaries print it: whole numbers without a decimal point."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return f"{value:g}" if isinstance(value, float) else str(value)


def _modifiers(driver: Any, modifiers: Any) -> list[str]:
    """Modifier keys in W3C case (and among the driver's keys when it declares them)."""
    if modifiers is None:
        return []
    if not isinstance(modifiers, list):
        raise InvalidArgument("modifiers is a list of W3C key values, such as ['Shift']")
    return driver._computer_check_keys(modifiers) if modifiers else []


def _check_text(text: str) -> None:
    if not text:
        raise InvalidArgument("text is empty: give at least one character")
    if len(text) > MAX_TEXT:
        raise InvalidArgument(f"text is at most {MAX_TEXT} characters, got {len(text)}")
    for i, ch in enumerate(text):
        code = ord(ch)
        if (code < 32 or 0x7F <= code <= 0x9F) and ch not in _ALLOWED_CONTROLS:
            raise InvalidArgument(
                f"text has control character {ch!r} at {i}: only newlines and tabs can be "
                "typed; send other keys with computer_key"
            )


def _check_range(name: str, value: int, low: int, high: int, unit: str = "") -> None:
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise InvalidArgument(f"{name} is from {low} to {high}{unit}, got {value!r}")


class ComputerTools:
    """The tool surface of `ComputerDriverEnvironment` (mixed into it)."""

    # -- observing ---------------------------------------------------------------------------

    @tool
    async def computer_screenshot(
        self: Any,
        context: ToolContext,
        format: str = "png",
        quality: int | None = None,
        region: list[Number] | None = None,
        frame_id: str | None = None,
        space: str | None = None,
        norm_scale: int | None = None,
    ) -> CallToolResult:
        """Take a screenshot: a new frame of the whole display, or with `region` ([x1, y1, x2,
        y2]) a native crop of a frame (frame_id, else your latest) whose points map back exactly.
        format 'png' (default) or 'jpeg' with quality 1-95."""
        format, quality = check_encoding(format, quality)
        identity = self.caller_identity(context)
        if region is None:
            if frame_id is not None:
                raise InvalidArgument("frame_id names the frame a region crops: give region too")
            frame = await self._computer_capture(identity)
            summary = f"Captured {frame.frame_id}: {frame.width}×{frame.height} of the {frame.display.describe()} display"
        else:
            space, scale = check_space(space, norm_scale, *self._computer_space_defaults())
            frame = self._computer_crop(identity, frame_id, region, space, scale)
            summary = (
                f"Cropped {frame.frame_id}: {frame.width}×{frame.height} of "
                f"{frame.parent_frame_id} at ({frame.origin[0]}, {frame.origin[1]})"
            )
        return self._computer_answer(
            summary, frame.data(), frame=frame, encoding=(format, quality), nest=False
        )

    @tool
    async def computer_wait(
        self: Any, context: ToolContext, ms: int, screenshot: bool = False
    ) -> CallToolResult:
        """Wait `ms` milliseconds (0 to 60000), then optionally take a screenshot."""
        _check_range("ms", ms, 0, self.max_wait_ms, " ms")
        await anyio.sleep(ms / 1000)
        return await self._computer_after(
            context, f"Waited {ms} ms", {"waited_ms": ms}, screenshot, input=False
        )

    # -- input ----------------------------------------------------------------------------

    @tool
    async def computer_click(
        self: Any,
        context: ToolContext,
        x: Number | None = None,
        y: Number | None = None,
        button: str = "left",
        count: int = 1,
        modifiers: list[str] | None = None,
        frame_id: str | None = None,
        space: str | None = None,
        norm_scale: int | None = None,
        screenshot: bool = False,
    ) -> CallToolResult:
        """Click `button` `count` times at (x, y) in a frame (frame_id, else your latest), with
        modifier keys held; without x and y, at the pointer."""
        self._computer_check_button(button)
        if not isinstance(count, int) or not 1 <= count <= self.max_click_count:
            raise InvalidArgument(
                f"count is from 1 to {self.max_click_count} on this computer, got {count!r}"
            )
        held = _modifiers(self, modifiers)
        at_pointer = self._computer_point_or_pointer(x, y, frame_id)
        space, scale = check_space(space, norm_scale, *self._computer_space_defaults())
        times = f" ×{count}" if count > 1 else ""
        identity = self.caller_identity(context)

        async def act() -> tuple[str, Any, Frame | None]:
            if at_pointer:
                sx, sy = await self._computer_pointer()
                where, frame = f"at the pointer, screen ({sx}, {sy})", None
            else:
                frame, sx, sy = self._computer_place(identity, frame_id, x, y, space, scale)
                where = f"at ({num(x)}, {num(y)}){self._computer_norm_note(space, scale)} in {frame.frame_id}"
            effect = await self._computer_input("click", sx, sy, button, count, held)
            return f"Clicked {button}{times} {where}", effect, frame

        return await self._computer_queued(context, act, screenshot)

    @tool
    async def computer_drag(
        self: Any,
        context: ToolContext,
        path: list[list[Number]],
        button: str = "left",
        duration_ms: int = 500,
        modifiers: list[str] | None = None,
        frame_id: str | None = None,
        space: str | None = None,
        norm_scale: int | None = None,
        screenshot: bool = False,
    ) -> CallToolResult:
        """Press `button` at the first point of `path`, move through the others over
        `duration_ms`, release at the last."""
        self._computer_check_button(button)
        if not 2 <= len(path) <= self.max_drag_points:
            raise InvalidArgument(
                f"path has 2 to {self.max_drag_points} points on this computer, got {len(path)}"
            )
        for point in path:
            if len(point) != 2:
                raise InvalidArgument(f"each point of path is [x, y], got {point!r}")
        _check_range("duration_ms", duration_ms, 0, MAX_DRAG_MS, " ms")
        held = _modifiers(self, modifiers)
        space, scale = check_space(space, norm_scale, *self._computer_space_defaults())
        identity = self.caller_identity(context)

        async def act() -> tuple[str, Any, Frame | None]:
            frame = None
            screen_path = []
            for px, py in path:
                frame, sx, sy = self._computer_place(identity, frame_id, px, py, space, scale)
                screen_path.append([sx, sy])
            assert frame is not None
            effect = await self._computer_input("drag", screen_path, button, duration_ms, held)
            summary = f"Dragged {button} through {len(path)} points of {frame.frame_id} in {duration_ms} ms"
            return summary, effect, frame

        return await self._computer_queued(context, act, screenshot)

    @tool
    async def computer_scroll(
        self: Any,
        context: ToolContext,
        direction: str,
        amount: int = 3,
        x: Number | None = None,
        y: Number | None = None,
        modifiers: list[str] | None = None,
        frame_id: str | None = None,
        space: str | None = None,
        norm_scale: int | None = None,
        screenshot: bool = False,
    ) -> CallToolResult:
        """Scroll the content `direction` (up, down, left, right) by `amount` wheel steps at
        (x, y) in a frame; without x and y, at the pointer."""
        if direction not in DIRECTIONS:
            raise InvalidArgument(f"direction is one of {', '.join(DIRECTIONS)}, got {direction!r}")
        _check_range("amount", amount, 1, MAX_SCROLL)
        held = _modifiers(self, modifiers)
        at_pointer = self._computer_point_or_pointer(x, y, frame_id)
        space, scale = check_space(space, norm_scale, *self._computer_space_defaults())
        identity = self.caller_identity(context)

        async def act() -> tuple[str, Any, Frame | None]:
            if at_pointer:
                sx, sy = await self._computer_pointer()
                where, frame = f"at the pointer, screen ({sx}, {sy})", None
            else:
                frame, sx, sy = self._computer_place(identity, frame_id, x, y, space, scale)
                where = f"at ({num(x)}, {num(y)}){self._computer_norm_note(space, scale)} in {frame.frame_id}"
            effect = await self._computer_input("scroll", sx, sy, direction, amount, held)
            return f"Scrolled {direction} {amount} {where}", effect, frame

        return await self._computer_queued(context, act, screenshot)

    @tool
    async def computer_type(
        self: Any, context: ToolContext, text: str, screenshot: bool = False
    ) -> CallToolResult:
        """Type `text` as it is (any Unicode, newlines and tabs included) into the focused app."""
        _check_text(text)

        async def act() -> tuple[str, Any, Frame | None]:
            effect = await self._computer_input("type_text", text)
            return f"Typed {len(text)} characters", effect, None

        return await self._computer_queued(context, act, screenshot)

    @tool
    async def computer_key(
        self: Any,
        context: ToolContext,
        keys: list[str],
        repeat: int = 1,
        screenshot: bool = False,
    ) -> CallToolResult:
        """Press a key or a chord: `keys` are W3C key values pressed together, such as
        ['Control', 's'], `repeat` times (1 to 100)."""
        chord = self._computer_check_keys(keys)
        _check_range("repeat", repeat, 1, MAX_REPEAT)

        async def act() -> tuple[str, Any, Frame | None]:
            effect = None
            for _ in range(repeat):
                effect = await self._computer_input("press", list(chord))
            times = f" ×{repeat}" if repeat > 1 else ""
            return f"Pressed {'+'.join(chord)}{times}", effect, None

        return await self._computer_queued(context, act, screenshot)

    # -- helpers the tools share ------------------------------------------------------------

    def _computer_check_button(self: Any, button: str) -> None:
        if button not in self.buttons:
            raise Unsupported(
                f"this computer has no {button} button; it has {', '.join(self.buttons)}"
            )

    def _computer_check_keys(self: Any, keys: list) -> list[str]:
        chord = key_names.canonical_all(keys)
        if self.keys is not None:
            known = {key_names.canonical(k) for k in self.keys}
            lower = {k.lower(): k for k in known}
            absent = [k for k in chord if k not in known and lower.get(k.lower()) is None]
            if absent:
                raise Unsupported(f"this computer has no keys {absent}; it has {sorted(known)}")
        return chord

    def _computer_point_or_pointer(self: Any, x: Any, y: Any, frame_id: Any) -> bool:
        """True to act at the pointer (no point given and the driver can read the pointer)."""
        if x is not None and y is not None:
            return False
        if (x is None) != (y is None) or frame_id is not None:
            raise InvalidArgument("give x and y, or neither to act at the pointer")
        if self._computer_op("pointer_position") is None:
            raise InvalidArgument("give x and y")
        return True

    @staticmethod
    def _computer_norm_note(space: str, scale: int) -> str:
        return f" (norm {scale})" if space == "norm" else ""

    def _computer_place(
        self: Any,
        identity: str,
        frame_id: str | None,
        x: Any,
        y: Any,
        space: str,
        scale: int,
    ) -> tuple[Frame, int, int]:
        frame = self._computer.frames.get(frame_id, identity).result()
        fx, fy = frame_point(frame, x, y, space, scale)
        sx, sy = frame.to_screen(fx, fy)
        return frame, sx, sy

    async def _computer_queued(
        self: Any, context: ToolContext, act: Any, screenshot: bool
    ) -> CallToolResult:
        """Run `act` in the caller's turn of the input queue, then answer (and capture)."""
        identity = self.caller_identity(context)
        async with self._computer.queue.turn(self.settings.queue_wait_s):
            token = _delivered.set([0])
            try:
                summary, effect, frame = await act()
            finally:
                _delivered.reset(token)
            reference = frame or self._computer.frames.latest(identity)
            others = self._computer.queue.others_since(reference.mark, identity) if reference else 0
            self._computer.queue.count(identity)
        fields: dict = {"applied": "yes", "delivery": "foreground", "others_since_frame": others}
        if effect is not None:
            fields["effect"] = effect.as_dict() if hasattr(effect, "as_dict") else effect
        return await self._computer_after(context, summary, fields, screenshot, input=True)

    async def _computer_after(
        self: Any,
        context: ToolContext,
        summary: str,
        fields: dict,
        screenshot: bool,
        *,
        input: bool,
    ) -> CallToolResult:
        """The answer of a call, with a fresh frame when asked; a screenshot that fails after
        input that was sent is reported in the summary (the input still counts as done)."""
        frame = None
        if screenshot:
            try:
                frame = await self._computer_capture(self.caller_identity(context))
                summary += f", then captured {frame.frame_id}"
            except ComputerError as e:
                if not input:
                    raise
                summary += f"; the screenshot after it failed ({e.code}: {e.message})"
        return self._computer_answer(summary, fields, frame=frame)

    def _computer_answer(
        self: Any,
        summary: str,
        fields: dict,
        *,
        frame: Frame | None = None,
        encoding: tuple[str, int | None] = ("png", None),
        nest: bool = True,
    ) -> Any:
        from agentenv_protocol.computer.frames import encode

        structured = {"summary": summary, **fields}
        if frame is not None and nest:
            structured["frame"] = frame.data()
        content: list[dict] = [{"type": "text", "text": summary}]
        if frame is not None:
            content.append(encode(frame.image, *encoding))
        return {"content": content, "structuredContent": structured, "isError": False}

    async def _computer_pointer(self: Any) -> tuple[int, int]:
        where = await self._computer_call("pointer_position")
        if (
            not isinstance(where, tuple | list)
            or len(where) != 2
            or not all(isinstance(v, int | float) and not isinstance(v, bool) for v in where)
        ):
            raise Internal(f"@pointer_position answered {where!r}, not (x, y)")
        return int(where[0]), int(where[1])
