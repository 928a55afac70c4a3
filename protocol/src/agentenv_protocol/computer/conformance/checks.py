"""The probe's checks, grouped in sections P0-P9: readiness, the card, frames, geometry, effects
of input, the pointer, typing, scroll and drag, the extensions, and security and data. A check
passes, fails with what it saw, or stays unverified when what it needs (the fixture app) is not
there; checks for what a driver doesn't declare are left out."""

from __future__ import annotations

import asyncio
import base64
import io
import json
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import attrs

from agentenv_protocol.client_helpers import ExtensionCallError
from agentenv_protocol.computer.card import (
    COMPUTER,
    COMPUTER_DISPLAY,
    COMPUTER_EXEC,
    COMPUTER_KEYBOARD,
    COMPUTER_POINTER,
    COMPUTER_READY,
    COMPUTER_SPACES,
    GROUP_EXTENSIONS,
    GROUP_TOOLS,
    MINIMUM_TOOLS,
)
from agentenv_protocol.computer.conformance import fixture
from agentenv_protocol.constants import INTAKE_EXTENSION_URI
from agentenv_protocol.tool_access import DISABLE_TOOL_EXTENSION_URI, ENABLE_TOOL_EXTENSION_URI

__all__ = ["MINIMUM_TOOLS", "SETTLE_S", "CheckResult", "Probe"]

#: How long input is given to reach the fixture app before its state is read.
SETTLE_S = 0.5
PROBE_ROLE = "agentenv-probe"
COLOUR_TOLERANCE = 24


class Failed(Exception):
    """A check's failure, with what it saw."""


@attrs.frozen(kw_only=True)
class CheckResult:
    """One check's outcome: `status` is passed, failed or unverified; `detail` says what was
    seen; `extensions` are the URIs the check exercises."""

    section: str
    name: str
    status: str
    detail: str = ""
    extensions: tuple[str, ...] = ()


def _short(uri: str) -> str:
    return uri.removeprefix("urn:agentenv:")


def _text(result: Any) -> str:
    for block in getattr(result, "content", None) or []:
        if getattr(block, "type", None) == "text":
            return block.text
    return ""


def _image(result: Any) -> Any:
    from PIL import Image

    for block in getattr(result, "content", None) or []:
        if getattr(block, "type", None) == "image":
            return Image.open(io.BytesIO(base64.b64decode(block.data))).convert("RGB")
    raise Failed("the answer has no image")


def _colour(value: str) -> tuple[int, int, int]:
    value = value.lstrip("#")
    return int(value[0:2], 16), int(value[2:4], 16), int(value[4:6], 16)


def _close(a: tuple, b: tuple) -> bool:
    return all(abs(x - y) <= COLOUR_TOLERANCE for x, y in zip(a, b, strict=False))


class Probe:
    """The checks against one driver (`driver`: the client interface) and one MCP session."""

    def __init__(self, driver: Any, session: Any, timeout_s: float) -> None:
        self.driver = driver
        self.session = session
        self.timeout_s = timeout_s
        self.results: list[CheckResult] = []
        self.layout: dict | None = None
        self.features = self._features()
        self._staged = False
        self._section = "P?"

    def _params(self, uri: str) -> dict:
        """An extension's params as the driver's card declares them."""
        card = getattr(self.driver, "card", None) or {}
        for entry in (card.get("capabilities") or {}).get("extensions") or []:
            if entry.get("uri") == uri:
                return dict(entry.get("params") or {})
        return dict(self.driver.params(uri) or {})

    def _features(self) -> dict:
        params = self._params(COMPUTER)
        return {
            "buttons": list(params.get("buttons") or ["left"]),
            "max_click_count": int(params.get("max_click_count") or 1),
        }

    # -- recording ---------------------------------------------------------------------

    def _record(self, name: str, status: str, detail: str = "", extensions: tuple = ()) -> None:
        self.results.append(
            CheckResult(
                section=self._section,
                name=name,
                status=status,
                detail=detail,
                extensions=tuple(extensions),
            )
        )

    async def _check(self, name: str, body: Callable[[], Awaitable[Any]], *extensions: str) -> None:
        try:
            await body()
        except Failed as e:
            self._record(name, "failed", str(e), extensions)
        except Exception as e:
            self._record(name, "failed", f"{type(e).__name__}: {e}", extensions)
        else:
            self._record(name, "passed", "", extensions)

    async def _guarded(self, section: str, run: Callable[[], Awaitable[Any]]) -> None:
        """Run one section; one that raises outside its checks fails as one check."""
        self._section = section
        try:
            await run()
        except Exception as e:
            name = f"{run.__name__.strip('_')} could run"
            self._record(name, "failed", f"{type(e).__name__}: {e}")

    # -- talking to the driver --------------------------------------------------------------

    async def _tool(self, name: str, args: dict | None = None) -> Any:
        return await self.session.call_tool(name, args or {})

    async def _call(self, name: str, args: dict | None = None) -> Any:
        """A tool's answer; Failed with its text when it is an error."""
        result = await self._tool(name, args)
        if getattr(result, "isError", False):
            raise Failed(_text(result) or f"{name} failed")
        return result

    async def _shot(self, **args: Any) -> tuple[dict, Any]:
        result = await self._call("computer_screenshot", args)
        return dict(result.structuredContent or {}), result

    async def _state(self) -> dict:
        """The fixture app's state, as it wrote it."""
        await asyncio.sleep(SETTLE_S)
        answer = await self.driver.run(*fixture.STATE_COMMAND)
        try:
            return json.loads(answer.get("stdout") or "")
        except ValueError:
            raise Failed(f"the fixture's state isn't JSON: {answer!r}") from None

    def _scale(self, frame: dict) -> float:
        return float((frame.get("display") or {}).get("scale") or 1.0)

    def _cell_point(self, frame: dict, col: int, row: int) -> tuple[int, int]:
        """The frame pixel of the middle of grid cell (col, row)."""
        assert self.layout is not None
        gx, gy = self.layout["grid"][:2]
        cell = self.layout["cell"]
        s = self._scale(frame)
        return int((gx + col * cell + cell // 2) * s), int((gy + row * cell + cell // 2) * s)

    def _box_point(
        self, frame: dict, box: str, fx: float = 0.5, fy: float = 0.5
    ) -> tuple[int, int]:
        assert self.layout is not None
        x, y, w, h = self.layout[box]
        s = self._scale(frame)
        return int((x + w * fx) * s), int((y + h * fy) * s)

    # -- the whole probe ------------------------------------------------------------------

    SECTIONS = (
        ("P0", "_ready"),
        ("P1", "_card"),
        ("P2", "_frame"),
        ("P3", "_geometry"),
        ("P4", "_effects"),
        ("P5", "_pointer"),
        ("P5", "_pointer_input"),
        ("P6", "_typing"),
        ("P7", "_scroll_and_drag"),
        ("P8", "_display"),
        ("P8", "_spaces"),
        ("P8", "_keyboard_settings"),
        ("P8", "_exec"),
        ("P8", "_tool_access"),
        ("P9", "_security"),
        ("P9", "_data_add"),
        ("P9", "_data_get"),
    )

    async def full(self) -> list[CheckResult]:
        """Every section, with the fixture app up; nothing is verified when it can't start."""
        try:
            await self._stage()
        except Exception as e:
            reason = str(e) if isinstance(e, Failed) else f"{type(e).__name__}: {e}"
            for section, _ in self.SECTIONS:
                self._section = section
                self._record(
                    f"{section} checks", "unverified", f"the fixture didn't start: {reason}"
                )
            return self.results
        try:
            for section, name in self.SECTIONS:
                await self._guarded(section, getattr(self, name))
        finally:
            await self._unstage()
        return self.results

    async def _stage(self) -> None:
        """Put the fixture app on the computer (through data/add when the card takes it, else
        a command) and start it; its layout is read back."""
        if not self.driver.declares(COMPUTER_EXEC):
            raise Failed("the card doesn't declare computer-exec/v1, which starts the fixture")
        source = fixture.source()
        intake = self._params(INTAKE_EXTENSION_URI)
        if intake.get("add"):
            answer = await self.driver.add_file(fixture.APP_PATH, source)
            if isinstance(answer, dict) and answer.get("error"):
                raise Failed(f"data/add refused it: {answer['error'].get('message')}")
        else:
            await self.driver.run(*fixture.write_command(source))
        self._staged = True
        await self.driver.run(*fixture.START_COMMAND)
        deadline = asyncio.get_running_loop().time() + max(self.timeout_s, 1) * 30
        while True:
            answer = await self.driver.run(*fixture.LAYOUT_COMMAND)
            try:
                self.layout = json.loads(answer.get("stdout") or "")
                return
            except ValueError:
                if asyncio.get_running_loop().time() > deadline:
                    raise Failed("its layout never appeared") from None
                await asyncio.sleep(0.5)

    async def _unstage(self) -> None:
        if self._staged:
            self._staged = False
            await self.driver.run(*fixture.STOP_COMMAND)

    # -- P0, P1: readiness and the card --------------------------------------------------------

    async def _ready(self) -> None:
        async def ready() -> None:
            if not self.driver.declares(COMPUTER_READY):
                raise Failed(f"the card doesn't declare {_short(COMPUTER_READY)}")
            status = await self.driver.invoke(COMPUTER_READY, "status")
            if not status.get("ready"):
                raise Failed(f"it says {status}")

        await self._check("computer-ready reports ready", ready, COMPUTER_READY)

    async def _card(self) -> None:
        listed = {t.name: t for t in (await self.session.list_tools()).tools}

        async def minimum() -> None:
            missing = [name for name in MINIMUM_TOOLS if name not in listed]
            if missing:
                raise Failed(f"missing {missing}")
            schemaless = [
                n for n in MINIMUM_TOOLS if (listed[n].inputSchema or {}).get("type") != "object"
            ]
            if schemaless:
                raise Failed(f"{schemaless} list no object input schema")

        async def groups() -> None:
            problems = []
            for group, tools in GROUP_TOOLS.items():
                uri = GROUP_EXTENSIONS[group]
                present = [t for t in tools if t in listed]
                if self.driver.declares(uri):
                    absent = [t for t in tools if t not in listed]
                    if absent:
                        problems.append(f"{_short(uri)} is declared without {absent}")
                elif present:
                    problems.append(f"{present} are listed without {uri}")
            if problems:
                raise Failed("; ".join(problems))

        await self._check(
            "the seven minimum tools are listed with their schemas", minimum, COMPUTER
        )
        await self._check(
            "each group's tools come with its extension", groups, *GROUP_EXTENSIONS.values()
        )

    # -- P2: frames ----------------------------------------------------------------------

    async def _frame(self) -> None:
        seen: dict = {}

        async def native() -> None:
            frame, result = await self._shot()
            image = _image(result)
            display = frame.get("display") or {}
            scale = float(display.get("scale") or 1.0)
            expected = (
                round(display.get("width", 0) * scale),
                round(display.get("height", 0) * scale),
            )
            size = (frame.get("width"), frame.get("height"))
            if image.size != size or size != expected:
                raise Failed(
                    f"the image is {image.size}, the frame says {size} and the display "
                    f"({display.get('width')}, {display.get('height')}) at scale {scale}"
                )
            seen.update(frame=frame, image=image)

        async def crop() -> None:
            if not seen:
                frame, result = await self._shot()
                seen.update(frame=frame, image=_image(result))
            frame, image = seen["frame"], seen["image"]
            w, h = frame["width"], frame["height"]
            box = [w // 4, h // 4, w // 4 + w // 3, h // 4 + h // 3]
            cropped, result = await self._shot(
                region=box, frame_id=frame["frame_id"], space="frame"
            )
            size = (cropped.get("width"), cropped.get("height"))
            if size != (w // 3, h // 3):
                raise Failed(f"the region came back {size}, not ({w // 3}, {h // 3})")
            if cropped.get("parent_frame_id") != frame["frame_id"]:
                raise Failed(
                    f"its parent_frame_id is {cropped.get('parent_frame_id')!r}, not {frame['frame_id']!r}"
                )
            if _image(result).tobytes() != image.crop(tuple(box)).tobytes():
                raise Failed("the crop's pixels aren't its frame's")

        await self._check(
            "a screenshot is native: its image, frame and display agree", native, COMPUTER
        )
        await self._check("a region comes back as a native crop of its frame", crop, COMPUTER)

    # -- P3, P4: geometry and the effects of input --------------------------------------------

    async def _geometry(self) -> None:
        async def markers() -> None:
            frame, result = await self._shot()
            image, s = _image(result), self._scale(frame)
            wrong = []
            for x, y, colour in (self.layout or {}).get("markers", []):
                got = image.getpixel((int(x * s), int(y * s)))
                if not _close(got, _colour(colour)):
                    wrong.append(f"({x}, {y}) is {got}, not {colour}")
            if wrong:
                raise Failed("; ".join(wrong))

        async def norm_pixels() -> None:
            frame, _ = await self._shot()
            w, h = frame["width"], frame["height"]
            by_frame, _ = await self._shot(
                region=[0, 0, w // 2, h // 2], space="frame", frame_id=frame["frame_id"]
            )
            by_norm, _ = await self._shot(
                region=[0, 0, 500, 500], space="norm", norm_scale=1000, frame_id=frame["frame_id"]
            )
            a, b = (by_frame["width"], by_frame["height"]), (by_norm["width"], by_norm["height"])
            if a != b:
                raise Failed(f"half the frame is {a} in frame space and {b} in norm space")

        await self._check("the fixture's markers are where its layout says", markers, COMPUTER)
        if self.driver.declares(COMPUTER_SPACES):
            await self._check("norm points land on the same pixels", norm_pixels, COMPUTER_SPACES)

    async def _click_lands(self, col: int, row: int, **args: Any) -> None:
        before = (await self._state()).get("cells", {}).get(f"{col},{row}", 0)
        frame, _ = await self._shot()
        x, y = self._cell_point(frame, col, row)
        result = await self._tool(
            "computer_click", {"x": x, "y": y, "frame_id": frame["frame_id"], **args}
        )
        assert not result.isError, _text(result)
        after = (await self._state()).get("cells", {}).get(f"{col},{row}", 0)
        assert after > before, f"cell {col},{row} saw no click"

    async def _effects(self) -> None:
        async def frame_click() -> None:
            await self._click_lands(1, 1, screenshot=True)

        async def many() -> None:
            frame, _ = await self._shot()
            cells = [(i % 8, i // 8) for i in range(16)]
            answers = await asyncio.gather(
                *(
                    self._tool(
                        "computer_click",
                        {
                            "x": self._cell_point(frame, c, r)[0],
                            "y": self._cell_point(frame, c, r)[1],
                            "frame_id": frame["frame_id"],
                        },
                    )
                    for c, r in cells
                )
            )
            refused = sum(bool(getattr(a, "isError", False)) for a in answers)
            if refused:
                raise Failed(f"{refused} of {len(cells)} were refused")
            state = (await self._state()).get("cells", {})
            missed = [f"{c},{r}" for c, r in cells if not state.get(f"{c},{r}")]
            if missed:
                raise Failed(f"cells {missed} saw no click")

        async def crop_click() -> None:
            frame, _ = await self._shot()
            x, y = self._cell_point(frame, 2, 2)
            box = [x - 4, y - 4, x + 4, y + 4]
            cropped, _ = await self._shot(region=box, frame_id=frame["frame_id"], space="frame")
            result = await self._tool(
                "computer_click", {"x": 4, "y": 4, "frame_id": cropped["frame_id"]}
            )
            assert not result.isError, _text(result)
            assert (await self._state()).get("cells", {}).get("2,2"), "cell 2,2 saw no click"

        async def norm_click() -> None:
            frame, _ = await self._shot()
            x, y = self._cell_point(frame, 3, 3)
            nx, ny = x * 1000 / frame["width"], y * 1000 / frame["height"]
            result = await self._tool(
                "computer_click",
                {
                    "x": nx,
                    "y": ny,
                    "space": "norm",
                    "norm_scale": 1000,
                    "frame_id": frame["frame_id"],
                },
            )
            assert not result.isError, _text(result)
            assert (await self._state()).get("cells", {}).get("3,3"), "cell 3,3 saw no click"

        async def right() -> None:
            before = (await self._state()).get("right_clicks", 0)
            frame, _ = await self._shot()
            x, y = self._cell_point(frame, 4, 4)
            await self._call("computer_click", {"x": x, "y": y, "button": "right"})
            after = (await self._state()).get("right_clicks", 0)
            assert after == before + 1, f"right clicks went from {before} to {after}"

        async def double() -> None:
            before = (await self._state()).get("double_clicks", 0)
            frame, _ = await self._shot()
            x, y = self._cell_point(frame, 5, 5)
            await self._call("computer_click", {"x": x, "y": y, "count": 2})
            after = (await self._state()).get("double_clicks", 0)
            assert after == before + 1, f"double clicks went from {before} to {after}"

        await self._check(
            "a click in frame space hits its cell, and the next frame shows it",
            frame_click,
            COMPUTER,
        )
        await self._check("16 clicks sent at once all land", many, COMPUTER)
        await self._check("a click in a crop's frame maps back to the screen", crop_click, COMPUTER)
        if self.driver.declares(COMPUTER_SPACES):
            await self._check("a click in norm space hits its cell", norm_click, COMPUTER_SPACES)
        if "right" in self.features["buttons"]:
            await self._check("a right click arrives as one", right, COMPUTER)
        if self.features["max_click_count"] >= 2:
            await self._check("a double click arrives as one", double, COMPUTER)

    # -- P5: the pointer group -------------------------------------------------------------

    async def _pointer(self) -> None:
        if not self.driver.declares(COMPUTER_POINTER):
            return

        async def position() -> None:
            frame, _ = await self._shot()
            x, y = self._box_point(frame, "grid")
            await self._call(
                "computer_pointer_move", {"x": x, "y": y, "frame_id": frame["frame_id"]}
            )
            where = (
                await self._call("computer_pointer_position", {"frame_id": frame["frame_id"]})
            ).structuredContent
            if (where.get("x"), where.get("y")) != (x, y):
                raise Failed(f"moved to ({x}, {y}), then the position said {where}")

        async def listed() -> None:
            pointers = (await self._call("computer_pointer_list")).structuredContent.get("pointers")
            if not pointers or not any(p.get("default") for p in pointers):
                raise Failed(f"pointers: {pointers!r}")

        await self._check("the pointer is where it was moved", position, COMPUTER_POINTER)
        await self._check("the pointer list names a default pointer", listed, COMPUTER_POINTER)

    async def _pointer_input(self) -> None:
        if not self.driver.declares(COMPUTER_POINTER):
            return

        async def press_release() -> None:
            before = (await self._state()).get("cells", {}).get("6,6", 0)
            frame, _ = await self._shot()
            x, y = self._cell_point(frame, 6, 6)
            await self._call(
                "computer_pointer_down", {"x": x, "y": y, "frame_id": frame["frame_id"]}
            )
            await self._call("computer_pointer_up")
            after = (await self._state()).get("cells", {}).get("6,6", 0)
            assert after == before + 1, f"cell 6,6 went from {before} to {after} clicks"

        await self._check("a press and a release make one click", press_release, COMPUTER_POINTER)

    # -- P6: typing ---------------------------------------------------------------------------

    async def _focus(self, box: str) -> None:
        frame, _ = await self._shot()
        x, y = self._box_point(frame, box)
        await self._call("computer_click", {"x": x, "y": y, "frame_id": frame["frame_id"]})

    async def _typing(self) -> None:
        text = "Grüße, 東京 ok"

        async def typed() -> None:
            await self._focus("name")
            await self._call("computer_type", {"text": text})
            got = (await self._state()).get("name")
            assert got == text, f"the field holds {got!r}"

        async def lines() -> None:
            await self._focus("notes")
            await self._call("computer_type", {"text": "one\n\ttwo"})
            got = (await self._state()).get("notes", "")
            assert "one\n\ttwo" in got, f"the notes hold {got!r}"

        async def chord() -> None:
            await self._focus("notes")
            await self._call("computer_key", {"keys": ["Control", "a"]})
            await self._call("computer_key", {"keys": ["Control", "c"]})
            got = (await self._state()).get("keys", [])
            assert any(k.lower() in ("control+a", "ctrl+a") for k in got), f"the app saw keys {got}"

        async def held() -> None:
            await self._focus("name")
            await self._call("computer_keyboard_down", {"keys": ["Shift"]})
            try:
                await self._call("computer_type", {"text": "x"})
            finally:
                await self._call("computer_keyboard_up", {})
            got = (await self._state()).get("name", "")
            assert got.endswith("X"), f"the field holds {got!r}"

        await self._check("typed text arrives whole, Unicode included", typed, COMPUTER)
        await self._check("newlines and tabs are typed", lines, COMPUTER)
        await self._check("a chord arrives as one", chord, COMPUTER)
        if self.driver.declares(COMPUTER_KEYBOARD):
            await self._check(
                "a key held by computer_keyboard_down stays down while text is typed",
                held,
                COMPUTER_KEYBOARD,
            )

    # -- P7: scroll and drag -------------------------------------------------------------------

    async def _scroll_and_drag(self) -> None:
        async def dragged() -> None:
            assert self.layout is not None
            frame, _ = await self._shot()
            s = self._scale(frame)
            px, py, pw, ph = self.layout["pad"]
            local = [[pw // 4, ph // 4], [pw // 2, ph // 3], [3 * pw // 4, 3 * ph // 4]]
            path = [[int((px + x) * s), int((py + y) * s)] for x, y in local]
            await self._call("computer_drag", {"path": path, "frame_id": frame["frame_id"]})
            drags = (await self._state()).get("drags") or []
            if not drags:
                raise Failed("no drag reached the pad")
            stroke = drags[-1]
            start, end = stroke.get("start"), stroke.get("end")
            near = lambda a, b: (
                a is not None and all(abs(p - q) <= 2 for p, q in zip(a, b, strict=False))
            )  # noqa: E731
            if not (
                near(start, local[0])
                and near(end, local[-1])
                and stroke.get("points", 0) >= len(local)
            ):
                raise Failed(f"the stroke was {start} to {end} in {stroke.get('points')} points")

        async def scrolled() -> None:
            before = (await self._state()).get("scroll_top", 0)
            frame, _ = await self._shot()
            x, y = self._box_point(frame, "pad")
            await self._call(
                "computer_scroll",
                {"x": x, "y": y, "direction": "down", "amount": 3, "frame_id": frame["frame_id"]},
            )
            after = (await self._state()).get("scroll_top", 0)
            assert after > before, f"scroll_top went from {before} to {after}"

        await self._check(
            "a drag starts and ends where it says, through its waypoints", dragged, COMPUTER
        )
        await self._check("a scroll down moves the content down", scrolled, COMPUTER)

    # -- P8: the extensions ---------------------------------------------------------------------

    async def _display(self) -> None:
        if not self.driver.declares(COMPUTER_DISPLAY):
            return

        async def described() -> None:
            got = await self.driver.invoke(COMPUTER_DISPLAY, "get")
            frame, _ = await self._shot()
            if {k: got.get(k) for k in ("width", "height")} != {
                k: frame["display"][k] for k in ("width", "height")
            }:
                raise Failed(f"get said {got}, a frame's display is {frame['display']}")

        await self._check(
            "computer-display describes the display frames are taken on",
            described,
            COMPUTER_DISPLAY,
        )

    async def _spaces(self) -> None:
        if not self.driver.declares(COMPUTER_SPACES):
            return

        async def round_trip() -> None:
            first = await self.driver.invoke(COMPUTER_SPACES, "get")
            try:
                await self.driver.invoke(
                    COMPUTER_SPACES, "set", {"default_space": "norm", "default_norm_scale": 1000}
                )
                got = await self.driver.invoke(COMPUTER_SPACES, "get")
                if got.get("default_space") != "norm" or got.get("default_norm_scale") != 1000:
                    raise Failed(f"set norm, then get said {got}")
            finally:
                await self.driver.invoke(COMPUTER_SPACES, "set", dict(first))

        await self._check("the default space can be set and read back", round_trip, COMPUTER_SPACES)

    async def _keyboard_settings(self) -> None:
        if not self.driver.declares(COMPUTER_KEYBOARD):
            return

        async def round_trip() -> None:
            first = await self.driver.invoke(COMPUTER_KEYBOARD, "get")
            try:
                await self.driver.invoke(COMPUTER_KEYBOARD, "set", {"tap_hold_ms": 40})
                got = await self.driver.invoke(COMPUTER_KEYBOARD, "get")
                if got.get("tap_hold_ms") != 40:
                    raise Failed(f"set tap_hold_ms 40, then get said {got}")
            finally:
                await self.driver.invoke(
                    COMPUTER_KEYBOARD, "set", {"tap_hold_ms": first.get("tap_hold_ms")}
                )

        await self._check("key timing can be set and read back", round_trip, COMPUTER_KEYBOARD)

    async def _exec(self) -> None:
        if not self.driver.declares(COMPUTER_EXEC):
            return

        async def run(argv: list[str], **extra: Any) -> dict:
            body = {"argv": argv, "request_id": f"probe-{uuid.uuid4().hex}", **extra}
            return await self.driver.invoke(COMPUTER_EXEC, "run", body)

        async def output() -> None:
            got = await run(["sh", "-c", "echo out; echo err >&2; exit 3"])
            seen = (got.get("exit_code"), got.get("stdout"), got.get("stderr"))
            if seen != (3, "out\n", "err\n"):
                raise Failed(f"it answered {got}")

        async def missing() -> None:
            try:
                got = await run(["agentenv-probe-no-such-program"])
            except ExtensionCallError as e:
                if not e.code:
                    raise Failed(f"it answered {e.response.status_code} with no code") from None
                return
            raise Failed(f"it answered {got}")

        async def capped() -> None:
            limit = int(self._params(COMPUTER_EXEC)["max_output_bytes"])
            got = await run(["sh", "-c", f"head -c {limit + 10} /dev/zero | tr '\\0' y"])
            if len(got.get("stdout", "")) != limit or not got.get("truncated"):
                raise Failed(
                    f"{len(got.get('stdout', ''))} bytes came back, truncated={got.get('truncated')}"
                )

        await self._check("a command's exit code and output come back", output, COMPUTER_EXEC)
        await self._check(
            "a program that isn't there is refused with a code", missing, COMPUTER_EXEC
        )
        if self._params(COMPUTER_EXEC).get("max_output_bytes"):
            await self._check("output past max_output_bytes is cut there", capped, COMPUTER_EXEC)

    async def _tool_access(self) -> None:
        if not self.driver.declares(DISABLE_TOOL_EXTENSION_URI):
            return

        async def hidden() -> None:
            rule = {"role": PROBE_ROLE, "tools": ["computer_wait"]}
            await self.driver.invoke(DISABLE_TOOL_EXTENSION_URI, "disable", rule)
            try:
                async with self.driver.session(PROBE_ROLE) as other:
                    names = [t.name for t in (await other.list_tools()).tools]
                    if "computer_wait" in names:
                        raise Failed(
                            "computer_wait is still listed for the role it is disabled for"
                        )
                    answer = await other.call_tool("computer_wait", {"ms": 0})
                    if not getattr(answer, "isError", False):
                        raise Failed("a disabled tool answered its role")
            finally:
                if self.driver.declares(ENABLE_TOOL_EXTENSION_URI):
                    await self.driver.invoke(ENABLE_TOOL_EXTENSION_URI, "enable", rule)

        await self._check(
            "a tool disabled for a role is hidden from it and refused",
            hidden,
            DISABLE_TOOL_EXTENSION_URI,
            ENABLE_TOOL_EXTENSION_URI,
        )

    # -- P9: security and data -----------------------------------------------------------------

    async def _security(self) -> None:
        if not self.driver.declares(COMPUTER_EXEC):
            return

        async def unprivileged() -> None:
            uid = ((await self.driver.run("id", "-u")).get("stdout") or "").strip()
            if uid == "0":
                raise Failed("commands run as root")
            if not uid.isdigit():
                raise Failed(f"id -u said {uid!r}")

        await self._check(
            "commands and data/add run as one unprivileged user", unprivileged, COMPUTER_EXEC
        )

    async def _data_add(self) -> None:
        async def readable() -> None:
            content = f"probe {uuid.uuid4().hex}"
            answer = await self.driver.add_file(fixture.INBOX_PATH, content.encode())
            if isinstance(answer, dict) and answer.get("error"):
                raise Failed(f"data/add refused it: {answer['error'].get('message')}")
            got = (await self._state()).get("loaded")
            assert got == content, f"the app read {got!r}"

        await self._check(
            "a file data/add writes is there for an app to read", readable, INTAKE_EXTENSION_URI
        )

    async def _data_get(self) -> None:
        intake = self._params(INTAKE_EXTENSION_URI)
        if not intake.get("get"):
            return

        async def returned() -> None:
            answer = await self.driver.rpc("data/get")
            if answer.get("error"):
                raise Failed(f"data/get refused: {answer['error'].get('message')}")
            parts = (answer.get("result") or {}).get("parts")
            if not isinstance(parts, list):
                raise Failed(f"data/get answered {answer}")

        await self._check("data/get answers file parts", returned, INTAKE_EXTENSION_URI)
