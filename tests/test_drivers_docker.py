"""A real computer driver in Docker: the `computer_driver` env of examples/computer-xterm is
deployed once (`agent-env env deploy --sandbox docker`, held until Ctrl-C) on a virtual X
display; its screenshots are real PNGs of that display, its clicks move the X pointer, and what
it types reaches the xterm's shell. The example's task passes with its scripted agent.
"""

from __future__ import annotations

import base64
import io
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from agents_support import ROOT, agent_env  # noqa: E402
from drivers_support import held_deploy, use  # noqa: E402

pytestmark = [pytest.mark.docker, pytest.mark.slow]

EXAMPLE = ROOT / "examples" / "computer-xterm"
#: The example's screen (its env.toml) and where its xterm sits (top-left, 100x30 cells).
SCREEN = (1024, 768)
IN_XTERM = (200, 100)


def screenshot(url: str) -> Any:
    from PIL import Image

    result = use(url, "screenshot")
    assert not result.isError, result.content
    (block,) = result.content
    assert block.type == "image" and block.mimeType == "image/png"
    png = base64.b64decode(block.data)
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    return Image.open(io.BytesIO(png)).convert("RGB")


@pytest.fixture(scope="module")
def desktop(tmp_path_factory, base_image) -> Iterator[dict[str, Any]]:
    root = tmp_path_factory.mktemp("desktop")
    bundle = root / "computer-xterm"
    shutil.copytree(EXAMPLE, bundle)
    yield from held_deploy(root / "home", bundle, "desktop")


@pytest.fixture(scope="module")
def base_image() -> str:
    from agentenv_docker_sandbox.testing import BASE_IMAGE, require_docker

    require_docker(BASE_IMAGE)
    return BASE_IMAGE


def test_the_driver_is_up_with_its_tools(desktop):
    assert desktop["provider"] == "docker"
    assert set(desktop["tools"]) == {
        "click",
        "press_keys",
        "read_file",
        "screen_size",
        "screenshot",
        "type_text",
    }
    size = use(desktop["url"], "screen_size")
    assert size.structuredContent == {"width": SCREEN[0], "height": SCREEN[1]}


def test_a_screenshot_is_a_png_of_the_whole_display_with_the_xterm_on_it(desktop):
    image = screenshot(desktop["url"])
    assert image.size == SCREEN
    # the xterm's white page sits top-left on Xvfb's black root window
    assert image.getpixel(IN_XTERM) == (255, 255, 255)
    assert image.getpixel((SCREEN[0] - 5, SCREEN[1] - 5)) == (0, 0, 0)


def test_a_click_moves_the_x_pointer(desktop):
    for x, y in [(10, 20), (700, 500), IN_XTERM]:
        result = use(desktop["url"], "click", {"x": x, "y": y})
        assert not result.isError, result.content
        assert result.structuredContent == {"x": x, "y": y}


def test_typing_into_the_xterm_runs_a_command_and_shows_on_screen(desktop):
    url = desktop["url"]
    use(url, "click", {"x": IN_XTERM[0], "y": IN_XTERM[1]})  # the keyboard follows the pointer
    before = screenshot(url)
    typed = use(url, "type_text", {"text": "echo 'Typed: A&B' > /tmp/typed.txt\n"})
    assert not typed.isError, typed.content
    text = ""
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and not text:
        result = use(url, "read_file", {"path": "/tmp/typed.txt"})
        text = "".join(getattr(c, "text", "") for c in result.content)
    assert text == "Typed: A&B\n"  # shifted characters and punctuation arrive as typed
    after = screenshot(url)
    changed = [
        (x, y)
        for x in range(0, 600, 4)
        for y in range(0, 120, 4)
        if before.getpixel((x, y)) != after.getpixel((x, y))
    ]
    assert changed, "the typed command did not show in the xterm"


def test_bad_input_is_refused_naming_it_and_sends_nothing(desktop):
    url = desktop["url"]
    use(url, "click", {"x": 5, "y": 5})
    off = use(url, "click", {"x": 5000, "y": 10})
    assert off.isError and "point (5000, 10) is off the 1024x768 screen" in off.content[0].text
    bad = use(url, "press_keys", {"keys": ["ctrl", "NoSuchKey"]})
    assert bad.isError and "unknown key 'NoSuchKey'" in bad.content[0].text
    # nothing moved: the pointer is where the last good click left it
    assert use(url, "click", {"x": 5, "y": 5}).structuredContent == {"x": 5, "y": 5}


def test_the_example_task_passes_with_its_scripted_agent(tmp_path, base_image):
    bundle = tmp_path / "computer-xterm"
    shutil.copytree(EXAMPLE, bundle)
    done = agent_env(tmp_path / "home", "run", str(bundle), "--sandbox", "docker", timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "make-file  passed (file-written: 1)" in done.stdout, done.stdout + done.stderr
