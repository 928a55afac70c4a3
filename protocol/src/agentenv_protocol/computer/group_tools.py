"""The pointer group (computer-pointer/v1) and keyboard group (computer-keyboard/v1) tools,
served only by a driver that implements their operations. Keys held down are released after
`max_hold_ms` (the timer restarts on each hold), by `computer_keyboard_up`, or at the end of a
timed hold even when its call is cancelled."""

# No `from __future__ import annotations`: FastMCP reads these tools' parameter annotations
# as objects when they are mounted on it.
import asyncio
from typing import Any

import anyio
from mcp.types import CallToolResult

from agentenv_protocol.authoring import tool
from agentenv_protocol.computer.errors import InvalidArgument
from agentenv_protocol.computer.frames import Frame
from agentenv_protocol.computer.spaces import check_space
from agentenv_protocol.computer.tools import MAX_TIMED_HOLD_MS, Number, num
from agentenv_protocol.context import ToolContext

POINTERS = [
    {"id": "default", "kind": "foreground", "label": "The computer's pointer", "default": True}
]


class GroupTools:
    """Pointer and keyboard tools of `ComputerDriverEnvironment` (mixed into it)."""

    @tool
    async def computer_pointer_move(
        self: Any,
        context: ToolContext,
        x: Number,
        y: Number,
        frame_id: str | None = None,
        space: str | None = None,
        norm_scale: int | None = None,
        screenshot: bool = False,
    ) -> CallToolResult:
        """Move the pointer to (x, y) in a frame (frame_id, else your latest) without pressing."""
        space, scale = check_space(space, norm_scale, *self._computer_space_defaults())
        identity = self.caller_identity(context)

        async def act() -> tuple[str, Any, Frame | None]:
            frame, sx, sy = self._computer_place(identity, frame_id, x, y, space, scale)
            effect = await self._computer_input("pointer_move", sx, sy)
            where = (
                f"({num(x)}, {num(y)}){self._computer_norm_note(space, scale)} in {frame.frame_id}"
            )
            return f"Moved the pointer at {where}", effect, frame

        return await self._computer_queued(context, act, screenshot)

    @tool
    async def computer_pointer_down(
        self: Any,
        context: ToolContext,
        button: str = "left",
        x: Number | None = None,
        y: Number | None = None,
        frame_id: str | None = None,
        space: str | None = None,
        norm_scale: int | None = None,
        screenshot: bool = False,
    ) -> CallToolResult:
        """Press `button` and keep it down (at (x, y) when given, moving there first)."""
        self._computer_check_button(button)
        if (x is None) != (y is None) or (x is None and frame_id is not None):
            raise InvalidArgument("give x and y, or neither to press at the pointer")
        space, scale = check_space(space, norm_scale, *self._computer_space_defaults())
        identity = self.caller_identity(context)

        async def act() -> tuple[str, Any, Frame | None]:
            frame, where = None, ""
            if x is not None:
                frame, sx, sy = self._computer_place(identity, frame_id, x, y, space, scale)
                await self._computer_input("pointer_move", sx, sy)
                where = f" at ({num(x)}, {num(y)}){self._computer_norm_note(space, scale)} in {frame.frame_id}"
            effect = await self._computer_input("pointer_down", button)
            return f"Pressed {button}{where}", effect, frame

        return await self._computer_queued(context, act, screenshot)

    @tool
    async def computer_pointer_up(
        self: Any,
        context: ToolContext,
        button: str = "left",
        screenshot: bool = False,
    ) -> CallToolResult:
        """Release `button` where the pointer is."""
        self._computer_check_button(button)

        async def act() -> tuple[str, Any, Frame | None]:
            effect = await self._computer_input("pointer_up", button)
            return f"Released {button}", effect, None

        return await self._computer_queued(context, act, screenshot)

    @tool
    async def computer_pointer_position(
        self: Any, context: ToolContext, frame_id: str | None = None
    ) -> CallToolResult:
        """Where the pointer is: on the screen, and in a frame (frame_id, else your latest)."""
        identity = self.caller_identity(context)
        sx, sy = await self._computer_pointer()
        fields: dict = {"screen": {"x": sx, "y": sy}}
        lookup = self._computer.frames.get(frame_id, identity)
        if lookup.error is not None:
            if frame_id is not None:
                raise lookup.error
            return self._computer_answer(f"The pointer is at screen ({sx}, {sy})", fields)
        frame = lookup.result()
        fx, fy = frame.from_screen(sx, sy)
        inside = frame.contains(fx, fy)
        fields.update(frame_id=frame.frame_id, x=fx, y=fy, inside_frame=inside)
        if inside:
            summary = (
                f"The pointer is at ({num(fx)}, {num(fy)}) in {frame.frame_id}, screen ({sx}, {sy})"
            )
        else:
            summary = f"The pointer is at screen ({sx}, {sy}), outside {frame.frame_id}"
        return self._computer_answer(summary, fields)

    @tool
    async def computer_pointer_list(self: Any) -> CallToolResult:
        """The pointers this computer has (one: the foreground pointer)."""
        return self._computer_answer("One pointer: the computer's pointer", {"pointers": POINTERS})

    @tool
    async def computer_keyboard_down(
        self: Any,
        context: ToolContext,
        keys: list[str],
        hold_ms: int | None = None,
        screenshot: bool = False,
    ) -> CallToolResult:
        """Hold `keys` down: for `hold_ms` then release them (in reverse order), or until
        computer_keyboard_up (or the computer's max_hold_ms) releases them."""
        chord = self._computer_check_keys(keys)
        if hold_ms is not None and (
            not isinstance(hold_ms, int) or not 1 <= hold_ms <= MAX_TIMED_HOLD_MS
        ):
            raise InvalidArgument(f"hold_ms is from 1 to {MAX_TIMED_HOLD_MS} ms, got {hold_ms!r}")
        identity = self.caller_identity(context)

        async def act() -> tuple[str, Any, Frame | None]:
            if hold_ms is None:
                effect = await self._computer_input("key_down", list(chord))
                held = self._computer.held.setdefault(identity, [])
                held += [k for k in chord if k not in held]
                self._computer_restart_release(identity)
                return f"Holding {'+'.join(chord)} down", effect, None
            effect = await self._computer_input("key_down", list(chord))
            try:
                await anyio.sleep(hold_ms / 1000)
            finally:
                with anyio.CancelScope(shield=True):
                    await self._computer_input("key_up", list(reversed(chord)))
            return f"Held {'+'.join(chord)} for {hold_ms} ms", effect, None

        return await self._computer_queued(context, act, screenshot)

    @tool
    async def computer_keyboard_up(
        self: Any,
        context: ToolContext,
        keys: list[str] | None = None,
        screenshot: bool = False,
    ) -> CallToolResult:
        """Release keys you hold (all of them, last pressed first, when `keys` is not given)."""
        identity = self.caller_identity(context)
        named = self._computer_check_keys(keys) if keys is not None else None

        async def act() -> tuple[str, Any, Frame | None]:
            held = self._computer.held.get(identity, [])
            if not held:
                raise InvalidArgument("no keys are held: computer_keyboard_down holds them")
            if named is None:
                release = list(reversed(held))
            else:
                absent = [k for k in named if k not in held]
                if absent:
                    raise InvalidArgument(f"{absent} are not held; held: {held}")
                release = named
            effect = await self._computer_input("key_up", release)
            self._computer_forget_held(identity, release)
            return f"Released {'+'.join(release)}", effect, None

        return await self._computer_queued(context, act, screenshot)

    # -- held keys --------------------------------------------------------------------------

    def _computer_forget_held(self: Any, identity: str, released: list[str]) -> None:
        held = [k for k in self._computer.held.get(identity, []) if k not in released]
        if held:
            self._computer.held[identity] = held
            return
        self._computer.held.pop(identity, None)
        timer = self._computer.release_timers.pop(identity, None)
        if timer is not None and timer is not asyncio.current_task():
            timer.cancel()

    def _computer_restart_release(self: Any, identity: str) -> None:
        """(Re)start the timer that releases `identity`'s held keys after max_hold_ms. A plain
        asyncio task: it outlives the call that started it, which no task group here does."""
        timer = self._computer.release_timers.pop(identity, None)
        if timer is not None:
            timer.cancel()
        self._computer.release_timers[identity] = asyncio.get_running_loop().create_task(
            self._computer_release_later(identity)
        )

    async def _computer_release_later(self: Any, identity: str) -> None:
        await anyio.sleep(self.settings.max_hold_ms / 1000)
        async with self._computer.queue.turn(None):
            held = list(self._computer.held.get(identity, []))
            if held:
                release = list(reversed(held))
                try:
                    await self._computer_input("key_up", release)
                finally:
                    self._computer_forget_held(identity, release)
