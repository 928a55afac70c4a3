"""The probe's later sections: the pointer group (P5), typing (P6), scroll and drag (P7), the
extensions (P8), and security and data (P9). Mixed into `checks.Probe`."""

from __future__ import annotations

import uuid
from typing import Any

from agentenv_protocol.client_helpers import ExtensionCallError
from agentenv_protocol.computer.card import (
    COMPUTER,
    COMPUTER_DISPLAY,
    COMPUTER_EXEC,
    COMPUTER_KEYBOARD,
    COMPUTER_POINTER,
    COMPUTER_SPACES,
)
from agentenv_protocol.computer.conformance import fixture
from agentenv_protocol.computer.conformance.base import PROBE_ROLE, Failed
from agentenv_protocol.constants import INTAKE_EXTENSION_URI
from agentenv_protocol.tool_access import DISABLE_TOOL_EXTENSION_URI, ENABLE_TOOL_EXTENSION_URI


class LaterChecks:
    """Sections P5-P9 of `Probe` (they use its recording and tool helpers)."""

    # -- P5: the pointer group -------------------------------------------------------------

    async def _pointer(self: Any) -> None:
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

    async def _pointer_input(self: Any) -> None:
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

    async def _focus(self: Any, box: str) -> None:
        frame, _ = await self._shot()
        x, y = self._box_point(frame, box)
        await self._call("computer_click", {"x": x, "y": y, "frame_id": frame["frame_id"]})

    async def _typing(self: Any) -> None:
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

    async def _scroll_and_drag(self: Any) -> None:
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

    async def _display(self: Any) -> None:
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

    async def _spaces(self: Any) -> None:
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

    async def _keyboard_settings(self: Any) -> None:
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

    async def _exec(self: Any) -> None:
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

    async def _tool_access(self: Any) -> None:
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

    async def _security(self: Any) -> None:
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

    async def _data_add(self: Any) -> None:
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

    async def _data_get(self: Any) -> None:
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
