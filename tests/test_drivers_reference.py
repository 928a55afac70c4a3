"""The existing product's `drivers` bundle (from the `agentenv-framework==0.9.1364` wheel,
unchanged) runs on ours: its `reference` env, of type `computer_driver`, deploys once on docker
with `agent-env env deploy` (the existing product refuses to deploy it), on a virtual X display.
Its own driver (mss captures, XTEST through python-xlib sends input) serves the computer tools:
a screenshot is a PNG of the whole display, pointer moves and clicks land where asked, and text
typed into an xterm (started through its `computer-exec` extension) runs in the xterm's shell.
"""

from __future__ import annotations

import base64
import io
import sys
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from drivers_support import held_deploy, use  # noqa: E402
from test_reference_bundles import base_image, copy_bundle, reference_wheel  # noqa: E402, F401

pytestmark = [pytest.mark.docker, pytest.mark.slow]

#: Xvfb's screen when the env.toml names none (the reference's names none).
SCREEN = (1280, 800)
XTERM = ["sh", "-c", "setsid xterm -geometry 80x24+0+0 </dev/null >/dev/null 2>&1 & echo up"]
IN_XTERM = (200, 100)


@pytest.fixture(scope="module")
def reference(
    tmp_path_factory,
    reference_wheel,  # noqa: F811 - the fixture imported above
    base_image,  # noqa: F811
) -> Iterator[dict[str, Any]]:
    root = tmp_path_factory.mktemp("drivers")
    bundle = copy_bundle(
        reference_wheel, "drivers", root / "drivers", base_image, folder="agent_env/"
    )
    with zipfile.ZipFile(reference_wheel) as wheel:
        for path in sorted(p for p in bundle.rglob("*") if p.is_file()):
            rel = path.relative_to(bundle).as_posix()
            assert path.read_bytes() == wheel.read(f"agent_env/drivers/{rel}"), rel
    assert (bundle / "envs/reference/env.toml").read_text().startswith('type = "computer_driver"')
    yield from held_deploy(root / "home", bundle, "reference")


def run(url: str, argv: list[str], request_id: str) -> dict[str, Any]:
    """A command on the driver's computer, through its computer-exec extension."""
    response = httpx.post(
        url + "/agentenv/ext/computer-exec/run",
        json={"argv": argv, "request_id": request_id, "timeout_s": 20},
        timeout=30,
    )
    assert response.status_code == 200, response.text
    return response.json()


def screenshot(url: str) -> Any:
    from PIL import Image

    result = use(url, "computer_screenshot")
    assert not result.isError, result.content
    assert (result.structuredContent["width"], result.structuredContent["height"]) == SCREEN
    [png] = [base64.b64decode(c.data) for c in result.content if c.type == "image"]
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    return Image.open(io.BytesIO(png)).convert("RGB")


def test_the_reference_driver_serves_the_computer_tools(reference):
    assert reference["provider"] == "docker"
    assert {
        "computer_screenshot",
        "computer_click",
        "computer_drag",
        "computer_scroll",
        "computer_type",
        "computer_key",
        "computer_wait",
        "computer_pointer_move",
        "computer_pointer_position",
        "computer_keyboard_down",
        "computer_keyboard_up",
    } <= set(reference["tools"])
    card = httpx.get(reference["url"] + "/.well-known/agent-env.json", timeout=10).json()
    [computer] = [
        e for e in card["capabilities"]["extensions"] if e["uri"] == "urn:agentenv:computer/v1"
    ]
    assert computer["params"]["platform"]["display"] == "x11"
    assert computer["params"]["buttons"] == ["left", "right", "middle", "back", "forward"]


def test_a_screenshot_is_a_png_of_the_whole_virtual_display(reference):
    image = screenshot(reference["url"])
    assert image.size == SCREEN
    # an empty X display: Xvfb's root window is black
    assert image.getpixel((SCREEN[0] - 3, SCREEN[1] - 3)) == (0, 0, 0)


def test_the_pointer_goes_where_it_is_sent(reference):
    url = reference["url"]
    screenshot(url)  # points are in the latest frame's pixels
    for x, y in [(640, 400), (17, 33), (1279, 799)]:
        moved = use(url, "computer_pointer_move", {"x": x, "y": y})
        assert not moved.isError, moved.content
        where = use(url, "computer_pointer_position").structuredContent
        assert where["screen"] == {"x": x, "y": y}
    clicked = use(url, "computer_click", {"x": 300, "y": 200})
    assert not clicked.isError and clicked.structuredContent["applied"] == "yes"
    assert use(url, "computer_pointer_position").structuredContent["screen"] == {
        "x": 300,
        "y": 200,
    }


def test_text_typed_into_an_xterm_runs_in_its_shell(reference):
    url = reference["url"]
    assert run(url, XTERM, "start-xterm")["stdout"] == "up\n"
    deadline = time.monotonic() + 20
    while screenshot(url).getpixel(IN_XTERM) != (255, 255, 255):  # the xterm's white page
        assert time.monotonic() < deadline, "the xterm never showed on the display"
        time.sleep(0.2)
    use(url, "computer_click", {"x": IN_XTERM[0], "y": IN_XTERM[1]})  # focus follows the pointer
    typed = use(url, "computer_type", {"text": "echo 'Typed: A&B' > /tmp/typed.txt\n"})
    assert not typed.isError, typed.content
    text = ""
    for attempt in range(50):
        text = run(url, ["cat", "/tmp/typed.txt"], f"read-{attempt}")["stdout"]
        if text:
            break
        time.sleep(0.2)
    assert text == "Typed: A&B\n"


def test_a_point_off_the_frame_is_refused_and_nothing_moves(reference):
    url = reference["url"]
    screenshot(url)
    use(url, "computer_pointer_move", {"x": 50, "y": 60})
    refused = use(url, "computer_click", {"x": 5000, "y": 10})
    assert refused.isError and refused.structuredContent["code"] == "out_of_bounds"
    assert use(url, "computer_pointer_position").structuredContent["screen"] == {"x": 50, "y": 60}
