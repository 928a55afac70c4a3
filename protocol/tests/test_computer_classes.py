"""Computer driver classes without a running server: settings from the deploy's JSON are
checked, captures in raw pixel layouts decode, platforms are detected from os-release and the
session, and a driver file whose own dependencies are missing can still be read for what it
declares on each platform."""

from __future__ import annotations

import json
import sys

import pytest
from PIL import Image as PILImage

from agentenv_protocol.computer import SETTINGS_ENV, Display, Image
from agentenv_protocol.computer._declare import _StubModule, declare, main
from agentenv_protocol.computer.frames import as_image
from agentenv_protocol.computer.platform import detect, supported
from agentenv_protocol.computer.settings import load_settings

DRIVER = """
import xlib_that_is_not_here as xlib
from xlib_that_is_not_here.keys import Keymap

from agentenv_protocol.computer import (ComputerDriverEnvironment, Display, capture, click, computer_driver,
                                        display, drag, press, scroll, type_text)

KEYMAP = Keymap.load("us")[0]
print("driver module imported")


@computer_driver(name="xdesk", supports=[{"os": {"type": "linux", "version": ["12", "13"]}, "arch": ["amd64"]}])
class XDesk(ComputerDriverEnvironment):
    buttons = ("left", "right")

    @display
    def size(self): return Display(*xlib.size())

    @capture
    def grab(self): return xlib.grab()

    @click
    def click_at(self, x, y, button, count, modifiers): xlib.click(x, y)

    @drag
    def drag_along(self, path, button, duration_ms, modifiers): pass

    @scroll
    def scroll_at(self, x, y, direction, amount, modifiers): pass

    @type_text
    def type_in(self, text): pass

    @press
    def press_keys(self, keys): pass
"""


@pytest.fixture
def isolated_imports(monkeypatch):
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
    yield
    for name in [n for n, m in sys.modules.items() if isinstance(m, _StubModule)]:
        del sys.modules[name]


@pytest.mark.parametrize(
    "raw, problem",
    [
        ('{"default_space": "grid"}', "default_space is 'frame' or 'norm'"),
        ('{"data_paths": ["/etc"]}', "'/etc' is not a normalized path relative to the home"),
        ('{"queue_wait_s": 0}', "queue_wait_s is a number over 0"),
        ('{"tap_hold": 5}', "unknown settings ['tap_hold']"),
        ("[1, 2]", "a JSON object, not list"),
    ],
)
def test_settings_that_dont_fit_are_refused_naming_the_variable(raw, problem):
    with pytest.raises(ValueError) as refused:
        load_settings({SETTINGS_ENV: raw})
    assert str(refused.value).startswith(SETTINGS_ENV) and problem in str(refused.value)
    assert load_settings({SETTINGS_ENV: '{"default_space": "norm"}'}).default_space == "norm"


def test_raw_captures_decode_and_one_that_doesnt_fit_the_display_is_refused():
    pixels = PILImage.new("RGB", (3, 2), (1, 2, 3))
    bgra = bytes([3, 2, 1, 255] * 6)
    assert as_image(Image(3, 2, bgra, "BGRA"), Display(3, 2)).getpixel((2, 1)) == (1, 2, 3)
    assert as_image(Image(3, 2, pixels.tobytes(), "RGB"), Display(3, 2)).getpixel((0, 0)) == (
        1,
        2,
        3,
    )
    with pytest.raises(
        ValueError, match="@capture returned 3×2, but the display at scale 2 is 6×4"
    ):
        as_image(pixels, Display(3, 2, 2.0))
    with pytest.raises(TypeError, match="mode 'YUV'"):
        as_image(Image(3, 2, b"", "YUV"), Display(3, 2))


def test_the_platform_comes_from_os_release_and_the_session(tmp_path, monkeypatch):
    monkeypatch.setattr("agentenv_protocol.computer.platform.sys.platform", "linux")
    monkeypatch.setattr("agentenv_protocol.computer.platform._platform.machine", lambda: "x86_64")
    release = tmp_path / "os-release"
    release.write_text('ID=debian\nVERSION_ID="12"\n')
    assert detect({"DISPLAY": ":99"}, release).as_dict() == {
        "os": "linux",
        "distribution": "debian",
        "version": "12",
        "arch": "amd64",
        "display": "x11",
    }
    assert detect({"XDG_SESSION_TYPE": "wayland"}, release).display == "wayland"
    with pytest.raises(ValueError, match="names its os as"):
        supported({"os": "linux"})


def test_a_driver_file_with_missing_dependencies_declares_its_platforms(tmp_path, isolated_imports):
    (tmp_path / "xdesk.py").write_text(DRIVER)
    declared = declare(tmp_path, "xdesk.py", "XDesk")
    assert declared["name"] == "xdesk"
    assert [p["platform"]["version"] for p in declared["platforms"]] == ["12", "13"]
    first = declared["platforms"][0]
    assert len(first["tools"]) == 7 and first["features"]["buttons"] == ["left", "right"]
    assert "urn:agentenv:computer-exec/v1" in first["provides"] and "data/add" in first["provides"]


def test_the_declare_command_prints_json_and_keeps_the_drivers_prints_off_stdout(
    tmp_path, isolated_imports, capsys
):
    (tmp_path / "xdesk.py").write_text(DRIVER)
    assert main([str(tmp_path), "xdesk.py", "XDesk"]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out)["name"] == "xdesk" and out.err == "driver module imported\n"
    assert main([str(tmp_path), "xdesk.py", "Nope"]) == 1
    assert (
        "xdesk.py has no ComputerDriverEnvironment subclass named Nope" in capsys.readouterr().err
    )
