"""The computer's REST extensions: computer-spaces (the default coordinate space, which the
point tools' descriptions name), computer-display (size and scale within the driver's modes),
computer-keyboard (key timing and layout) and computer-exec (a command in the session)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from agentenv_protocol.authoring import extension
from agentenv_protocol.computer import card as names
from agentenv_protocol.computer.errors import ComputerError, Internal, InvalidArgument, Unsupported
from agentenv_protocol.computer.operations import Display
from agentenv_protocol.computer.results import ExecResult
from agentenv_protocol.computer.spaces import check_space

LAYOUTS = ("us",)
MAX_TIMEOUT_S = 3600
KEYBOARD_RANGES = {
    "tap_hold_ms": (0, 10_000),
    "type_delay_ms": (0, 1_000),
    "max_hold_ms": (1, 600_000),
}


def _in_range(name: str, value: Any) -> int:
    low, high = KEYBOARD_RANGES[name]
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise InvalidArgument(f"{name} is from {low} to {high}, got {value!r}")
    return value


def _modes(modes: Any) -> str:
    return ", ".join(f"{w}×{h}" for w, h in modes)


class ComputerExtensions:
    """REST extensions of `ComputerDriverEnvironment` (mixed into it)."""

    # -- spaces --------------------------------------------------------------------------

    @extension(names.COMPUTER_SPACES, op="get", method="GET")
    async def computer_spaces_get(self: Any) -> dict:
        """The default coordinate space and norm scale."""
        space, scale = self._computer_space_defaults()
        return {"default_space": space, "default_norm_scale": scale}

    @extension(names.COMPUTER_SPACES, op="set")
    async def computer_spaces_set(
        self: Any,
        default_space: str | None = None,
        default_norm_scale: int | None = None,
    ) -> dict:
        """Set the default space and norm scale; the point tools' descriptions follow."""
        space, scale = check_space(
            default_space, default_norm_scale, *self._computer_space_defaults()
        )
        self.settings.default_space, self.settings.default_norm_scale = space, scale
        served = {t.name for t in self.mounted_card().capabilities.tools or []}
        for name in names.POINT_TOOLS:
            if name in served:
                await self.update_tool(name, description=self._computer_point_description(name))
        return await self.computer_spaces_get()

    # -- ready -----------------------------------------------------------------------------

    @extension(names.COMPUTER_READY, op="status", method="GET")
    async def computer_ready_status(self: Any) -> dict:
        """Whether the computer is ready: the display answers, a capture fits it, and the
        driver's own checks pass; each check with what it saw."""
        return await self._computer_ready_status()

    # -- display -------------------------------------------------------------------------

    @extension(names.COMPUTER_DISPLAY, op="get", method="GET")
    async def computer_display_get(self: Any) -> dict:
        """The display's size and scale, and the modes it can be set to."""
        shown = await self._computer_display()
        self._computer.frames.display = shown
        return {**shown.as_dict(), "modes": [list(m) for m in self.display_modes]}

    @extension(names.COMPUTER_DISPLAY, op="set")
    async def computer_display_set(self: Any, width: int, height: int, scale: float = 1.0) -> dict:
        """Change the display (one of its modes); frames taken before go stale."""
        if self._computer_op("set_display") is None:
            raise Unsupported("this computer's display can't be changed")
        if self.display_modes and (width, height) not in {tuple(m) for m in self.display_modes}:
            raise InvalidArgument(
                f"{width}×{height} is not one of this computer's display modes: "
                f"{_modes(self.display_modes)}"
            )
        if not 0.5 <= scale <= 4:
            raise InvalidArgument(f"scale is from 0.5 to 4, got {scale}")
        async with self._computer.queue.turn(self.settings.queue_wait_s):
            changed = await self._computer_call("set_display", width, height, float(scale))
            shown = changed if isinstance(changed, Display) else await self._computer_display()
            self._computer.frames.display = shown
        return {**shown.as_dict(), "modes": [list(m) for m in self.display_modes]}

    # -- keyboard ------------------------------------------------------------------------

    @extension(names.COMPUTER_KEYBOARD, op="get", method="GET")
    async def computer_keyboard_get(self: Any) -> dict:
        """Key timing and layout."""
        s = self.settings
        return {
            "tap_hold_ms": s.tap_hold_ms,
            "type_delay_ms": s.type_delay_ms,
            "layout": s.layout,
            "max_hold_ms": s.max_hold_ms,
        }

    @extension(names.COMPUTER_KEYBOARD, op="set")
    async def computer_keyboard_set(
        self: Any,
        tap_hold_ms: int | None = None,
        type_delay_ms: int | None = None,
        layout: str | None = None,
        max_hold_ms: int | None = None,
    ) -> dict:
        """Change key timing (all checked before any is applied); only the us layout exists."""
        given = {
            "tap_hold_ms": tap_hold_ms,
            "type_delay_ms": type_delay_ms,
            "max_hold_ms": max_hold_ms,
        }
        changes = {k: _in_range(k, v) for k, v in given.items() if v is not None}
        if layout is not None and layout not in LAYOUTS:
            raise Unsupported(
                f"layout {layout!r} is not served; this computer types {', '.join(LAYOUTS)}"
            )
        for name, value in changes.items():
            setattr(self.settings, name, value)
        return await self.computer_keyboard_get()

    # -- exec ----------------------------------------------------------------------------

    @extension(names.COMPUTER_EXEC, op="run")
    async def computer_exec_run(
        self: Any,
        argv: list[str],
        request_id: str,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        timeout_s: float = 60,
    ) -> dict:
        """Run a command in the session (cwd relative to the home); a repeated request_id
        answers the first run's result without running again."""
        if not argv:
            raise InvalidArgument("argv is a non-empty list: the program and its arguments")
        if not request_id:
            raise InvalidArgument("request_id is a non-empty string naming this run")
        if not 0 < timeout_s <= MAX_TIMEOUT_S:
            raise InvalidArgument(
                f"timeout_s is over 0 and at most {MAX_TIMEOUT_S}, got {timeout_s}"
            )
        home = Path(os.environ.get("HOME") or Path.home())
        folder = (home / cwd) if cwd else home

        async def start() -> dict:
            return await self._computer_exec(
                list(argv), folder.resolve(), dict(env or {}), float(timeout_s)
            )

        return await self._computer.runs.once(request_id, start)

    async def _computer_exec(
        self: Any, argv: list[str], cwd: Path, env: dict, timeout_s: float
    ) -> dict:
        cap = self.settings.exec_output_bytes
        result = await self._computer_call("run_in_session", argv, cwd, env, timeout_s)
        if not isinstance(result, ExecResult):
            raise Internal(f"@run_in_session answered {type(result).__name__}, not an ExecResult")
        out, err = bytes(result.stdout or b""), bytes(result.stderr or b"")
        return {
            "exit_code": result.exit_code,
            "stdout": out[:cap].decode("utf-8", "replace"),
            "stderr": err[:cap].decode("utf-8", "replace"),
            "truncated": len(out) > cap or len(err) > cap,
            "timed_out": bool(result.timed_out),
        }


__all__ = ["ComputerExtensions", "ComputerError"]
