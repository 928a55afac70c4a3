"""The probe's checks, grouped in sections P0-P9: readiness, the card, frames, geometry, effects
of input, the pointer, typing, scroll and drag, the extensions, and security and data. A check
passes, fails with what it saw, or stays unverified when what it needs (the fixture app) is not
there; checks for what a driver doesn't declare are left out."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

from agentenv_protocol.computer.card import (
    COMPUTER,
    COMPUTER_EXEC,
    COMPUTER_READY,
    COMPUTER_SPACES,
    GROUP_EXTENSIONS,
    GROUP_TOOLS,
    MINIMUM_TOOLS,
)
from agentenv_protocol.computer.conformance import fixture
from agentenv_protocol.computer.conformance.base import (
    COLOUR_TOLERANCE,
    PROBE_ROLE,
    CheckResult,
    Failed,
    _close,
    _colour,
    _image,
    _short,
    _text,
)
from agentenv_protocol.computer.conformance.later import LaterChecks
from agentenv_protocol.constants import INTAKE_EXTENSION_URI

__all__ = [
    "COLOUR_TOLERANCE",
    "MINIMUM_TOOLS",
    "PROBE_ROLE",
    "SETTLE_S",
    "CheckResult",
    "Failed",
    "Probe",
]

#: How long input is given to reach the fixture app before its state is read.
SETTLE_S = 0.5


class Probe(LaterChecks):
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
