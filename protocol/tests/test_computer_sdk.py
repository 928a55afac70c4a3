"""The computer-driver SDK on an in-memory canvas, through the real mcp client and HTTP: frames
and crops map back to screen pixels, points outside are refused with nothing sent, input is
serialized, readiness gates the tools, and the driver class is checked when it is defined."""

from __future__ import annotations

import base64
import contextlib
import io

import anyio
import httpx
import pytest
from mcp.shared.memory import create_connected_server_and_client_session
from PIL import Image as PILImage

from agentenv_protocol.computer import (
    ComputerDriverEnvironment,
    ComputerSettings,
    Display,
    Platform,
    capture,
    click,
    display,
    drag,
    key_down,
    key_up,
    pointer_down,
    pointer_move,
    pointer_position,
    pointer_up,
    press,
    scroll,
    set_display,
    type_text,
)
from agentenv_protocol.computer.queue import InputQueue

pytestmark = pytest.mark.anyio

# An in-memory canvas driver: every input is logged in screen pixels, a click paints the pixel
# it lands on, `broken` makes an operation raise once, `delay` slows one down.
DESKTOP = Platform(os="linux", distribution="debian", version="12", arch="amd64", display="x11")
INK = (10, 200, 30)


class Canvas(ComputerDriverEnvironment):
    display_modes = ((800, 600), (400, 300))

    def __init__(
        self,
        width: int = 800,
        height: int = 600,
        scale: float = 1.0,
        settings: ComputerSettings | None = None,
    ) -> None:
        super().__init__(settings=settings or ComputerSettings(), platform=DESKTOP)
        self.sent: list[tuple] = []
        self.broken: dict[str, Exception] = {}
        self.delay: dict[str, float] = {}
        self.pointer = (0, 0)
        self._resize(width, height, scale)

    def _resize(self, width: int, height: int, scale: float) -> None:
        self.shown = Display(width, height, scale)
        self.image = PILImage.new(
            "RGB", (round(width * scale), round(height * scale)), (255, 255, 255)
        )

    async def _maybe_fail(self, name: str) -> None:
        await anyio.sleep(self.delay.get(name, 0))
        error = self.broken.pop(name, None)
        if error is not None:
            raise error

    @display
    async def read_display(self):
        await self._maybe_fail("display")
        return self.shown

    @set_display
    async def change_display(self, width, height, scale):
        self._resize(width, height, scale)

    @capture
    async def grab(self):
        await self._maybe_fail("capture")
        return self.image.copy()

    @click
    async def click_at(self, x, y, button, count, modifiers):
        await self._maybe_fail("click")
        self.sent.append(("click", x, y, button, count, tuple(modifiers)))
        s = self.shown.scale
        self.image.putpixel((int(x * s), int(y * s)), INK)
        self.pointer = (x, y)

    @drag
    async def drag_along(self, path, button, duration_ms, modifiers):
        self.sent.append(("drag", [tuple(p) for p in path], button))
        self.pointer = tuple(path[-1])

    @scroll
    async def scroll_at(self, x, y, direction, amount, modifiers):
        self.sent.append(("scroll", x, y, direction, amount))

    @type_text
    async def type_in(self, text):
        self.sent.append(("type", text))

    @press
    async def press_keys(self, keys):
        self.sent.append(("press", tuple(keys)))

    @pointer_move
    async def move(self, x, y):
        self.sent.append(("move", x, y))
        self.pointer = (x, y)

    @pointer_down
    async def down(self, button):
        self.sent.append(("down", button))

    @pointer_up
    async def up(self, button):
        self.sent.append(("up", button))

    @pointer_position
    async def where(self):
        return self.pointer

    @key_down
    async def keys_down(self, keys):
        self.sent.append(("key_down", tuple(keys)))

    @key_up
    async def keys_up(self, keys):
        self.sent.append(("key_up", tuple(keys)))


@contextlib.asynccontextmanager
async def session_of(driver: ComputerDriverEnvironment):
    async with create_connected_server_and_client_session(driver.create_app()) as session:
        yield session


@contextlib.asynccontextmanager
async def http_of(driver: ComputerDriverEnvironment):
    app = driver.create_app().streamable_http_app()
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://computer"
    ) as http:
        yield http


def _png(result) -> PILImage.Image:
    return PILImage.open(io.BytesIO(base64.b64decode(result.content[1].data)))


async def test_a_hidpi_crop_maps_a_click_back_to_the_screen_pixel_it_shows():
    canvas = Canvas(400, 300, scale=2.0)
    async with session_of(canvas) as session:
        shot = await session.call_tool("computer_screenshot", {})
        crop = await session.call_tool("computer_screenshot", {"region": [100, 40, 300, 140]})
        clicked = await session.call_tool("computer_click", {"x": 51, "y": 21, "frame_id": "f2"})
        after = await session.call_tool("computer_screenshot", {})
    assert _png(shot).size == (800, 600) and shot.structuredContent["display"]["scale"] == 2.0
    assert crop.structuredContent["parent_frame_id"] == "f1" and _png(crop).size == (200, 100)
    # frame pixel (100 + 51, 40 + 21) of a scale-2 display is screen pixel (75, 30)
    assert canvas.sent == [("click", 75, 30, "left", 1, ())]
    assert clicked.structuredContent["summary"] == "Clicked left at (51, 21) in f2"
    assert _png(after).getpixel((150, 60)) == INK  # screen (75, 30) at scale 2


async def test_points_outside_the_frame_or_the_norm_range_are_refused_and_nothing_is_sent():
    canvas = Canvas()
    async with session_of(canvas) as session:
        await session.call_tool("computer_screenshot", {})
        past_edge = await session.call_tool("computer_click", {"x": 800, "y": 10})
        past_norm = await session.call_tool(
            "computer_click", {"x": 1000.5, "y": 0, "space": "norm"}
        )
        bad_path = await session.call_tool("computer_drag", {"path": [[1, 1], [5, 5], [900, 5]]})
        corner = await session.call_tool("computer_click", {"x": 1000, "y": 1000, "space": "norm"})
    assert [r.structuredContent["code"] for r in (past_edge, past_norm, bad_path)] == [
        "out_of_bounds"
    ] * 3
    assert all(r.structuredContent["applied"] == "no" for r in (past_edge, past_norm, bad_path))
    assert canvas.sent == [("click", 799, 599, "left", 1, ())], (
        "only the in-range corner click was sent"
    )
    assert not corner.isError


async def test_a_frame_from_before_a_display_change_cannot_place_a_point():
    canvas = Canvas()
    async with session_of(canvas) as session, http_of(canvas) as http:
        await session.call_tool("computer_screenshot", {})
        changed = await http.post(
            "/agentenv/ext/computer-display/set", json={"width": 400, "height": 300}
        )
        refused = await session.call_tool("computer_click", {"x": 10, "y": 10})
        not_a_mode = await http.post(
            "/agentenv/ext/computer-display/set", json={"width": 333, "height": 222}
        )
    assert changed.status_code == 200 and changed.json()["width"] == 400
    assert (
        refused.structuredContent["code"] == "stale_frame"
        and refused.structuredContent["retryable"] is True
    )
    assert (
        "captured at 800×600 at scale 1 and the display is now 400×300 at scale 1"
        in refused.structuredContent["message"]
    )
    assert not_a_mode.status_code == 400 and "333×222" in not_a_mode.json()["error"]["message"]
    assert canvas.sent == []


async def test_input_waits_its_turn_and_a_call_that_waits_too_long_sends_nothing():
    canvas = Canvas(settings=ComputerSettings(queue_wait_s=0.1))
    canvas.delay["click"] = 0.4
    async with session_of(canvas) as session:
        await session.call_tool("computer_screenshot", {})
        answers: list = []

        async def call(name: str, args: dict) -> None:
            answers.append((name, await session.call_tool(name, args)))

        async with anyio.create_task_group() as group:
            group.start_soon(call, "computer_click", {"x": 1, "y": 1})
            await anyio.sleep(0.05)
            group.start_soon(call, "computer_type", {"text": "late"})
    by_name = dict(answers)
    assert not by_name["computer_click"].isError
    assert by_name["computer_type"].structuredContent["code"] == "input_busy"
    assert ("type", "late") not in canvas.sent


async def test_a_cancelled_waiter_leaves_the_queue_free():
    queue = InputQueue()
    waited = []

    async def hold() -> None:
        async with queue.turn(None):
            await anyio.sleep(0.3)

    async def give_up() -> None:
        with anyio.move_on_after(0.05) as scope:
            async with queue.turn(None):
                waited.append("got a turn")
        waited.append(scope.cancelled_caught)

    async with anyio.create_task_group() as group:
        group.start_soon(hold)
        await anyio.sleep(0.01)
        group.start_soon(give_up)
    assert waited == [True]
    with anyio.fail_after(1):
        async with queue.turn(0.5):
            pass


async def test_key_names_are_spelled_as_w3c_and_mistakes_get_a_hint():
    canvas = Canvas()
    async with session_of(canvas) as session:
        chord = await session.call_tool("computer_key", {"keys": ["control", "shift", "t"]})
        alias = await session.call_tool("computer_key", {"keys": ["ctrl", "t"]})
        joined = await session.call_tool("computer_key", {"keys": ["Control+t"]})
    assert chord.structuredContent["summary"] == "Pressed Control+Shift+t"
    assert alias.structuredContent["hint"] == "did you mean Control?"
    assert "one key per entry" in joined.structuredContent["hint"]
    assert canvas.sent == [("press", ("Control", "Shift", "t"))]


async def test_a_held_key_is_let_go_after_max_hold_ms():
    canvas = Canvas(settings=ComputerSettings(max_hold_ms=60))
    async with session_of(canvas) as session:
        held = await session.call_tool("computer_keyboard_down", {"keys": ["Alt"]})
        with anyio.fail_after(5):
            while canvas._computer.held:
                await anyio.sleep(0.01)
    assert not held.isError and canvas.sent == [("key_down", ("Alt",)), ("key_up", ("Alt",))]


async def test_tools_answer_device_unavailable_until_the_display_answers():
    canvas = Canvas()
    canvas.broken["display"] = RuntimeError("Xvfb is not up")
    async with session_of(canvas) as session, http_of(canvas) as http:
        first = await session.call_tool("computer_screenshot", {})
        status = (await http.get("/agentenv/ext/computer-ready/status")).json()
        second = await session.call_tool("computer_screenshot", {})
    assert (
        first.structuredContent["code"] == "device_unavailable"
        and first.structuredContent["retryable"]
    )
    assert "Xvfb is not up" in first.structuredContent["message"]
    assert status["ready"] is True and [c["name"] for c in status["checks"]] == [
        "display",
        "capture",
    ]
    assert not second.isError


async def test_an_input_operation_that_raises_may_have_been_delivered():
    canvas = Canvas()
    async with session_of(canvas) as session:
        await session.call_tool("computer_screenshot", {})
        canvas.broken["click"] = OSError("XTEST connection lost")
        failed = await session.call_tool("computer_click", {"x": 3, "y": 3})
    assert failed.structuredContent == {
        "code": "delivery_failed",
        "retryable": False,
        "applied": "unknown",
        "message": "@click failed: OSError: XTEST connection lost",
    }


async def test_setting_the_default_space_rewrites_the_point_tools_descriptions_everywhere():
    canvas = Canvas()
    async with session_of(canvas) as session, http_of(canvas) as http:
        await http.post(
            "/agentenv/ext/computer-spaces/set",
            json={"default_space": "norm", "default_norm_scale": 100},
        )
        listed = {t.name: t.description for t in (await session.list_tools()).tools}
        card = (await http.get("/.well-known/agent-env.json")).json()
        await session.call_tool("computer_screenshot", {})
        await session.call_tool("computer_click", {"x": 50, "y": 50})
    on_card = {t["name"]: t["description"] for t in card["capabilities"]["tools"]}
    assert "norm space by default: 0 to 100" in listed["computer_drag"] == on_card["computer_drag"]
    assert "default" not in listed["computer_type"]
    assert canvas.sent[-1] == ("click", 400, 300, "left", 1, ())


def test_a_driver_class_with_half_a_group_or_no_capture_is_refused_when_defined():
    with pytest.raises(
        TypeError, match="the keyboard group needs all of @key_down, @key_up; missing @key_up"
    ):
        type("HalfKeyboard", (Canvas,), {"keys_up": None})
    with pytest.raises(TypeError, match=r"is missing required operation\(s\): @capture"):
        type("Blind", (Canvas,), {"grab": None})
    with pytest.raises(
        TypeError, match="redefines _computer_capture, which ComputerDriverEnvironment uses itself"
    ):
        type("Clash", (Canvas,), {"_computer_capture": lambda self: None})


def test_two_unlimited_methods_for_one_operation_are_refused():
    with pytest.raises(TypeError, match="@display is marked on both"):
        type(
            "Twice",
            (Canvas,),
            {"other": display(lambda self: None), "more": display(lambda self: None)},
        )
    limited = type(
        "X11Only",
        (Canvas,),
        {
            "x11_click": click(display="x11")(lambda self, *a: None),
            "click_at": click(display="wayland")(lambda self, *a: None),
        },
    )
    assert limited()._computer.operations["click"] == "x11_click"
