"""The Linux defaults of a computer driver.

- POSIX: run a command in the session (its own process group, killed whole at its timeout;
  output a background app keeps open is drained after the call returns) and write a file
  atomically under the home;
- X11: `X11Desktop`, a screenshot of the X display and pointer and keyboard input through the
  XTEST extension, with python-xlib (and Pillow for images). It connects to `$DISPLAY` (the
  virtual display `computer.runtime` starts); its calls block, so an async driver runs them in a
  worker thread. Both packages are imported when a desktop is made, not with this module.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import signal
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from agentenv_protocol.computer.results import ExecResult

#: How long output is still read (and dropped) after a command returned; then the pipe closes.
DRAIN_S = 30.0
#: How long to wait, once the command exited, for output already written to arrive.
SETTLE_S = 0.1
CHUNK = 65536
POLL_S = 0.02
_draining: set = set()


async def _read(stream: asyncio.StreamReader, sink: bytearray, cap: int, over: list) -> None:
    while True:
        chunk = await stream.read(CHUNK)
        if not chunk:
            return
        room = cap + 1 - len(sink)
        if room > 0:
            sink += chunk[:room]
        if len(sink) > cap:
            over[0] = True


def _kill_group(process: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


async def _exited(process: asyncio.subprocess.Process) -> int:
    """The exit code once the process exited. Polled: `Process.wait()` also waits for its pipes
    to close, which a background child holding them open delays."""
    while process.returncode is None:
        await asyncio.sleep(POLL_S)
    return process.returncode


async def _drain(readers: list[asyncio.Task]) -> None:
    try:
        await asyncio.wait_for(asyncio.gather(*readers, return_exceptions=True), DRAIN_S)
    except TimeoutError:
        pass
    finally:
        for reader in readers:
            reader.cancel()


async def run(
    argv: list[str], cwd: Path, env: dict[str, str], timeout_s: float, cap: int
) -> ExecResult:
    """Run `argv`; its streams are kept up to `cap` + 1 bytes (so a caller sees the cut)."""
    process = await asyncio.create_subprocess_exec(
        *argv,
        cwd=cwd,
        env={**os.environ, **env},
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
    )
    out, err, over = bytearray(), bytearray(), [False]
    assert process.stdout is not None and process.stderr is not None
    readers = [
        asyncio.ensure_future(_read(process.stdout, out, cap, over)),
        asyncio.ensure_future(_read(process.stderr, err, cap, over)),
    ]
    timed_out = False
    try:
        await asyncio.wait_for(_exited(process), timeout_s)
    except TimeoutError:
        timed_out = True
        _kill_group(process)
        await _exited(process)
    except BaseException:
        _kill_group(process)
        raise
    _, pending = await asyncio.wait(readers, timeout=SETTLE_S)
    if pending:
        drain = asyncio.ensure_future(_drain(list(pending)))
        _draining.add(drain)
        drain.add_done_callback(_draining.discard)
    if timed_out:
        return ExecResult(None, bytes(out), bytes(err), True)
    return ExecResult(process.returncode, bytes(out), bytes(err), False)


def write_atomic(target: Path, data: bytes) -> None:
    """Write `data` to `target` through a temporary file in its folder (fsync, rename); the
    temporary file is removed when anything fails."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise


#: Mouse buttons and their X button numbers.
BUTTONS = {"left": 1, "middle": 2, "right": 3, "back": 8, "forward": 9}
#: The pause between the clicks of a double or triple click, and how long a chord is held.
CLICK_GAP_S = 0.04
TAP_HOLD_S = 0.03
#: Scroll directions and the X buttons that scroll.
SCROLL_BUTTONS = {"up": 4, "down": 5, "left": 6, "right": 7}
#: Key names a caller may use (DOM `KeyboardEvent.key` values and common short forms) and the
#: X keysym names they stand for; any other single character is its own key.
KEY_NAMES = {
    "enter": "Return",
    "return": "Return",
    "tab": "Tab",
    "escape": "Escape",
    "esc": "Escape",
    "backspace": "BackSpace",
    "delete": "Delete",
    "space": "space",
    " ": "space",
    "arrowup": "Up",
    "arrowdown": "Down",
    "arrowleft": "Left",
    "arrowright": "Right",
    "up": "Up",
    "down": "Down",
    "left": "Left",
    "right": "Right",
    "home": "Home",
    "end": "End",
    "pageup": "Prior",
    "pagedown": "Next",
    "control": "Control_L",
    "ctrl": "Control_L",
    "shift": "Shift_L",
    "alt": "Alt_L",
    "meta": "Super_L",
    "super": "Super_L",
    **{f"f{n}": f"F{n}" for n in range(1, 13)},
}
#: Characters typed as a named key.
TYPED_AS_KEY = {"\n": "Return", "\t": "Tab"}


class UnsupportedKey(ValueError):
    """A key or character this desktop cannot send (the message names it)."""


class X11Desktop:
    """One connection to an X display, used by one call at a time (a lock guards it)."""

    def __init__(self, display: str | None = None) -> None:
        from Xlib import display as xdisplay

        self._d = xdisplay.Display(display)
        if not self._d.has_extension("XTEST"):
            raise RuntimeError("the X server has no XTEST extension: input cannot be sent")
        self._lock = threading.Lock()
        self._screen = self._d.screen()

    def close(self) -> None:
        self._d.close()

    def size(self) -> tuple[int, int]:
        """The screen's (width, height) in pixels."""
        return self._screen.width_in_pixels, self._screen.height_in_pixels

    def screenshot(self) -> Any:
        """The whole screen as an RGB `PIL.Image`."""
        from PIL import Image
        from Xlib import X

        width, height = self.size()
        with self._lock:
            raw = self._screen.root.get_image(0, 0, width, height, X.ZPixmap, 0xFFFFFFFF)
        return Image.frombytes("RGB", (width, height), raw.data, "raw", "BGRX")

    def screenshot_png(self) -> bytes:
        """The whole screen as PNG bytes."""
        out = io.BytesIO()
        self.screenshot().save(out, format="PNG")
        return out.getvalue()

    def pointer(self) -> tuple[int, int]:
        """Where the pointer is, in screen pixels."""
        with self._lock:
            reply = self._screen.root.query_pointer()
        return reply.root_x, reply.root_y

    def move(self, x: int, y: int) -> None:
        self._check_point(x, y)
        with self._lock:
            self._fake("MotionNotify", x=int(x), y=int(y))
            self._d.sync()

    def click(
        self, x: int, y: int, button: str = "left", count: int = 1, modifiers: Sequence[str] = ()
    ) -> None:
        """Move to (x, y) and click `button` `count` times, holding `modifiers` (key names)."""
        self._check_button(button)
        if not 1 <= count <= 3:
            raise ValueError(f"count {count}: expected 1, 2 or 3")
        held = [self._codes(k) for k in modifiers]
        self.move(x, y)
        with self._lock, self._holding(held):
            for i in range(count):
                self._fake("ButtonPress", BUTTONS[button])
                self._fake("ButtonRelease", BUTTONS[button])
                if i + 1 < count:
                    self._d.sync()
                    time.sleep(CLICK_GAP_S)

    def button(self, button: str, down: bool) -> None:
        """Press (`down`) or release `button` where the pointer is."""
        self._check_button(button)
        with self._lock:
            self._fake("ButtonPress" if down else "ButtonRelease", BUTTONS[button])
            self._d.sync()

    def drag(
        self,
        path: Sequence[Sequence[float]],
        button: str = "left",
        duration_s: float = 0.0,
        modifiers: Sequence[str] = (),
    ) -> None:
        """Press `button` at the first point of `path`, move through the rest (spread over
        `duration_s`) and release at the last, holding `modifiers`."""
        self._check_button(button)
        if len(path) < 2:
            raise ValueError("path: expected at least two points")
        points = [(int(px), int(py)) for px, py in path]
        for px, py in points:
            self._check_point(px, py)
        held = [self._codes(k) for k in modifiers]
        pause = duration_s / (len(points) - 1)
        with self._lock, self._holding(held):
            self._fake("MotionNotify", x=points[0][0], y=points[0][1])
            self._fake("ButtonPress", BUTTONS[button])
            try:
                for px, py in points[1:]:
                    self._d.sync()
                    time.sleep(pause)
                    self._fake("MotionNotify", x=px, y=py)
            finally:
                self._fake("ButtonRelease", BUTTONS[button])

    def scroll(
        self, x: int, y: int, direction: str, amount: int = 1, modifiers: Sequence[str] = ()
    ) -> None:
        if direction not in SCROLL_BUTTONS:
            raise ValueError(f"direction {direction!r}: expected one of {sorted(SCROLL_BUTTONS)}")
        held = [self._codes(k) for k in modifiers]
        self.move(x, y)
        with self._lock, self._holding(held):
            for _ in range(max(1, amount)):
                self._fake("ButtonPress", SCROLL_BUTTONS[direction])
                self._fake("ButtonRelease", SCROLL_BUTTONS[direction])

    def type_text(self, text: str, delay_s: float = 0.005) -> None:
        """Type `text` key by key (Shift where a character needs it); every character is
        checked first, so text with one that cannot be typed sends nothing."""
        plan = [self._codes(TYPED_AS_KEY.get(ch) or ch) for ch in text]
        with self._lock:
            for codes in plan:
                self._tap(codes)
                time.sleep(delay_s)

    def press(self, keys: list[str]) -> None:
        """Press `keys` together (a chord such as ["ctrl", "c"]) and release them in reverse."""
        if not keys:
            raise ValueError("keys: expected at least one key")
        plan = [self._codes(k) for k in keys]
        with self._lock, self._holding(plan):
            self._d.sync()
            time.sleep(TAP_HOLD_S)

    # -- internals --------------------------------------------------------------------------

    @contextlib.contextmanager
    def _holding(self, plan: list[list[int]]) -> Iterator[None]:
        """Keys down (each key's codes, Shift first where it needs it) for the block, then
        released in reverse; the X server sees it all before the block's caller returns."""
        down: list[int] = []
        try:
            for codes in plan:
                for code in codes:
                    if code not in down:
                        self._fake("KeyPress", code)
                        down.append(code)
            yield
        finally:
            for code in reversed(down):
                self._fake("KeyRelease", code)
            self._d.sync()

    def _check_button(self, button: str) -> None:
        if button not in BUTTONS:
            raise ValueError(f"button {button!r}: expected one of {sorted(BUTTONS)}")

    def _check_point(self, x: int, y: int) -> None:
        width, height = self.size()
        if not (0 <= x < width and 0 <= y < height):
            raise ValueError(f"point ({x}, {y}) is off the {width}x{height} screen")

    def _fake(self, event: str, detail: int = 0, **kw: int) -> None:
        from Xlib import X
        from Xlib.ext import xtest

        xtest.fake_input(self._d, getattr(X, event), detail, **kw)

    def _tap(self, codes: list[int]) -> None:
        for code in codes:
            self._fake("KeyPress", code)
        for code in reversed(codes):
            self._fake("KeyRelease", code)
        self._d.sync()

    def _codes(self, key: str) -> list[int]:
        """The keycodes that make `key` (a name of KEY_NAMES, an X keysym name or a character):
        [Shift, key] when it is the key's shifted symbol."""
        from Xlib import XK

        name = KEY_NAMES.get(key.lower(), key) if len(key) > 1 or key == " " else key
        if len(name) == 1:
            keysym = ord(name) if ord(name) < 0x100 else 0x01000000 | ord(name)
        else:
            keysym = XK.string_to_keysym(name)
        if not keysym:
            raise UnsupportedKey(
                f"unknown key {key!r} (e.g. Enter, Tab, ctrl, shift, F5, or one character)"
            )
        code = self._d.keysym_to_keycode(keysym)
        if code and self._d.keycode_to_keysym(code, 0) == keysym:
            return [code]
        if code and self._d.keycode_to_keysym(code, 1) == keysym:
            return [self._d.keysym_to_keycode(XK.string_to_keysym("Shift_L")), code]
        raise UnsupportedKey(f"key {key!r} is not on this display's keyboard map")
