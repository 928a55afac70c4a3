"""Our Linux backend in Docker: the `computer_driver` env of examples/computer-xterm (the SDK's
base class over `agentenv_protocol.computer.linux.X11Desktop`) is deployed once (`agent-env env
deploy --sandbox docker`, held until Ctrl-C) on a virtual X display; its screenshots are PNGs
of that display, pointer moves, clicks and drags land where asked, and what it types reaches
the xterm's shell. The example's task passes with its scripted agent.
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

    result = use(url, "computer_screenshot")
    assert not result.isError, result.content
    assert (result.structuredContent["width"], result.structuredContent["height"]) == SCREEN
    [png] = [base64.b64decode(c.data) for c in result.content if c.type == "image"]
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    return Image.open(io.BytesIO(png)).convert("RGB")


def pointer(url: str) -> dict[str, int]:
    return use(url, "computer_pointer_position").structuredContent["screen"]


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


def test_the_driver_serves_the_computer_tools_and_the_graders_tool(desktop):
    assert desktop["provider"] == "docker"
    assert {
        "computer_screenshot",
        "computer_click",
        "computer_drag",
        "computer_scroll",
        "computer_type",
        "computer_key",
        "computer_pointer_move",
        "computer_pointer_down",
        "computer_pointer_up",
        "computer_pointer_position",
        "read_file",
    } <= set(desktop["tools"])


def test_a_screenshot_is_a_png_of_the_whole_display_with_the_xterm_on_it(desktop):
    image = screenshot(desktop["url"])
    assert image.size == SCREEN
    # the xterm's white page sits top-left on Xvfb's black root window
    assert image.getpixel(IN_XTERM) == (255, 255, 255)
    assert image.getpixel((SCREEN[0] - 5, SCREEN[1] - 5)) == (0, 0, 0)


def test_moves_clicks_and_drags_put_the_x_pointer_where_asked(desktop):
    url = desktop["url"]
    screenshot(url)  # points are in the latest frame's pixels
    for x, y in [(10, 20), (700, 500), (1023, 767)]:
        moved = use(url, "computer_pointer_move", {"x": x, "y": y})
        assert not moved.isError, moved.content
        assert pointer(url) == {"x": x, "y": y}
    clicked = use(url, "computer_click", {"x": 600, "y": 300, "count": 2})
    assert not clicked.isError, clicked.content
    assert pointer(url) == {"x": 600, "y": 300}
    dragged = use(url, "computer_drag", {"path": [[500, 500], [620, 540], [800, 600]]})
    assert not dragged.isError, dragged.content
    assert pointer(url) == {"x": 800, "y": 600}
    scrolled = use(url, "computer_scroll", {"x": 300, "y": 200, "direction": "down"})
    assert not scrolled.isError, scrolled.content
    assert pointer(url) == {"x": 300, "y": 200}


def test_typing_into_the_xterm_runs_a_command_and_shows_on_screen(desktop):
    url = desktop["url"]
    use(url, "computer_click", {"x": IN_XTERM[0], "y": IN_XTERM[1]})  # focus follows the pointer
    before = screenshot(url)
    typed = use(url, "computer_type", {"text": "echo 'Typed: A&B' > /tmp/typed.txt\n"})
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
    # a chord: ctrl+u clears the shell's line, so the typed text never runs
    use(url, "computer_type", {"text": "echo wrong > /tmp/chord.txt"})
    chord = use(url, "computer_key", {"keys": ["Control", "u"]})
    assert not chord.isError, chord.content
    use(url, "computer_type", {"text": "echo right > /tmp/chord.txt\n"})
    text = ""
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and not text:
        result = use(url, "read_file", {"path": "/tmp/chord.txt"})
        text = "".join(getattr(c, "text", "") for c in result.content)
    assert text == "right\n"


def test_the_driver_passes_the_sdks_conformance_probe_at_basic_level(desktop):
    import anyio

    from agentenv_protocol.computer.conformance import run_probe

    report = anyio.run(run_probe, desktop["url"], "basic")
    failed = [c for c in report.checks if c.status != "passed"]
    assert report.passed and not failed, failed
    assert len(report.checks) >= 10


def test_bad_input_is_refused_and_nothing_moves(desktop):
    url = desktop["url"]
    screenshot(url)
    use(url, "computer_pointer_move", {"x": 5, "y": 5})
    off = use(url, "computer_click", {"x": 5000, "y": 10})
    assert off.isError and off.structuredContent["code"] == "out_of_bounds"
    bad = use(url, "computer_click", {"x": 10, "y": 10, "button": "thumb"})
    assert bad.isError
    assert pointer(url) == {"x": 5, "y": 5}


def test_the_example_task_passes_with_its_scripted_agent_on_this_machine(tmp_path, base_image):
    bundle = tmp_path / "computer-xterm"
    shutil.copytree(EXAMPLE, bundle)
    done = agent_env(tmp_path / "home", "run", str(bundle), "--sandbox", "local", timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    # `local` cannot host a display of its own: the env goes to local Docker, saying why
    assert "env 'desktop' deploys on docker: local cannot host it" in done.stderr, done.stderr
    assert "make-file  passed (file-written: 1)" in done.stdout, done.stdout + done.stderr


def test_a_driver_that_cannot_start_fails_the_deploy_with_its_log(tmp_path, base_image):
    bundle = tmp_path / "broken"
    (bundle / "envs" / "pc").mkdir(parents=True)
    (bundle / "envs" / "pc" / "env.toml").write_text(
        'type = "computer_driver"\nmodule = "driver.py:Missing"\nscreen = "640x480"\n'
    )
    (bundle / "envs" / "pc" / "driver.py").write_text("class Present:\n    pass\n")
    (bundle / "tasks").mkdir()
    (bundle / "tasks" / "up.json").write_text(
        '[{"id": "env", "type": "deploy_env", "env_id": "pc"}]'
    )
    done = agent_env(tmp_path / "home", "run", str(bundle), "--sandbox", "docker", timeout=600)
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "env 'pc' did not come up" in out and "exited with code 1" in out, out
    # the runtime's own message, from the container's log
    assert "module 'driver.py:Missing': driver.py has no 'Missing' (classes: ['Present'])" in out
